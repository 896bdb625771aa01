"""What Sedna's LC reads from a job's conditions: models, eval metrics, storage of a URL.

The simulated LC answers Train, Eval and Deploy from the data the GM wrote into the
job's conditions; it must read that data as Sedna's LC does
(`pkg/localcontroller/managers/incrementallearning`), or it deploys where a real edge
node would not. Where Sedna's LC dereferences a missing model or indexes past a list
it panics; those places raise `LCPanic` here and the simulated LC leaves the job
waiting, which is what an edge node whose LC restarts and panics again shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit


class LCPanic(RuntimeError):
    """A state on which Sedna's LC panics (a nil model, an index past a list)."""


class UnsupportedURL(ValueError):
    """A URL Sedna's LC storage refuses: only local paths and s3:// are known."""


def url_is_local(url: str) -> bool:
    """Sedna's Storage.IsLocalURL: no scheme is local, `s3` is remote, anything else an error."""
    if not url:
        raise UnsupportedURL("empty url")
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:
        raise UnsupportedURL(f"invalid url({url}): {exc}") from None
    if scheme == "":
        return True
    if scheme == "s3":
        return False
    raise UnsupportedURL(f"invalid url({url}), not support prefix({scheme})")


def _model(raw: Any) -> dict[str, Any]:
    """One model as Go's json.Unmarshal into runtime.Model accepts it, else ValueError."""
    if not isinstance(raw, Mapping):
        raise ValueError("model is not an object")
    for key in ("format", "url"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise ValueError(f"model {key} is not a string")
    devices = raw.get("device_soc_versions")
    if devices is not None and (
        not isinstance(devices, list) or not all(isinstance(d, str) for d in devices)
    ):
        raise ValueError("device_soc_versions is not a list of strings")
    metrics = raw.get("metrics")
    if metrics is not None and not isinstance(metrics, Mapping):
        raise ValueError("metrics is not an object")
    return dict(raw)


def cond_models(
    conditions: Sequence[Mapping[str, Any]], stage: str, ctype: str, part: str
) -> list[dict[str, Any]] | None:
    """Sedna's getModelsFromJobConditions: `data.<part>.models` of the latest such condition.

    Conditions whose data does not decode, or have no `<part>`, are skipped; the first
    one that has it answers, even with no models (a lone `model` key does not count).
    """
    for cond in reversed(conditions):
        if cond.get("stage") != stage or cond.get("type") != ctype:
            continue
        try:
            data = json.loads(cond.get("data") or "")
            if not isinstance(data, dict):
                raise ValueError("data is not an object")
            section = data.get(part)
            if section is None:
                continue
            if not isinstance(section, dict):
                raise ValueError(f"{part} is not an object")
            models = section.get("models")
            if models is not None and not isinstance(models, list):
                raise ValueError("models is not a list")
            if isinstance(section.get("model"), Mapping):
                _model(section["model"])
            return [_model(m) for m in models or []]
        except ValueError:
            continue
    return None


def pick_model(models: Sequence[Mapping[str, Any]] | None, want: Mapping[str, Any]) -> Any:
    """Sedna's getModel: the first model of `want`'s format (and of one of its devices).

    A candidate with exactly one device must name one of `want`'s devices; with none
    or several it matches on format alone, as in Sedna. None when nothing matches.
    """
    devices = want.get("device_soc_versions") or []
    for m in models or []:
        if (m.get("format") or "") != (want.get("format") or ""):
            continue
        have = m.get("device_soc_versions") or []
        if devices and len(have) == 1 and have[0] not in devices:
            continue
        return dict(m)
    return None


def eval_result(conditions: Sequence[Mapping[str, Any]]) -> list[dict[str, list[float]]] | None:
    """Sedna's getEvalResult: each Eval/Completed output model's metrics as lists of floats.

    None where Go's json.Unmarshal into map[string][]float64 fails (a metric that is
    not a list of numbers): Sedna then reports "isn't need to deploy model".
    """
    result: list[dict[str, list[float]]] = []
    for m in cond_models(conditions, "Eval", "Completed", "output") or []:
        metrics = m.get("metrics") or {}
        parsed: dict[str, list[float]] = {}
        for name, values in metrics.items():
            if values is None:
                parsed[name] = []
                continue
            if not isinstance(values, list):
                return None
            row: list[float] = []
            for v in values:
                if v is None:
                    row.append(0.0)  # null into a float64 leaves it 0
                elif isinstance(v, bool) or not isinstance(v, int | float):
                    return None
                else:
                    row.append(float(v))
            parsed[name] = row
        result.append(parsed)
    return result


def deploy_stats(new: Mapping[str, list[float]], old: Mapping[str, list[float]]) -> dict[str, Any]:
    """The stats Sedna's deploy trigger sees: every new metric and `<metric>_delta` lists.

    Raises LCPanic where Sedna indexes past the old model's list (a metric the old
    model lacks, or has fewer values of).
    """
    stats: dict[str, Any] = {}
    for metric, values in new.items():
        stats[metric] = list(values)
        before = old.get(metric) or []
        if len(before) < len(values):
            raise LCPanic(
                f"metric {metric!r}: the deployed model has {len(before)} value(s), the "
                f"trained one {len(values)}"
            )
        stats[f"{metric}_delta"] = [a - b for a, b in zip(values, before, strict=False)]
    return stats
