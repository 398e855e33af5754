"""The cost guard of the size controls: ask before a solve that would be too heavy.

The estimate is the dataset's cost model, :meth:`explorer.registry.Dataset.estimate`
(the one the CLI's size check and the sweep use too): memory in bytes and CPU seconds
of one solve at the default parameters. Above the page's budget (:data:`MEMORY_LIMIT`,
:data:`TIME_LIMIT`) the page shows the estimate and asks for confirmation before
building and solving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MEMORY_LIMIT", "TIME_LIMIT", "WORK_LIMIT", "cost_guard", "cost_message",
           "default_guard"]

#: bytes a page may allocate without asking (2 GB)
MEMORY_LIMIT = 2 * 10**9
#: estimated seconds of one solve above which the page asks
TIME_LIMIT = 30.0
#: a dataset without a time estimate: size product relative to its defaults above which
#: the page asks
WORK_LIMIT = 100.0


def cost_message(mem: float, secs: float | None, ratio: float | None = None,
                 memory_limit: float = MEMORY_LIMIT,
                 time_limit: float = TIME_LIMIT) -> str | None:
    """The confirmation message of an estimate over the budget, or None."""
    over_time = secs is not None and secs > time_limit
    over_work = secs is None and ratio is not None and ratio > WORK_LIMIT
    if mem <= memory_limit and not over_time and not over_work:
        return None
    if secs is not None:
        work = (f"about {secs:,.0f} s of CPU per solve" if secs >= 1
                else f"about {secs:.1g} s of CPU per solve")
    else:
        work = f"about {ratio:,.0f}× the default problem (product of the size controls)"
    size = (f"{mem / 1e9:.1f} GB" if mem >= 1e8 else f"{mem / 1e6:.0f} MB")
    return (f"These sizes need about {size} of memory and {work} (the dataset's cost "
            "model at the default parameters: a rough estimate, more for a small tol). "
            f"The page's budget is ~{memory_limit / 1e9:.0f} GB and ~{time_limit:.0f} s. "
            "Reduce the sizes, or solve anyway.")


def cost_guard(entry: Any, *, memory_limit: float = MEMORY_LIMIT,
               time_limit: float = TIME_LIMIT) -> Callable[[Any], str | None]:
    """The page's guard: the dataset's cost model against the page's budget.

    A dataset without a time estimate falls back to the product of its integer size
    controls relative to the defaults (sizes whose default is 0, "all", are skipped).
    """

    def guard(c: Any) -> str | None:
        ds = entry.datasets[c.dataset]
        mem, secs = ds.estimate(dict(c.sizes))
        ratio = None
        if secs is None:
            ratio = 1.0
            for name, (default, _low, _high) in ds.sizes.items():
                v = c.sizes.get(name, default)
                if isinstance(default, int) and default > 0 and isinstance(v, int) and v > 0:
                    ratio *= v / default
        return cost_message(mem, secs, ratio, memory_limit, time_limit)

    return guard


#: the guard of every page (kept under its earlier name)
default_guard = cost_guard
