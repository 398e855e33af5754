"""Datasets for safe triplet screening: a synthetic generator and the bundled real data.

Every problem carries its triplets (section 5 of the paper: for each ``x_i``
its ``k`` nearest same-class and ``k`` nearest other-class points, every
combination; ``k = 0`` here means ``k = inf``, all of them).
"""

from __future__ import annotations

import numpy as np

from solvers.triplet_screening import triplets as make_triplets

from ...datasets import load_real
from ...registry import Problem

__all__ = ["real", "synthetic"]


def _k(k: float) -> float:
    return np.inf if (k is None or k <= 0 or not np.isfinite(k)) else int(k)


def _problem(X, y, k, name, description, info) -> Problem:
    T = make_triplets(X, y, _k(k))
    info = dict(info)
    info.update({"n_triplets": int(T.shape[0]), "k": _k(k)})
    return Problem(data={"X": X, "y": y, "triplets": T}, name=name,
                   description=f"{description}; k={'inf' if not np.isfinite(_k(k)) else int(k)}"
                               f", {T.shape[0]:,} triplets",
                   info=info)


def synthetic(seed: int = 0, *, n: int = 60, d: int = 5, classes: int = 3, informative: int = 2,
              k: int = 5, spread: float = 1.0) -> Problem:
    """Gaussian classes that differ only in a few informative directions.

    Class means are drawn with norm 2.5 in the first ``informative`` coordinates
    (zero elsewhere); every class adds isotropic unit noise times ``spread`` in
    all ``d`` coordinates, so a good metric up-weights the informative
    directions and shrinks the others. Labels are balanced up to rounding.
    """
    n, d, classes, informative = int(n), int(d), int(classes), int(informative)
    if classes < 2:
        raise ValueError(f"classes must be >= 2, got {classes}")
    if n < 2 * classes:
        raise ValueError(f"n must be >= 2 * classes = {2 * classes}, got {n}")
    if not 1 <= informative <= d:
        raise ValueError(f"informative must lie in [1, d={d}]: the class means differ in "
                         f"{informative} of the {d} coordinates, which cannot exceed d "
                         f"(got informative={informative}); raise d or lower informative")
    if spread <= 0:
        raise ValueError(f"spread must be > 0, got {spread}")
    rng = np.random.default_rng(seed)
    means = np.zeros((classes, d))
    dirs = rng.normal(size=(classes, informative))
    means[:, :informative] = 2.5 * dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    y = np.arange(n) % classes
    rng.shuffle(y)
    X = means[y] + spread * rng.normal(size=(n, d))
    return _problem(X, y, k, "synthetic",
                    f"{n} points, {classes} Gaussian classes in {d}-D "
                    f"({informative} informative), spread {spread:g}",
                    {"means": means, "informative": informative, "d": d})


def real(name: str):
    """A loader for a bundled scikit-learn dataset (standardised features) with triplets."""

    def make(seed: int = 0, *, n: int = 0, k: int = 0) -> Problem:
        X, y = load_real(name, n=(int(n) or None), seed=seed)
        return _problem(X, y, k, name,
                        f"scikit-learn {name}: {X.shape[0]} samples, {X.shape[1]} standardised "
                        f"features, {int(y.max()) + 1} classes", {"d": X.shape[1]})

    make.__name__ = f"load_{name}"
    return make


# -------------------------------------------------------------------- user files


def _file_roles():
    from ...datafiles import FileRoles

    return FileRoles(labels="classes", triplets=True)


#: What a data file must hold for this model (see :mod:`explorer.datafiles`).
FILE_ROLES = _file_roles()


def from_table(table, test=None, *, k: int = 5, **_opts) -> Problem:
    """A user's file: features and class labels; triplets from the file or the labels.

    Explicit triplets (``triplets`` in a ``.npz``, row indices ``(i, j, l)``) are used as
    given; otherwise every point's ``k`` nearest same-class and ``k`` nearest
    other-class points (default 5; the bundled sets use all of them).
    """
    from ...datafiles import DataFileError, class_codes, dense, source_info

    X = dense(table, "triplet_screening")
    names, y, yt = class_codes(table, "triplet_screening", test=test)
    info = {**source_info(table, test), "class_names": names, "d": X.shape[1]}
    if test is not None:
        info["X_test"] = dense(test, "triplet_screening")
        if yt is not None:
            info["y_test"] = yt
    desc = f"file {table.name}: {X.shape[0]} samples, {X.shape[1]} features, {names.size} classes"
    if table.triplets is None:
        return _problem(X, y, k, table.name, desc, info)
    T = np.asarray(table.triplets)
    if T.ndim != 2 or T.shape[1] != 3 or T.dtype.kind not in "iu" or T.size == 0 \
            or T.min() < 0 or T.max() >= X.shape[0]:
        raise DataFileError(f"{table.name}: 'triplets' must be a non-empty integer array "
                            f"(n_t, 3) of row indices in [0, {X.shape[0]}), got shape "
                            f"{T.shape}, dtype {T.dtype}")
    info.update({"n_triplets": int(T.shape[0]), "k": None})
    return Problem(data={"X": X, "y": y, "triplets": T.astype(np.int64)}, name=table.name,
                   description=f"{desc}; {T.shape[0]:,} triplets from the file", info=info)
