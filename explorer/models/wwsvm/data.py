"""Datasets for the Weston–Watkins SVM page: Gaussian blobs and bundled real data."""

from __future__ import annotations

import numpy as np

from ...datasets import load_real
from ...registry import Problem

__all__ = ["blobs", "random_labels", "real", "text_like"]


def blobs(seed: int = 0, *, n: int = 300, k: int = 4, d: int = 2, spread: float = 1.0
          ) -> Problem:
    """``k`` Gaussian classes in ``d`` dimensions.

    Class centres are drawn on a sphere of radius 3 (so the class separation
    does not depend on ``d``); each class adds isotropic noise of standard
    deviation ``spread``. Labels are balanced up to rounding.
    """
    n, k, d = int(n), int(k), int(d)
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    if n < k:
        raise ValueError(f"n must be >= k={k}, got {n}")
    if spread <= 0:
        raise ValueError(f"spread must be > 0, got {spread}")
    rng = np.random.default_rng(seed)
    if d == 2:
        ang = 2 * np.pi * (np.arange(k) / k) + rng.uniform(0, 2 * np.pi)
        centers = 3.0 * np.column_stack([np.cos(ang), np.sin(ang)])
    else:
        centers = rng.normal(size=(k, d))
        centers *= 3.0 / np.linalg.norm(centers, axis=1, keepdims=True)
    y = np.arange(n) % k
    rng.shuffle(y)
    X = centers[y] + spread * rng.normal(size=(n, d))
    return Problem(
        data={"X": X, "y": y},
        name="blobs",
        description=f"{n} points, {k} Gaussian classes in {d}-D, spread {spread:g}",
        info={"centers": centers, "k": k, "d": d},
    )


def real(name: str):
    """A loader for a bundled scikit-learn dataset (standardised features)."""

    def make(seed: int = 0, *, n: int = 0) -> Problem:
        X, y = load_real(name, n=(int(n) or None), seed=seed)
        k = int(y.max()) + 1
        return Problem(
            data={"X": X, "y": y},
            name=name,
            description=f"scikit-learn {name}: {X.shape[0]} samples, {X.shape[1]} standardised "
                        f"features, {k} classes",
            info={"k": k, "d": X.shape[1]},
        )

    make.__name__ = f"load_{name}"
    return make


def random_labels(seed: int = 0, *, n: int = 2000, d: int = 30, k: int = 8) -> Problem:
    """Standard normal features with labels drawn uniformly (no structure to learn)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(n), int(d)))
    y = rng.integers(0, int(k), int(n))
    y[:k] = np.arange(k)
    return Problem(data={"X": X, "y": y}, name="random_labels",
                   description=f"{n} N(0, I) points in {d}-D, {k} random labels",
                   info={"k": int(k), "d": int(d)})


def text_like(seed: int = 0, *, n: int = 20_000, d: int = 50_000, density: float = 0.002,
              k: int = 20) -> Problem:
    """Sparse bag-of-words-like data: CSR rows of about ``density * d`` terms.

    Each class has its own Zipf-weighted vocabulary of ``d / k`` terms; half of a
    row's terms come from its class's vocabulary, half from the whole vocabulary
    (Zipf-weighted too); values are ``1 + log(count)``, rows l2-normalised (TF-IDF
    like).
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n, d, k = int(n), int(d), int(k)
    per_row = max(1, round(density * d))
    y = np.arange(n) % k
    rng.shuffle(y)
    zipf = 1.0 / np.arange(1, d + 1)
    perm = rng.permutation(d)
    vocab = np.array_split(perm, k)
    rows, cols = [], []
    n_own = per_row // 2
    p_all = zipf / zipf.sum()
    for j in range(k):
        idx = np.flatnonzero(y == j)
        p_own = zipf[: vocab[j].size] / zipf[: vocab[j].size].sum()
        own = vocab[j][rng.choice(vocab[j].size, size=(idx.size, n_own), p=p_own)]
        common = perm[rng.choice(d, size=(idx.size, per_row - n_own), p=p_all)]
        terms = np.hstack([own, common])
        rows.append(np.repeat(idx, per_row))
        cols.append(terms.ravel())
    X = sp.csr_matrix((np.ones(n * per_row), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, d))  # duplicates summed: term counts
    X.data = 1.0 + np.log(X.data)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.maximum(norms, 1e-300)) @ X
    return Problem(data={"X": X.tocsr(), "y": y}, name="text_like",
                   description=f"{n} sparse text-like rows, {d} terms, ~{per_row} per row, "
                               f"{k} classes", info={"k": k, "d": d})


# -------------------------------------------------------------------- user files


def _file_roles():
    from ...datafiles import FileRoles

    return FileRoles(labels="classes", sparse=True)


#: What a data file must hold for this model (see :mod:`explorer.datafiles`).
FILE_ROLES = _file_roles()


def from_table(table, test=None, **_opts) -> Problem:
    """A user's file (:class:`explorer.datafiles.Table`): features and class labels.

    Labels become codes ``0..k-1`` (``info["class_names"]`` keeps the file's values);
    ``test`` rows go to ``info["X_test"]`` / ``info["y_test"]`` (codes).
    """
    from ...datafiles import class_codes, dense, source_info

    X = dense(table, "wwsvm")  # a sparse file stays CSR: the solver takes it as it is
    names, y, yt = class_codes(table, "wwsvm", test=test)
    info = {**source_info(table, test), "class_names": names, "k": int(names.size),
            "d": X.shape[1]}
    if test is not None:
        info["X_test"] = dense(test, "wwsvm")
        if yt is not None:
            info["y_test"] = yt
    return Problem(data={"X": X, "y": y}, name=table.name,
                   description=f"file {table.name}: {X.shape[0]} samples, {X.shape[1]} "
                               f"features, {names.size} classes"
                               + (f"; {test.n} held out" if test is not None else ""),
                   info=info)
