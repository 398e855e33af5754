"""cvxpy reference formulations, one module per model, same parameter names.

``solvers.reference.<model>.solve(...)`` writes the model's objective verbatim
in cvxpy, solves it with Clarabel, and returns a
:class:`~solvers.reference._common.ReferenceResult` holding the optimal value
and the same named arrays as the fast solver. They exist to cross-check the
fast solvers (tests, ``dualscope check``, the dashboards' "cvxpy value").
"""

import importlib

__all__ = ["ReferenceResult", "caso", "mtmkl", "robust_mtl", "triplet_screening", "wwsvm"]

from ._common import ReferenceResult


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
