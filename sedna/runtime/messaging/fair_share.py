"""Who gives way when a report buffer shared by every node is full: max-min fair shedding.

The buffers of LC reports (those waiting for their route, those waiting for their
handler) have one bound each over every node, so that made-up node names cannot
multiply it. Refusing whoever comes next once such a buffer is full would let one node
that filled it refuse every other node for as long as it keeps it full. Instead the
nodes holding the most give way, oldest report first, down to a common level, and a
new report is refused only when it would take its own node over that level. A node
that holds no more than its fair share (the bound over the nodes holding something)
is neither refused nor loses a report because of another node; the bound itself
holds as before.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from operator import itemgetter

_load = itemgetter(1)


def _level(loads: dict[str, int], need: int) -> tuple[int, int]:
    """(num, den): the level num/den such that cutting every load above it to it frees
    exactly `need` (0 < need <= the sum of loads)."""
    top = heapq.nlargest(2, loads.items(), key=_load)
    # one node over all the others (a flood): no need to sort the rest
    if len(top) == 1 or top[0][1] - top[1][1] >= need:
        return top[0][1] - need, 1
    ranked = sorted(loads.values(), reverse=True)
    total = 0
    for i, load in enumerate(ranked):
        total += load
        below = ranked[i + 1] if i + 1 < len(ranked) else 0
        if total - (i + 1) * below >= need:
            return total - need, i + 1
    return 0, 1  # need exceeds every load: cannot happen for a caller within its bound


def over_share(loads: Mapping[str, int], sender: str, size: int, need: int) -> bool:
    """Whether a new report of `size` would take `sender` over the fair level, `need`
    having to be freed for it: `make_room` would refuse it."""
    if need <= 0:
        return False
    counted = dict(loads)
    counted[sender] = counted.get(sender, 0) + size
    num, den = _level(counted, need)
    return counted[sender] * den > num


def make_room(
    loads: Mapping[str, int],
    sender: str,
    size: int,
    need: int,
    pop_oldest: Callable[[str], int | None],
) -> bool:
    """Free at least `need` of a buffer for a new report of `size` from `sender`.

    `loads` is what each node holds now (bytes or reports, the new one not counted);
    `pop_oldest(node)` drops the oldest report of node and returns its size (None when
    the node holds nothing). The new report is counted with its sender. Returns False,
    and drops nothing, when that takes the sender over the fair level: the new report
    is to be refused. Otherwise the nodes over the level give way, most first, and
    the sender loses nothing.
    """
    if need <= 0:
        return True
    counted = dict(loads)
    counted[sender] = counted.get(sender, 0) + size
    num, den = _level(counted, need)
    if counted[sender] * den > num:
        return False
    above = [n for n, load in counted.items() if load * den > num]
    above.sort(key=counted.__getitem__, reverse=True)
    freed = 0
    for node in above:
        load = counted[node]
        while load * den > num and freed < need:
            popped = pop_oldest(node)
            if popped is None:
                break
            load -= popped
            freed += popped
        if freed >= need:
            break
    return freed >= need
