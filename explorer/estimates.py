"""Memory and time estimates of one solve: the shape of every dataset's cost model.

Each model's datasets have their :class:`Cost` in the model's own folder
(``explorer/models/<model>/costs.py``), named by the dataset
(``Dataset(cost="explorer.models.<model>.costs:NAME")``, imported on use), and
:meth:`explorer.registry.Dataset.estimate` is the single entry point that the CLI's size
check, the page's confirmation guard (``explorer.ui.guards``) and the sweep call.

Each estimate is a :class:`Cost`: the bytes of the data and the solver's state, and the
CPU seconds of building the problem plus ``iterations x seconds per iteration`` at the
default parameters, tolerance and iteration budget, single-threaded. The constants were
fitted to ``tracemalloc`` peaks and ``time.process_time`` of runs at two or three sizes
per dataset (the default and larger ones); the size dependence follows the solvers'
per-iteration work (data passes, eigen- and singular value decompositions, triplet
passes). ``tests/test_estimates.py`` checks the memory and the predicted iteration
counts against real runs within 3x. They tell megabytes from gigabytes and seconds from
hours; they are not exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BASE", "MB", "Cost", "Sizes", "all_rows"]

MB = 1024.0**2
#: bytes of a solve's small fixed state (histories, Python objects)
BASE = 0.05 * MB
Sizes = Mapping[str, Any]


def all_rows(v: Any, n_all: int) -> int:
    """A sample-count size where 0 means the whole dataset (capped at ``n_all``)."""
    v = int(v)
    return n_all if v <= 0 else min(v, n_all)


def _zero(_s: Sizes) -> float:
    return 0.0


@dataclass(frozen=True)
class Cost:
    """The cost model of one dataset (functions of the full size mapping).

    ``seconds(s) = setup(s) + min(iterations(s), max_iter) * per_iteration(s)``.
    """

    memory: Callable[[Sizes], float]
    iterations: Callable[[Sizes], float]
    per_iteration: Callable[[Sizes], float]
    max_iter: int
    setup: Callable[[Sizes], float] = _zero

    def predicted_iterations(self, s: Sizes) -> float:
        """Iterations of one solve at the default parameters (capped by the budget)."""
        return float(min(self.iterations(s), self.max_iter))

    def seconds(self, s: Sizes) -> float:
        return float(self.setup(s) + self.predicted_iterations(s) * self.per_iteration(s))
