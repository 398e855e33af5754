"""Cost guards for the size controls: ask before a solve that would be too heavy.

A page passes ``guard=`` to :func:`explorer.ui.model_page`; the guard returns a
message (with its estimate) when a configuration exceeds the page's budget, and the
page then asks for confirmation before building and solving it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MEMORY_LIMIT", "WORK_LIMIT", "default_guard", "size_guard"]

#: bytes a page may allocate without asking (~2 GB on the reference 2-core machine)
MEMORY_LIMIT = 2 * 10**9
#: work relative to the page's default configuration above which the page asks
WORK_LIMIT = 100.0


def size_guard(memory: Callable[[Mapping[str, Any]], float],
               work: Callable[[Mapping[str, Any]], float],
               default_sizes: Callable[[str], Mapping[str, Any]],
               default_seconds: float, *, memory_limit: float = MEMORY_LIMIT,
               work_limit: float = WORK_LIMIT) -> Callable[[Any], str | None]:
    """A guard from a memory model (bytes) and a work model (any unit) of the sizes.

    ``default_sizes(dataset)`` gives the dataset's default sizes; the work ratio to
    them, times ``default_seconds`` (a measured solve at the defaults), is the time
    estimate shown — a rough, linear extrapolation, said to be one.
    """

    def guard(c: Any) -> str | None:
        sizes = dict(c.sizes, dataset=c.dataset)
        mem = float(memory(sizes))
        ratio = float(work(sizes)) / max(float(work(dict(default_sizes(c.dataset),
                                                          dataset=c.dataset))), 1e-300)
        if mem <= memory_limit and ratio <= work_limit:
            return None
        est = ratio * default_seconds
        return (f"These sizes need about {mem / 1e9:.1f} GB for the data and about "
                f"{ratio:,.0f}× the work of the default sizes (a rough linear estimate: "
                f"~{est:,.0f} s per solve, more for a cold start or a small tol). The page's "
                f"budget is ~{memory_limit / 1e9:.0f} GB and ~30 s on a 2-core machine. "
                "Reduce the sizes, or solve anyway.")

    return guard


def default_guard(entry: Any) -> Callable[[Any], str | None]:
    """The guard of a page that declares none: the product of the integer size controls
    relative to the dataset's defaults (sizes whose default is 0, "all", are skipped).

    A crude proxy for work and memory; a page with a cost model passes its own
    :func:`size_guard`.
    """

    def guard(c: Any) -> str | None:
        ds = entry.datasets[c.dataset]
        ratio = 1.0
        for name, (default, _low, _high) in ds.sizes.items():
            v = c.sizes.get(name, default)
            if isinstance(default, int) and default > 0 and isinstance(v, int) and v > 0:
                ratio *= v / default
        if ratio <= WORK_LIMIT:
            return None
        return (f"These sizes make a problem about {ratio:,.0f}× the default one (product of "
                "the size controls). On a 2-core machine that can take minutes and a lot of "
                "memory (the page's budget is ~30 s and ~2 GB). Reduce the sizes, or solve "
                "anyway.")

    return guard
