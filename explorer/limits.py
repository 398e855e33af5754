"""What a solve may cost on each surface, and the size check that enforces it.

One :class:`Budget` per surface: :data:`COMMAND_LINE` (``dualscope solve``/``check``
and ``sweep``, which ask for ``--force`` above it) and :data:`PAGE` (the dashboard's
pages, which ask for a confirmation). The estimate compared with a budget is the
dataset's cost model, :meth:`explorer.registry.Dataset.estimate`: bytes of memory and
CPU seconds of one solve at the default parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cliargs import CLIError

if TYPE_CHECKING:  # pragma: no cover
    from .registry import Dataset

__all__ = ["COMMAND_LINE", "PAGE", "Budget", "CostError", "check_sizes", "fmt_bytes",
           "fmt_seconds"]


@dataclass(frozen=True)
class Budget:
    """The cost one surface lets a solve have without asking.

    Parameters
    ----------
    surface : str
        Where the budget applies (named in messages).
    memory : float
        Bytes of estimated memory per solve.
    seconds : float
        Estimated CPU seconds per solve.
    work : float
        For a dataset without a time estimate: the product of its size controls
        relative to the defaults above which the surface asks.
    """

    surface: str
    memory: float
    seconds: float
    work: float = 100.0

    def describe(self) -> str:
        """The budget in words, e.g. ``"~2.0 GB and ~30 s"``."""
        return f"~{fmt_bytes(self.memory)} and {fmt_seconds(self.seconds)}"


#: ``dualscope solve``/``check``/``sweep``: above it a size needs ``--force``.
COMMAND_LINE = Budget("command line", memory=2 * 1024**3, seconds=600.0)
#: the dashboard's pages: above it a page asks before solving.
PAGE = Budget("dashboard page", memory=2 * 1024**3, seconds=30.0)


def fmt_bytes(n: float) -> str:
    """``n`` bytes in binary units, e.g. ``"2.0 GB"`` for ``2 * 1024**3``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


def fmt_seconds(s: float) -> str:
    """A duration for a person: ``"< 1 s"``, ``"~30 s"``, ``"~10 min"``, ``"~1.5 h"``."""
    if s < 1:
        return "< 1 s"
    if s < 120:
        return f"~{s:.0f} s"
    if s < 7200:
        return f"~{s / 60:.0f} min"
    return f"~{s / 3600:.1f} h"


class CostError(CLIError, ValueError):
    """A size or sweep the dataset's cost model refuses (without ``force``): a
    :class:`~explorer.cliargs.CLIError` for the command line, a ``ValueError`` for
    library callers."""


def check_sizes(ds: Dataset, sizes: dict[str, Any], *, force: bool, parallel: int = 1,
                hint: str = "pass --force to run it anyway",
                budget: Budget = COMMAND_LINE) -> list[tuple[str, str]]:
    """The cost guard of ``solve``, ``check`` and ``sweep``.

    Refuses (:class:`CostError`, naming the sizes and giving the estimate) sizes the
    dataset's cost model (:meth:`explorer.registry.Dataset.estimate`) puts above the
    budget's memory, sizes below a range's low end, and sizes above a range's high end
    on a real data set (it has no more rows) or whose estimate is above the budget's
    seconds (or has no time estimate), unless ``force``.

    Parameters
    ----------
    ds : explorer.registry.Dataset
        The dataset whose sizes are checked.
    sizes : dict
        The sizes given (the others are the defaults).
    force : bool
        Return a warning instead of raising.
    parallel : int
        Solves that run at once (a sweep's workers on this machine): the memory compared
        with the budget is ``parallel`` times the per-solve estimate.
    hint : str
        What the refusal suggests.
    budget : Budget
        The surface's budget (:data:`COMMAND_LINE` by default).

    Returns
    -------
    list of (str, str)
        The messages to show, as ``(kind, text)`` with kind ``"warning"`` (``force``:
        what would have been refused) or ``"note"`` (a synthetic size above the
        dashboard's range whose estimate fits the budget: it runs).
    """
    parallel = max(int(parallel), 1)
    full = {**{k: v[0] for k, v in ds.sizes.items()}, **sizes}
    mem, secs = ds.estimate(full)
    est = f"estimated memory {fmt_bytes(mem)}" + (
        f" per solve, {fmt_bytes(parallel * mem)} for {parallel} solves at once"
        if parallel > 1 else "") + (
        f", time {fmt_seconds(secs)}" if secs is not None else "")
    refused, beyond = [], []
    for key, value in sizes.items():
        _default, low, high = ds.sizes[key]
        if value < low or (value > high and ds.real):
            refused.append(f"{key}={value} is outside [{low}, {high}]")
        elif value > high:
            beyond.append(f"{key}={value} is outside [{low}, {high}]")
    cheap = secs is not None and secs <= budget.seconds
    if beyond and not cheap:
        refused += beyond
        beyond = []
        if secs is not None:
            refused.append(f"the estimate is above {fmt_seconds(budget.seconds)}")
    at = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the default sizes"
    if parallel * mem > budget.memory:
        limit = fmt_bytes(budget.memory)
        refused.append(f"{at} needs more than {limit}" if parallel == 1
                       else f"{parallel} workers solving at once at {at} need more than "
                            f"{limit}, {parallel} x the per-solve estimate")
    where = f"dataset {ds.name!r}"
    if refused:
        what = "; ".join(refused)
        if not force:
            raise CostError(f"{where}: {what} ({est}); {hint}")
        return [("warning", f"--force: {where}: {what}; {est}")]
    if beyond:
        return [("note", f"{where}: {'; '.join(beyond)} (the dashboard's range); "
                         f"{est}, within the limits, so it runs")]
    return []
