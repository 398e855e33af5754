"""dualscope solvers: fast, certified solvers for five structured convex models.

Numerics only (numpy, scipy, numba); nothing here imports streamlit or plotly.

Models (one module each, imported on first use)::

    from solvers import wwsvm               # Weston–Watkins multiclass SVM (Walrus)
    from solvers import caso                # convex relaxed ASO multitask learning
    from solvers import robust_mtl          # robust temporal multitask regression
    from solvers import triplet_screening   # safe triplet screening, metric learning
    from solvers import mtmkl               # multi-task multiple kernel learning
    from solvers import reference           # cvxpy formulations of the same objectives
    from solvers import estimators          # scikit-learn estimators over every solve

Shared machinery: :mod:`solvers.base` (results, histories, the run monitor),
:mod:`solvers.validation`, :mod:`solvers.apg` (accelerated proximal gradient
engine) and :mod:`solvers.prox` (proximal operators and projections).
"""

import importlib

from . import _jitcache

_jitcache.install()  # before any module compiles with cache=True

from .base import ConvergenceWarning, History, IterationState, NumericalError, Result  # noqa: E402

__version__ = "0.1.0"

MODELS = ("wwsvm", "caso", "robust_mtl", "triplet_screening", "mtmkl")

__all__ = [
    "MODELS",
    "ConvergenceWarning",
    "History",
    "IterationState",
    "NumericalError",
    "Result",
    *MODELS,
    "estimators",
    "reference",
]


def __getattr__(name: str):
    if name in MODELS or name in ("reference", "estimators"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
