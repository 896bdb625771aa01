"""client-go's workqueue for Python controllers: dedup, delays, per-item backoff, metrics.

See the module docstrings of `queue`, `delaying`, `rate_limiting`,
`rate_limiters` and `metrics` for the semantics and where they differ from
client-go.
"""

from __future__ import annotations

from sedna.runtime.workqueue.delaying import MAX_WAIT, DelayingQueue
from sedna.runtime.workqueue.metrics import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    NoopWorkqueueMetrics,
    PrometheusWorkqueueMetrics,
    ScrapeGaugeMetric,
    WorkqueueMetrics,
    WorkqueueMetricsProvider,
)
from sedna.runtime.workqueue.queue import Queue
from sedna.runtime.workqueue.rate_limiters import (
    DEFAULT_BACKOFF,
    MAX_BACKOFF,
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)
from sedna.runtime.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "DEFAULT_BACKOFF",
    "MAX_BACKOFF",
    "MAX_WAIT",
    "BucketRateLimiter",
    "CounterMetric",
    "DelayingQueue",
    "GaugeMetric",
    "HistogramMetric",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "NoopWorkqueueMetrics",
    "PrometheusWorkqueueMetrics",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ScrapeGaugeMetric",
    "WithMaxWaitRateLimiter",
    "WorkqueueMetrics",
    "WorkqueueMetricsProvider",
    "default_controller_rate_limiter",
]
