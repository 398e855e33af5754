"""The cost guard of the size controls: ask before a solve that would be too heavy.

The estimate is the dataset's cost model, :meth:`explorer.registry.Dataset.estimate`
(the one the CLI's size check and the sweep use too): memory in bytes and CPU seconds
of one solve at the default parameters. Above the page's budget
(:data:`explorer.limits.PAGE`) the page shows the estimate and asks for confirmation
before building and solving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import limits
from ..limits import Budget

__all__ = ["cost_guard", "cost_message", "default_guard"]


def cost_message(mem: float, secs: float | None, ratio: float | None = None,
                 budget: Budget | None = None) -> str | None:
    """The confirmation message of an estimate over the page's budget, or None.

    Parameters
    ----------
    mem : float
        Estimated bytes of one solve.
    secs : float or None
        Estimated CPU seconds of one solve (None: the dataset has no time estimate).
    ratio : float or None
        Without a time estimate: the size product relative to the defaults.
    budget : Budget, optional
        The budget compared with (default :data:`explorer.limits.PAGE`).

    Returns
    -------
    str or None
        The message to show, or None when the estimate fits the budget.
    """
    budget = budget or limits.PAGE
    over_time = secs is not None and secs > budget.seconds
    over_work = secs is None and ratio is not None and ratio > budget.work
    if mem <= budget.memory and not over_time and not over_work:
        return None
    if secs is not None:
        work = (f"about {secs:,.0f} s of CPU per solve" if secs >= 1
                else f"about {secs:.1g} s of CPU per solve")
    else:
        work = f"about {ratio:,.0f}× the default problem (product of the size controls)"
    size = (f"{mem / 1e9:.1f} GB" if mem >= 1e8 else f"{mem / 1e6:.0f} MB")
    return (f"These sizes need about {size} of memory and {work} (the dataset's cost "
            "model at the default parameters: a rough estimate, more for a small tol). "
            f"The page's budget is {budget.describe()}. Reduce the sizes, or solve anyway.")


def cost_guard(entry: Any, *, budget: Budget | None = None) -> Callable[[Any], str | None]:
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
        return cost_message(mem, secs, ratio, budget)

    return guard


#: the guard of every page (kept under its earlier name)
default_guard = cost_guard
