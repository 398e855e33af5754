"""Fitted models to files and back: ``.npz`` (NumPy, no pickles) or JSON.

A saved model holds the model's named solution arrays (``W``, ``alpha``, ``U``,
``M``, ``theta``, ... as the result has them), its parameters, its certificate
(primal, dual, gap, convergence) and the names of the data it was fitted on
(features, classes, tasks). :func:`load_model` reads it back as a
:class:`SavedModel` whose ``predict`` reproduces the fitted model's predictions
bit for bit (the same arrays, the same arithmetic):

=================  ==========================================================
model              ``decision_function`` / ``predict``
=================  ==========================================================
wwsvm              scores ``X W`` (n, k) / the class of the largest score
caso               ``x^T u_task`` / the score, or the class of its sign for
                   two classes (the hinge and logistic losses)
robust_mtl         ``x^T w_task`` (regression: ``predict`` is the score)
mtmkl              ``x^T sum_m w_{m,task}`` / the class of its sign
triplet_screening  ``transform(X) = X L^T`` with ``M = L^T L``; ``predict``: the
                   label of the nearest reference point under ``M`` (1-NN) when
                   reference points were saved
=================  ==========================================================

Only numpy is used (``json`` and ``numpy.load(allow_pickle=False)``).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .fileio import write_atomic

__all__ = ["FORMAT", "RUN_KEY", "SavedModel", "from_fitted", "load_model", "save_model"]

#: Marker of a saved dualscope model.
FORMAT = "dualscope-model"
#: Key of a run document (``dualscope solve --json``, the page's run export) holding the
#: model's JSON document (:meth:`SavedModel.to_json`); :func:`load_model` reads it there.
RUN_KEY = "fitted_model"
_VERSION = 1
_META = "__meta__"
_NAMES = ("feature_names", "class_names", "task_names")
_CERT = ("primal", "dual", "gap", "n_iter", "converged", "stop_reason", "method")


@dataclass(frozen=True)
class SavedModel:
    """A fitted model as saved: arrays, parameters, certificate and data names.

    Attributes
    ----------
    model : str
        ``"wwsvm"``, ``"caso"``, ``"robust_mtl"``, ``"mtmkl"`` or ``"triplet_screening"``.
    arrays : Mapping[str, ndarray]
        Named solution arrays (and, for the metric learner, ``L`` and the optional
        reference points ``X_ref``, ``y_ref``).
    params : Mapping[str, Any]
        Scalar parameters of the fit.
    certificate : Mapping[str, Any]
        ``primal``, ``dual``, ``gap``, ``rel_gap``, ``n_iter``, ``converged``,
        ``stop_reason``, ``method``.
    feature_names, class_names, task_names : ndarray or None
        Names of the columns, of the classes (prediction values; index = the
        model's class code) and of the tasks (index = task column of ``U``/``W``).
    label_name, task_name : str or None
        Column names of the labels and tasks in the training file.
    """

    model: str
    arrays: Mapping[str, np.ndarray]
    params: Mapping[str, Any] = field(default_factory=dict)
    certificate: Mapping[str, Any] = field(default_factory=dict)
    feature_names: np.ndarray | None = None
    class_names: np.ndarray | None = None
    task_names: np.ndarray | None = None
    label_name: str | None = None
    task_name: str | None = None

    # ------------------------------------------------------------------ shape

    @property
    def n_features(self) -> int:
        a = self.arrays
        if self.model == "wwsvm":
            return int(a["W"].shape[0])
        if self.model == "caso":
            return int(a["U"].shape[0])
        if self.model == "robust_mtl":
            return int(a["W"].shape[0])
        if self.model == "mtmkl":
            return int(a["W"].shape[2])
        return int(a["L"].shape[1])

    @property
    def needs_tasks(self) -> bool:
        return self.model in ("caso", "robust_mtl", "mtmkl")

    def _X(self, X: Any) -> Any:
        if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
            if self.model == "wwsvm":  # scores X W straight from scipy.sparse rows
                if X.ndim != 2 or X.shape[1] != self.n_features:
                    raise ValueError(f"X must have shape (n, {self.n_features}) (the model's "
                                     f"features), got {X.shape}")
                if not np.all(np.isfinite(X.data)):
                    raise ValueError("X must be finite (no NaN/inf)")
                return X.tocsr()
            X = X.toarray()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}) (the model's features), "
                             f"got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite (no NaN/inf)")
        return X

    def task_index(self, tasks: Any, n: int) -> np.ndarray:
        """Column of each row's task (``tasks``: the task names as in the training file)."""
        if tasks is None:
            raise ValueError(f"tasks is required: model {self.model} has one weight vector "
                             f"per task")
        t = np.asarray(tasks).ravel()
        if t.shape[0] != n:
            raise ValueError(f"tasks must have one entry per row of X ({n}), got {t.shape[0]}")
        names = self.task_names
        lookup = {_key(v): i for i, v in enumerate(names)}
        out = np.empty(n, dtype=np.int64)
        for i, v in enumerate(t):
            k = _key(v)
            if k not in lookup:
                raise ValueError(f"tasks: {k!r} (row {i}) is not a task of the fitted model "
                                 f"({names.size} tasks, e.g. {[_key(x) for x in names[:5]]})")
            out[i] = lookup[k]
        return out

    # -------------------------------------------------------------- predicting

    def decision_function(self, X: Any, tasks: Any = None) -> np.ndarray:
        """The model's real-valued output (see the module docstring)."""
        X = self._X(X)
        a = self.arrays
        if self.model == "wwsvm":
            S = np.asarray(X @ a["W"])
            for b in ("b", "intercept"):
                if b in a:
                    S = S + a[b]
            return S
        if self.model == "triplet_screening":
            return self.transform(X)
        idx = self.task_index(tasks, X.shape[0])
        if self.model == "caso":
            coef = a["U"].T
        elif self.model == "robust_mtl":
            coef = a["W"].T
        else:
            coef = a["W"].sum(axis=0)
        return np.einsum("ij,ij->i", X, coef[idx])

    def transform(self, X: Any) -> np.ndarray:
        """Metric learner: ``X L^T`` (Euclidean distances there are the learned ones)."""
        if self.model != "triplet_screening":
            raise ValueError(f"transform is the metric learner's; model {self.model} predicts")
        return self._X(X) @ self.arrays["L"].T

    def predict(self, X: Any, tasks: Any = None) -> np.ndarray:
        """Predictions: class names (classifiers), real values (regression) or, for the
        metric learner, the label of the nearest reference point."""
        a = self.arrays
        if self.model == "wwsvm":
            S = self.decision_function(X)
            classes = self.class_names if self.class_names is not None else a["classes"]
            return np.asarray(classes)[np.argmax(S, axis=1)]
        if self.model == "triplet_screening":
            if "X_ref" not in a:
                raise ValueError("this metric model was saved without reference points; "
                                 "use transform(X)")
            Z, R = self.transform(X), a["X_ref"] @ a["L"].T
            d2 = (np.einsum("ij,ij->i", Z, Z)[:, None] - 2.0 * Z @ R.T
                  + np.einsum("ij,ij->i", R, R)[None, :])
            codes = a["y_ref"][np.argmin(d2, axis=1)]
            return self.class_names[codes] if self.class_names is not None else codes
        f = self.decision_function(X, tasks)
        if self.model == "robust_mtl" or (self.model == "caso" and self.class_names is None
                                          and self.params.get("loss") == "squared"):
            return f
        classes = self.class_names if self.class_names is not None else np.array([-1.0, 1.0])
        return np.asarray(classes)[(f > 0).astype(np.int64)]

    # ----------------------------------------------------------------- writing

    def _meta(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": _VERSION, "model": self.model,
                "params": _jsonable(dict(self.params)),
                "certificate": _jsonable(dict(self.certificate)),
                "label_name": self.label_name, "task_name": self.task_name}

    def _named(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in zip(_NAMES, (self.feature_names, self.class_names,
                                              self.task_names), strict=True) if v is not None}

    def to_json(self) -> dict[str, Any]:
        """The JSON document of the model (what ``to_bytes("json")`` encodes): the
        metadata, ``arrays`` and ``names``, each array as ``dtype``, ``shape``, ``data``."""
        doc = self._meta()
        doc["arrays"] = {k: _array_json(v) for k, v in self.arrays.items()}
        doc["names"] = {k: _array_json(v) for k, v in self._named().items()}
        return doc

    def to_bytes(self, fmt: str = "npz") -> bytes:
        """The file contents in format ``"npz"`` or ``"json"``."""
        named = self._named()
        if fmt == "json":
            return json.dumps(self.to_json()).encode("utf-8")
        if fmt != "npz":
            raise ValueError(f"fmt must be 'npz' or 'json', got {fmt!r}")
        clash = set(self.arrays) & (set(_NAMES) | {_META})
        if clash:
            raise ValueError(f"array names {sorted(clash)} are reserved")
        buf = io.BytesIO()
        np.savez(buf, **{_META: np.array(json.dumps(self._meta()))}, **named,
                 **dict(self.arrays))
        return buf.getvalue()

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``.npz`` or ``.json`` (from the extension), atomically
        (:func:`solvers.fileio.write_atomic`)."""
        p = Path(path).expanduser()
        ext = p.suffix.lower()
        if ext not in (".npz", ".json"):
            raise ValueError(f"path must end in .npz or .json, got {str(path)!r}")
        write_atomic(p, self.to_bytes(ext[1:]))  # a temporary file, then os.replace
        return p


def _key(v: Any) -> str:
    """A task or class name as a comparable string (``3``, ``3.0`` and ``'3'`` agree)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _array_json(a: np.ndarray) -> dict[str, Any]:
    a = np.asarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": a.ravel().tolist()}


def _array_from_json(doc: Mapping[str, Any]) -> np.ndarray:
    dt = np.dtype(doc["dtype"])
    if dt.kind == "O":
        raise ValueError("object arrays are not read")
    return np.array(doc["data"], dtype=dt).reshape(doc["shape"])


# ------------------------------------------------------------------ building


def _model_name(res: Any) -> str:
    parts = type(res).__module__.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "solvers" else parts[-1]


def _metric_factor(M: np.ndarray) -> np.ndarray:
    """``L`` with ``M = L^T L``, as :class:`solvers.estimators.SafeTripletMetricLearner`."""
    M = np.diag(M) if M.ndim == 1 else M
    w, V = np.linalg.eigh((M + M.T) / 2)
    return (V * np.sqrt(np.maximum(w, 0.0))).T


def from_fitted(fitted: Any, *, model: str | None = None,
                feature_names: Sequence[Any] | None = None,
                class_names: Sequence[Any] | None = None,
                task_names: Sequence[Any] | None = None, label_name: str | None = None,
                task_name: str | None = None, reference: tuple[Any, Any] | None = None,
                params: Mapping[str, Any] | None = None) -> SavedModel:
    """A :class:`SavedModel` of a solver result or a fitted :mod:`solvers.estimators` estimator.

    Parameters
    ----------
    fitted : Result or estimator
        A ``solve`` result (``solvers.<model>.solve``) or a fitted estimator (its
        ``result_``, ``classes_`` and ``tasks_`` are used).
    feature_names, class_names, task_names : sequence, optional
        Names of the data (class ``j`` is the result's class code ``j``; task ``t`` is
        column ``t`` of ``U``/``W``); defaults: the estimator's, else the codes.
    reference : (X, y), optional
        Metric learner only: reference points for ``predict`` (1-NN); ``y`` as class codes
        ``0..k-1`` (or, with ``class_names``, indices into them).
    params : Mapping, optional
        Extra parameters to record (e.g. a registry-only one).
    """
    est = None
    res = fitted
    if hasattr(fitted, "result_"):
        est, res = fitted, fitted.result_
        class_names = class_names if class_names is not None else getattr(est, "classes_", None)
        task_names = task_names if task_names is not None else getattr(est, "tasks_", None)
        if feature_names is None and hasattr(est, "feature_names_in_"):
            feature_names = est.feature_names_in_
    if not dataclasses.is_dataclass(res) or not hasattr(res, "arrays"):
        raise TypeError(f"fitted must be a solver result or a fitted estimator, got "
                        f"{type(fitted).__name__}")
    name = model or _model_name(res)
    arrays = {k: np.array(v) for k, v in res.arrays().items()
              if isinstance(v, np.ndarray) and v.dtype.kind in "biufU"}
    if name == "triplet_screening":
        arrays["L"] = (np.array(est.components_) if est is not None
                       else _metric_factor(np.asarray(res.M)))
        if reference is not None:
            Xr = np.asarray(reference[0], dtype=np.float64)
            yr = np.asarray(reference[1])
            if Xr.ndim != 2 or Xr.shape[1] != arrays["L"].shape[1] or yr.shape != (Xr.shape[0],):
                raise ValueError("reference must be (X (n, d), y (n,)) of the model's features")
            if yr.dtype.kind not in "iu":
                cls, yr = np.unique(yr, return_inverse=True)
                class_names = cls if class_names is None else class_names
            arrays["X_ref"], arrays["y_ref"] = Xr, yr.astype(np.int64)
    if name == "wwsvm" and "classes" not in arrays and hasattr(res, "classes"):
        arrays["classes"] = np.asarray(res.classes)
    if task_names is None and name in ("caso", "robust_mtl"):
        m = (arrays["U"] if name == "caso" else arrays["W"]).shape[1]
        task_names = np.arange(m)
    if task_names is None and name == "mtmkl":
        task_names = np.arange(arrays["W"].shape[1])
    if est is not None and name == "caso" and class_names is None:
        class_names = getattr(est, "classes_", None)
    cert = {k: getattr(res, k) for k in _CERT}
    cert["rel_gap"] = float(res.rel_gap)
    prm = dict(res.params)
    if name == "caso":
        prm.setdefault("loss", res.loss)
    prm.update(params or {})
    return SavedModel(model=name, arrays=arrays, params=_jsonable(prm),
                      certificate=_jsonable(cert),
                      feature_names=_names(feature_names), class_names=_names(class_names),
                      task_names=_names(task_names), label_name=label_name,
                      task_name=task_name)


def _names(v: Any) -> np.ndarray | None:
    if v is None:
        return None
    a = np.asarray(v)
    if a.dtype.kind == "O":
        a = np.asarray([str(x) for x in a.ravel()])
    return a


def save_model(path: str | os.PathLike, fitted: Any, **names: Any) -> SavedModel:
    """Save a result or fitted estimator to ``path`` (``.npz`` or ``.json``).

    ``names``: the keywords of :func:`from_fitted` (feature / class / task names,
    reference points). Returns the :class:`SavedModel` written.
    """
    sm = fitted if isinstance(fitted, SavedModel) else from_fitted(fitted, **names)
    sm.save(path)
    return sm


def load_model(path: str | os.PathLike) -> SavedModel:
    """Read a model written by :func:`save_model` (``.npz`` or ``.json``).

    A JSON run document (``dualscope solve --json``, the page's run export) is read
    from its :data:`RUN_KEY` entry. Raises ``ValueError`` naming the file when it is not
    such a model.
    """
    p = Path(path).expanduser()
    try:
        if p.suffix.lower() == ".json":
            doc = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if doc.get("format") != FORMAT and isinstance(doc.get(RUN_KEY), dict):
                doc = doc[RUN_KEY]  # a run document holding the fitted model
            arrays = {k: _array_from_json(v) for k, v in doc.get("arrays", {}).items()}
            names = {k: _array_from_json(v) for k, v in doc.get("names", {}).items()}
            meta = doc
        else:
            with np.load(p, allow_pickle=False) as z:
                if _META not in z.files:
                    raise ValueError("no dualscope metadata")
                meta = json.loads(str(z[_META]))
                names = {k: z[k] for k in _NAMES if k in z.files}
                arrays = {k: z[k] for k in z.files if k not in _NAMES and k != _META}
    except FileNotFoundError:
        raise ValueError(f"{p}: no such file") from None
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{p.name}: not a dualscope model file ({exc})") from None
    if meta.get("format") != FORMAT:
        raise ValueError(f"{p.name}: not a dualscope model file (format "
                         f"{meta.get('format')!r})")
    return SavedModel(model=str(meta["model"]), arrays=arrays, params=meta.get("params", {}),
                      certificate=meta.get("certificate", {}),
                      feature_names=names.get("feature_names"),
                      class_names=names.get("class_names"),
                      task_names=names.get("task_names"), label_name=meta.get("label_name"),
                      task_name=meta.get("task_name"))
