"""An LC that stops reading: its queue stays bounded and the other LCs are not held up.

The stalled LC keeps its connection open and reads nothing, so once the socket buffers
are full the GM's write to it cannot complete; everything sent to it after that waits
in its node queue, which drops the oldest at `maxQueuePerNode`.

The fast LC's messages are sent one at a time, each received before the next: the bound
applies to the fast node too, and a burst of sixty messages to it could overrun a
bound of twenty whenever the loop thread gets no CPU for a moment (that was the
intermittent failure of an earlier version of this test: the fast node's own oldest
messages were dropped, as the bound says, on a loaded machine).
"""

from __future__ import annotations

from loguru import logger
from websockets.sync.client import connect

from sedna.runtime.metrics import Metrics

from .conftest import LayerFactory
from .helpers import GO_HELLO, FakeLC, obj, sample, wait_until

BOUND = 20
BIG = "x" * 64 * 1024  # 64 KiB per message: a few dozen fill the socket buffers


def test_a_stalled_lc_has_a_bounded_queue_and_the_others_get_everything(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    layer = make_layer(maxQueuePerNode=BOUND)
    stalled = connect(
        f"ws://127.0.0.1:{layer.port}/",
        additional_headers={"Node-Name": "stalled"},
        open_timeout=5,
        max_size=None,
        max_queue=1,  # the client stops reading its socket after one frame
        compression=None,
        close_timeout=0.5,  # it reads nothing, so the closing handshake cannot finish
        legacy=True,
    )
    stalled.send(GO_HELLO)
    fast = FakeLC(layer.port, "fast")
    wait_until(lambda: sorted(layer.connected_nodes()) == ["fast", "stalled"], what="both in")

    sent = 360  # 22.5 MiB: more than the kernel buffers both ways on loopback
    for i in range(sent):
        layer.send("stalled", "insert", obj("Model", f"s{i}", blob=BIG))
        if i % 6 == 0:
            layer.send("fast", "insert", obj("Model", f"f{i}"))
            assert fast.recv(timeout=30).header["resourceName"] == f"f{i}"

    assert layer.queue_depth("stalled") <= BOUND
    wait_until(
        lambda: sample(metrics, "lc_messages_dropped_total", kind="model") > 0,
        what="the stalled node's oldest messages dropped",
    )
    assert layer.queue_depth("fast") == 0
    # still bounded after more sends, and the fast node still served
    for i in range(sent, sent + 100):
        layer.send("stalled", "insert", obj("Model", f"s{i}", blob=BIG))
    layer.send("fast", "insert", obj("Model", "last"))
    assert fast.recv(timeout=30).header["resourceName"] == "last"
    assert layer.queue_depth("stalled") <= BOUND
    stalled.close()
    fast.close()


def test_drops_of_one_node_are_counted_one_by_one_and_logged_a_few_times(
    make_layer: LayerFactory, metrics: Metrics
) -> None:
    """A stalled node's queue drops on every send: each drop used to cost the sending
    controller a log line (300 for one burst), a price every other node paid too."""
    layer = make_layer(maxQueuePerNode=5)
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", format="{message}")
    try:
        for i in range(300):
            layer.send("away", "insert", obj("Model", f"m{i}"))
    finally:
        logger.remove(sink)
    assert sample(metrics, "lc_messages_dropped_total", kind="model") == 295
    assert layer.queue_depth("away") == 5
    dropped_lines = [line for line in lines if "queue of node away is full" in line]
    assert 1 <= len(dropped_lines) <= 5, dropped_lines
