"""Datasets for MT-MKL: the paper's hierarchical task generator and digits as a task tree.

Every problem carries ``data = {"X", "y", "tasks", "G"}`` (the arguments of
:func:`solvers.mtmkl.solve`; ``G`` holds one 0/1 matrix per tree node in factor
form, :class:`solvers.mtmkl.FactoredSimilarities`: each node's leaf indicator)
and, in ``info``, a test split (``X_test``, ``y_test``, ``tasks_test``), the
tree (``parent``, ``leaves_under``, ``node_names``, ``depth_of``) and a
reference task similarity (``true_similarity``).
"""

from __future__ import annotations

import numpy as np

from solvers.mtmkl import FactoredSimilarities

from ...datasets import load_real
from ...registry import Problem

__all__ = ["digits_tree", "hierarchy", "node_similarities", "tree_from_linkage"]


def node_similarities(leaves_under: list[np.ndarray], T: int) -> list[np.ndarray]:
    """One 0/1 matrix per tree node: ``G[s, t] = 1`` iff leaves s and t are both under it.

    Each is ``v v^T`` with ``v`` the node's leaf indicator: PSD of rank 1.
    """
    out = []
    for leaves in leaves_under:
        v = np.zeros(T)
        v[leaves] = 1.0
        out.append(np.outer(v, v))
    return out


def _binary_tree(depth: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Heap-ordered complete binary tree: node k has children 2k+1, 2k+2."""
    n_nodes = 2 ** (depth + 1) - 1
    parent = np.array([-1] + [(k - 1) // 2 for k in range(1, n_nodes)], dtype=np.int64)
    level = np.floor(np.log2(np.arange(n_nodes) + 1)).astype(np.int64)
    first_leaf = 2**depth - 1
    leaves_under = []
    for k in range(n_nodes):
        lo, hi = k, k
        for _ in range(depth - level[k]):
            lo, hi = 2 * lo + 1, 2 * hi + 2
        leaves_under.append(np.arange(lo, hi + 1) - first_leaf)
    return parent, leaves_under, level


def hierarchy(seed: int = 0, *, depth: int = 5, d: int = 100, flips: int = 5,
              n_train: int = 10, n_test: int = 1000, sigma: float = 20.0,
              standardize: bool = True) -> Problem:
    """The paper's synthetic experiment (section 4).

    A binary tree of the given ``depth`` (levels below the root, 1..10; 5
    gives the paper's 32 leaves). The root carries ``mu = (1, ..., 1)`` in ``d``
    dimensions; every child copies its parent's ``mu`` and flips the sign of
    ``flips`` random coordinates. The leaves are the tasks. Each task draws
    ``n_train`` training and ``n_test`` test points per class from
    ``N(+0.5 mu_leaf, sigma^2 I)`` (label +1) and ``N(-0.5 mu_leaf, sigma^2 I)``
    (label -1). One similarity matrix per tree node (``2^(depth+1) - 1`` of
    them, root and leaves included, as the nodes' leaf indicators in factor
    form); the true task similarity is the matrix of dot products of the
    leaves' ``mu``.

    With ``standardize`` (default) the features are returned in units of the
    noise, ``x / sigma``: the same classification problem, and the same SVM
    solutions with ``C_raw = C / sigma^2``, but a loss weight ``C`` on the
    scale of the other datasets (``||x||^2 ~ d``).
    """
    depth, d, flips = int(depth), int(d), int(flips)
    n_train, n_test = int(n_train), int(n_test)
    if not 1 <= depth <= 10:
        raise ValueError(f"depth must lie in 1..10, got {depth}")
    if d < 1 or not 0 <= flips <= d:
        raise ValueError(f"need d >= 1 and 0 <= flips <= d, got d={d}, flips={flips}")
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got {n_train}, {n_test}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    rng = np.random.default_rng(seed)
    parent, leaves_under, level = _binary_tree(depth)
    n_nodes = parent.shape[0]
    mu = np.empty((n_nodes, d))
    mu[0] = 1.0
    for k in range(1, n_nodes):
        mu[k] = mu[parent[k]]
        mu[k, rng.choice(d, size=flips, replace=False)] *= -1.0
    T = 2**depth
    mu_leaf = mu[n_nodes - T:]

    def draw(per_class: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        y = np.tile(np.repeat([1.0, -1.0], per_class), T)
        tasks = np.repeat(np.arange(T), 2 * per_class)
        X = 0.5 * y[:, None] * mu_leaf[tasks] + sigma * rng.normal(size=(y.size, d))
        return X, y, tasks

    X, y, tasks = draw(n_train)
    X_test, y_test, tasks_test = draw(n_test)
    if standardize:
        X, X_test = X / sigma, X_test / sigma
    names = ["root"] + [f"L{level[k]}.{k - (2 ** level[k] - 1)}" for k in range(1, n_nodes)]
    G = FactoredSimilarities.from_groups(leaves_under, T)
    return Problem(
        data={"X": X, "y": y, "tasks": tasks, "G": G},
        name="hierarchy",
        description=(f"{T} tasks (binary tree of depth {depth}, {n_nodes} node similarities), "
                     f"d={d}, {n_train}+{n_train} training and {n_test}+{n_test} test points "
                     f"per task, sigma={sigma:g}, {flips} sign flips per edge"
                     + (" (features / sigma)" if standardize else "")),
        info={
            "X_test": X_test, "y_test": y_test, "tasks_test": tasks_test,
            "true_similarity": mu_leaf @ mu_leaf.T,
            "mu_leaf": mu_leaf, "mu_nodes": mu, "parent": parent, "leaves_under": leaves_under,
            "depth_of": level, "node_names": names, "T": T,
        },
    )


def tree_from_linkage(Z: np.ndarray, T: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Nodes of a scipy linkage tree as ``(parent, leaves_under, depth_of)``.

    Node order: the root first, then breadth first; the T leaves keep their
    ids as leaf sets ``[t]``.
    """
    n_nodes = 2 * T - 1
    children = {T + i: (int(Z[i, 0]), int(Z[i, 1])) for i in range(T - 1)}
    order = [n_nodes - 1]
    k = 0
    while k < len(order):
        node = order[k]
        if node in children:
            order.extend(children[node])
        k += 1
    pos = {node: i for i, node in enumerate(order)}
    parent = np.full(n_nodes, -1, dtype=np.int64)
    depth_of = np.zeros(n_nodes, dtype=np.int64)
    for node in order:
        if node in children:
            for c in children[node]:
                parent[pos[c]] = pos[node]
                depth_of[pos[c]] = depth_of[pos[node]] + 1

    def leaves(node: int) -> list[int]:
        return [node] if node < T else leaves(children[node][0]) + leaves(children[node][1])

    return parent, [np.array(sorted(leaves(node))) for node in order], depth_of


def digits_tree(seed: int = 0, *, n_train: int = 10, n_test: int = 0) -> Problem:
    """scikit-learn digits as ten one-vs-rest tasks tied by a tree of visual similarity.

    Task t separates digit t (+1) from the other digits (-1). Each task gets
    ``n_train`` positive and ``n_train`` negative training images, disjoint
    across tasks; the remaining images form the test set, shared by all
    tasks (labelled per task), optionally subsampled to ``n_test`` images.

    Why this hierarchy: for a shared covariance the best linear one-vs-rest
    direction for digit t is ``Sigma^{-1}(m_t - m_rest(t))`` with
    ``m_rest(t) = (N m - m_t) / (N - 1)``, i.e. proportional to
    ``Sigma^{-1}(m_t - m)``: two tasks' weight vectors are close exactly when
    their class means are. Ward's agglomerative clustering of the ten class
    means (standardised pixels, training images only) therefore groups tasks
    whose weights are close, the analogue of the paper's evolutionary tree;
    one 0/1 similarity matrix per node (19 for 10 leaves), as in the
    synthetic experiment. ``true_similarity`` is only a reference, not a
    ground truth: the cosine similarity of the class means' deviations from
    their grand mean.

    What it shows (measured, seeds 0-2, 10 + 10 training images per task):
    negative transfer. Close weight vectors are not the same as shareable
    ones: siblings in a visual-similarity tree (3/5/8/9, 1/7, ...) are each
    other's hardest negatives, and shrinking their weights together blurs
    exactly the difference that separates them. Mean test AUC at C = 0.01:
    Individual 0.95, Vanilla 0.89, MT-MKL p = 3 0.89, p = 2 0.87, p = 1 0.76,
    Union 0.50 (Union pools contradictory labels).
    """
    from scipy.cluster.hierarchy import linkage

    n_train = int(n_train)
    if not 1 <= n_train <= 80:
        raise ValueError(f"n_train must lie in 1..80 (per class and task), got {n_train}")
    X, lab = load_real("digits")
    rng = np.random.default_rng(seed)
    T = 10
    free = np.ones(X.shape[0], dtype=bool)
    Xs, ys, ts = [], [], []
    for t in range(T):
        pos = rng.permutation(np.flatnonzero(free & (lab == t)))[:n_train]
        free[pos] = False
        neg = rng.permutation(np.flatnonzero(free & (lab != t)))[:n_train]
        free[neg] = False
        idx = np.concatenate([pos, neg])
        Xs.append(X[idx])
        ys.append(np.where(lab[idx] == t, 1.0, -1.0))
        ts.append(np.full(idx.size, t))
    X_tr, y_tr, t_tr = np.vstack(Xs), np.concatenate(ys), np.concatenate(ts)
    test = np.flatnonzero(free)
    if n_test and int(n_test) < test.size:
        test = np.sort(rng.choice(test, size=int(n_test), replace=False))
    # every task is evaluated on every test image
    X_te = np.tile(X[test], (T, 1))
    t_te = np.repeat(np.arange(T), test.size)
    y_te = np.where(np.tile(lab[test], T) == t_te, 1.0, -1.0)
    lab_tr = np.concatenate([np.where(ys[t] == 1.0, t, -1) for t in range(T)])
    means = np.array([X_tr[lab_tr == t].mean(axis=0) for t in range(T)])
    parent, leaves_under, depth_of = tree_from_linkage(linkage(means, method="ward"), T)
    dev = means - means.mean(axis=0)
    dev /= np.linalg.norm(dev, axis=1, keepdims=True)
    names = []
    for leaves in leaves_under:
        names.append("{" + ",".join(str(int(v)) for v in leaves) + "}" if leaves.size < T
                     else "root")
    return Problem(
        data={"X": X_tr, "y": y_tr, "tasks": t_tr,
              "G": FactoredSimilarities.from_groups(leaves_under, T)},
        name="digits",
        description=(f"scikit-learn digits, 10 one-vs-rest tasks, {n_train}+{n_train} "
                     f"training images per task, {test.size} test images; tree of 19 nodes "
                     "from Ward clustering of the class means"),
        info={
            "X_test": X_te, "y_test": y_te, "tasks_test": t_te,
            "true_similarity": dev @ dev.T, "parent": parent, "leaves_under": leaves_under,
            "depth_of": depth_of, "node_names": names, "T": T,
        },
    )


# -------------------------------------------------------------------- user files


def _file_roles():
    from ...datafiles import FileRoles

    return FileRoles(labels="binary", tasks=True)


#: What a data file must hold for this model (see :mod:`explorer.datafiles`).
FILE_ROLES = _file_roles()


def from_table(table, test=None, **_opts) -> Problem:
    """A user's file: features, binary labels and a task column.

    The task similarities are the flat hierarchy (all tasks together, then each
    task alone), as :class:`solvers.estimators.MultiTaskMKLClassifier` without a tree;
    the second of the two sorted label values is the positive class.
    """
    from ...datafiles import class_codes, dense, source_info, task_codes

    X = dense(table, "mtmkl")
    classes, codes, test_codes = class_codes(table, "mtmkl", binary=True, test=test)
    names, tasks, ttasks = task_codes(table, test)
    T = names.size
    leaves_under = [np.arange(T)] + ([np.array([t]) for t in range(T)] if T > 1 else [])
    parent = np.array([-1] + [0] * (len(leaves_under) - 1), dtype=np.int64)
    depth_of = np.array([0] + [1] * (len(leaves_under) - 1), dtype=np.int64)
    info = {**source_info(table, test), "class_names": classes, "task_names": names, "T": T,
            "parent": parent, "leaves_under": leaves_under, "depth_of": depth_of,
            "node_names": ["root", *[str(v) for v in names][:len(leaves_under) - 1]],
            "d": X.shape[1]}
    if test is not None and test_codes is not None:
        info.update(X_test=dense(test, "mtmkl"), y_test=np.where(test_codes == 1, 1.0, -1.0),
                    tasks_test=ttasks)
    return Problem(data={"X": X, "y": np.where(codes == 1, 1.0, -1.0), "tasks": tasks,
                         "G": node_similarities(leaves_under, T)},
                   name=table.name,
                   description=f"file {table.name}: {T} tasks, {X.shape[0]} samples, "
                               f"{X.shape[1]} features, labels "
                               f"{[c.item() if isinstance(c, np.generic) else c for c in classes]}"
                               " as -1/+1"
                               + (f"; {test.n} held out" if test is not None else ""),
                   info=info)
