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
import functools
import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from .fileio import npz_arrays, npz_keys, open_regular, read_regular, write_atomic

__all__ = ["FORMAT", "MAX_MODEL_BYTES", "PREP_PREFIX", "RUN_KEY", "ArraySpec", "SavedForm",
           "SavedModel", "array_specs", "decide_fitted", "form_of", "from_fitted", "known_models",
           "load_model", "register_form", "save_model", "scores_per_task", "sign_classes",
           "validate"]

#: Marker of a saved dualscope model.
FORMAT = "dualscope-model"
#: Key of a run document (``dualscope solve --json``, the page's run export) holding the
#: model's JSON document (:meth:`SavedModel.to_json`); :func:`load_model` reads it there.
RUN_KEY = "fitted_model"
_VERSION = 1
_META = "__meta__"
_NAMES = ("feature_names", "class_names", "task_names")
_CERT = ("primal", "dual", "gap", "n_iter", "converged", "stop_reason", "method")
#: Prefix of the arrays of the fitted preprocessing
#: (:meth:`solvers.preprocess.FittedPreprocessing.to_arrays`), the same for every model.
PREP_PREFIX = "preprocessing."


#: Largest model file :func:`load_model` reads (bytes on disk, and bytes of arrays read).
MAX_MODEL_BYTES = 1024**3
#: Deepest nesting of a JSON model's ``params`` / ``certificate`` entries.
MAX_JSON_DEPTH = 32


@dataclass(frozen=True)
class ArraySpec:
    """One named array of a saved model.

    ``dims``: a symbol per axis (``"d"`` features, ``"k"`` classes, ``"m"`` tasks, ``"v"``
    kernels, ``"r"`` rank, ``"n"`` rows, ...); the same symbol is the same length in every
    array and name list of the model. ``kinds``: the numpy dtype kinds accepted.
    ``alt_dims``: a second accepted layout (a metric saved as its diagonal). Floating
    arrays must be finite.

    Attributes
    ----------
    name : str
        The array's key in the file.
    dims : tuple of str
        One length symbol per axis.
    required : bool
        Whether every model of the kind has it.
    kinds : str
        The accepted numpy dtype kinds (``"iuf"``: integers and floats).
    alt_dims : tuple of str or None
        A second accepted layout.
    """

    name: str
    dims: tuple[str, ...]
    required: bool = False
    kinds: str = "iuf"
    alt_dims: tuple[str, ...] | None = None  # another accepted layout (a diagonal matrix)


def array_specs(*items: tuple[Any, ...]) -> dict[str, ArraySpec]:
    """``{name: ArraySpec}`` from ``(name, "dims ...", required, kinds, alt_dims)``
    tuples (the last three optional; ``alt_dims`` as a string too).

    Parameters
    ----------
    *items : tuple
        One per array.

    Returns
    -------
    dict of str to ArraySpec
        The arrays of a :class:`SavedForm`.

    Examples
    --------
    >>> from solvers.saved import array_specs
    >>> array_specs(("W", "d k", True))["W"].dims
    ('d', 'k')
    """
    out = {}
    for it in items:
        name, dims = it[0], tuple(it[1].split()) if it[1] else ()
        rest = list(it[2:])
        if len(rest) == 3 and isinstance(rest[2], str):
            rest[2] = tuple(rest[2].split())
        out[name] = ArraySpec(name, dims, *rest)
    return out


NAMES_OF = ("feature_names", "class_names", "task_names")


@dataclass(frozen=True)
class SavedForm:
    """How one model is saved, checked and applied: its part of :class:`SavedModel`.

    Each model module defines one as ``SAVED_FORM`` (found by :func:`form_of` from the
    model's name, ``solvers.<model>.SAVED_FORM``); a model outside this package registers
    its own with :func:`register_form`.

    Parameters
    ----------
    arrays : Mapping[str, ArraySpec]
        The arrays ``predict`` uses (required) or may use, with their axes' length symbols.
        Any other array (dual variables, diagnostics) must be a finite numeric array.
    names : Mapping[str, str or None]
        The length symbol of ``feature_names``, ``class_names`` and ``task_names``
        (None: the model has no such names).
    features : (str, int)
        The array and axis whose length is the number of features.
    decide : callable
        ``decide(sm, X, task_index) -> ndarray``: the real-valued output for the rows of
        ``X`` (a float array, or a CSR matrix when ``sparse``); ``task_index`` is each
        row's task column (per-task models) or None.
    predict : callable, optional
        ``predict(sm, X, task_index) -> ndarray``: the predictions (default: ``decide``).
    per_task : bool
        The model has one weight vector per task: ``predict`` needs each row's task.
    sparse : bool
        ``decide`` takes ``scipy.sparse`` rows as they are (otherwise they are densified).
    transform : bool
        The model maps rows to a new space (:meth:`SavedModel.transform` is ``decide``).
    reference : bool
        The model predicts from reference points (its training rows), which
        :func:`from_fitted` then takes as ``reference``.
    kind : str or callable
        ``"classification"``, ``"regression"`` or ``"metric"`` (how
        :mod:`solvers.scoring` scores its predictions), or ``kind(sm)`` giving it.
    check : callable, optional
        ``check(sm, bad, sizes)``: the model's own checks after the schema's, raising
        ``bad(field, message)``; ``sizes`` maps each length symbol to ``(length, what)``.
    prepare : callable, optional
        ``prepare(res, est, arrays, names, reference)`` completes the arrays and names
        (a dict with ``feature_names``, ``class_names``, ``task_names``) of
        :func:`from_fitted` in place.
    """

    arrays: Mapping[str, ArraySpec]
    names: Mapping[str, str | None]
    features: tuple[str, int]
    # ``task_index`` is an array for per-task forms and None otherwise, so the callables'
    # third parameter is typed by each form.
    decide: Callable[..., np.ndarray]
    predict: Callable[..., np.ndarray] | None = None
    per_task: bool = False
    sparse: bool = False
    transform: bool = False
    reference: bool = False
    kind: str | Callable[[SavedModel], str] = "classification"
    check: Callable[[SavedModel, Callable[[str, str], ValueError],
                     dict[str, tuple[int, str]]], None] | None = None
    prepare: Callable[[Any, Any, dict[str, np.ndarray], dict[str, Any], Any], None] | None = None


_FORMS: dict[str, SavedForm] = {}


def register_form(model: str, form: SavedForm) -> None:
    """Make :func:`load_model` and :class:`SavedModel` know model ``model`` (one defined
    outside :mod:`solvers`; the package's own are found from their module).

    Parameters
    ----------
    model : str
        The model's name (``SavedModel.model``).
    form : SavedForm
        How it is saved and applied.
    """
    if not isinstance(form, SavedForm):
        raise TypeError(f"form must be a SavedForm, got {type(form).__name__}")
    _FORMS[model] = form


@functools.lru_cache(maxsize=64)
def _builtin_form(model: str) -> SavedForm | None:
    """``solvers.<model>.SAVED_FORM`` (looked up once per name)."""
    import importlib
    import importlib.util

    name = f"{__package__}.{model}"
    if not model.isidentifier() or model.startswith("_"):
        return None
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except (ImportError, ValueError):
        return None
    form = getattr(importlib.import_module(name), "SAVED_FORM", None)
    return form if isinstance(form, SavedForm) else None


def known_models() -> list[str]:
    """The model kinds a saved model may have: this package's and the registered ones.

    Returns
    -------
    list of str
        Sorted model names.
    """
    import pkgutil

    from . import __path__ as pkg_path

    own = [m.name for m in pkgutil.iter_modules(pkg_path) if _builtin_form(m.name)]
    return sorted(set(own) | set(_FORMS))


def form_of(model: Any) -> SavedForm:
    """The :class:`SavedForm` of model ``model``.

    Parameters
    ----------
    model : str
        A model's name: a module of this package with ``SAVED_FORM``, or one registered
        with :func:`register_form`.

    Returns
    -------
    SavedForm

    Raises
    ------
    ValueError
        An unknown model, naming the known ones.
    """
    form = _FORMS.get(model) if isinstance(model, str) else None
    if form is None and isinstance(model, str):
        form = _builtin_form(model)
    if form is None:
        raise ValueError(f"unknown model kind {model!r}; known: {', '.join(known_models())}")
    return form


def scores_per_task(X: np.ndarray, coef: np.ndarray, task_index: np.ndarray) -> np.ndarray:
    """``x_i^T coef[task_i]`` for each row.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        The rows.
    coef : ndarray, shape (m, d)
        One weight vector per task.
    task_index : ndarray of int, shape (n,)
        Each row's task.

    Returns
    -------
    ndarray, shape (n,)
    """
    return np.einsum("ij,ij->i", X, coef[task_index])


def sign_classes(sm: SavedModel, f: np.ndarray) -> np.ndarray:
    """The class of the sign of ``f``: ``class_names[1]`` where ``f > 0``, else ``[0]``.

    Parameters
    ----------
    sm : SavedModel
        A binary classifier (its ``class_names``; -1/+1 without names).
    f : ndarray
        Decision values.

    Returns
    -------
    ndarray
        One class name per value.
    """
    classes = sm.class_names if sm.class_names is not None else np.array([-1.0, 1.0])
    return np.asarray(classes)[(f > 0).astype(np.int64)]


def validate(sm: SavedModel, where: str = "model") -> None:
    """Check ``sm`` against its model's :class:`SavedForm`; ``ValueError`` otherwise.

    Checks the model kind, every array's dtype kind (numbers; no objects or text where
    numbers belong), its number of axes and lengths consistent across arrays and name lists
    (``W`` ``(d, k)`` and ``class_names`` ``(k,)``, ...), finiteness of floating arrays,
    the required arrays and names, the metadata's types, and the metric learner's reference
    labels against its classes. The message is one line: ``"{where}: FIELD: problem"``.
    Used by :meth:`SavedModel.to_bytes` (writing) and :func:`load_model` (reading).

    Parameters
    ----------
    sm : SavedModel
        The model to check.
    where : str
        The name the messages start with (a file name when reading).
    """
    def bad(field_: str, msg: str) -> ValueError:
        return ValueError(f"{where}: {field_}: {msg}")

    try:
        form = form_of(sm.model)
    except ValueError as exc:
        raise bad("model", str(exc)) from None
    for name, val in (("params", sm.params), ("certificate", sm.certificate)):
        if not isinstance(val, Mapping):
            raise bad(name, f"must be a mapping, got {type(val).__name__}")
    if sm.zero_based is not None and not isinstance(sm.zero_based, bool):
        raise bad("zero_based", f"must be true, false or null, got {sm.zero_based!r}")
    for name in ("label_name", "task_name"):
        val = getattr(sm, name)
        if val is not None and not isinstance(val, str):
            raise bad(name, f"must be text or null, got {type(val).__name__}")
    if not isinstance(sm.arrays, Mapping):
        raise bad("arrays", f"must be a mapping of names to arrays, got "
                            f"{type(sm.arrays).__name__}")
    schema = form.arrays
    sizes: dict[str, tuple[int, str]] = {"2": (2, "two classes")}

    def agree(sym: str, n: int, field_: str, axis: int | None) -> None:
        what = field_ if axis is None else f"{field_} axis {axis}"
        if sym in sizes and sizes[sym][0] != n:
            raise bad(field_, f"{'length' if axis is None else f'axis {axis} has length'} "
                              f"{n}, but {sizes[sym][1]} has {sizes[sym][0]}")
        sizes.setdefault(sym, (n, what))

    for need in schema.values():
        if need.required and need.name not in sm.arrays:
            raise bad(f"arrays.{need.name}", f"missing (model {sm.model} needs it)")
    prep = {k[len(PREP_PREFIX):]: v for k, v in sm.arrays.items()
            if isinstance(k, str) and k.startswith(PREP_PREFIX)}
    if prep:
        from .preprocess import FittedPreprocessing

        try:
            fp = FittedPreprocessing.from_arrays(prep)
        except ValueError as exc:
            raise bad(f"arrays.{PREP_PREFIX}{exc}".split(":")[0],
                      str(exc).partition(": ")[2] or str(exc)) from None
        sizes["d"] = (len(fp.feature_names_out), "the preprocessing's output columns")
        if sm.feature_names is not None and [str(v) for v in sm.feature_names] != list(
                fp.feature_names_out):
            raise bad("names.feature_names", "differ from the preprocessing's output "
                                             "columns")
    for key, arr in sm.arrays.items():
        if not isinstance(key, str):
            raise bad("arrays", f"array name {key!r} is not text")
        if key.startswith(PREP_PREFIX):
            continue
        field_ = f"arrays.{key}"
        if not isinstance(arr, np.ndarray):
            raise bad(field_, f"must be an array, got {type(arr).__name__}")
        spec = schema.get(key, ArraySpec(key, (), kinds="biuf"))
        if arr.dtype.kind not in spec.kinds:
            raise bad(field_, f"dtype {arr.dtype} is not accepted (numbers of kind "
                              f"{spec.kinds!r})")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            i = np.argwhere(~np.isfinite(arr))[0]
            at = tuple(int(j) for j in i)
            raise bad(field_, f"holds {arr[at].item()!r} at index {at}; saved arrays must "
                              "be finite")
        if key not in schema:
            continue
        if spec.alt_dims is not None and arr.ndim == len(spec.alt_dims):
            spec = dataclasses.replace(spec, dims=spec.alt_dims)
        if arr.ndim != len(spec.dims):
            raise bad(field_, f"must have {len(spec.dims)} axes ({' x '.join(spec.dims)}), "
                              f"got shape {arr.shape}")
        for ax, (sym, n) in enumerate(zip(spec.dims, arr.shape, strict=True)):
            agree(sym, int(n), field_, ax)
    dims = form.names
    for name in _NAMES:
        val = getattr(sm, name)
        if val is None:
            continue
        field_ = f"names.{name}"
        if not isinstance(val, np.ndarray) or val.ndim != 1:
            raise bad(field_, "must be a 1-D array of names")
        if val.dtype.kind not in "biufU":
            raise bad(field_, f"dtype {val.dtype} is not accepted (numbers or text)")
        if val.dtype.kind == "f" and not np.all(np.isfinite(val)):
            raise bad(field_, "holds a value that is not finite")
        name_sym = dims[name]
        if name_sym is None:
            raise bad(field_, f"model {sm.model} has no {name.split('_')[0]} names")
        agree(name_sym, int(val.shape[0]), field_, None)
        if np.unique(val).size != val.shape[0]:
            raise bad(field_, "names repeat")
    if form.per_task and sm.task_names is None:
        raise bad("names.task_names", f"missing (model {sm.model} predicts per task)")
    if form.check is not None:
        form.check(sm, bad, sizes)


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
    zero_based : bool or None
        Index base of a svmlight/LIBSVM training file (files to predict are read with it).
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
    zero_based: bool | None = None

    # ------------------------------------------------------------------ shape

    @property
    def form(self) -> SavedForm:
        """The model's :class:`SavedForm` (how it predicts from its arrays)."""
        return form_of(self.model)

    @property
    def n_features(self) -> int:
        """Number of features the model takes."""
        array, axis = self.form.features
        return int(self.arrays[array].shape[axis])

    @property
    def needs_tasks(self) -> bool:
        """Whether ``predict`` needs each row's task (one weight vector per task)."""
        return self.form.per_task

    @property
    def kind(self) -> str:
        """``"classification"``, ``"regression"`` or ``"metric"`` (:mod:`solvers.scoring`),
        as the model's :class:`SavedForm` says."""
        kind = self.form.kind
        return kind if isinstance(kind, str) else kind(self)

    @property
    def preprocessing(self) -> Any:
        """The fitted :class:`solvers.preprocess.FittedPreprocessing` (None: the model
        takes the features as they are)."""
        prep = {k[len(PREP_PREFIX):]: v for k, v in self.arrays.items()
                if k.startswith(PREP_PREFIX)}
        if not prep:
            return None
        from .preprocess import FittedPreprocessing

        return FittedPreprocessing.from_arrays(prep)

    @property
    def weights(self) -> dict[str, np.ndarray]:
        """The solution arrays (without the preprocessing's)."""
        return {k: v for k, v in self.arrays.items() if not k.startswith(PREP_PREFIX)}

    def _X(self, X: Any) -> Any:
        if hasattr(X, "columns") or isinstance(X, Mapping):
            X = self.features_of(X)
        if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
            if self.form.sparse:  # the model computes from scipy.sparse rows as they are
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

    def features_of(self, frame: Any) -> np.ndarray:
        """The model's features of a table of raw columns (a pandas DataFrame or a mapping
        ``name -> 1-D array``): the saved preprocessing applied (text columns encoded,
        numbers scaled as in training), or the ``feature_names`` columns taken as they
        are. A matrix passed to ``predict`` is taken to be in the model's feature space."""
        fp = self.preprocessing
        if fp is not None:
            return fp.transform({c: np.asarray(frame[c]) for c in fp.columns if c in frame})
        names = [str(c) for c in self.feature_names] if self.feature_names is not None \
            else [str(c) for c in frame]
        absent = [c for c in names if c not in frame]
        if absent:
            raise ValueError(f"the feature columns {absent[:6]} are missing")
        return np.column_stack([np.asarray(frame[c], dtype=np.float64) for c in names])

    def task_index(self, tasks: Any, n: int) -> np.ndarray:
        """Column of each row's task (``tasks``: the task names as in the training file)."""
        if tasks is None:
            raise ValueError(f"tasks is required: model {self.model} has one weight vector "
                             f"per task")
        t = np.asarray(tasks).ravel()
        if t.shape[0] != n:
            raise ValueError(f"tasks must have one entry per row of X ({n}), got {t.shape[0]}")
        names = self.task_names
        if names is None:
            raise ValueError(f"model {self.model} has no task names")
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

    def _inputs(self, X: Any, tasks: Any) -> tuple[Any, np.ndarray | None]:
        X = self._X(X)
        return X, (self.task_index(tasks, X.shape[0]) if self.form.per_task else None)

    def decision_function(self, X: Any, tasks: Any = None) -> np.ndarray:
        """The model's real-valued output (see the module docstring)."""
        return self.form.decide(self, *self._inputs(X, tasks))

    def transform(self, X: Any) -> np.ndarray:
        """Metric learner: ``X L^T`` (Euclidean distances there are the learned ones)."""
        if not self.form.transform:
            raise ValueError(f"transform is the metric learner's; model {self.model} predicts")
        return self.form.decide(self, self._X(X), None)

    def predict(self, X: Any, tasks: Any = None) -> np.ndarray:
        """Predictions: class names (classifiers), real values (regression) or, for the
        metric learner, the label of the nearest reference point."""
        form = self.form
        out = (form.predict or form.decide)(self, *self._inputs(X, tasks))
        fp = self.preprocessing
        if fp is not None and self.kind == "regression":
            out = fp.targets_back(out)  # targets standardised before the fit: undone
        return out

    # ----------------------------------------------------------------- writing

    def _meta(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": _VERSION, "model": self.model,
                "params": _jsonable(dict(self.params)),
                "certificate": _jsonable(dict(self.certificate)),
                "label_name": self.label_name, "task_name": self.task_name,
                "zero_based": self.zero_based}

    def _named(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in zip(_NAMES, (self.feature_names, self.class_names,
                                              self.task_names), strict=True) if v is not None}

    def to_json(self) -> dict[str, Any]:
        """The JSON document of the model (what ``to_bytes("json")`` encodes): the
        metadata, ``arrays`` and ``names``, each array as ``dtype``, ``shape``, ``data``
        (checked by :func:`validate` first)."""
        validate(self, "the model to save")
        doc = self._meta()
        doc["arrays"] = {k: _array_json(v) for k, v in self.arrays.items()}
        doc["names"] = {k: _array_json(v) for k, v in self._named().items()}
        return doc

    def to_bytes(self, fmt: str = "npz") -> bytes:
        """The file contents in format ``"npz"`` or ``"json"`` (checked by :func:`validate`
        first: what is written can be read back)."""
        validate(self, "the model to save")
        named = self._named()
        if fmt == "json":
            return json.dumps(self.to_json()).encode("utf-8")
        if fmt != "npz":
            raise ValueError(f"fmt must be 'npz' or 'json', got {fmt!r}")
        clash = set(self.arrays) & (set(_NAMES) | {_META})
        if clash:
            raise ValueError(f"array names {sorted(clash)} are reserved")
        buf = io.BytesIO()
        members: dict[str, Any] = {_META: np.array(json.dumps(self._meta())), **named,
                                   **dict(self.arrays)}
        np.savez(buf, **members)
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


def _array_from_json(doc: Any, field_: str) -> np.ndarray:
    """An array of a JSON model (``{"dtype", "shape", "data"}``), checked before it is
    built: a known non-object dtype, a shape of non-negative integers, a flat ``data``
    list of exactly ``prod(shape)`` entries of that dtype."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"{field_}: must be an object with dtype, shape and data, got "
                         f"{type(doc).__name__}")
    missing = [k for k in ("dtype", "shape", "data") if k not in doc]
    if missing:
        raise ValueError(f"{field_}: no {', '.join(missing)} entry")
    try:
        dt = np.dtype(doc["dtype"]) if isinstance(doc["dtype"], str) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biufU":
        raise ValueError(f"{field_}.dtype: {doc['dtype']!r} is not a dtype read here "
                         "(numbers or text)")
    shape = doc["shape"]
    if not isinstance(shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"{field_}.shape: must be a list of non-negative integers, got "
                         f"{shape!r}"[:200])
    data = doc["data"]
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if not isinstance(data, list) or len(data) != count:
        got = f"{len(data)} entries" if isinstance(data, list) else type(data).__name__
        raise ValueError(f"{field_}.data: must be a flat list of {count} entries (shape "
                         f"{tuple(shape)}), got {got}")
    ok = (str,) if dt.kind == "U" else (bool, int, float)
    if not all(isinstance(v, ok) for v in data):
        v = next(v for v in data if not isinstance(v, ok))
        raise ValueError(f"{field_}.data: holds {type(v).__name__} {str(v)[:40]!r}; "
                         f"dtype {dt} needs {'text' if dt.kind == 'U' else 'numbers'}")
    try:
        return np.array(data, dtype=dt).reshape(shape)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{field_}.data: {' '.join(str(exc).split())}") from None


def _depth(v: Any, limit: int) -> int:
    """Nesting depth of a JSON value (lists and objects), counted up to ``limit + 1``."""
    stack, deepest = [(v, 1)], 0
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((c, d + 1) for c in (x.values() if isinstance(x, dict) else x)
                         if isinstance(c, (dict, list)))
    return deepest


# ------------------------------------------------------------------ building


def _model_name(res: Any) -> str:
    parts = type(res).__module__.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "solvers" else parts[-1]


def _fitted_arrays(fitted: Any, model: str | None, names: dict[str, Any], reference: Any,
                   *, copy: bool) -> tuple[Any, str, SavedForm, dict[str, np.ndarray]]:
    """``(result, model name, form, arrays)`` of a result or fitted estimator: the
    result's arrays as its form saves them (``form.prepare`` applied); ``names`` gets the
    estimator's names where it has none."""
    est = None
    res = fitted
    if hasattr(fitted, "result_"):
        est, res = fitted, fitted.result_
        for key, attr in (("class_names", "classes_"), ("task_names", "tasks_")):
            if names[key] is None:
                names[key] = getattr(est, attr, None)
        if names["feature_names"] is None and hasattr(est, "feature_names_in_"):
            names["feature_names"] = list(est.feature_names_in_)
    if not dataclasses.is_dataclass(res) or not hasattr(res, "arrays"):
        raise TypeError(f"fitted must be a solver result or a fitted estimator, got "
                        f"{type(fitted).__name__}")
    name = model or _model_name(res)
    form = form_of(name)
    arrays = {k: np.array(v) if copy else v for k, v in res.arrays().items()
              if isinstance(v, np.ndarray) and v.dtype.kind in "biufU"}
    if form.prepare is not None:
        form.prepare(res, est, arrays, names, reference)
    elif reference is not None:
        raise ValueError(f"reference points are the metric learner's; model {name} has none")
    return res, name, form, arrays


@dataclasses.dataclass(frozen=True)
class _FittedView:
    """What a form's ``decide`` reads of a fitted model: its arrays and names."""

    arrays: Mapping[str, np.ndarray]
    class_names: Any = None


def decide_fitted(fitted: Any, X: Any, task_index: np.ndarray | None = None) -> np.ndarray:
    """The decision values (or transform) of ``X`` by a result or fitted estimator,
    through its model's :class:`SavedForm` (``decide``), as its saved model computes them.

    Parameters
    ----------
    fitted : Result or estimator
        A ``solve`` result or a fitted :mod:`solvers.estimators` estimator.
    X : array or sparse matrix
        The rows, validated by the caller.
    task_index : ndarray of int, optional
        Each row's task code (per-task models).

    Returns
    -------
    ndarray
        ``form.decide`` of the fitted arrays (not copied).
    """
    names: dict[str, Any] = {"feature_names": None, "class_names": None, "task_names": None}
    _, _, form, arrays = _fitted_arrays(fitted, None, names, None, copy=False)
    return form.decide(_FittedView(arrays, names["class_names"]), X, task_index)


def from_fitted(fitted: Any, *, model: str | None = None,
                feature_names: Sequence[Any] | None = None,
                class_names: Sequence[Any] | None = None,
                task_names: Sequence[Any] | None = None, label_name: str | None = None,
                task_name: str | None = None, reference: tuple[Any, Any] | None = None,
                params: Mapping[str, Any] | None = None,
                zero_based: bool | None = None, preprocessing: Any = None) -> SavedModel:
    """A :class:`SavedModel` of a solver result or a fitted :mod:`solvers.estimators` estimator.

    Parameters
    ----------
    fitted : Result or estimator
        A ``solve`` result (``solvers.<model>.solve``) or a fitted estimator (its
        ``result_``, ``classes_`` and ``tasks_`` are used).
    model : str, optional
        The model's name (default: read from the result's type).
    feature_names, class_names, task_names : sequence, optional
        Names of the data (class ``j`` is the result's class code ``j``; task ``t`` is
        column ``t`` of ``U``/``W``); defaults: the estimator's, else the codes.
    reference : (X, y), optional
        Metric learner only: reference points for ``predict`` (1-NN); ``y`` as class codes
        ``0..k-1`` (or, with ``class_names``, indices into them).
    label_name, task_name : str, optional
        Column names of the labels and tasks in the training file.
    params : Mapping, optional
        Extra parameters to record (e.g. a registry-only one).
    zero_based : bool, optional
        Index base of the svmlight/LIBSVM training file.
    preprocessing : solvers.preprocess.FittedPreprocessing, optional
        Applied to raw columns before the model (stored as arrays ``preprocessing.*``);
        the feature names default to its output columns.

    Returns
    -------
    SavedModel
        The model, validated against its schema.
    """
    names: dict[str, Any] = {"feature_names": feature_names, "class_names": class_names,
                             "task_names": task_names}
    res, name, form, arrays = _fitted_arrays(fitted, model, names, reference, copy=True)
    if form.per_task and names["task_names"] is None:  # tasks named by their column
        sym = form.names["task_names"]
        names["task_names"] = np.arange(next(
            arrays[k].shape[spec.dims.index(sym)] for k, spec in form.arrays.items()
            if k in arrays and sym in spec.dims and arrays[k].ndim == len(spec.dims)))
    if preprocessing is not None:
        arrays.update({PREP_PREFIX + k: v for k, v in preprocessing.to_arrays().items()})
        if names["feature_names"] is None:
            names["feature_names"] = list(preprocessing.feature_names_out)
    result: Any = res
    cert = {k: getattr(result, k) for k in _CERT}
    cert["rel_gap"] = float(result.rel_gap)
    prm = dict(result.params)
    prm.update(params or {})
    return SavedModel(model=name, arrays=arrays, params=_jsonable(prm),
                      certificate=_jsonable(cert),
                      feature_names=_names(names["feature_names"]),
                      class_names=_names(names["class_names"]),
                      task_names=_names(names["task_names"]), label_name=label_name,
                      task_name=task_name, zero_based=zero_based)


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

    Parameters
    ----------
    path : str or path-like
        The file; its suffix, ``.npz`` or ``.json``, chooses the format.
    fitted : Result, estimator or SavedModel
        What to save.
    **names
        Keywords of :func:`from_fitted`.

    Returns
    -------
    SavedModel
        The model written.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from solvers import wwsvm
    >>> from solvers.saved import load_model, save_model
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]); y = np.array([0, 1, 2])
    >>> res = wwsvm.solve(X, y, C=1.0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "model.npz")
    ...     sm = save_model(path, res, class_names=["a", "b", "c"])
    ...     back = load_model(path)
    >>> back.model, back.predict(X).tolist()
    ('wwsvm', ['a', 'b', 'c'])
    """
    sm = fitted if isinstance(fitted, SavedModel) else from_fitted(fitted, **names)
    sm.save(path)
    return sm


def _read_json(p: Path) -> tuple[dict[str, Any], dict[str, np.ndarray],
                                  dict[str, np.ndarray]]:
    raw = read_regular(p, MAX_MODEL_BYTES, "model file")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{p.name}: not a dualscope model file (JSON nested too deeply)"
                         ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p.name}: not a dualscope model file (not JSON: "
                         f"{' '.join(str(exc).split())})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{p.name}: not a dualscope model file (not a JSON object)")
    if doc.get("format") != FORMAT and isinstance(doc.get(RUN_KEY), dict):
        doc = doc[RUN_KEY]  # a run document holding the fitted model
    if doc.get("format") != FORMAT:
        raise ValueError(f"{p.name}: not a dualscope model file (format "
                         f"{doc.get('format')!r:.40})")
    out = []
    for part in ("arrays", "names"):
        block = doc.get(part, {})
        if not isinstance(block, dict):
            raise ValueError(f"{p.name}: {part}: must be an object of named arrays, got "
                             f"{type(block).__name__}")
        if part == "names" and set(block) - set(_NAMES):
            raise ValueError(f"{p.name}: names: unknown entries "
                             f"{sorted(set(block) - set(_NAMES))[:5]} (known: {_NAMES})")
        try:
            out.append({k: _array_from_json(v, f"{part}.{k}") for k, v in block.items()})
        except ValueError as exc:
            raise ValueError(f"{p.name}: {exc}") from None
    return doc, out[0], out[1]


def _read_npz(p: Path) -> tuple[dict[str, Any], dict[str, np.ndarray],
                                 dict[str, np.ndarray]]:
    with open_regular(p, MAX_MODEL_BYTES, "model file") as fh:
        try:
            keys = npz_keys(fh, p.name)
        except ValueError as exc:
            raise ValueError(f"{p.name}: not a dualscope model file "
                             f"({str(exc).removeprefix(p.name + ': ')})") from None
        if _META not in keys:
            raise ValueError(f"{p.name}: not a dualscope model file (no dualscope metadata)")
        # every member checked from its header (dtype, declared size) before it is read
        z = npz_arrays(fh, keys, max_bytes=MAX_MODEL_BYTES, name=p.name)
    meta_arr = z.pop(_META)
    if meta_arr.dtype.kind != "U" or meta_arr.ndim != 0:
        raise ValueError(f"{p.name}: {_META}: must be one JSON text, got {meta_arr.dtype} "
                         f"of shape {meta_arr.shape}")
    try:
        meta = json.loads(str(meta_arr))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{p.name}: {_META}: not JSON ({type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{p.name}: not a dualscope model file (format "
                         f"{meta.get('format') if isinstance(meta, dict) else None!r:.40})")
    names = {k: z.pop(k) for k in _NAMES if k in z}
    return meta, z, names


def load_model(path: str | os.PathLike) -> SavedModel:
    """Read a model written by :func:`save_model` (``.npz`` or ``.json``), validated.

    A JSON run document (``dualscope solve --json``, the page's run export) is read
    from its :data:`RUN_KEY` entry. Only a regular file of at most
    :data:`MAX_MODEL_BYTES` is read (a FIFO, a device or a link to one is refused before
    it is opened); the ``.npz`` members are checked from their headers before their data
    is read; the model is checked against its schema (:func:`validate`: the model kind,
    the arrays' dtypes, shapes consistent with each other and with the names, finite
    weights, the metadata's types).

    Raises
    ------
    ValueError
        One line naming the file and the field, for every defect.

    Parameters
    ----------
    path : str or path-like
        A ``.npz`` or ``.json`` file.

    Returns
    -------
    SavedModel
        The model (its :meth:`SavedModel.predict` predicts new data).
    """
    p = Path(path).expanduser()
    try:
        if p.suffix.lower() == ".json":
            meta, arrays, names = _read_json(p)
        elif p.suffix.lower() == ".npz":
            meta, arrays, names = _read_npz(p)
        else:
            raise ValueError(f"{p.name}: a saved model ends in .npz or .json")
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        raise ValueError(msg if p.name in msg else f"{p.name}: {msg}") from None
    except MemoryError:
        raise ValueError(f"{p.name}: out of memory while reading it") from None
    except Exception as exc:  # any other reader error: still one line naming the file
        raise ValueError(f"{p.name}: not a dualscope model file ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())})") from None
    for key in ("params", "certificate"):
        if _depth(meta.get(key, {}), MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
            raise ValueError(f"{p.name}: {key}: nested deeper than {MAX_JSON_DEPTH} levels")
    version = meta.get("version", _VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version > _VERSION:
        raise ValueError(f"{p.name}: version: {version!r} is not a version this dualscope "
                         f"reads (<= {_VERSION}); upgrade dualscope")
    sm = SavedModel(model=cast(str, meta.get("model")), arrays=arrays,
                    params=meta.get("params", {}),
                    certificate=meta.get("certificate", {}),
                    feature_names=names.get("feature_names"),
                    class_names=names.get("class_names"),
                    task_names=names.get("task_names"), label_name=meta.get("label_name"),
                    task_name=meta.get("task_name"), zero_based=meta.get("zero_based"))
    validate(sm, p.name)
    return sm
