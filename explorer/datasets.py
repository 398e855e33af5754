"""Bundled real datasets (scikit-learn) shared by the model pages.

Model-specific synthetic generators live with their model in
``explorer/models/<model>/data.py``; this module only loads and prepares the
real data every model may reuse.
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["REAL_DATASETS", "load_real", "standardize", "subsample"]

REAL_DATASETS = ("iris", "wine", "breast_cancer", "digits")


@cache
def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    loaders = {
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "breast_cancer": datasets.load_breast_cancer,
        "digits": datasets.load_digits,
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; bundled: {list(loaders)}")
    X, y = loaders[name](return_X_y=True)
    return np.asarray(X, dtype=float), np.asarray(y, dtype=np.int64)


def standardize(X: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per column (constant columns are left at 0)."""
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - mu) / sd


def subsample(X: np.ndarray, y: np.ndarray, n: int | None, seed: int = 0
              ) -> tuple[np.ndarray, np.ndarray]:
    """A stratified-ish random subset of ``n`` rows (all rows if ``n`` is None or larger)."""
    if n is None or n >= X.shape[0]:
        return X, y
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(X.shape[0], size=n, replace=False))
    return X[idx], y[idx]


def load_real(name: str, *, n: int | None = None, seed: int = 0, scale: bool = True
              ) -> tuple[np.ndarray, np.ndarray]:
    """Load a bundled scikit-learn dataset as float features and integer labels.

    Parameters
    ----------
    name : {"iris", "wine", "breast_cancer", "digits"}
    n : int, optional
        Random subset size.
    scale : bool
        Standardise the columns (computed on the returned rows).
    """
    X, y = _load(name)
    X, y = subsample(X, y, n, seed)
    return (standardize(X) if scale else X.copy()), y.copy()
