"""Datasets for robust temporal multitask regression.

``temporal_tasks`` is the synthetic generator the model is built for: ``m``
tasks ordered in time whose weight vectors drift smoothly, share a low-rank
structure and use only a few features (sparse rows), observed with
task-specific noise levels and, optionally, heavy-tailed outliers -- the
situation a non-squared (robust, self-calibrating) loss is meant for.

``diabetes_in_time`` is an honest *illustration* on real data: scikit-learn's
diabetes regression set (442 patients, 10 standardised features) sorted by
age and cut into consecutive age groups that play the role of "time steps".
Nothing in that data is truly temporal; it only shows the solver on real
features with heterogeneous tasks.
"""

from __future__ import annotations

import numpy as np

from ...registry import Problem

__all__ = ["diabetes_in_time", "temporal_tasks"]


def temporal_tasks(seed: int = 0, *, m: int = 12, d: int = 30, n: int = 40, rank: int = 3,
                   active: float = 0.3, noise_min: float = 0.1, noise_max: float = 1.0,
                   outliers: float = 0.0) -> Problem:
    """Synthetic temporal tasks: sparse rows, low rank, smooth drift, per-task noise.

    Model::

        W_true = U C^T,   U (d x rank) nonzero only on ``round(active d)`` rows,
        C[t, k] = a_k + b_k cos(2 pi f_k t / m + phi_k),  f_k in [0.2, 1]  (slow drift),
        X_i ~ N(0, 1)^{n x d},  y_i = X_i w_i + sigma_i e_i,
        sigma_i log-uniform in [noise_min, noise_max],  e_i ~ N(0, 1),

    and a fraction ``outliers`` of the targets of every task receives an extra
    heavy-tailed error ``10 sigma_i t_1.5`` (Student t with 1.5 degrees of freedom).

    Parameters
    ----------
    m, d, n : int
        Tasks (time steps), features, samples per task.
    rank : int
        Rank of ``W_true`` (at most ``min(d_active, m)``).
    active : float in (0, 1]
        Fraction of features (rows of ``W_true``) that are used.
    noise_min, noise_max : float
        Range of the per-task noise standard deviations.
    outliers : float in [0, 1)
        Fraction of corrupted targets per task.
    """
    m, d, n, rank = int(m), int(d), int(n), int(rank)
    if m < 1 or d < 1 or n < 1:
        raise ValueError(f"m, d and n must be >= 1, got m={m}, d={d}, n={n}")
    if not 0.0 < active <= 1.0:
        raise ValueError(f"active must lie in (0, 1], got {active}")
    if not 0.0 < noise_min <= noise_max:
        raise ValueError(f"need 0 < noise_min <= noise_max, got {noise_min}, {noise_max}")
    if not 0.0 <= outliers < 1.0:
        raise ValueError(f"outliers must lie in [0, 1), got {outliers}")
    rng = np.random.default_rng(seed)
    n_active = max(1, round(active * d))
    rank = max(1, min(rank, n_active, m))
    rows = np.sort(rng.choice(d, size=n_active, replace=False))
    U = np.zeros((d, rank))
    U[rows] = rng.normal(size=(n_active, rank)) / np.sqrt(rank)
    t = np.arange(m)
    freq = rng.uniform(0.2, 1.0, size=rank)
    phase = rng.uniform(0, 2 * np.pi, size=rank)
    C = rng.normal(size=rank) + rng.uniform(0.5, 1.5, size=rank) * np.cos(
        2 * np.pi * np.outer(t, freq) / max(m, 1) + phase)
    W = U @ C.T
    sigmas = np.exp(rng.uniform(np.log(noise_min), np.log(noise_max), size=m))
    Xs, ys, masks = [], [], []
    for i in range(m):
        X = rng.normal(size=(n, d))
        y = X @ W[:, i] + sigmas[i] * rng.normal(size=n)
        mask = rng.random(n) < outliers
        y[mask] += 10.0 * sigmas[i] * rng.standard_t(1.5, size=int(mask.sum()))
        Xs.append(X)
        ys.append(y)
        masks.append(mask)
    desc = (f"{m} time-ordered tasks, d={d} features ({n_active} active), n={n} samples each, "
            f"rank {rank}, noise sd {noise_min:g}..{noise_max:g}"
            + (f", {outliers:.0%} heavy-tailed outliers" if outliers > 0 else ""))
    return Problem(
        data={"Xs": Xs, "ys": ys},
        name="temporal",
        description=desc,
        info={"W_true": W, "sigmas": sigmas, "active_rows": rows, "rank": rank,
              "outlier_masks": masks},
    )


def diabetes_in_time(seed: int = 0, *, m: int = 8) -> Problem:
    """scikit-learn diabetes data sorted by age and split into ``m`` consecutive age groups.

    An illustration only: the "time" axis is patient age, not time. Features
    and target are standardised (age itself is kept as a feature). ``seed``
    is unused (the split is deterministic).
    """
    from sklearn.datasets import load_diabetes

    m = int(m)
    if not 2 <= m <= 40:
        raise ValueError(f"m must lie in [2, 40], got {m}")
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    order = np.argsort(X[:, 0], kind="stable")
    groups = np.array_split(order, m)
    Xs = [X[g] for g in groups]
    ys = [y[g] for g in groups]
    ages = [(float(X[g, 0].min()), float(X[g, 0].max())) for g in groups]
    return Problem(
        data={"Xs": Xs, "ys": ys},
        name="diabetes",
        description=(f"scikit-learn diabetes (442 patients, 10 standardised features) sorted by "
                     f"age into {m} groups -- an illustration, not real temporal data"),
        info={"age_ranges_standardised": ages,
              "feature_names": ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]},
    )


# -------------------------------------------------------------------- user files


def _file_roles():
    from ...datafiles import FileRoles

    return FileRoles(labels="real", tasks=True, time=True, center_targets=True)


#: What a data file must hold for this model (see :mod:`explorer.datafiles`).
FILE_ROLES = _file_roles()


def from_table(table, test=None, **_opts) -> Problem:
    """A user's file: features, real targets and the tasks as time steps.

    The time order is that of the sorted task ids, or, with a time column, of each
    task's earliest time (a time column alone makes each distinct time a task).
    """
    from ...datafiles import DataFileError, dense, per_task, source_info, task_codes

    if table.y.dtype.kind not in "iuf":
        raise DataFileError(f"{table.name}: column {table.label_name!r} holds text labels; "
                            "robust_mtl takes real targets")
    X = dense(table, "robust_mtl")
    names, codes, tcodes = task_codes(table, test, time_order=True)
    m = names.size
    Xs, ys = per_task(X, np.asarray(table.y, dtype=np.float64), codes, m, table)
    info = {**source_info(table, test), "task_names": names, "d": X.shape[1], "m": m}
    if test is not None and test.y is not None:
        assert tcodes is not None  # given with the test rows
        Xt, yt = per_task(dense(test, "robust_mtl"), np.asarray(test.y, dtype=np.float64),
                          tcodes, m, test)
        info.update(Xs_test=Xt, ys_test=yt)
    return Problem(data={"Xs": Xs, "ys": ys}, name=table.name,
                   description=f"file {table.name}: {m} time-ordered tasks, {X.shape[0]} "
                               f"samples, {X.shape[1]} features"
                               + (f"; {test.n} held out" if test is not None else ""),
                   info=info)
