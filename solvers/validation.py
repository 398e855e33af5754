"""Input validation shared by every public solver entry point.

Each helper raises ``ValueError`` (wrong value) or ``TypeError`` (wrong kind)
with a message that names the argument and says what was expected. Helpers
return the cleaned value (a float64 array, a float, an int) so solvers can
write ``X = check_matrix(X, "X")`` and move on.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .base import IncompatibleWarmStart

__all__ = [
    "DATA_MAX_ABS",
    "check_array",
    "check_binary_labels",
    "check_bool",
    "check_callback",
    "check_choice",
    "check_init",
    "check_int",
    "check_label_kind",
    "check_magnitude",
    "check_matrix",
    "check_matrix_or_sparse",
    "check_psd",
    "check_scalar",
    "check_task_lists",
    "check_tol_max_iter",
    "check_vector",
    "encode_labels",
]


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def check_scalar(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = False,
    high_inclusive: bool = True,
    allow_inf: bool = False,
) -> float:
    """Validate a real scalar against an interval; return it as ``float``.

    With the defaults, ``low=0`` means "strictly positive".
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not _is_number(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if np.isnan(value) or (np.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {value!r}")
    lo_txt = "[" if low_inclusive else "("
    hi_txt = "]" if high_inclusive else ")"
    lo_s = "-inf" if low is None else f"{low:g}"
    hi_s = "inf" if high is None else f"{high:g}"
    rng = f"{lo_txt}{lo_s}, {hi_s}{hi_txt}"
    if low is not None and (value < low or (value == low and not low_inclusive)):
        raise ValueError(f"{name} must lie in {rng}, got {value:g}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        raise ValueError(f"{name} must lie in {rng}, got {value:g}")
    return value


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Validate an integer (``bool`` rejected) in ``[low, high]``."""
    if isinstance(value, np.integer):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """A boolean flag (``numpy.bool_`` accepted, integers rejected)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """Validate membership in a fixed set of options."""
    choices = list(choices)
    if value not in choices:
        opts = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {opts}; got {value!r}")
    return value


def check_array(
    a: Any,
    name: str,
    *,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    min_size: int = 1,
    finite: bool = True,
) -> np.ndarray:
    """Convert to a C-contiguous float64 array and check dimension, shape, finiteness.

    ``shape`` may contain ``None`` for free axes.
    """
    if a is None:
        raise TypeError(f"{name} is required, got None")
    try:
        arr = np.asarray(a)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be array-like of numbers: {exc}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must contain real numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(
            s is not None and s != t for s, t in zip(shape, arr.shape, strict=True)
        ):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")
    return arr


def check_matrix(a: Any, name: str, *, n_rows: int | None = None, n_cols: int | None = None
                 ) -> np.ndarray:
    """A finite non-empty 2-D float64 array, optionally with fixed row/column counts."""
    arr = check_array(a, name, ndim=2)
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows, got shape {arr.shape}")
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"{name} must have {n_cols} columns, got shape {arr.shape}")
    return arr


def check_matrix_or_sparse(a: Any, name: str, *, n_rows: int | None = None,
                           n_cols: int | None = None) -> Any:
    """Like :func:`check_matrix`, but a ``scipy.sparse`` matrix or array is kept sparse.

    Sparse input (CSR, CSC, COO, ... with 32- or 64-bit indices) is returned as a
    canonical float64 ``scipy.sparse.csr_matrix`` (sorted indices, no duplicates,
    contiguous index arrays of the input's index dtype); its stored values must be
    finite. Dense input goes through :func:`check_matrix`.
    """
    import scipy.sparse as sp

    if not sp.issparse(a):
        return check_matrix(a, name, n_rows=n_rows, n_cols=n_cols)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional, got shape {a.shape}")
    if np.iscomplexobj(a.data if hasattr(a, "data") else np.empty(0)) or not (
        np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must contain real numbers, got dtype {a.dtype}")
    X = sp.csr_matrix(a, dtype=np.float64, copy=False)
    # compiled kernels index with indptr / indices: their bounds and order are checked
    # here, in full (a matrix whose arrays were edited after construction included)
    try:
        X.check_format(full_check=True)
    except ValueError as exc:
        raise ValueError(f"{name} is not a valid sparse matrix: {exc}") from None
    if not X.has_canonical_format:
        X = X.copy()  # never modify the caller's matrix
        X.sum_duplicates()  # also sorts the indices
    if X.shape[0] * X.shape[1] == 0:
        raise ValueError(f"{name} must not be empty, got shape {X.shape}")
    if not np.all(np.isfinite(X.data)):
        bad = int(X.data.size - np.count_nonzero(np.isfinite(X.data)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")
    if n_rows is not None and X.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows, got shape {X.shape}")
    if n_cols is not None and X.shape[1] != n_cols:
        raise ValueError(f"{name} must have {n_cols} columns, got shape {X.shape}")
    X.indices = np.ascontiguousarray(X.indices)
    X.indptr = np.ascontiguousarray(X.indptr)
    X.data = np.ascontiguousarray(X.data)
    return X


def check_index_array(a: Any, name: str, upper: int) -> np.ndarray:
    """A contiguous 1-D ``int32`` / ``int64`` array of indices in ``[0, upper)`` (other
    integer dtypes become ``int64``; ``int32`` and ``int64`` input is not copied when
    contiguous).

    For arrays that compiled kernels index with: a value outside the range would read
    or write outside an array there (the kernels are compiled without bounds checks).

    Raises
    ------
    TypeError
        ``a`` does not hold integers.
    ValueError
        ``a`` is not 1-D, or an entry lies outside ``[0, upper)`` (the message names
        ``name``, the first bad position and value).
    """
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D index array, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must contain integer indices, got dtype {arr.dtype}")
    if arr.dtype not in (np.int32, np.int64):
        arr = arr.astype(np.int64)
    arr = np.ascontiguousarray(arr)
    if arr.size and (arr.min() < 0 or arr.max() >= upper):
        bad = np.flatnonzero((arr < 0) | (arr >= upper))
        raise ValueError(f"{name} must index 0..{upper - 1}, got {int(arr[bad[0]])} at "
                         f"position {int(bad[0])}")
    return arr


def check_vector(a: Any, name: str, *, size: int | None = None) -> np.ndarray:
    """A finite non-empty 1-D float64 array (a column vector ``(n, 1)`` is accepted)."""
    arr = np.asarray(a) if a is not None else a
    if isinstance(arr, np.ndarray) and arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    arr = check_array(arr, name, ndim=1)
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got {arr.shape[0]}")
    return arr


def check_binary_labels(y: Any, name: str = "y", *, size: int | None = None) -> np.ndarray:
    """Labels in {-1, +1} as float64 (both classes need not be present)."""
    arr = check_vector(y, name, size=size)
    bad = ~np.isin(arr, (-1.0, 1.0))
    if np.any(bad):
        vals = np.unique(arr[bad])[:5]
        raise ValueError(f"{name} must contain only -1 and +1 labels; found {vals.tolist()}")
    return arr


def check_psd(G: Any, name: str, *, size: int | None = None, tol: float = 1e-8) -> np.ndarray:
    """A symmetric positive semidefinite matrix (eigenvalues >= -tol * scale)."""
    arr = check_matrix(G, name)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must be {size} x {size}, got shape {arr.shape}")
    scale = max(1.0, float(np.abs(arr).max()))
    if not np.allclose(arr, arr.T, rtol=0.0, atol=1e-10 * scale):
        raise ValueError(f"{name} must be symmetric")
    lam_min = float(np.linalg.eigvalsh((arr + arr.T) / 2)[0])
    if lam_min < -tol * scale:
        raise ValueError(
            f"{name} must be positive semidefinite; its smallest eigenvalue is {lam_min:.3g}"
        )
    return (arr + arr.T) / 2


def check_tol_max_iter(tol: Any, max_iter: Any) -> tuple[float, int]:
    """``tol`` in (0, 1) and ``max_iter`` >= 1."""
    return check_scalar(tol, "tol", low=0.0, high=1.0, high_inclusive=False), check_int(
        max_iter, "max_iter", low=1
    )


def check_callback(callback: Any) -> Callable | None:
    """``None`` or a callable taking one :class:`~solvers.base.IterationState`."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    return callback


def check_init(init: Any, result_type: type, **shapes: tuple[int, ...]) -> Any:
    """Validate a warm start: ``None`` or a ``result_type`` with matching array shapes.

    ``shapes`` maps attribute names of the result to the shapes this problem
    needs, e.g. ``check_init(init, WWSVMResult, alpha=(n, k))``.
    """
    if init is None:
        return None
    if not isinstance(init, result_type):
        raise TypeError(
            f"init must be a previous {result_type.__name__} (or None), got {type(init).__name__}"
        )
    for attr, shape in shapes.items():
        got = np.shape(getattr(init, attr))
        if tuple(got) != tuple(shape):
            raise IncompatibleWarmStart(
                f"init does not match this problem: init.{attr} has shape {tuple(got)}, "
                f"expected {tuple(shape)}"
            )
    return init


#: Largest data magnitude a solver that squares its data accepts (``max_abs`` of
#: :func:`check_task_lists`): squares, Gram matrices and sums of them stay finite.
DATA_MAX_ABS = 1e100


def check_magnitude(a: np.ndarray, name: str, max_abs: float = DATA_MAX_ABS) -> np.ndarray:
    """``a`` if every entry is at most ``max_abs`` in magnitude, else ``ValueError`` naming
    ``name`` (the solver squares the data: it would overflow to inf, then fail in a
    linear-algebra routine naming nothing)."""
    big = float(np.max(np.abs(a))) if a.size else 0.0
    if big > max_abs:
        raise ValueError(f"{name} has an entry of magnitude {big:.3g}, above {max_abs:g}: the "
                         "solver squares the data, which would overflow; rescale it")
    return a


def check_task_lists(
    Xs: Any, ys: Any, *, names: tuple[str, str] = ("Xs", "ys"), max_abs: float | None = None
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Validate per-task data lists: same number of tasks, same d, matching n_l.

    Returns float64 copies. Empty tasks, ragged feature counts and NaN raise; so do
    entries above ``max_abs`` in magnitude (:func:`check_magnitude`; None: no limit).
    """
    nx, ny = names
    try:
        Xs = list(Xs)
        ys = list(ys)
    except TypeError as exc:
        raise TypeError(f"{nx} and {ny} must be sequences with one entry per task") from exc
    if len(Xs) == 0:
        raise ValueError(f"{nx} must contain at least one task")
    if len(Xs) != len(ys):
        raise ValueError(f"{nx} has {len(Xs)} tasks but {ny} has {len(ys)}")
    Xo, yo = [], []
    d = None
    for t, (X, y) in enumerate(zip(Xs, ys, strict=True)):
        X = check_matrix(X, f"{nx}[{t}]")
        if d is None:
            d = X.shape[1]
        elif X.shape[1] != d:
            raise ValueError(
                f"{nx}[{t}] has {X.shape[1]} features but {nx}[0] has {d}: all tasks must share d"
            )
        y = check_vector(y, f"{ny}[{t}]", size=X.shape[0])
        if max_abs is not None:
            check_magnitude(X, f"{nx}[{t}]", max_abs)
            check_magnitude(y, f"{ny}[{t}]", max_abs)
        Xo.append(X)
        yo.append(y)
    return Xo, yo


def check_label_kind(y: Any, name: str = "y") -> None:
    """``TypeError`` naming ``name`` if a list of labels mixes strings and numbers (numpy
    would silently turn ``[1, "a"]`` into the strings ``"1", "a"``)."""
    if isinstance(y, list | tuple) and len({isinstance(v, str | bytes) for v in y}) > 1:
        raise TypeError(f"{name} must hold labels of one kind (all strings or all numbers), "
                        "got both")


def encode_labels(
    y: Any, name: str = "y", *, size: int | None = None, min_classes: int = 2,
    max_classes: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Encode any hashable, sortable labels as ``0..k-1``.

    The classes are the distinct values of ``y`` (sorted), never ``range(max(y) + 1)``:
    labels ``{1, 5, 9}`` are three classes.

    Returns
    -------
    classes : ndarray, shape (k,)
        The distinct labels, sorted (``classes[codes] == y``).
    codes : ndarray of int64, shape (n,)
    """
    if y is None:
        raise TypeError(f"{name} is required, got None")
    check_label_kind(y, name)
    try:
        arr = np.asarray(y)
    except Exception as exc:
        raise TypeError(f"{name} must be a 1-D array of labels: {exc}") from exc
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got {arr.shape[0]}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold real or string labels, got a complex array")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite labels")
    if arr.dtype.kind == "O":
        if any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in arr):
            raise ValueError(f"{name} contains None, NaN or infinite labels")
    try:
        classes, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} must hold labels of one sortable kind: {exc}") from exc
    k = classes.shape[0]
    if k < min_classes:
        raise ValueError(
            f"{name} must contain at least {min_classes} distinct labels, got {k} "
            f"({classes.tolist()[:5]})"
        )
    if max_classes is not None and k > max_classes:
        raise ValueError(f"{name} has {k} distinct labels, more than the {max_classes} allowed")
    return classes, codes.astype(np.int64).reshape(-1)
