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
import pkgutil
from pathlib import Path

from . import _jitcache

_jitcache.install()  # before any module compiles with cache=True

from .base import History, IterationState, NumericalError, Result  # noqa: E402

#: The package version (the one place it is written: pyproject.toml reads it from here).
__version__ = "0.2.0"


def _models() -> tuple[str, ...]:
    """The model modules: every model has a cvxpy reference of the same name,
    ``solvers/reference/<name>.py``, so the list is read from that folder (no import)."""
    folder = Path(__file__).with_name("reference")
    return tuple(sorted(m.name for m in pkgutil.iter_modules([str(folder)])
                        if not m.name.startswith("_")))


#: Names of the model modules (derived: see ``_models``).
MODELS = _models()

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
    if name == "ConvergenceWarning":  # built on first use (its base is scikit-learn's)
        from . import base

        return base.ConvergenceWarning
    if name in MODELS or name in ("reference", "estimators"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
