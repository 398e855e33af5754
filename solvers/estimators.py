r"""scikit-learn estimators over every dualscope solver.

Thin wrappers (in the style of skglm and celer): each ``fit`` validates the data
the scikit-learn way, encodes labels and task ids, calls the model's ``solve``
once and keeps its certified :class:`~solvers.base.Result` as ``result_``.
Every hyper-parameter, its default and its admissible values come from the
model's ``PARAMS`` spec (:mod:`solvers.params`): ``__init__``, the docstring's
parameter list and ``_parameter_constraints`` are generated from it, so nothing
here repeats a default or a list of choices. A solver ``seed`` becomes
``random_state`` (default: the spec's seed).

Common fitted attributes: ``result_`` (the solver's result), ``n_iter_``,
``primal_``, ``dual_``, ``dual_gap_`` (``primal_ - dual_ >= 0``, a certified
bound on the suboptimality of the fit), ``converged_``, ``stop_reason_``,
``n_features_in_``. A fit that stops before its gap reaches ``tol`` warns with
:class:`solvers.ConvergenceWarning` (a subclass of scikit-learn's).
``warm_start=True`` starts the next ``fit`` on data of the same shape from the
previous solution (``init=result_``).

Multitask estimators take ``fit(X, y, tasks=None)``: ``tasks`` gives each
sample's task id (any sortable hashable; ``None``: one task), and
``predict(X, tasks=None)`` / ``score(X, y, tasks=None)`` use the same ids. With
``sklearn.set_config(enable_metadata_routing=True)`` it is routed like any
sample-aligned metadata::

    est = ConvexASORegressor().set_fit_request(tasks=True).set_score_request(tasks=True)
    cross_validate(est, X, y, params={"tasks": tasks})
"""

from __future__ import annotations

from numbers import Integral
from types import ModuleType
from typing import Any

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import caso, mtmkl, robust_mtl, saved, triplet_screening, wwsvm
from .params import ParamSpecs
from .validation import encode_labels

__all__ = [
    "ConvexASOClassifier",
    "ConvexASORegressor",
    "MultiTaskMKLClassifier",
    "RobustTemporalMTLRegressor",
    "SafeTripletMetricLearner",
    "WestonWatkinsSVC",
]


# ---------------------------------------------------------------------------
# Parameters generated from a model's spec
# ---------------------------------------------------------------------------


class _Extra:
    """An estimator-only parameter (not a solver parameter): default, constraint, doc."""

    def __init__(self, default: Any, constraint: list[Any], doc: str) -> None:
        self.default, self.constraint, self.doc = default, constraint, doc


def _from_spec(module: ModuleType, *, exclude: tuple[str, ...] = (), override: dict | None = None,
               extra: dict[str, _Extra] | None = None):
    """Class decorator: ``__init__``, ``_parameter_constraints`` and the doc from ``PARAMS``.

    Every parameter of the model ``module``'s ``PARAMS`` except ``exclude`` becomes a
    keyword of ``__init__`` with the spec's default; ``seed`` becomes
    ``random_state``; ``override`` replaces a spec parameter by an :class:`_Extra`
    (a restricted choice list, e.g. the classifiers' losses); ``extra`` adds
    estimator-only parameters (``warm_start``, ...).
    """
    override = override or {}
    extra = {"warm_start": _Extra(False, ["boolean"], "start from the previous fit's "
                                  "solution (data of the same shape)"), **(extra or {})}

    def decorate(cls):
        specs: ParamSpecs = module.PARAMS
        names: list[str] = []
        defaults: dict[str, Any] = {}
        constraints: dict[str, list[Any]] = {}
        docs: list[str] = []
        for name, spec in specs.items():
            if name in exclude:
                continue
            if name in override:
                ex = override[name]
                default, cons, doc, what = ex.default, ex.constraint, ex.doc, ""
            elif name == "seed":
                name, default, cons = "random_state", spec.default, ["random_state"]
                doc, what = ("seed of the solver's random order (int, RandomState "
                             "or None)"), ""
            else:
                default, cons, doc = spec.surface_default, spec.sklearn_constraint(), spec.doc
                what = spec.describe()
                if default is None and cons != "no_validation" and None not in cons:
                    cons = [*cons, None]
            names.append(name)
            defaults[name] = default
            constraints[name] = cons
            docs.append(f"{name} : {what + ', ' if what else ''}default={default!r}\n"
                        f"    {doc[:1].upper() + doc[1:]}.")
        for name, ex in extra.items():
            names.append(name)
            defaults[name] = ex.default
            constraints[name] = ex.constraint
            docs.append(f"{name} : default={ex.default!r}\n    {ex.doc[:1].upper() + ex.doc[1:]}.")

        src = ("def __init__(self, *, " + ", ".join(f"{n}=_d[{n!r}]" for n in names)
               + "):\n" + "".join(f"    self.{n} = {n}\n" for n in names))
        ns: dict[str, Any] = {"_d": defaults}
        exec(src, ns)  # a real signature: scikit-learn's get_params introspects it
        init = ns["__init__"]
        init.__qualname__ = f"{cls.__name__}.__init__"
        init.__module__ = cls.__module__
        cls.__init__ = init
        cls._parameter_constraints = constraints
        cls._solver_module = module
        cls._spec_names = tuple(n for n in specs if n not in exclude)
        params_doc = ("    Parameters\n    ----------\n    "
                      + "\n    ".join(d.replace("\n", "\n    ") for d in docs) + "\n\n")
        doc = cls.__doc__ or ""
        at = doc.find("    Attributes\n")  # numpydoc order: Parameters, then Attributes
        cls.__doc__ = doc[:at] + params_doc + doc[at:] if at >= 0 else doc + "\n" + params_doc
        return cls

    return decorate


class _SolverEstimator(BaseEstimator):
    """What every estimator shares: solver keywords, the warm start, the result."""

    _solver_module: ModuleType
    _spec_names: tuple[str, ...] = ()

    @property
    def _module(self) -> ModuleType:
        return self._solver_module

    def _solver_kwargs(self) -> dict[str, Any]:
        kw = {}
        for name in self._spec_names:
            if name == "seed":
                rs = self.random_state
                kw["seed"] = rs if isinstance(rs, Integral) and not isinstance(rs, bool) \
                    else int(check_random_state(rs).randint(np.iinfo(np.int32).max))
            else:
                kw[name] = getattr(self, name)
        return kw

    def _init_for(self, key: tuple) -> Any:
        """The previous result when warm starting on data of the same shape, else None."""
        if self.warm_start and getattr(self, "_warm_key", None) == key:
            return getattr(self, "result_", None)
        return None

    def _decide(self, X: Any, task_index: np.ndarray | None = None) -> np.ndarray:
        """The model's decision values (or transform) of validated rows ``X``.

        Computed by the model's :class:`~solvers.saved.SavedForm` on the fitted result
        (:func:`solvers.saved.decide_fitted`): prediction is written once, in the model's
        module, for the estimators and saved models alike.
        """
        return saved.decide_fitted(self, X, task_index)

    def _store(self, res: Any, key: tuple) -> None:
        self.result_ = res
        self._warm_key = key
        self.n_iter_ = int(res.n_iter)
        self.primal_ = float(res.primal)
        self.dual_ = float(res.dual)
        self.dual_gap_ = float(res.gap)
        self.converged_ = bool(res.converged)
        self.stop_reason_ = str(res.stop_reason)


def _task_codes(tasks: Any, n: int, known: np.ndarray | None = None, *, name: str = "tasks"
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(task labels, codes)``; with ``known`` (fitted labels) map onto them."""
    if tasks is None:
        if known is not None and known.size > 1:
            raise ValueError(f"{name} is required: the model was fitted on {known.size} "
                             "tasks (pass each sample's task id)")
        labels = np.array([0]) if known is None else known
        return labels, np.zeros(n, dtype=np.int64)
    labels, codes = encode_labels(tasks, name, size=n, min_classes=1)
    if known is None:
        return labels, codes
    try:
        pos = np.searchsorted(known, labels)
        ok = (pos < known.size) & (known[np.minimum(pos, known.size - 1)] == labels)
    except TypeError as exc:
        raise TypeError(f"{name} are not comparable with the fitted task ids: {exc}") from exc
    if not np.all(ok):
        raise ValueError(f"{name} contains task ids not seen in fit: "
                         f"{labels[~ok].tolist()[:5]} (fitted: {known.tolist()[:10]})")
    return known, pos[codes]


def _split(X: np.ndarray, y: np.ndarray, codes: np.ndarray, m: int
           ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    idx = [np.flatnonzero(codes == t) for t in range(m)]
    return [X[i] for i in idx], [y[i] for i in idx]


def _binary(est: Any, y: Any) -> np.ndarray:
    """Encode binary labels as -1/+1, setting ``classes_``."""
    check_classification_targets(y)
    classes, codes = encode_labels(y, "y", min_classes=1)
    if classes.size < 2:
        raise ValueError(f"{type(est).__name__} needs samples of 2 classes in y; got 1 class "
                         f"({classes.tolist()})")
    if classes.size > 2:
        raise ValueError(f"Only binary classification is supported. The type of the target "
                         f"is multiclass: y has {classes.size} classes ({type(est).__name__} "
                         "is a binary classifier).")
    est.classes_ = classes
    return np.where(codes == 1, 1.0, -1.0)


def _cosine(U: np.ndarray) -> np.ndarray:
    """Cosine similarity of the columns of ``U`` (0 for a zero column)."""
    nrm = np.linalg.norm(U, axis=0)
    safe = np.where(nrm > 0, nrm, 1.0)
    S = (U / safe).T @ (U / safe)
    np.fill_diagonal(S, np.where(nrm > 0, 1.0, 0.0))
    return S


class _BinaryTaskClassifier(ClassifierMixin):
    """``predict``/``score`` of a binary multitask classifier from its ``decision_function``."""

    def predict(self, X: Any, tasks: Any = None) -> np.ndarray:
        """``classes_[1]`` where ``decision_function(X, tasks) > 0``, else ``classes_[0]``."""
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X, tasks) > 0).astype(int)]

    def score(self, X: Any, y: Any, tasks: Any = None, sample_weight: Any = None) -> float:
        """Accuracy of ``predict(X, tasks)``."""
        return float(accuracy_score(y, self.predict(X, tasks), sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


# ---------------------------------------------------------------------------
# Weston–Watkins SVM
# ---------------------------------------------------------------------------


@_from_spec(wwsvm, override={"fit_intercept": _Extra(
    True, ["boolean"], "learn per-class offsets as the weights of a constant feature "
    "intercept_scaling (LIBLINEAR's regularised bias; False: the paper's model)")})
class WestonWatkinsSVC(ClassifierMixin, _SolverEstimator):
    r"""Weston–Watkins multiclass linear SVM, certified (:func:`solvers.wwsvm.solve`).

    ``min_{W, b} 1/2 ||W||_F^2 + 1/2 ||b||^2 / s^2
    + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i - (b_{y_i} - b_j))``
    with ``s = intercept_scaling`` (LIBLINEAR's regularised bias feature); with
    ``fit_intercept=False`` the paper's model without offsets. Dense or
    scipy.sparse ``X``. Any hashable labels; ``classes_`` are the distinct labels.

    Attributes
    ----------
    classes_ : ndarray, shape (n_classes,)
    coef_ : ndarray, shape (n_classes, n_features)
        One weight vector per class (``W.T``), also for two classes.
    intercept_ : ndarray, shape (n_classes,)
        The offsets ``b`` (zeros with ``fit_intercept=False``).
    result_ : solvers.wwsvm.WWSVMResult
    n_iter_, primal_, dual_, dual_gap_, converged_, stop_reason_
        Epochs run and the certificate of the fit.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers.estimators import WestonWatkinsSVC
    >>> X = np.array([[2.0, 0.0], [0.0, 2.0], [-2.0, -2.0], [1.5, 0.2], [0.1, 1.5],
    ...               [-1.0, -1.5]])
    >>> y = np.array(["a", "b", "c", "a", "b", "c"])
    >>> clf = WestonWatkinsSVC(C=1.0).fit(X, y)
    >>> clf.predict(X).tolist(), clf.converged_
    (['a', 'b', 'c', 'a', 'b', 'c'], True)
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> WestonWatkinsSVC:
        """Fit on ``X`` (n, d) and labels ``y`` (any hashable, at least 2 classes)."""
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=("csr", "csc", "coo"),
                             accept_large_sparse=True)
        check_classification_targets(y)
        classes, codes = encode_labels(y, "y", min_classes=1)
        if classes.size < 2:
            raise ValueError(f"WestonWatkinsSVC needs samples of at least 2 classes; got 1 "
                             f"class ({classes.tolist()})")
        self.classes_ = classes
        key = (X.shape, codes.tobytes())  # warm start: same samples' labels
        res = self._module.solve(X, codes, init=self._init_for(key), **self._solver_kwargs())
        self.coef_ = np.ascontiguousarray(res.W.T)
        self.intercept_ = np.asarray(res.intercept, dtype=np.float64)
        self._store(res, key)
        return self

    def _scores(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64,
                          accept_sparse=("csr", "csc", "coo"), accept_large_sparse=True)
        return self._decide(X)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``X W + b`` (n, n_classes); for 2 classes ``score_1 - score_0`` (n,)."""
        S = self._scores(X)
        return S[:, 1] - S[:, 0] if S.shape[1] == 2 else S

    def predict(self, X: Any) -> np.ndarray:
        """The class of the largest score."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self._scores(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# ---------------------------------------------------------------------------
# Convex ASO
# ---------------------------------------------------------------------------


class _CASOBase(_SolverEstimator):
    _loss: str | None = None  # fixed loss (regressor) or None (the ``loss`` parameter)

    def _fit(self, X: Any, y: Any, tasks: Any, classify: bool) -> Any:
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=not classify)
        target = _binary(self, y) if classify else np.asarray(y, dtype=np.float64)
        self.tasks_, codes = _task_codes(tasks, X.shape[0])
        Xs, ys = _split(X, target, codes, self.tasks_.size)
        kw = self._solver_kwargs()
        if self._loss is not None:
            kw["loss"] = self._loss
        key = (X.shape, codes.tobytes())
        res = self._module.solve(Xs, ys, init=self._init_for(key), **kw)
        self.coef_ = np.ascontiguousarray(res.U.T)
        self.shared_subspace_ = res.Theta
        self.M_ = res.M
        self.task_similarity_ = _cosine(res.U)
        self._store(res, key)
        return self

    def _decision(self, X: Any, tasks: Any) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        _, codes = _task_codes(tasks, X.shape[0], self.tasks_)
        return self._decide(X, codes)


@_from_spec(caso, exclude=("loss",))
class ConvexASORegressor(RegressorMixin, _CASOBase):
    r"""Multitask least squares with a shared subspace: convex relaxed ASO (squared loss).

    ``min_{U, M} sum_l (1/n_l) sum_i (u_l^T x_i - y_i)^2 + c tr(U^T (eta I + M)^{-1} U)``
    over ``tr M = h, 0 <= M <= I``, ``c = alpha eta (1 + eta)``
    (:func:`solvers.caso.solve`), no intercept.

    Attributes
    ----------
    tasks_ : ndarray, shape (n_tasks,)
        The task ids seen in ``fit`` (sorted; ``[0]`` for ``tasks=None``).
    coef_ : ndarray, shape (n_tasks, n_features)
        Task weight vectors ``u_l`` (rows, in the order of ``tasks_``).
    shared_subspace_ : ndarray, shape (round(h), n_features)
        Orthonormal basis ``Theta`` of the learned shared subspace (top eigenvectors of M).
    M_ : ndarray, shape (n_features, n_features)
        The relaxed shared structure.
    task_similarity_ : ndarray, shape (n_tasks, n_tasks)
        Cosine similarity of the learned task weight vectors.
    result_ : solvers.caso.CASOResult
    n_iter_, primal_, dual_, dual_gap_, converged_, stop_reason_

    Examples
    --------
    >>> import numpy as np
    >>> from solvers.estimators import ConvexASORegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((18, 4)); tasks = np.arange(18) % 3
    >>> y = X @ np.array([1.0, -1.0, 0.0, 0.0])  # three tasks sharing one direction
    >>> reg = ConvexASORegressor(h=1.0).fit(X, y, tasks)
    >>> reg.converged_, reg.coef_.shape
    (True, (3, 4))
    """

    _loss = "squared"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, tasks: Any = None) -> ConvexASORegressor:
        """Fit on ``X`` (n, d), real targets ``y`` (n,) and each sample's task id."""
        return self._fit(X, y, tasks, classify=False)

    def predict(self, X: Any, tasks: Any = None) -> np.ndarray:
        """``x_i^T u_{task(i)}``."""
        return self._decision(X, tasks)

    def score(self, X: Any, y: Any, tasks: Any = None, sample_weight: Any = None) -> float:
        """R^2 of ``predict(X, tasks)``."""
        return float(r2_score(y, self.predict(X, tasks), sample_weight=sample_weight))


def _classification_losses():
    from sklearn.utils._param_validation import StrOptions

    losses = tuple(c for c in caso.PARAMS["loss"].choices if c != "squared")
    return _Extra(losses[0], [StrOptions(set(losses))], "classification loss: "
                  + " or ".join(losses) + " (labels encoded as -1/+1)")


@_from_spec(caso, override={"loss": _classification_losses()})
class ConvexASOClassifier(_BinaryTaskClassifier, _CASOBase):
    r"""Multitask binary classification with a shared subspace: convex relaxed ASO.

    As :class:`ConvexASORegressor` with the hinge ``max(0, 1 - y z)`` or
    logistic ``log(1 + exp(-y z))`` loss (labels: any two classes, ``classes_[1]``
    is the positive one).

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
    tasks_, coef_, shared_subspace_, M_, task_similarity_, result_
        As in :class:`ConvexASORegressor`.
    n_iter_, primal_, dual_, dual_gap_, converged_, stop_reason_
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, tasks: Any = None) -> ConvexASOClassifier:
        """Fit on ``X`` (n, d), binary labels ``y`` and each sample's task id."""
        return self._fit(X, y, tasks, classify=True)

    def decision_function(self, X: Any, tasks: Any = None) -> np.ndarray:
        """``x_i^T u_{task(i)}``: positive for ``classes_[1]``."""
        return self._decision(X, tasks)



# ---------------------------------------------------------------------------
# Robust temporal MTL
# ---------------------------------------------------------------------------


@_from_spec(robust_mtl)
class RobustTemporalMTLRegressor(RegressorMixin, _SolverEstimator):
    r"""Robust temporal multitask regression, certified (:func:`solvers.robust_mtl.solve`).

    ``min_W sum_i ||X_i w_i - y_i||_p + lam ||W||_{2,1} + gamma/2 ||W||_F^2
    + zeta/2 sum_i ||w_i - w_{i+1}||^2 + rho ||W||_*``: one task per time step,
    ``w_i`` next to ``w_{i+1}`` in the order of the sorted task ids.

    Attributes
    ----------
    tasks_ : ndarray, shape (n_tasks,)
        The task ids seen in ``fit``, sorted: their time order.
    coef_ : ndarray, shape (n_tasks, n_features)
        ``w_i`` per task (rows).
    loss_norms_ : ndarray, shape (n_tasks,)
        ``||X_i w_i - y_i||_p``.
    floor_ : float
        Part of the certified gap due to the smoothing ``mu`` (see the solver).
    result_ : solvers.robust_mtl.RobustMTLResult
    n_iter_, primal_, dual_, dual_gap_, converged_, stop_reason_
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, tasks: Any = None) -> RobustTemporalMTLRegressor:
        """Fit on ``X`` (n, d), targets ``y`` and each sample's task (time step) id."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        self.tasks_, codes = _task_codes(tasks, X.shape[0])
        Xs, ys = _split(X, np.asarray(y, dtype=np.float64), codes, self.tasks_.size)
        key = (X.shape, codes.tobytes())
        res = self._module.solve(Xs, ys, init=self._init_for(key), **self._solver_kwargs())
        self.coef_ = np.ascontiguousarray(res.W.T)
        self.loss_norms_ = np.asarray(res.loss_norms)
        self.floor_ = float(res.floor)
        self._store(res, key)
        return self

    def predict(self, X: Any, tasks: Any = None) -> np.ndarray:
        """``x^T w_{task}``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        _, codes = _task_codes(tasks, X.shape[0], self.tasks_)
        return self._decide(X, codes)

    def score(self, X: Any, y: Any, tasks: Any = None, sample_weight: Any = None) -> float:
        """R^2 of ``predict(X, tasks)``."""
        return float(r2_score(y, self.predict(X, tasks), sample_weight=sample_weight))


# ---------------------------------------------------------------------------
# Multi-task MKL
# ---------------------------------------------------------------------------


def _tree_nodes(tree: Any) -> list[list[Any]]:
    """The leaf sets of every subtree of a nested-sequence tree (pre-order: root first)."""
    nodes: list[list[Any]] = []

    def walk(t: Any) -> list[Any]:
        slot = len(nodes)
        nodes.append([])
        if isinstance(t, (list, tuple, np.ndarray)):
            if len(t) == 0:
                raise ValueError("tree must not contain empty groups")
            leaves = [leaf for child in t for leaf in walk(child)]
        else:
            leaves = [t]
        nodes[slot] = leaves
        return leaves

    walk(tree)
    return nodes


@_from_spec(mtmkl, exclude=("kernel",),
            extra={"tree": _Extra(None, ["array-like", None],
                                  "task similarity tree as nested lists of task ids, "
                                  "e.g. [[a, b], [c, [d, e]]]: every subtree S is a view "
                                  "with similarity G_S = 1_S 1_S^T; None: the flat "
                                  "hierarchy (all tasks, then each task alone)")})
class MultiTaskMKLClassifier(_BinaryTaskClassifier, _SolverEstimator):
    r"""Multi-task multiple kernel learning (:func:`solvers.mtmkl.solve`), linear features.

    ``min_{theta, W} 1/2 sum_m ||W_m||^2_{Q_m} / theta_m + C sum_i max(0, 1 - y_i
    sum_m <w_{m tau(i)}, x_i>)`` over ``||theta||_p <= 1``: one view per node of a
    task tree (``G_m`` = its tasks' block of ones) whose weights ``theta_`` are learned.

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
    tasks_ : ndarray, shape (n_tasks,)
        Task ids (sorted; the tree's leaves when a tree is given).
    nodes_ : list of ndarray
        The task ids of each view (tree node), in the order of ``theta_``.
    theta_ : ndarray, shape (n_views,)
        Learned kernel weights.
    task_similarity_ : ndarray, shape (n_tasks, n_tasks)
        ``sum_m theta_m G_m``.
    coef_ : ndarray, shape (n_tasks, n_features)
        Effective weight vector of each task, ``sum_m w_mt``.
    result_ : solvers.mtmkl.MTMKLResult
    n_iter_, primal_, dual_, dual_gap_, converged_, stop_reason_
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, tasks: Any = None) -> MultiTaskMKLClassifier:
        """Fit on ``X`` (n, d), binary labels ``y`` and each sample's task id."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        target = _binary(self, y)
        n = X.shape[0]
        if self.tree is None:
            self.tasks_, codes = _task_codes(tasks, n)
            T = self.tasks_.size
            nodes = [np.arange(T)] + ([np.array([t]) for t in range(T)] if T > 1 else [])
        else:
            node_labels = _tree_nodes(self.tree)
            self.tasks_ = encode_labels(node_labels[0], "tree", min_classes=1)[0]
            if self.tasks_.size != len(node_labels[0]):
                raise ValueError("tree must list every task id once")
            _, codes = _task_codes(tasks, n, self.tasks_)
            nodes = [np.searchsorted(self.tasks_, np.asarray(s)) for s in node_labels]
        T = self.tasks_.size
        G = []
        for s in nodes:
            v = np.zeros(T)
            v[s] = 1.0
            G.append(np.outer(v, v))
        self.nodes_ = [self.tasks_[s] for s in nodes]
        key = (X.shape, codes.tobytes(), T, len(G))
        res = self._module.solve(X, target, codes, G, init=self._init_for(key),
                                 **self._solver_kwargs())
        self.theta_ = np.asarray(res.theta)
        self.task_similarity_ = np.asarray(res.similarity)
        self.coef_ = np.ascontiguousarray(res.W.sum(axis=0))
        self._store(res, key)
        return self

    def decision_function(self, X: Any, tasks: Any = None) -> np.ndarray:
        """``f_{task}(x) = sum_m <w_{m task}, x>``: positive for ``classes_[1]``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        _, codes = _task_codes(tasks, X.shape[0], self.tasks_)
        return self._decide(X, codes)



# ---------------------------------------------------------------------------
# Safe triplet screening (metric learning)
# ---------------------------------------------------------------------------


def _warm_starts() -> tuple[str, ...]:
    from . import triplet_screening

    return triplet_screening.WARM_STARTS


@_from_spec(triplet_screening,
            extra={"path": _Extra(False, ["boolean"],
                                  "fit along the regularisation path lam_max, "
                                  "ratio lam_max, ... down to lam "
                                  "(solvers.triplet_screening.path: the problem built "
                                  "once, RRPB path screening); warm_start does not "
                                  "apply, the path starts from the exact solution at "
                                  "lam_max"),
                   "path_start": _Extra("previous", [StrOptions(set(_warm_starts()))],
                                        "with path=True, where each lambda starts: "
                                        "'previous' (the last lambda's solution, the "
                                        "paper's) or 'secant' (the path extrapolated in "
                                        "log lambda; see path's warm_start)")})
class SafeTripletMetricLearner(TransformerMixin, _SolverEstimator):
    r"""Mahalanobis metric learning (RTLM) with safe triplet screening.

    ``min_{M PSD} sum_t loss(<M, H_t>) + lam/2 ||M||_F^2`` over the triplets
    ``(i, j, l)`` (``j`` a same-class neighbour of ``i``, ``l`` an impostor) with
    ``H_t = (x_i - x_l)(x_i - x_l)^T - (x_i - x_j)(x_i - x_j)^T``
    (:func:`solvers.triplet_screening.solve`). metric-learn's conventions:
    ``fit(X, y)`` builds the ``k`` genuine x ``k`` impostor triplets (or takes
    ``triplets=``), ``transform(X) = X components_^T``, ``get_mahalanobis_matrix()``.

    Attributes
    ----------
    components_ : ndarray, shape (n_features, n_features)
        ``L`` with ``M = L^T L``.
    screening_rate_ : float
        Fraction of triplets screened (certified not to change the optimum) at the end.
    n_screened_L_, n_screened_R_, n_triplets_ : int
    radius_ : float
        Certified distance ``||M - M*||_F`` bound.
    screening_log_ : dict of ndarray
        Per screening round and sphere (see the solver).
    path_ : dict of ndarray, only with ``path=True``
        ``lambdas``, ``screening_rate`` (at the end of each lambda), ``n_iter``, ``gap``,
        ``primal``.
    result_ : solvers.triplet_screening.TripletResult
    n_iter_, primal_, dual_, dual_gap_, converged_, stop_reason_
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, triplets: Any = None) -> SafeTripletMetricLearner:
        """Fit on ``X`` (n, d) and class labels ``y`` (or explicit ``triplets`` (n_t, 3))."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        # labels as codes 0..k-1 (any hashable labels, as the other estimators take)
        classes, y = encode_labels(y, "y", min_classes=1)
        if X.shape[0] < 3:
            raise ValueError(f"{type(self).__name__} needs n_samples >= 3 to form a "
                             f"triplet, got n_samples = {X.shape[0]}")
        mod = self._module
        kw = self._solver_kwargs()
        lam = kw.pop("lam")
        key = (X.shape, np.unique(y, return_inverse=True)[1].tobytes(),
               None if triplets is None else np.asarray(triplets).tobytes())
        if self.path:
            prob = mod.TripletProblem(X, y, triplets=triplets, k=kw["k"], loss=kw["loss"],
                                      gamma=kw["gamma"], diagonal=kw["diagonal"])
            lambdas = mod.geometric_grid(prob.lambda_max(), lam)
            p = mod.path(X, y, triplets=prob, lambdas=lambdas, termination=False,
                         warm_start=self.path_start, **kw)
            res = p.final
            self.path_ = {"lambdas": np.array(p.lambdas),
                          "screening_rate": np.array(p.rate_final),
                          "n_iter": np.array(p.n_iter), "gap": np.array(p.gap),
                          "primal": np.array(p.primal)}
        else:
            res = mod.solve(X, y, lam, triplets=triplets, init=self._init_for(key), **kw)
        M = np.asarray(res.M)
        M = np.diag(M) if M.ndim == 1 else M
        w, V = np.linalg.eigh((M + M.T) / 2)
        self.components_ = (V * np.sqrt(np.maximum(w, 0.0))).T
        self.screening_rate_ = float(res.screening_rate)
        self.n_screened_L_ = int(res.screened_L.size)
        self.n_screened_R_ = int(res.screened_R.size)
        self.n_triplets_ = int(res.n_triplets)
        self.radius_ = float(res.radius)
        self.screening_log_ = {k: np.asarray(v) for k, v in res.screening_log.items()}
        self._store(res, key)
        return self

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """The learned metric ``M`` (n_features x n_features, PSD)."""
        check_is_fitted(self)
        return self.components_.T @ self.components_

    def pair_distance(self, pairs: Any) -> np.ndarray:
        """Learned distances ``sqrt((u - v)^T M (u - v))`` of pairs (n_pairs, 2, n_features)."""
        check_is_fitted(self)
        P = np.asarray(pairs, dtype=np.float64)
        d = self.components_.shape[1]
        if P.ndim != 3 or P.shape[1:] != (2, d) or not np.all(np.isfinite(P)):
            raise ValueError(f"pairs must be a finite array of shape (n_pairs, 2, {d}), got "
                             f"shape {P.shape}")
        return np.linalg.norm((P[:, 0] - P[:, 1]) @ self.components_.T, axis=1)

    def get_metric(self):
        """A function ``metric(u, v)`` computing the learned distance of two points."""
        check_is_fitted(self)
        L = self.components_.copy()

        def metric(u: Any, v: Any) -> float:
            return float(np.linalg.norm(L @ (np.asarray(u, float) - np.asarray(v, float))))

        return metric

    def transform(self, X: Any) -> np.ndarray:
        """``X L^T``: Euclidean distances there are the learned Mahalanobis distances."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._decide(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
