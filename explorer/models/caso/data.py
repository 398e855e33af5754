"""Datasets for convex ASO: tasks sharing a low-dimensional subspace, and digits.

Every problem carries real-valued or +-1 targets in ``data["ys"]``; synthetic
problems also carry sign targets in ``info["ys_sign"]``, which the model's
solve adapter uses for the hinge and logistic losses.
"""

from __future__ import annotations

import numpy as np

from ...datasets import load_real
from ...registry import Problem

__all__ = ["digits_ovr", "subspace"]


def subspace(seed: int = 0, *, d: int = 20, m: int = 10, n: int = 40, h_true: int = 2,
             noise: float = 0.1, specific: float = 0.1) -> Problem:
    """``m`` regression tasks whose weights share an ``h_true``-dimensional subspace.

    The structure model of ASO: ``u_l = Theta^T v_l + specific * e_l`` with
    ``Theta`` (h_true x d) orthonormal rows drawn at random,
    ``v_l ~ N(0, I / h_true)`` (so ``||Theta^T v_l|| ~ 1``) and a small
    task-specific part ``e_l ~ N(0, I / d)``. Each task has ``n`` Gaussian
    inputs ``x ~ N(0, I_d)`` and targets ``y = x^T u_l + noise * N(0, 1)``;
    ``info["ys_sign"]`` holds ``sign(y)`` (ties to +1) for classification losses.
    """
    d, m, n, h_true = int(d), int(m), int(n), int(h_true)
    if d < 1 or m < 1 or n < 1:
        raise ValueError(f"d, m and n must be >= 1, got d={d}, m={m}, n={n}")
    if not 1 <= h_true <= d:
        raise ValueError(f"h_true must lie in [1, d={d}], got {h_true}")
    if noise < 0 or specific < 0:
        raise ValueError("noise and specific must be >= 0")
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(d, h_true)))
    Theta = Q.T  # (h_true, d), orthonormal rows
    Vtrue = rng.normal(size=(h_true, m)) / np.sqrt(h_true)
    U = Theta.T @ Vtrue + specific * rng.normal(size=(d, m)) / np.sqrt(d)
    Xs, ys, ys_sign = [], [], []
    for t in range(m):
        X = rng.normal(size=(n, d))
        y = X @ U[:, t] + noise * rng.normal(size=n)
        Xs.append(X)
        ys.append(y)
        ys_sign.append(np.where(y >= 0.0, 1.0, -1.0))
    return Problem(
        data={"Xs": Xs, "ys": ys},
        name="subspace",
        description=(f"{m} tasks x {n} samples in {d}-D sharing a {h_true}-D subspace "
                     f"(noise {noise:g}, task-specific {specific:g}); sign targets for "
                     "hinge/logistic"),
        info={"Theta_true": Theta, "U_true": U, "ys_sign": ys_sign, "h_true": h_true,
              "d": d, "m": m},
    )


def _pca(X: np.ndarray, k: int) -> np.ndarray:
    Xc = X - X.mean(axis=0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    Z = Xc @ Vt[:k].T
    sd = Z.std(axis=0)
    sd[sd == 0] = 1.0
    return Z / sd


def digits_ovr(seed: int = 0, *, n: int = 60, d: int = 16) -> Problem:
    """scikit-learn digits as 10 one-vs-rest tasks with +-1 labels.

    Pixels are standardised and projected on their ``d`` leading principal
    components (each scaled to unit variance). Task ``l`` ("digit l against
    the rest") gets its own random sample of ``n`` images, half of them of
    digit ``l`` and half of the other digits, labelled +1 / -1. The same
    labels serve the squared loss as +-1 regression targets.
    """
    n, d = int(n), int(d)
    if not 2 <= n <= 340:
        raise ValueError(f"n must lie in [2, 340] samples per task, got {n}")
    if not 1 <= d <= 64:
        raise ValueError(f"d must lie in [1, 64] principal components, got {d}")
    X, y = load_real("digits")
    Z = _pca(X, d)
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for digit in range(10):
        pos = np.flatnonzero(y == digit)
        neg = np.flatnonzero(y != digit)
        n_pos = min(n // 2, pos.size)
        idx = np.concatenate([rng.choice(pos, n_pos, replace=False),
                              rng.choice(neg, n - n_pos, replace=False)])
        rng.shuffle(idx)
        Xs.append(Z[idx])
        ys.append(np.where(y[idx] == digit, 1.0, -1.0))
    return Problem(
        data={"Xs": Xs, "ys": ys},
        name="digits",
        description=(f"scikit-learn digits: 10 one-vs-rest tasks x {n} images, "
                     f"{d} principal components"),
        info={"ys_sign": ys, "d": d, "m": 10},
    )


# -------------------------------------------------------------------- user files


def _file_roles():
    from ...datafiles import FileRoles

    return FileRoles(labels="real", tasks=True)


#: What a data file must hold for this model (see :mod:`explorer.datafiles`).
FILE_ROLES = _file_roles()


def _targets(y: np.ndarray, table, names=None):
    """Real targets, or +-1 for two distinct label values (``names``: the two)."""
    from ...datafiles import DataFileError

    if names is not None:
        return np.where(np.asarray(y) == names[1], 1.0, -1.0)
    if y.dtype.kind not in "iuf":
        raise DataFileError(f"{table.name}: column {table.label_name!r} holds text labels "
                            f"with more than two values; this model takes real targets or "
                            "two classes")
    return np.asarray(y, dtype=np.float64)


def from_table(table, test=None, **_opts) -> Problem:
    """A user's file: features, targets and a task column (one task per distinct value).

    Two distinct target values are read as classes (``-1``/``+1``, the larger / later one
    positive) for every loss; otherwise the targets are real (squared loss) and their
    signs serve the hinge and logistic losses.
    """
    from ...datafiles import dense, held_out_labels, per_task, source_info, task_codes

    X = dense(table, "caso")
    names, codes, tcodes = task_codes(table, test)
    labels = np.unique(table.y)
    two = labels if labels.size == 2 else None
    y = _targets(table.y, table, two)
    m = names.size
    Xs, ys = per_task(X, y, codes, m, table)
    sign = [np.where(v >= 0.0, 1.0, -1.0) for v in ys]
    info = {**source_info(table, test), "task_names": names, "ys_sign": sign,
            "d": X.shape[1], "m": m}
    if two is not None:
        info["class_names"] = two
    if test is not None and test.y is not None:
        ytest = test.y if two is None else held_out_labels(test, two, table)  # no unseen class
        assert tcodes is not None  # given with the test rows
        Xt, yt = per_task(dense(test, "caso"), _targets(ytest, test, two), tcodes, m, test)
        info.update(Xs_test=Xt, ys_test=yt,
                    ys_sign_test=[np.where(v >= 0.0, 1.0, -1.0) for v in yt])
    return Problem(data={"Xs": Xs, "ys": ys}, name=table.name,
                   description=f"file {table.name}: {m} tasks, {X.shape[0]} samples, "
                               f"{X.shape[1]} features"
                               + (f"; {test.n} held out" if test is not None else ""),
                   info=info)
