"""Preprocessing of a user's feature columns that travels with the fitted model.

One implementation for the CLI (``dualscope solve --scale/--categorical/--missing``),
the dashboard's upload panel, sweeps (the ``file:`` dataset options) and Python. The
transformers are scikit-learn's, fitted on the training rows:

- ``scale``: ``"standard"``, ``(x - mean) / std`` per numeric column (StandardScaler;
  not centred for sparse input: it stays sparse); ``"maxabs"``, ``x / max |x|``
  (MaxAbsScaler; keeps sparse input sparse).
- ``categorical``: text columns ``"onehot"`` (OneHotEncoder: one 0/1 column
  ``name=value`` per value seen in training; an unseen value is an error naming the
  column and the value), ``"drop"`` the column, or ``"error"``.
- ``missing``: ``"drop"`` incomplete rows, ``"mean"`` (SimpleImputer: the training mean
  of a numeric column, the most frequent value of a text one), or ``"error"``.

:func:`fit` returns a :class:`FittedPreprocessing` whose parameters are plain named
numpy arrays (:meth:`FittedPreprocessing.to_arrays`, no pickles) and whose
:meth:`~FittedPreprocessing.transform` applies them with numpy alone, so a saved model
applies the same arithmetic to new rows bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CATEGORICAL", "MISSING", "SCALES", "FittedPreprocessing", "Preprocessing",
           "PreprocessingError", "fit", "is_missing"]

SCALES = ("none", "standard", "maxabs")
CATEGORICAL = ("error", "onehot", "drop")
MISSING = ("error", "drop", "mean")


class PreprocessingError(ValueError):
    """Data the preprocessing cannot take (an unseen category, a missing value, ...)."""


@dataclass(frozen=True)
class Preprocessing:
    """What to do with a table's feature columns before a model sees them.

    Attributes
    ----------
    scale : {"none", "standard", "maxabs"}
    categorical : {"error", "onehot", "drop"}
        Text feature columns.
    missing : {"error", "drop", "mean"}
        Missing values (NaN, empty cells) in the feature columns (and, for ``"drop"``,
        in the label, task and time columns).
    features : tuple of str, optional
        Only these feature columns (default: every column that is not a role).
    ignore : tuple of str
        Columns left out.
    """

    scale: str = "none"
    categorical: str = "error"
    missing: str = "error"
    features: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, choices in (("scale", SCALES), ("categorical", CATEGORICAL),
                              ("missing", MISSING)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {', '.join(choices)}, got "
                                 f"{getattr(self, name)!r}")
        if self.features is not None:
            object.__setattr__(self, "features", _names(self.features, "features"))
        object.__setattr__(self, "ignore", _names(self.ignore, "ignore"))

    @property
    def identity(self) -> bool:
        """True when nothing is done (the strict reading: numbers only, no gaps)."""
        return self == Preprocessing()

    def to_spec(self) -> dict[str, str]:
        """The options that differ from the defaults, as text (a ``file:`` spec's query)."""
        out = {k: getattr(self, k) for k in ("scale", "categorical", "missing")
               if getattr(self, k) != getattr(Preprocessing, k)}
        if self.features is not None:
            out["features"] = ",".join(self.features)
        if self.ignore:
            out["ignore"] = ",".join(self.ignore)
        return out

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Preprocessing:
        """Inverse of :meth:`to_spec` (comma-separated ``features`` / ``ignore``)."""
        kw: dict[str, Any] = {k: spec[k] for k in ("scale", "categorical", "missing")
                              if spec.get(k) is not None}
        for k in ("features", "ignore"):
            v = spec.get(k)
            if v is not None:
                kw[k] = tuple(s.strip() for s in v.split(",") if s.strip()) if isinstance(
                    v, str) else tuple(v)
        return cls(**kw)


def _names(v: Any, what: str) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [s.strip() for s in v.split(",") if s.strip()]
    out = tuple(str(s) for s in v)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: a column is named twice")
    return out


def is_missing(col: np.ndarray) -> np.ndarray:
    """Boolean mask of the missing entries of one column (NaN, None, empty text).

    Parameters
    ----------
    col : ndarray
        One column (numbers, or text as an object / str array).

    Returns
    -------
    ndarray of bool
        True where the entry is missing.
    """
    a = np.asarray(col)
    if a.dtype.kind == "f":
        return np.isnan(a)
    if a.dtype.kind in "iub":
        return np.zeros(a.shape, dtype=bool)
    return np.array([v is None or (isinstance(v, float) and v != v)
                     or (isinstance(v, str) and not v.strip()) for v in a], dtype=bool)


def _text(col: np.ndarray) -> np.ndarray:
    return np.asarray(["" if v is None else str(v) for v in np.asarray(col)])


@dataclass(frozen=True)
class FittedPreprocessing:
    """Fitted preprocessing: named arrays and the :class:`Preprocessing` options.

    Per input column ``j`` (``columns[j]``): ``numeric[j]``; ``center[j]``,
    ``scale[j]`` (``x -> (x - center) / scale``, identity for text columns);
    ``fill[j]`` / ``fill_category[j]`` (the imputed value, ``missing="mean"``);
    ``categories[j]`` (sorted training values of a one-hot text column, else None).
    ``n_rows`` / ``n_dropped``: training rows kept / dropped for missing values.
    ``target_center``, ``target_scale``: a regression's real targets enter the fit as
    ``(y - target_center) / target_scale`` (a model without intercept on standardised
    features); its predictions are mapped back (:meth:`targets_back`).

    Attributes
    ----------
    options : Preprocessing
        What was asked.
    columns : tuple of str
        The input columns used, in order.
    numeric, center, scale, fill, fill_category : ndarray
        Per input column, as described above.
    categories : tuple of (ndarray or None)
        The one-hot columns' training values.
    n_rows, n_dropped : int
        Training rows kept / dropped.
    sparse : bool
        Fitted on a sparse matrix (``maxabs`` scaling only).
    dropped_columns : tuple of str
        Text columns left out (``categorical="drop"``).
    target_center, target_scale : float
        The regression targets' standardisation.
    """

    options: Preprocessing
    columns: tuple[str, ...]
    numeric: np.ndarray
    center: np.ndarray
    scale: np.ndarray
    fill: np.ndarray
    fill_category: np.ndarray
    categories: tuple[np.ndarray | None, ...]
    n_rows: int = 0
    n_dropped: int = 0
    sparse: bool = False
    dropped_columns: tuple[str, ...] = field(default=())
    target_center: float = 0.0
    target_scale: float = 1.0

    # ------------------------------------------------------------------ names

    @property
    def feature_names_out(self) -> tuple[str, ...]:
        """The model's feature names: numeric columns as they are, one-hot columns as
        ``name=value``; dropped text columns are absent."""
        out: list[str] = []
        for j, c in enumerate(self.columns):
            cats = self.categories[j]
            if self.numeric[j]:
                out.append(c)
            elif cats is not None:
                out.extend(f"{c}={v}" for v in cats)
        return tuple(out)

    def describe(self) -> str:
        """What was done, in one line."""
        parts = []
        num = int(np.count_nonzero(self.numeric))
        if self.options.scale == "standard":
            parts.append(f"standardised {num} column{'s' * (num != 1)}"
                         + (" (scaled, not centred: sparse)" if self.sparse else ""))
        elif self.options.scale == "maxabs":
            parts.append(f"scaled {num} column{'s' * (num != 1)} by max |x|")
        hot = [f"{c} ({cats.size} values)" for c, cats in zip(self.columns, self.categories,
                                                             strict=True) if cats is not None]
        if hot:
            parts.append("one-hot " + ", ".join(hot))
        if self.dropped_columns:
            parts.append("dropped text column" + "s" * (len(self.dropped_columns) > 1) + " "
                         + ", ".join(self.dropped_columns))
        if self.n_dropped:
            parts.append(f"dropped {self.n_dropped} row{'s' * (self.n_dropped != 1)} with "
                         "missing values")
        if self.options.missing == "mean":
            parts.append("missing values filled with the training mean / most frequent value")
        if self.target_center or self.target_scale != 1.0:
            parts.append(f"targets standardised (training mean {self.target_center:.6g}, "
                         f"sd {self.target_scale:.6g})")
        return "; ".join(parts) if parts else "no preprocessing"

    # -------------------------------------------------------------- applying

    def targets_back(self, f: np.ndarray) -> np.ndarray:
        """A regression's predictions in the targets' units: ``f * target_scale +
        target_center``."""
        if self.target_center == 0.0 and self.target_scale == 1.0:
            return f
        return f * self.target_scale + self.target_center

    def complete(self, columns: Mapping[str, Any]) -> np.ndarray:
        """Rows without a missing value in the used columns."""
        mask = None
        for c in self.columns:
            m = ~is_missing(np.asarray(columns[c]))
            mask = m if mask is None else mask & m
        return mask if mask is not None else np.ones(0, dtype=bool)

    def transform(self, columns: Mapping[str, Any]) -> np.ndarray:
        """The model's features of ``columns`` (name -> 1-D array, the training columns).

        Raises
        ------
        PreprocessingError
            A missing column, a missing value (unless ``missing="mean"``), a text value in
            a numeric column or an unseen category, naming the column and the value.
        """
        absent = [c for c in self.columns if c not in columns]
        if absent:
            raise PreprocessingError(f"the columns {absent[:6]} of the training data are "
                                     "missing")
        blocks = []
        for j, c in enumerate(self.columns):
            col = np.asarray(columns[c])
            miss = is_missing(col)
            if miss.any() and self.options.missing != "mean":
                i = int(np.flatnonzero(miss)[0])
                raise PreprocessingError(f"column {c!r}, row {i}: missing value (the model "
                                         f"was fitted with missing={self.options.missing!r})")
            if self.numeric[j]:
                x = _as_float(col, c, miss)
                if miss.any():
                    x = np.where(miss, self.fill[j], x)
                blocks.append(((x - self.center[j]) / self.scale[j])[:, None])
            elif (cats := self.categories[j]) is not None:
                v = _text(col)
                if miss.any():
                    v = np.where(miss, self.fill_category[j], v)
                pos = np.searchsorted(cats, v)
                ok = (pos < cats.size) & (cats[np.minimum(pos, cats.size - 1)] == v)
                if not ok.all():
                    bad = v[~ok][0]
                    raise PreprocessingError(
                        f"column {c!r}: value {bad!r} was not seen in training (known: "
                        f"{', '.join(map(str, cats[:8]))}{', ...' if cats.size > 8 else ''})")
                blocks.append((pos[:, None] == np.arange(cats.size)[None, :]).astype(
                    np.float64))
        n = len(np.asarray(columns[self.columns[0]])) if self.columns else 0
        return np.hstack(blocks) if blocks else np.zeros((n, 0))

    def transform_matrix(self, X: Any) -> Any:
        """The scaled features of a numeric matrix (dense or scipy.sparse, kept sparse)."""
        if X.shape[1] != len(self.columns):
            raise PreprocessingError(f"X has {X.shape[1]} columns, the preprocessing "
                                     f"{len(self.columns)}")
        if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
            import scipy.sparse as sp

            return (sp.csr_matrix(X) @ sp.diags(1.0 / self.scale)).tocsr()
        return (np.asarray(X, dtype=np.float64) - self.center) / self.scale

    # ----------------------------------------------------------------- arrays

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The fitted parameters as named arrays (numbers and text only)."""
        o = self.options
        out = {"columns": np.asarray(self.columns, dtype=str),
               "numeric": np.asarray(self.numeric, dtype=bool),
               "options": np.asarray([o.scale, o.categorical, o.missing]),
               "center": np.asarray(self.center, dtype=np.float64),
               "scale": np.asarray(self.scale, dtype=np.float64),
               "fill": np.asarray(self.fill, dtype=np.float64),
               "fill_category": np.asarray(self.fill_category, dtype=str),
               "counts": np.asarray([self.n_rows, self.n_dropped, int(self.sparse)],
                                    dtype=np.int64),
               "dropped_columns": np.asarray(self.dropped_columns, dtype=str),
               "target_center": np.asarray([self.target_center, self.target_scale],
                                           dtype=np.float64)}
        for j, cats in enumerate(self.categories):
            if cats is not None:
                out[f"categories_{j}"] = np.asarray(cats, dtype=str)
        if not self.columns:
            out["columns"] = np.zeros(0, dtype="<U1")
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> FittedPreprocessing:
        """Read back :meth:`to_arrays`, checked; ``ValueError`` naming the array."""
        def get(key: str, kinds: str, ndim: int) -> np.ndarray:
            if key not in arrays:
                raise ValueError(f"{key}: missing")
            a = np.asarray(arrays[key])
            if a.dtype.kind not in kinds or a.ndim != ndim:
                raise ValueError(f"{key}: must be a {ndim}-D array of kind {kinds!r}, got "
                                 f"{a.dtype} of shape {a.shape}")
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise ValueError(f"{key}: holds a value that is not finite")
            return a

        cols = get("columns", "U", 1)
        c = cols.shape[0]
        numeric = get("numeric", "b", 1)
        opts = get("options", "U", 1)
        if opts.shape != (3,):
            raise ValueError(f"options: must hold scale, categorical, missing; got {opts}")
        try:
            options = Preprocessing(scale=str(opts[0]), categorical=str(opts[1]),
                                    missing=str(opts[2]))
        except ValueError as exc:
            raise ValueError(f"options: {exc}") from None
        center, scale, fill = (get(k, "f", 1) for k in ("center", "scale", "fill"))
        fill_cat = get("fill_category", "U", 1)
        for key, a in (("numeric", numeric), ("center", center), ("scale", scale),
                       ("fill", fill), ("fill_category", fill_cat)):
            if a.shape[0] != c:
                raise ValueError(f"{key}: length {a.shape[0]}, columns has {c}")
        if np.any(scale == 0):
            raise ValueError("scale: holds 0")
        counts = get("counts", "iu", 1)
        if counts.shape != (3,) or counts.min() < 0:
            raise ValueError("counts: must be 3 non-negative integers")
        dropped = get("dropped_columns", "U", 1) if "dropped_columns" in arrays else \
            np.zeros(0, dtype=str)
        cats: list[np.ndarray | None] = [None] * c
        target = get("target_center", "f", 1) if "target_center" in arrays else \
            np.array([0.0, 1.0])
        if target.shape != (2,) or target[1] <= 0:
            raise ValueError("target_center: must hold the targets' centre and a positive "
                             f"scale, got {target.tolist()[:4]}")
        known = {"columns", "numeric", "options", "center", "scale", "fill",
                 "fill_category", "counts", "dropped_columns", "target_center"}
        for key, a in arrays.items():
            if key in known:
                continue
            if not key.startswith("categories_") or not key[11:].isdigit() \
                    or int(key[11:]) >= c:
                raise ValueError(f"{key}: not an array of the preprocessing")
            j = int(key[11:])
            a = get(key, "U", 1)
            if numeric[j]:
                raise ValueError(f"{key}: column {cols[j]!r} is numeric")
            if a.size == 0 or np.any(a[1:] <= a[:-1]):
                raise ValueError(f"{key}: must be sorted distinct values")
            cats[j] = a
        return cls(options=options, columns=tuple(str(s) for s in cols), numeric=numeric,
                   center=center, scale=scale, fill=fill, fill_category=fill_cat,
                   categories=tuple(cats), n_rows=int(counts[0]), n_dropped=int(counts[1]),
                   sparse=bool(counts[2]), dropped_columns=tuple(str(s) for s in dropped),
                   target_center=float(target[0]), target_scale=float(target[1]))


def _as_float(col: np.ndarray, name: str, miss: np.ndarray) -> np.ndarray:
    if col.dtype.kind in "iufb":
        return col.astype(np.float64)
    out = np.zeros(col.shape[0])
    for i, v in enumerate(col):
        if miss[i]:
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise PreprocessingError(f"column {name!r}, row {i}: non-numeric value "
                                     f"{str(v)[:40]!r} in a numeric column") from None
    return out


def numeric_column(col: np.ndarray) -> bool:
    """True when every present value of ``col`` is a number."""
    a = np.asarray(col)
    if a.dtype.kind in "iufb":
        return True
    miss = is_missing(a)
    try:
        np.asarray(a[~miss], dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def fit(columns: Mapping[str, Any] | Any, options: Preprocessing | None = None,
        names: Sequence[str] | None = None) -> FittedPreprocessing:
    """Fit ``options`` on the training rows.

    Parameters
    ----------
    columns : Mapping[str, array] or 2-D array / scipy.sparse matrix
        The feature columns (name -> 1-D array; text columns as object or str arrays,
        missing entries NaN / None / empty), or a numeric matrix (then only ``scale``
        applies; ``names`` names its columns). Rows with missing values must already be
        removed when ``options.missing == "drop"`` (:meth:`FittedPreprocessing.complete`).
    options : Preprocessing
        What to do (default: nothing but checks).
    names : sequence of str, optional
        A matrix's column names.

    Returns
    -------
    FittedPreprocessing
        The fit, as named arrays.

    Raises
    ------
    PreprocessingError
        A text column with ``categorical="error"``, a missing value with
        ``missing="error"``, naming the column (and the option that would take it).
    """
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import MaxAbsScaler, OneHotEncoder, StandardScaler

    options = options or Preprocessing()
    if not isinstance(columns, Mapping):  # a numeric matrix: scaling only
        X = columns
        sparse = hasattr(X, "toarray") and not isinstance(X, np.ndarray)
        d = X.shape[1]
        cols = tuple(names) if names is not None else tuple(f"x{j}" for j in range(d))
        center, scale = np.zeros(d), np.ones(d)
        if options.scale == "standard":
            s = StandardScaler(with_mean=not sparse).fit(X)
            center = np.zeros(d) if sparse else s.mean_.astype(np.float64)
            scale = s.scale_.astype(np.float64)
        elif options.scale == "maxabs":
            scale = MaxAbsScaler().fit(X).scale_.astype(np.float64)
        return FittedPreprocessing(options=options, columns=cols,
                                   numeric=np.ones(d, dtype=bool), center=center,
                                   scale=scale, fill=np.zeros(d),
                                   fill_category=np.full(d, "", dtype="<U1"),
                                   categories=(None,) * d, n_rows=int(X.shape[0]),
                                   sparse=sparse)
    names_ = list(columns)
    numeric = np.array([numeric_column(np.asarray(columns[c])) for c in names_], dtype=bool)
    text = [c for c, num in zip(names_, numeric, strict=True) if not num]
    if text and options.categorical == "error":
        c = text[0]
        miss = is_missing(np.asarray(columns[c]))
        v = np.asarray(columns[c])[~miss][0]
        raise PreprocessingError(
            f"column {c!r}: non-numeric value {str(v)[:40]!r} (text columns: "
            f"{', '.join(text[:6])}); use --categorical onehot (one 0/1 column per value) "
            f"or --categorical drop, or --ignore {c}")
    kept = [c for c in names_ if c not in text or options.categorical == "onehot"]
    dropped_cols = tuple(c for c in text if options.categorical == "drop")
    num = np.array([c not in text for c in kept], dtype=bool)
    n = len(np.asarray(columns[names_[0]])) if names_ else 0
    c = len(kept)
    fill, fill_cat = np.zeros(c), np.full(c, "", dtype=object)
    Xnum = np.zeros((n, int(num.sum())))
    cats: list[np.ndarray | None] = [None] * c
    k = 0
    for j, name in enumerate(kept):
        col = np.asarray(columns[name])
        miss = is_missing(col)
        if miss.any() and options.missing != "mean":
            i = int(np.flatnonzero(miss)[0])
            raise PreprocessingError(f"column {name!r}, row {i}: missing value; use "
                                     "--missing drop (drop incomplete rows) or --missing "
                                     "mean (fill in the training mean)")
        if num[j]:
            x = _as_float(col, name, miss)
            if miss.any():
                x = np.where(miss, np.nan, x)
                imp = SimpleImputer(strategy="mean").fit(x[:, None])
                fill[j] = float(imp.statistics_[0])
                x = np.where(miss, fill[j], x)
            Xnum[:, k] = x
            k += 1
        else:
            v = _text(col)
            if miss.any():
                imp = SimpleImputer(strategy="most_frequent", missing_values=None).fit(
                    np.where(miss, np.array(None, dtype=object), v).astype(object)[:, None])
                fill_cat[j] = str(imp.statistics_[0])
                v = np.where(miss, fill_cat[j], v)
            enc = OneHotEncoder(handle_unknown="error").fit(v[:, None])
            cats[j] = np.asarray(enc.categories_[0], dtype=str)
    center, scale = np.zeros(c), np.ones(c)
    if options.scale != "none" and Xnum.shape[1]:
        idx = np.flatnonzero(num)
        if options.scale == "standard":
            s = StandardScaler().fit(Xnum)
            center[idx], scale[idx] = s.mean_, s.scale_
        else:
            scale[idx] = MaxAbsScaler().fit(Xnum).scale_
    return FittedPreprocessing(options=options, columns=tuple(kept), numeric=num,
                               center=center, scale=scale, fill=fill,
                               fill_category=np.asarray(fill_cat, dtype=str),
                               categories=tuple(cats), n_rows=n,
                               dropped_columns=dropped_cols)
