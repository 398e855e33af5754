"""cvxpy reference formulations, one module per model, same parameter names.

``solvers.reference.<model>.solve(...)`` writes the model's objective verbatim
in cvxpy, solves it with Clarabel, and returns a
:class:`~solvers.reference._common.ReferenceResult` holding the optimal value
and the same named arrays as the fast solver. They exist to cross-check the
fast solvers (tests, ``dualscope check``, the dashboards' "cvxpy value").
"""

import importlib
import pkgutil

from ._common import ReferenceResult

# One module per model (the folder's modules, read without importing them).
_MODELS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                      if not m.name.startswith("_")))

__all__ = ["ReferenceResult", *_MODELS]


def __getattr__(name: str):
    if name in _MODELS or (not name.startswith("_")
                          and any(m.name == name for m in pkgutil.iter_modules(__path__))):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
