"""A user's data files as :class:`explorer.registry.Problem` instances.

One reader per format, each the ecosystem's own (no hand-written parser):

======== ============================================ =========================================
format   extensions                                   reader
======== ============================================ =========================================
csv      ``.csv`` (``.gz``)                            :func:`pandas.read_csv`
tsv      ``.tsv``, ``.tab`` (``.gz``)                  :func:`pandas.read_csv` (tab)
svmlight ``.svm``, ``.libsvm``, ``.svmlight``,         :func:`sklearn.datasets.load_svmlight_file`
         ``.txt`` (``.gz``)                            (sparse CSR; ``qid`` = task)
npz      ``.npz``                                     :func:`numpy.load` (no pickles): ``X``,
                                                      ``y``, optional ``tasks``, ``time``,
                                                      ``feature_names``, ``triplets``
parquet  ``.parquet``, ``.pq``                         :func:`pandas.read_parquet` (pyarrow)
mat      ``.mat``                                     :func:`scipy.io.loadmat`: MALSAR's
                                                      multitask layout (cell arrays ``X{t}``,
                                                      ``Y{t}``) or plain ``X``, ``y``
======== ============================================ =========================================

The format follows the extension unless given (``fmt=`` / ``--format``). Tables
(CSV, TSV, Parquet) have a header row; the label column is the one named
(``label=``) or the last; the task and time columns are named (``task=``,
``time=``; a column called ``task`` / ``time`` is found without being named).

:func:`read_table` returns a :class:`Table` (features, labels, tasks, names);
:func:`problem_from_table` turns it into a model's :class:`~explorer.registry.Problem` through the
model's ``FILE_ROLES`` and ``from_table`` in ``explorer/models/<model>/data.py``
(what the model needs: features, class labels or real targets, tasks, a time
order, triplets). :func:`load_problem` does both.

Every failure is a :class:`DataFileError` (a ``ValueError``) whose one-line
message names the file and, where known, the line and column; nothing is
returned from a file that failed.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import importlib
import io
import math
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import numpy as np

from solvers import preprocess
from solvers.preprocess import FittedPreprocessing, Preprocessing

from .registry import Problem

__all__ = ["FORMATS", "MAX_FILE_BYTES", "DataFileError", "FileRoles", "Table",
           "detect_format", "fitted_model", "load_problem", "problem_from_table",
           "read_table", "roles", "split_table"]

#: Format name -> file extensions (a ``.gz`` suffix is accepted for the text formats).
FORMATS: dict[str, tuple[str, ...]] = {
    "csv": (".csv",),
    "tsv": (".tsv", ".tab"),
    "svmlight": (".svm", ".libsvm", ".svmlight", ".txt"),
    "npz": (".npz",),
    "parquet": (".parquet", ".pq"),
    "mat": (".mat",),
}
_TEXT = ("csv", "tsv", "svmlight")

#: Files larger than this (on disk; a ``.gz`` file counts 5 times its size) are refused
#: before they are read.
MAX_FILE_BYTES = 512 * 1024**2

#: Longest line of a text file (decompressed bytes; a longer one is refused as it streams).
MAX_LINE_BYTES = 64 * 1024**2

#: Most columns of a table file (CSV, TSV, Parquet), refused from its header beyond (wider
#: data: a sparse svmlight/LIBSVM file or a ``.npz``).
MAX_COLUMNS = 20_000

#: Sparse input is densified for a model without sparse support only below this many bytes.
MAX_DENSE_BYTES = 256 * 1024**2


class DataFileError(ValueError):
    """A data file that cannot be used; the message names the file (one line)."""


@dataclass(frozen=True)
class FileRoles:
    """What a model needs from a data file.

    Attributes
    ----------
    labels : {"classes", "binary", "real"}
        Class labels (at least two classes), exactly two classes, or real targets
        (two distinct values are also accepted as +-1 targets).
    tasks : bool
        One task per distinct value of a task column (or ``qid``, or a MALSAR cell).
    time : bool
        The tasks are time steps: ordered by the sorted task ids, or by a time column.
    triplets : bool
        Accepts explicit triplets (an ``(n_t, 3)`` index array ``triplets`` in a
        ``.npz``); otherwise they are built from the labels.
    sparse : bool
        The solver takes ``scipy.sparse`` features as they are (otherwise sparse
        input is densified when it is small, refused when not).
    center_targets : bool
        A regression without an intercept: with standardised features (``--scale
        standard`` centres them) the real targets are standardised too (training mean and
        standard deviation, kept by the saved preprocessing; ``predict`` undoes it).
    """

    labels: str = "classes"
    tasks: bool = False
    time: bool = False
    triplets: bool = False
    sparse: bool = False
    center_targets: bool = False

    def __post_init__(self) -> None:
        if self.labels not in ("classes", "binary", "real"):
            raise ValueError(f"FileRoles: labels must be 'classes', 'binary' or 'real', got "
                             f"{self.labels!r}")

    def describe(self) -> str:
        """The roles in words (for ``dualscope list``)."""
        what = {"classes": "class labels (>= 2 classes)", "binary": "binary labels",
                "real": "real targets"}[self.labels]
        parts = ["features", what]
        if self.tasks:
            parts.append("a task column (time-ordered)" if self.time else "a task column")
        if self.time:
            parts.append("or a time column")
        if self.triplets:
            parts.append("optional triplets (.npz key 'triplets')")
        return ", ".join(parts)


@dataclass(frozen=True)
class Table:
    """Features and roles read from one file.

    ``X`` is dense (n, d) float64 or scipy.sparse CSR; ``y``, ``tasks``, ``time``
    are 1-D arrays of length n (or None); ``lines`` the file line of each row
    where known (for messages).

    Attributes
    ----------
    X : ndarray or scipy.sparse.csr_matrix, shape (n, d)
        The features.
    y, tasks, time : ndarray, shape (n,), or None
        The label, task and time columns.
    feature_names : tuple of str
        One name per feature column.
    path, fmt : str
        The file and its format.
    label_name, task_name, time_name : str or None
        The columns' names in the file.
    triplets : ndarray, shape (n_t, 3), or None
        Explicit triplets (an ``.npz`` file's).
    extra : Mapping[str, Any]
        What else the reader found (``lines``, ``zero_based``, ...).
    """

    X: Any
    y: np.ndarray | None
    feature_names: tuple[str, ...]
    path: str
    fmt: str
    tasks: np.ndarray | None = None
    time: np.ndarray | None = None
    label_name: str | None = None
    task_name: str | None = None
    time_name: str | None = None
    triplets: np.ndarray | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def sparse(self) -> bool:
        return not isinstance(self.X, np.ndarray)

    @property
    def density(self) -> float:
        """Fraction of non-zero feature values."""
        nnz = self.X.nnz if self.sparse else int(np.count_nonzero(self.X))
        return nnz / max(1, self.n * self.d)

    @property
    def name(self) -> str:
        return Path(self.path).name

    def head(self, rows: int = 5) -> dict[str, list[Any]]:
        """The first ``rows`` rows as ``column -> values`` (label/task/time first)."""
        k = min(rows, self.n)
        out: dict[str, list[Any]] = {}
        for col, arr in ((self.label_name or "label", self.y), (self.task_name or "task",
                         self.tasks), (self.time_name or "time", self.time)):
            if arr is not None:
                out[col] = [_scalar(v) for v in arr[:k]]
        block = self.X[:k].toarray() if self.sparse else self.X[:k]
        for j, name in enumerate(self.feature_names[:20]):
            out[name] = [float(v) for v in block[:, j]]
        return out


def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


# ------------------------------------------------------------------------ formats


def detect_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` when given, else from its extension.

    Parameters
    ----------
    path : str or path-like
        The file.
    fmt : str, optional
        A format name or alias (``"libsvm"``, ``"pq"``, ...).

    Returns
    -------
    str
        A key of :data:`FORMATS`.

    Raises
    ------
    DataFileError
        For an unknown format or extension.

    Examples
    --------
    >>> from explorer.datafiles import detect_format
    >>> detect_format("train.csv.gz"), detect_format("a9a.libsvm"), detect_format("x", "pq")
    ('csv', 'svmlight', 'parquet')
    """
    name = Path(path).name
    if fmt:
        f = fmt.lower().lstrip(".")
        f = {"libsvm": "svmlight", "svm": "svmlight", "pq": "parquet", "tab": "tsv"}.get(f, f)
        if f not in FORMATS:
            raise DataFileError(f"{name}: unknown format {fmt!r}; formats: "
                                f"{', '.join(FORMATS)}")
        return f
    lower = name.lower()
    if lower.endswith(".gz"):
        lower = lower[:-3]
        for f in _TEXT:
            if lower.endswith(FORMATS[f]):
                return f
        raise DataFileError(f"{name}: a .gz file must be {', '.join(_TEXT)} "
                            "(e.g. data.svm.gz); give the format with --format")
    for f, exts in FORMATS.items():
        if lower.endswith(exts):
            return f
    raise DataFileError(
        f"{name}: unknown file extension; formats: "
        + "; ".join(f"{f} ({' '.join(e)})" for f, e in FORMATS.items())
        + " (or give the format with --format)")


def _check_size(p: Path, max_bytes: float) -> None:
    if not p.exists():
        raise DataFileError(f"{p}: no such file")
    if p.is_dir():
        raise DataFileError(f"{p}: is a directory, not a data file")
    if not p.is_file():
        raise DataFileError(f"{p.name}: not a regular file (a FIFO, device or socket); only "
                            "regular files are read")
    size = p.stat().st_size
    if size == 0:
        raise DataFileError(f"{p.name}: the file is empty")
    factor = 5 if p.name.lower().endswith(".gz") else 1
    if size * factor > max_bytes:
        extra = " (a .gz file counts 5 times its size)" if factor > 1 else ""
        raise DataFileError(
            f"{p.name}: {size / 1024**2:,.1f} MB is beyond the size budget of "
            f"{max_bytes / 1024**2:,.0f} MB{extra}; refused before reading it")


def _open_text_head(p: Path, nbytes: int = 65536) -> bytes:
    """The first bytes of a text file (decompressed), for the binary-content check."""
    try:
        if p.name.lower().endswith(".gz"):
            with gzip.open(p, "rb") as f:
                return f.read(nbytes)
        with open(p, "rb") as f:
            return f.read(nbytes)
    except (EOFError, OSError, zlib.error) as exc:
        raise _gz_error(p, exc) from None


def _gz_error(p: Path, exc: BaseException) -> DataFileError:
    return DataFileError(f"{p.name}: truncated or corrupt gzip file ({_one_line(exc)})")


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class _Bounded(io.RawIOBase):
    """A binary stream of a text file's (decompressed) bytes that counts them as they are
    read: beyond ``max_bytes`` in all, or a line beyond :data:`MAX_LINE_BYTES`, the read
    raises a :class:`DataFileError` naming the file (the budget applies to what is read,
    not to the size on disk)."""

    def __init__(self, raw: Any, p: Path, max_bytes: float) -> None:
        self._raw, self._p, self._max = raw, p, max_bytes
        self.total = 0
        self._run = 0  # bytes since the last newline

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)
        if not n:
            return 0
        self.total += n
        if self.total > self._max:
            raise DataFileError(
                f"{self._p.name}: more than {self._max / 1024**2:,.0f} MB of "
                f"{'decompressed ' if self._p.name.lower().endswith('.gz') else ''}text "
                "(the size budget); refused while reading it")
        chunk = bytes(memoryview(b)[:n])
        first = chunk.find(b"\n")
        if first < 0:
            self._run += n
        else:
            if self._run + first > MAX_LINE_BYTES:
                self._run += first
            else:
                self._run = n - chunk.rfind(b"\n") - 1
        if self._run > MAX_LINE_BYTES:
            raise DataFileError(f"{self._p.name}: a line longer than "
                                f"{MAX_LINE_BYTES / 1024**2:,.0f} MB; refused while reading "
                                "it")
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


@contextlib.contextmanager
def _bounded_text(p: Path, max_bytes: float = MAX_FILE_BYTES) -> Iterator[BinaryIO]:
    """The (decompressed) bytes of text file ``p`` as a buffered stream bounded by
    ``max_bytes`` and :data:`MAX_LINE_BYTES` (:class:`_Bounded`)."""
    raw = gzip.open(p, "rb") if p.name.lower().endswith(".gz") else open(p, "rb",
                                                                         buffering=0)
    with io.BufferedReader(_Bounded(raw, p, max_bytes), buffer_size=1 << 20) as fh:
        yield fh


def _prescan_gz(p: Path, max_bytes: float) -> None:
    """Decompress a ``.gz`` once without parsing, counting its bytes and line lengths
    (:class:`_Bounded`): a compression bomb is refused in seconds, before a parser holds
    any of it."""
    try:
        with _bounded_text(p, max_bytes) as fh:
            while fh.read(1 << 20):
                pass
    except (EOFError, OSError, zlib.error) as exc:
        raise _gz_error(p, exc) from None


def _check_text(p: Path, fmt: str) -> None:
    head = _open_text_head(p)
    if not head.strip():
        raise DataFileError(f"{p.name}: the file is empty")
    bad = head.find(b"\x00")
    if bad < 0:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # not just a character cut at the buffer's end
                bad = exc.start
    if bad >= 0:
        line = head[:bad].count(b"\n") + 1
        raise DataFileError(f"{p.name}: line {line}: binary content (byte {bad}), not a "
                            f"{fmt} text file")


# ------------------------------------------------------------------------- tables


def _find(columns: Sequence[str], name: str | None, what: str, option: str, p: Path,
          default: str | None = None) -> str | None:
    if name is None:
        return default if default in columns else None
    if name in columns:
        return name
    if name.isdigit() and int(name) < len(columns):
        return columns[int(name)]
    raise DataFileError(f"{p.name}: no {what} column {name!r} ({option}); columns: "
                        f"{_cols(columns)}")


def _cols(columns: Sequence[str]) -> str:
    cols = [str(c) for c in columns]
    return ", ".join(cols[:12]) + (f", ... ({len(cols)} columns)" if len(cols) > 12 else "")


@dataclass(frozen=True)
class ReadRequest:
    """What :func:`read_table` asks of a format's reader (see its parameters).

    Every reader takes the whole request and uses what its format has: the role names,
    whether labels are required, the training data's feature columns / count / index
    base (a test or predict file), the size budget and the preprocessing.
    """

    label: str | None = None
    task: str | None = None
    time: str | None = None
    need_label: bool = True
    features: Sequence[str] | None = None
    n_features: int | None = None
    zero_based: bool | None = None
    max_bytes: float = MAX_FILE_BYTES
    prep: Preprocessing | None = None
    fitted: FittedPreprocessing | None = None


class Reader(Protocol):
    """A format's reader: ``reader(path, fmt, request) -> Table`` (:data:`READERS`)."""

    def __call__(self, p: Path, fmt: str, req: ReadRequest, /) -> Table: ...


def _from_frame(df: Any, p: Path, fmt: str, req: ReadRequest, line_offset: int) -> Table:
    import pandas as pd

    label, task, time, need_label = req.label, req.task, req.time, req.need_label
    features, prep, fitted = req.features, req.prep, req.fitted
    prep = fitted.options if fitted is not None else (prep or Preprocessing())
    if fitted is not None:
        features = fitted.columns
    elif prep.features is not None:
        features = prep.features
    columns = [str(c) for c in df.columns]
    df.columns = columns
    if df.shape[0] == 0:
        raise DataFileError(f"{p.name}: no data rows (header only: {_cols(columns)})")
    task_col = _find(columns, task, "task", "--task", p, default="task")
    time_col = _find(columns, time, "time", "--time", p, default="time")
    taken = {c for c in (task_col, time_col) if c}
    if label is not None and not need_label and fitted is not None and label not in columns:
        label_col = None  # predicting: the training label column, when the file has it
    elif label is not None:
        label_col = _find(columns, label, "label", "--label", p)
    elif features is not None:  # predicting: the label is whatever is not a feature
        skip = set(features) | taken
        rest = [c for c in columns if c not in skip]
        label_col = rest[-1] if rest else None
    else:
        rest = [c for c in columns if c not in taken]
        label_col = rest[-1] if rest else None
    if need_label and label_col is None:
        raise DataFileError(f"{p.name}: no label column; columns: {_cols(columns)}")
    if features is None:
        skip = taken | set(prep.ignore) | ({label_col} if label_col is not None else set())
        feats = [c for c in columns if c not in skip]
    else:
        have = set(columns)
        missing = [c for c in features if c not in have]
        if missing:
            what = "of the training data " if fitted is not None or prep.features is None \
                else "(--features) "
            raise DataFileError(f"{p.name}: the feature columns {_cols(missing)} {what}are "
                                f"missing; columns: {_cols(columns)}")
        feats = [c for c in features if c not in prep.ignore]
    unknown = [c for c in prep.ignore if c not in columns]
    if unknown and fitted is None:
        raise DataFileError(f"{p.name}: no column {unknown[0]!r} (--ignore); columns: "
                            f"{_cols(columns)}")
    if not feats:
        if fmt in ("csv", "tsv") and len(columns) == 1:
            other = [s for s in (";", "\t", ",", "|", " ") if s in columns[0]]
            sep = {"csv": "','", "tsv": "a tab"}[fmt]
            hint = (f"; its header contains {other[0]!r}: wrong delimiter? (this reader "
                    f"splits on {sep}; use --format "
                    f"{'tsv' if other[0] == chr(9) else 'csv'} or convert the file)"
                    if other else "")
            raise DataFileError(f"{p.name}: only one column found ({columns[0][:40]!r})"
                                f"{hint}")
        raise DataFileError(f"{p.name}: no feature columns (columns: {_cols(columns)})")
    block = df[feats]
    _check_column_types(block, p, fmt)
    if not prep.identity or fitted is not None:
        return _preprocessed(df, feats, p, fmt, prep, fitted, label_col, task_col, time_col,
                             line_offset)
    text = [c for c, dt in zip(feats, block.dtypes, strict=True) if dt.kind not in "iufb"]
    if text:  # only the columns not read as numbers are converted (one by one)
        numeric = block.copy()
        numeric[text] = block[text].apply(pd.to_numeric, errors="coerce")
        bad = numeric.isna().to_numpy() & ~block.isna().to_numpy()
    else:
        numeric, bad = block, np.zeros((0, 0), dtype=bool)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataFileError(f"{p.name}: line {i + line_offset}, column {feats[j]!r}: "
                            f"non-numeric value {str(block.iat[i, j])[:40]!r}; for text "
                            f"columns use --categorical onehot or --categorical drop (or "
                            f"--ignore {feats[j]})")
    X = numeric.to_numpy(dtype=np.float64)
    _check_finite(X, p, feats, line_offset, hint=True)
    y = _role(df, label_col, p, line_offset) if label_col else None
    tk = _role(df, task_col, p, line_offset) if task_col else None
    tm = _role(df, time_col, p, line_offset) if time_col else None
    return Table(X=np.ascontiguousarray(X), y=y, feature_names=tuple(feats), path=str(p),
                 fmt=fmt, tasks=tk, time=tm, label_name=label_col, task_name=task_col,
                 time_name=time_col)


def _preprocessed(df: Any, feats: list[str], p: Path, fmt: str, prep: Preprocessing,
                  fitted: FittedPreprocessing | None, label_col: str | None,
                  task_col: str | None, time_col: str | None, line_offset: int) -> Table:
    """:func:`_from_frame` with preprocessing: ``prep`` fitted on these rows, or ``fitted``
    (the training data's) applied. Rows with a missing value are dropped first with
    ``missing="drop"`` (``Table.extra["rows"]``: the file rows kept)."""
    cols = {c: df[c].to_numpy() for c in feats}
    n_all = df.shape[0]
    rows = np.arange(n_all)
    if prep.missing == "drop":
        keep = np.ones(df.shape[0], dtype=bool)
        for c in (*feats, *(r for r in (label_col, task_col, time_col) if r)):
            keep &= ~preprocess.is_missing(df[c].to_numpy())
        if not keep.all():
            rows = np.flatnonzero(keep)
            if rows.size == 0:
                raise DataFileError(f"{p.name}: every row has a missing value (--missing "
                                    "drop leaves nothing)")
            df = df.iloc[rows]
            cols = {c: v[rows] for c, v in cols.items()}
    try:
        if fitted is None:
            fitted = replace(preprocess.fit(cols, prep), n_dropped=int(n_all - rows.size))
        X = fitted.transform(cols)
    except preprocess.PreprocessingError as exc:
        raise DataFileError(f"{p.name}: {exc}") from None
    y = _role(df, label_col, p, line_offset) if label_col else None
    tk = _role(df, task_col, p, line_offset) if task_col else None
    tm = _role(df, time_col, p, line_offset) if time_col else None
    return Table(X=np.ascontiguousarray(X), y=y, feature_names=fitted.feature_names_out,
                 path=str(p), fmt=fmt, tasks=tk, time=tm, label_name=label_col,
                 task_name=task_col, time_name=time_col,
                 extra={"preprocessing": fitted, "raw": cols, "rows": rows,
                        "n_file": n_all})


def _check_column_types(block: Any, p: Path, fmt: str) -> None:
    """Refuse feature columns that are dates, times or durations (their nanosecond
    counts are not features) or complex numbers."""
    import pandas as pd

    for col, dt in block.dtypes.items():
        if pd.api.types.is_datetime64_any_dtype(dt) or pd.api.types.is_timedelta64_dtype(dt):
            raise DataFileError(f"{p.name}: column {col!r} holds dates/times ({dt}), not "
                                "numbers; convert it to a number (e.g. days since a date) "
                                "or pass it as --time")
        if pd.api.types.is_complex_dtype(dt):
            raise DataFileError(f"{p.name}: column {col!r} holds complex numbers; features "
                                "must be real")


def _role(df: Any, col: str, p: Path, line_offset: int) -> np.ndarray:
    s = df[col]
    miss = s.isna().to_numpy()
    if miss.any():
        i = int(np.flatnonzero(miss)[0])
        raise DataFileError(f"{p.name}: line {i + line_offset}, column {col!r}: missing value")
    a = s.to_numpy()
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)):
            i = int(np.flatnonzero(~np.isfinite(a))[0])
            raise DataFileError(f"{p.name}: line {i + line_offset}, column {col!r}: "
                                f"value {a[i]!r} is not finite")
        if np.all(a == np.round(a)):
            a = a.astype(np.int64)
    elif a.dtype.kind == "O" or a.dtype.kind not in "iub":
        a = np.asarray([str(v) for v in a])
    return a


def _check_finite(X: np.ndarray, p: Path, names: Sequence[str], line_offset: int | None,
                  hint: bool = False) -> None:
    if X.size and not np.all(np.isfinite(X)):
        i, j = np.argwhere(~np.isfinite(X))[0]
        where = f"line {i + line_offset}, " if line_offset is not None else f"row {i}, "
        what = "missing value (NaN)" if np.isnan(X[i, j]) else f"value {X[i, j]!r}"
        tip = ("; use --missing drop (drop incomplete rows) or --missing mean"
               if hint and np.isnan(X[i, j]) else "")
        raise DataFileError(f"{p.name}: {where}column {names[j]!r}: {what}; features must "
                            f"be finite numbers{tip}")


def _read_csv(p: Path, fmt: str, req: ReadRequest) -> Table:
    import pandas as pd

    max_bytes = req.max_bytes
    _check_text(p, fmt)
    sep = "\t" if fmt == "tsv" else ","
    try:
        with _bounded_text(p, max_bytes) as fh:  # the header first: the column count
            first = next(csv.reader(io.TextIOWrapper(fh, encoding="utf-8",
                                                     errors="replace"), delimiter=sep), [])
        _check_columns(p, len(first))
        with _bounded_text(p, max_bytes) as fh:
            df = pd.read_csv(fh, sep=sep, skipinitialspace=True, low_memory=False,
                             compression=None, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise DataFileError(f"{p.name}: the file is empty") from None
    except pd.errors.ParserError as exc:
        raise DataFileError(f"{p.name}: {_one_line(exc)}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _gz_error(p, exc) from None
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{p.name}: binary content (byte {exc.start}), not a {fmt} "
                            "text file") from None
    return _from_frame(df, p, fmt, req, line_offset=2)


def _check_columns(p: Path, n: int) -> None:
    if n > MAX_COLUMNS:
        raise DataFileError(f"{p.name}: {n:,} columns, more than the {MAX_COLUMNS:,} a "
                            "table file may have; refused from its header")


def _read_parquet(p: Path, fmt: str, req: ReadRequest) -> Table:
    import pandas as pd

    try:
        import pyarrow.parquet as pq

        _check_columns(p, len(pq.read_schema(p).names))
    except DataFileError:
        raise
    except Exception:  # not Parquet: read_parquet below says so
        pass
    try:
        df = pd.read_parquet(p)
    except ImportError:
        raise DataFileError(f"{p.name}: reading Parquet needs pyarrow "
                            "(pip install pyarrow)") from None
    except Exception as exc:  # pyarrow's ArrowInvalid etc.: not a Parquet file
        raise DataFileError(f"{p.name}: not a readable Parquet file ({_one_line(exc)})"
                            ) from None
    return _from_frame(df, p, fmt, req, line_offset=0)


def _read_svmlight(p: Path, fmt: str, req: ReadRequest) -> Table:
    """A svmlight/LIBSVM file. ``zero_based`` None (a training file): the index base is
    the file's own (0 if it uses feature 0, else 1, as scikit-learn's ``"auto"``) and is
    recorded in ``extra["zero_based"]``; given (a test or predict file): the training
    file's base and ``n_features``, so the columns line up whatever indices it uses."""
    from sklearn.datasets import load_svmlight_file

    features, n_features = req.features, req.n_features  # svmlight rows always have a label
    zero_based, max_bytes = req.zero_based, req.max_bytes

    _check_text(p, fmt)
    own = zero_based is None
    try:
        kw = {"n_features": n_features} if n_features and not own else {}
        with _bounded_text(p, max_bytes) as fh:
            X, y, qid = load_svmlight_file(fh, query_id=True, dtype=np.float64,
                                           zero_based=True if own else bool(zero_based),
                                           **kw)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _gz_error(p, exc) from None
    except OverflowError:
        raise DataFileError(f"{p.name}: a feature index (or qid) is too large (beyond "
                            f"{np.iinfo(np.int32).max:,}); not a usable svmlight/LIBSVM "
                            "file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        text = _one_line(exc)
        if "Invalid index 0" in text:
            raise DataFileError(f"{p.name}: uses feature index 0, but the training file's "
                                "features are numbered from 1 (one-based); the test file "
                                "must use the training file's numbering") from None
        if "n_features was set to" in text:
            raise DataFileError(f"{p.name}: uses feature indices beyond the training "
                                f"file's {n_features} features ({text})") from None
        raise DataFileError(f"{p.name}: not a valid svmlight/LIBSVM file ({text})"
                            ) from None
    if X.shape[0] == 0:
        raise DataFileError(f"{p.name}: no data rows")
    X = X.tocsr()
    if own:  # scikit-learn's "auto": one-based unless feature 0 occurs
        zero_based = bool(X.nnz == 0 or X.indices.min() == 0)
        if not zero_based:
            X = X[:, 1:]
        if n_features:
            X = _pad_columns(X, n_features, p)
    if not np.all(np.isfinite(X.data)):
        i = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0],
                                side="right") - 1)
        raise DataFileError(f"{p.name}: line {i + 1}: a feature value is not finite")
    if not np.all(np.isfinite(y)):
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        raise DataFileError(f"{p.name}: line {i + 1}: the label is not finite")
    yy = y.astype(np.int64) if np.all(y == np.round(y)) else y
    tasks = np.asarray(qid, dtype=np.int64) if np.unique(qid).size > 1 else None
    X.sort_indices()
    names = tuple(features) if features is not None else tuple(
        f"f{j}" for j in range(X.shape[1]))
    return Table(X=X, y=yy, feature_names=names, path=str(p), fmt=fmt, tasks=tasks,
                 label_name="label", task_name="qid" if tasks is not None else None,
                 extra={"zero_based": bool(zero_based)})


def _pad_columns(X: Any, n: int, p: Path) -> Any:
    """``X`` with ``n`` columns (empty ones added on the right); refuses more than ``n``."""
    import scipy.sparse as sp

    if X.shape[1] > n:
        raise DataFileError(f"{p.name}: uses feature indices beyond the training file's "
                            f"{n} features")
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n))


def _read_npz(p: Path, fmt: str, req: ReadRequest) -> Table:
    from solvers.fileio import npz_arrays, npz_keys

    label, task, time, need_label = req.label, req.task, req.time, req.need_label
    features, max_bytes = req.features, req.max_bytes

    # only the arrays a data file has roles for are read, each checked from its .npy
    # header first (dtype, declared size against the member and the size budget)
    wanted = ["X", label or "y", task or "tasks", time or "time", "feature_names",
              "triplets"]
    try:
        keys = sorted(npz_keys(p))
        data = npz_arrays(p, [k for k in dict.fromkeys(wanted) if k in keys],
                          max_bytes=max_bytes, kinds="biufU")
    except ValueError as exc:
        raise DataFileError(_one_line(exc)) from None
    if "X" not in data:
        raise DataFileError(f"{p.name}: no array 'X' (keys: {', '.join(keys) or 'none'})")
    X = np.asarray(data["X"])
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DataFileError(f"{p.name}: 'X' must be a non-empty 2-D array, got shape "
                            f"{X.shape}")
    if X.dtype.kind not in "iufb":
        raise DataFileError(f"{p.name}: 'X' must be numeric, got dtype {X.dtype}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    names = tuple(str(s) for s in data["feature_names"]) if "feature_names" in data else \
        tuple(f"x{j}" for j in range(X.shape[1]))
    if features is not None and len(features) != X.shape[1]:
        raise DataFileError(f"{p.name}: {X.shape[1]} features, the training data had "
                            f"{len(features)}")
    _check_finite(X, p, names, None)
    ykey = label or "y"

    def role(key: str | None, default: str) -> np.ndarray | None:
        k = key or default
        if k not in data:
            if key is not None:
                raise DataFileError(f"{p.name}: no array {k!r} (keys: {', '.join(keys)})")
            return None
        a = np.asarray(data[k]).ravel()
        if a.dtype.kind not in "biufU":
            raise DataFileError(f"{p.name}: {k!r} must hold numbers or text, got dtype "
                                f"{a.dtype}")
        if a.shape[0] != X.shape[0]:
            raise DataFileError(f"{p.name}: {k!r} has {a.shape[0]} entries, 'X' has "
                                f"{X.shape[0]} rows")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise DataFileError(f"{p.name}: {k!r}[{int(np.flatnonzero(~np.isfinite(a))[0])}]"
                                " is not finite")
        return a

    y = role(label, "y")
    if y is None and need_label:
        raise DataFileError(f"{p.name}: no label array 'y' (keys: {', '.join(keys)})")
    T = data.get("triplets")
    return Table(X=X, y=y, feature_names=names, path=str(p), fmt=fmt,
                 tasks=role(task, "tasks"), time=role(time, "time"),
                 label_name=ykey if y is not None else None,
                 task_name=(task or "tasks") if (task or "tasks") in data else None,
                 time_name=(time or "time") if (time or "time") in data else None,
                 triplets=None if T is None else np.asarray(T))


def _read_mat(p: Path, fmt: str, req: ReadRequest) -> Table:
    from scipy.io import loadmat

    label, need_label = req.label, req.need_label  # tasks: MALSAR's cells

    try:
        m = loadmat(str(p))
    except Exception as exc:  # scipy raises ValueError / TypeError / MatReadError
        raise DataFileError(f"{p.name}: not a readable MATLAB .mat file ({_one_line(exc)})"
                            ) from None
    keys = sorted(k for k in m if not k.startswith("__"))
    xk = "X" if "X" in m else None
    yk = label or next((k for k in ("Y", "y") if k in m), None)
    if xk is None or (yk is None and need_label) or (yk is not None and yk not in m):
        raise DataFileError(f"{p.name}: a .mat data file needs variables 'X' and 'Y' "
                            f"(MALSAR: cell arrays X{{t}}, Y{{t}}); found: "
                            f"{', '.join(keys) or 'none'}")
    Xm: np.ndarray = m[xk]
    Ym: np.ndarray | None = m[yk] if yk else None
    for key, val in ((xk, Xm), (yk, Ym)):
        parts = val.ravel() if val is not None and val.dtype == object else [val]
        if any(np.iscomplexobj(c) for c in parts if c is not None):
            raise DataFileError(f"{p.name}: {key} holds complex numbers; features and labels "
                                "must be real (convert the file, e.g. real() or abs() in "
                                "MATLAB)")
    if Xm.dtype == object:  # MALSAR: one cell per task
        cells = [np.asarray(c) for c in Xm.ravel()]
        ycells = [np.asarray(c).ravel() for c in Ym.ravel()] if Ym is not None else None
        if ycells is not None and len(ycells) != len(cells):
            raise DataFileError(f"{p.name}: X has {len(cells)} cells, {yk} has "
                                f"{len(ycells)}")
        d = {c.shape[1] if c.ndim == 2 else -1 for c in cells}
        if len(d) != 1 or -1 in d:
            raise DataFileError(f"{p.name}: the cells X{{t}} must be 2-D with one common "
                                f"number of columns, got {sorted(d)}")
        for t, c in enumerate(cells):
            if ycells is not None and ycells[t].shape[0] != c.shape[0]:
                raise DataFileError(f"{p.name}: task {t + 1}: X{{{t + 1}}} has {c.shape[0]} "
                                    f"rows, {yk}{{{t + 1}}} has {ycells[t].shape[0]}")
        X = np.vstack([c.astype(np.float64) for c in cells])
        y = np.concatenate(ycells) if ycells is not None else None
        tasks = np.concatenate([np.full(c.shape[0], t + 1) for t, c in enumerate(cells)])
    else:
        X = np.asarray(Xm, dtype=np.float64)
        y = np.asarray(Ym).ravel() if Ym is not None else None
        tasks = None
        if y is not None and y.shape[0] != X.shape[0]:
            raise DataFileError(f"{p.name}: X has {X.shape[0]} rows, {yk} has {y.shape[0]}")
    if X.shape[0] == 0:
        raise DataFileError(f"{p.name}: no data rows")
    names = tuple(f"x{j}" for j in range(X.shape[1]))
    _check_finite(X, p, names, None)
    if y is not None:
        if y.dtype.kind not in "iuf" or not np.all(np.isfinite(y)):
            raise DataFileError(f"{p.name}: {yk} must hold finite numbers")
        if y.dtype.kind == "f" and np.all(y == np.round(y)):
            y = y.astype(np.int64)
    return Table(X=np.ascontiguousarray(X), y=y, feature_names=names, path=str(p), fmt=fmt,
                 tasks=tasks, label_name=yk, task_name="cell" if tasks is not None else None)


def _scaled(table: Table, prep: Preprocessing | None, fitted: FittedPreprocessing | None
            ) -> Table:
    """A numeric (svmlight, npz, mat) table scaled by ``prep`` fitted on it, or by
    ``fitted``; a sparse matrix stays sparse (``maxabs``, or ``standard`` not centred)."""
    try:
        if fitted is None:
            fitted = preprocess.fit(table.X, prep, names=table.feature_names)
        X = fitted.transform_matrix(table.X)
    except preprocess.PreprocessingError as exc:
        raise DataFileError(f"{table.name}: {exc}") from None
    return replace(table, X=X, extra={**table.extra, "preprocessing": fitted,
                                      "raw": table.X})


#: Format name -> its reader (one protocol, :class:`Reader`).
READERS: dict[str, Reader] = {"csv": _read_csv, "tsv": _read_csv, "parquet": _read_parquet,
                              "svmlight": _read_svmlight, "npz": _read_npz, "mat": _read_mat}
#: The formats whose columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = frozenset({"csv", "tsv", "parquet"})


def read_table(path: str | os.PathLike, *, fmt: str | None = None, label: str | None = None,
               task: str | None = None, time: str | None = None, need_label: bool = True,
               features: Sequence[str] | None = None, n_features: int | None = None,
               zero_based: bool | None = None, max_bytes: float = MAX_FILE_BYTES,
               prep: Preprocessing | None = None,
               fitted: FittedPreprocessing | None = None) -> Table:
    """Read ``path`` into a :class:`Table` (see the module docstring for the formats).

    Parameters
    ----------
    path : str or path-like
        The file.
    fmt : str, optional
        Format name overriding the extension.
    label, task, time : str, optional
        Column (table formats) or array (``.npz``, ``.mat``) names of the roles.
    need_label : bool
        Refuse a file without labels (``False`` when predicting).
    features : sequence of str, optional
        The feature columns to take (those of the training data, when predicting
        or reading a test file).
    n_features : int, optional
        Number of features of a svmlight file (that of the training data).
    zero_based : bool, optional
        Index base of a svmlight file (that of the training data, ``Table.extra
        ["zero_based"]``); None: the file's own (0 if it uses feature 0, else 1).
    max_bytes : float
        Size budget: of the file on disk, checked before reading, and of the (decompressed)
        text read, counted as it streams.
    prep : solvers.preprocess.Preprocessing, optional
        Preprocessing fitted on this file's rows (``Table.extra["preprocessing"]`` holds
        the fit, ``Table.feature_names`` the columns after it). Default: numbers only, no
        missing values (an error suggesting the option that would take the file).
    fitted : solvers.preprocess.FittedPreprocessing, optional
        The training data's preprocessing, applied to this file (a test or predict file).

    Raises
    ------
    DataFileError
        With a one-line message naming the file (and line / column where known).

    Returns
    -------
    Table
        The features and the roles found.
    """
    p = Path(path).expanduser()
    f = detect_format(p, fmt)
    _check_size(p, max_bytes)
    tabular = f in NAMED_COLUMNS
    if not tabular and prep is not None and (prep.features is not None or prep.ignore):
        raise DataFileError(f"{p.name}: --features / --ignore apply to table files (CSV, TSV, "
                            f"Parquet), not to {f}")
    if f in _TEXT and p.name.lower().endswith(".gz") and max_bytes < math.inf:
        _prescan_gz(p, max_bytes)
    req = ReadRequest(label=label, task=task, time=time, need_label=need_label,
                      features=features, n_features=n_features, zero_based=zero_based,
                      max_bytes=max_bytes, prep=prep if tabular else None,
                      fitted=fitted if tabular else None)
    try:
        table = READERS[f](p, f, req)
        if not tabular and (fitted is not None or (prep is not None and prep.scale != "none")):
            table = _scaled(table, prep, fitted)
        return table
    except DataFileError:
        raise
    except MemoryError:
        raise DataFileError(f"{p.name}: out of memory while reading it") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _gz_error(p, exc) from None
    except (ValueError, TypeError, OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{p.name}: {_one_line(exc)}") from None
    except RecursionError:
        raise DataFileError(f"{p.name}: nested too deeply to read") from None
    except Exception as exc:  # a reader's own error (OverflowError, pyarrow's, ...)
        raise DataFileError(f"{p.name}: cannot be read as {f} ({type(exc).__name__}: "
                            f"{_one_line(exc)})") from None


# ----------------------------------------------------------------------- problems


def _model_data(model: str) -> Any:
    return importlib.import_module(f"explorer.models.{model}.data")


def roles(model: str) -> FileRoles:
    """The :class:`FileRoles` of ``model`` (from ``explorer/models/<model>/data.py``).

    Parameters
    ----------
    model : str
        A registry name (``"wwsvm"``, ...).

    Returns
    -------
    FileRoles
        What the model needs from a file.

    Examples
    --------
    >>> from explorer.datafiles import roles
    >>> r = roles("robust_mtl")
    >>> r.labels, r.tasks, r.time
    ('real', True, True)
    """
    return getattr(_model_data(model), "FILE_ROLES", FileRoles())


def dense(table: Table, model: str) -> Any:
    """The features for ``model``: sparse CSR as read when the model's roles say ``sparse``,
    else a dense array (a :class:`DataFileError` when that is too big)."""
    if not table.sparse or roles(model).sparse:
        return table.X
    size = 8.0 * table.n * table.d
    if size > MAX_DENSE_BYTES:
        raise DataFileError(
            f"{table.name}: model {model} takes dense features; this sparse file "
            f"({table.n:,} x {table.d:,}, {100 * table.density:.2g} % non-zero) would need "
            f"{size / 1024**2:,.0f} MB dense (limit {MAX_DENSE_BYTES / 1024**2:.0f} MB)")
    import warnings

    warnings.warn(f"{table.name}: model {model} takes dense features: the sparse file "
                  f"({table.n:,} x {table.d:,}, {100 * table.density:.2g} % non-zero) is "
                  f"densified ({size / 1024**2:,.1f} MB)", UserWarning, stacklevel=2)
    return table.X.toarray()


def split_table(table: Table, test_size: float, seed: int = 0) -> tuple[Table, Table]:
    """``(train, test)``: a random ``test_size`` fraction of the rows (of each task) held out.

    Classification labels without tasks are split per class (stratified) so each
    class keeps training rows. Groups are visited in order of first appearance, so the
    same rows give the same split whatever the labels are called.

    Parameters
    ----------
    table : Table
        The rows.
    test_size : float, in (0, 1)
        The fraction held out.
    seed : int
        The shuffle's seed.

    Returns
    -------
    train, test : Table
        The two parts.
    """
    if not 0.0 < test_size < 1.0:
        raise DataFileError(f"--test-size must lie in (0, 1), got {test_size}")
    rng = np.random.default_rng(seed)
    groups = table.tasks if table.tasks is not None else table.time if table.time is not None \
        else (table.y if table.y is not None and table.y.dtype.kind in "iuUS" else None)
    if groups is None:
        groups = np.zeros(table.n, dtype=np.int64)
    held = []
    values, first = np.unique(groups, return_index=True)
    for g in values[np.argsort(first)]:  # file order: the split does not depend on label names
        idx = rng.permutation(np.flatnonzero(groups == g))
        k = round(test_size * idx.size)
        if idx.size >= 2:
            held.append(idx[:min(max(k, 1 if test_size * idx.size >= 0.5 else 0),
                                 idx.size - 1)])
    te = np.sort(np.concatenate(held)) if held else np.zeros(0, dtype=np.int64)
    tr = np.setdiff1d(np.arange(table.n), te)
    if te.size == 0:
        raise DataFileError(f"{table.name}: --test-size {test_size} holds out no row")
    train, test = _rows(table, tr), _rows(table, te)
    fp = table.extra.get("preprocessing")
    if fp is not None:  # fitted on the training rows only; the held-out rows get that fit
        fp = refit(train)
        train = replace(train, X=apply(fp, train), extra={**train.extra, "preprocessing": fp})
        test = replace(test, X=apply(fp, test), extra={**test.extra, "preprocessing": fp})
    return train, test


def refit(table: Table) -> FittedPreprocessing:
    """The preprocessing of ``table`` fitted again on its (raw) rows."""
    fp = table.extra["preprocessing"]
    raw = table.extra["raw"]
    try:
        new = preprocess.fit(raw, fp.options, names=None if isinstance(raw, Mapping)
                             else fp.columns)
    except preprocess.PreprocessingError as exc:
        raise DataFileError(f"{table.name}: {exc}") from None
    return replace(new, n_dropped=fp.n_dropped, dropped_columns=fp.dropped_columns)


def apply(fp: FittedPreprocessing, table: Table) -> Any:
    """``fp`` applied to the raw rows of ``table``."""
    raw = table.extra["raw"]
    try:
        if isinstance(raw, Mapping):
            return np.ascontiguousarray(fp.transform(raw))
        return fp.transform_matrix(raw)
    except preprocess.PreprocessingError as exc:
        raise DataFileError(f"{table.name}: {exc}") from None


def _rows(t: Table, idx: np.ndarray) -> Table:
    def cut(a: Any) -> Any:
        return None if a is None else a[idx]

    extra = dict(t.extra)
    if "raw" in extra:
        raw = extra["raw"]
        extra["raw"] = {c: v[idx] for c, v in raw.items()} if isinstance(raw, Mapping) \
            else raw[idx]
    if "rows" in extra:
        extra["rows"] = extra["rows"][idx]
    return replace(t, X=t.X[idx], y=cut(t.y), tasks=cut(t.tasks), time=cut(t.time),
                   triplets=None, extra=extra)


def problem_from_table(model: str, table: Table, test: Table | None = None, **opts: Any
                       ) -> Problem:
    """``model``'s :class:`~explorer.registry.Problem` of ``table`` (and the held-out
    ``test`` rows in ``info``).

    Uses ``from_table(table, test, **opts)`` of ``explorer/models/<model>/data.py``.
    ``info`` carries ``source`` (the file), ``feature_names``, ``class_names`` or
    ``task_names`` where they apply.

    Parameters
    ----------
    model : str
        A registry name (``"wwsvm"``, ...).
    table : Table
        The training rows.
    test : Table, optional
        The held-out rows.
    **opts
        Keywords of the model's ``from_table``.

    Returns
    -------
    Problem
        The model's problem.
    """
    mod = _model_data(model)
    if not hasattr(mod, "from_table"):
        raise DataFileError(f"model {model} does not read data files")
    if test is not None and test.d != table.d:
        raise DataFileError(f"{test.name}: {test.d} features, the training file "
                            f"{table.name} has {table.d}")
    r = roles(model)
    if table.y is None:
        raise DataFileError(f"{table.name}: no labels")
    if r.tasks and table.tasks is None and not r.time:
        raise DataFileError(f"{table.name}: model {model} needs a task column (--task COL; "
                            f"columns: {_cols(table.feature_names)})")
    fp = table.extra.get("preprocessing")
    if not (r.center_targets and fp is not None and fp.options.scale == "standard"
            and not fp.sparse and table.y.dtype.kind in "iuf"):
        return mod.from_table(table, test, **opts)
    # standardised features and no intercept: the targets standardised by their training
    # mean and standard deviation too (kept in the preprocessing; predict undoes it; the
    # held-out rows transformed alike for the sweep hooks)
    mu = float(np.mean(table.y))
    sd = float(np.std(table.y)) or 1.0
    fp = replace(fp, target_center=mu, target_scale=sd)

    def shifted(t: Table) -> Table:
        y = None if t.y is None else (np.asarray(t.y, dtype=np.float64) - mu) / sd
        return replace(t, y=y, extra={**t.extra, "preprocessing": fp})

    prob = mod.from_table(shifted(table), None if test is None else shifted(test), **opts)
    return replace(prob, info={**prob.info, "preprocessing": fp, "test_table": None if test
                               is None else replace(test, extra={**test.extra,
                                                                 "preprocessing": fp})})


def load_problem(model: str, path: str | os.PathLike, *, fmt: str | None = None,
                 label: str | None = None, task: str | None = None, time: str | None = None,
                 test: str | os.PathLike | None = None, test_size: float | None = None,
                 seed: int = 0, max_bytes: float = MAX_FILE_BYTES,
                 prep: Preprocessing | None = None, **opts: Any) -> Problem:
    """Read ``path`` (and ``test`` or a ``test_size`` split) into ``model``'s Problem.

    Parameters
    ----------
    model : str
        A registry name (``"wwsvm"``, ...).
    path : str or path-like
        The training file.
    fmt, label, task, time : str, optional
        As in :func:`read_table`.
    test : str or path-like, optional
        A held-out file (read with the training file's features).
    test_size : float, optional
        Else the fraction of rows to hold out (:func:`split_table`).
    seed : int
        The split's seed.
    max_bytes : float
        The size budget of each file.
    prep : solvers.preprocess.Preprocessing, optional
        Fitted on the training rows (those left by a ``test_size`` split) and applied to
        the held-out ones.
    **opts
        Keywords of the model's ``from_table``.

    Returns
    -------
    Problem
        ``model``'s problem, the held-out rows in its ``info``.

    Raises
    ------
    DataFileError
        With a one-line message naming the file.

    Examples
    --------
    >>> import csv, os, tempfile
    >>> from explorer.datafiles import load_problem
    >>> rows = [["x1", "x2", "label"], [1, 0, "a"], [0, 1, "b"], [-1, -1, "c"],
    ...         [2, 0, "a"], [0, 2, "b"], [-2, -1, "c"]]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "train.csv")
    ...     with open(path, "w", newline="") as f:
    ...         csv.writer(f).writerows(rows)
    ...     problem = load_problem("wwsvm", path)
    >>> problem.data["X"].shape, problem.info["class_names"].tolist()
    ((6, 2), ['a', 'b', 'c'])
    """
    table = read_table(path, fmt=fmt, label=label, task=task, time=time, max_bytes=max_bytes,
                       prep=prep)
    held = None
    if test is not None and test_size is not None:
        raise DataFileError("give --test or --test-size, not both")
    if test is not None:
        named = table.fmt in NAMED_COLUMNS
        held = read_table(
            test, fmt=fmt, label=table.label_name if named else label,
            task=table.task_name if table.task_name not in (None, "qid", "cell") else task,
            time=table.time_name if named else time, max_bytes=max_bytes,
            features=table.feature_names if named and "preprocessing" not in table.extra
            else None,
            n_features=table.d if table.fmt == "svmlight" else None,
            zero_based=table.extra.get("zero_based"),
            fitted=table.extra.get("preprocessing"))
        if held.d != table.d:
            raise DataFileError(f"{held.name}: {held.d} features, the training file "
                                f"{table.name} has {table.d}")
        return problem_from_table(model, table, held, **opts)
    return table_problem(model, table, test_size, seed, **opts)[0]


def table_problem(model: str, table: Table, test_size: float | None = None, seed: int = 0,
                  **opts: Any) -> tuple[Problem, Table]:
    """``(problem, training table)`` of a table read from a file, a ``test_size`` fraction
    of its rows held out (drawn by ``seed``; the table's preprocessing refitted on the
    training rows): the one sequence of :func:`load_problem` and the page's upload."""
    held = None
    if test_size:
        table, held = split_table(table, float(test_size), seed)
    return problem_from_table(model, table, held, **opts), table


# ------------------------------------------------------- helpers for from_table


def class_codes(table: Table, model: str, *, binary: bool = False,
                test: Table | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(class_names, codes, test_codes)`` of the labels; refuses one class (or not two)."""
    y = table.y
    if y is None:
        raise DataFileError(f"{table.name}: no labels; model {model} needs class labels")
    names, codes = np.unique(y, return_inverse=True)
    where = f"{table.name}: column {table.label_name!r}" if table.label_name else table.name
    if y.dtype.kind == "f" and names.size > max(20, y.size // 2):
        raise DataFileError(f"{where}: labels look real-valued ({names.size} distinct "
                            f"values); model {model} needs class labels")
    if names.size < 2:
        raise DataFileError(f"{where}: one class only ({_scalar(names[0])!r}); model "
                            f"{model} needs at least two")
    if binary and names.size != 2:
        raise DataFileError(f"{where}: {names.size} classes; model {model} takes binary "
                            f"labels (two classes), got {[_scalar(v) for v in names[:6]]}")
    tc = None
    if test is not None and test.y is not None:
        tc = np.searchsorted(names, held_out_labels(test, names, table))
    return names, codes.astype(np.int64), tc


def held_out_labels(test: Table, names: np.ndarray, table: Table) -> np.ndarray:
    """``test.y`` as values of the training classes ``names`` (the sorted distinct labels
    of ``table``); a label that is not one of them is refused, naming the file and the
    values: an unseen class, or a non-integral number (``1.5``) where the classes are
    integers (never cast to one)."""
    y, yt = names, np.asarray(test.y)
    where = f"{test.name}: column {test.label_name!r}" if test.label_name else test.name
    if y.dtype.kind in "iub" and yt.dtype.kind == "f":
        frac = yt[yt != np.round(yt)]
        if frac.size:
            raise DataFileError(f"{where}: labels {[_scalar(v) for v in np.unique(frac)[:5]]}"
                                f" are not integral; the classes of {table.name} are "
                                f"{[_scalar(v) for v in y[:6]]}")
    if y.dtype.kind in "iufb" and yt.dtype.kind in "iufb":
        cast = yt.astype(np.result_type(y.dtype, yt.dtype))
        known = np.isin(cast, y)
        yt = cast.astype(y.dtype) if known.all() else cast
    else:
        yt = yt.astype(str) if y.dtype.kind == "U" else yt
        known = np.isin(yt, y)
    if not known.all():
        unknown = np.unique(yt[~known])
        raise DataFileError(f"{where}: labels {[_scalar(v) for v in unknown[:5]]} do not "
                            f"occur in the training data {table.name} (classes "
                            f"{[_scalar(v) for v in y[:6]]})")
    return yt


def task_codes(table: Table, test: Table | None = None, *, time_order: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(task_names, codes, test_codes)``; with ``time_order`` the tasks sorted by time."""
    tasks = table.tasks if table.tasks is not None else table.time
    if tasks is None:
        raise DataFileError(f"{table.name}: no task column (--task COL)")
    names, codes = np.unique(tasks, return_inverse=True)
    if time_order and table.time is not None and table.tasks is not None:
        first = np.array([table.time[codes == t].min() for t in range(names.size)])
        order = np.argsort(first, kind="stable")
        names = names[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        codes = rank[codes]
    tc = None
    if test is not None:
        tt = test.tasks if test.tasks is not None else test.time
        if tt is None:
            raise DataFileError(f"{test.name}: no task column")
        lookup = {(_scalar(v) if not isinstance(v, str) else v): i for i, v in
                  enumerate(names)}
        try:
            tc = np.array([lookup[_scalar(v)] for v in tt], dtype=np.int64)
        except KeyError as exc:
            raise DataFileError(f"{test.name}: task {exc.args[0]!r} does not occur in the "
                                "training data") from None
    return names, codes.astype(np.int64), tc


def per_task(X: Any, v: np.ndarray, codes: np.ndarray, m: int, table: Table
             ) -> tuple[list[Any], list[np.ndarray]]:
    """Rows of each task: ``([X_t], [v_t])``; refuses an empty task."""
    Xs, vs = [], []
    for t in range(m):
        idx = np.flatnonzero(codes == t)
        Xs.append(X[idx])
        vs.append(v[idx])
    return Xs, vs


def source_info(table: Table, test: Table | None) -> dict[str, Any]:
    """The ``info`` entries every file problem carries."""
    return {"source": table.path, "format": table.fmt,
            "feature_names": list(table.feature_names), "label_name": table.label_name,
            "task_name": table.task_name, "time_name": table.time_name,
            "density": table.density, "test_source": None if test is None else test.path,
            "from_file": True, "zero_based": table.extra.get("zero_based"),
            "preprocessing": table.extra.get("preprocessing"), "test_table": test,
            "feature_scale_ratio": feature_scale_ratio(table.X)}


def feature_scale_ratio(X: Any) -> float:
    """Largest over smallest non-zero column scale (root mean square) of ``X``: above 100
    an unconverged run suggests scaling."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
    else:
        sq = np.mean(np.square(np.asarray(X, dtype=np.float64)), axis=0) if X.size else \
            np.zeros(0)
    s = np.sqrt(sq[sq > 0])
    return float(s.max() / s.min()) if s.size else 1.0


# ------------------------------------------------------- a file as a dataset name

#: Prefix of a dataset name that stands for a data file (``file:PATH?label=y&task=t``).
FILE_PREFIX = "file:"
_PREP_KEYS = ("scale", "categorical", "missing", "features", "ignore")
_SPEC_KEYS = ("fmt", "label", "task", "time", "test", "test_size", *_PREP_KEYS)


def file_spec(path: str | os.PathLike, **opts: Any) -> str:
    """A dataset name standing for ``path`` read with ``opts`` (``label``, ``task``, ``time``,
    ``fmt``, ``test``, ``test_size``, and the preprocessing: ``prep`` a
    :class:`~solvers.preprocess.Preprocessing`, or its fields ``scale``, ``categorical``,
    ``missing``, ``features``, ``ignore``): what sweeps and :meth:`ModelEntry.dataset`
    accept."""
    from urllib.parse import quote, urlencode

    prep = opts.pop("prep", None)
    if prep is not None:
        opts.update(prep.to_spec())
    for k in ("features", "ignore"):
        if opts.get(k) is not None and not isinstance(opts[k], str):
            opts[k] = ",".join(opts[k])
    unknown = set(opts) - set(_SPEC_KEYS)
    if unknown:
        raise ValueError(f"unknown file option(s) {sorted(unknown)}; known: {_SPEC_KEYS}")
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    test = opts.get("test")
    if test is not None:
        opts["test"] = os.path.abspath(os.path.expanduser(os.fspath(test)))
    query = urlencode({k: v for k, v in opts.items() if v is not None})
    return FILE_PREFIX + quote(path) + (f"?{query}" if query else "")


def parse_file_spec(name: str) -> tuple[str, dict[str, Any]]:
    """``(path, options)`` of a :func:`file_spec` name."""
    from urllib.parse import parse_qsl, unquote

    body = name[len(FILE_PREFIX):]
    path, _, query = body.partition("?")
    opts: dict[str, Any] = dict(parse_qsl(query))
    unknown = set(opts) - set(_SPEC_KEYS)
    if unknown:
        raise ValueError(f"dataset {name!r}: unknown file option(s) {sorted(unknown)}")
    if "test_size" in opts:
        opts["test_size"] = float(opts["test_size"])
    prep = {k: opts.pop(k) for k in _PREP_KEYS if k in opts}
    if prep:
        try:
            opts["prep"] = Preprocessing.from_spec(prep)
        except ValueError as exc:
            raise ValueError(f"dataset {name!r}: {exc}") from None
    return unquote(path), opts


def file_dataset(model: str, name: str) -> Any:
    """A :class:`explorer.registry.Dataset` reading the file named by ``name``
    (:func:`file_spec`); its ``seed`` draws the ``test_size`` split."""
    from .registry import Dataset

    path, opts = parse_file_spec(name)

    def make(seed: int = 0) -> Problem:
        return load_problem(model, path, seed=seed, **opts)

    size = os.path.getsize(path) if os.path.exists(path) else 0
    return Dataset(name=name, title=f"file {Path(path).name}", make=make, sizes={}, real=True,
                   memory=lambda _s: 8.0 * 8.0 * size)


def fitted_model(model: str, problem: Problem, res: Any,
                 params: Mapping[str, Any] | None = None) -> Any:
    """The :class:`solvers.saved.SavedModel` of ``res`` fitted on ``problem``.

    It carries the data's names from ``problem.info`` (feature, class and task names, the
    label and task columns; the built-in datasets give codes) and, for the metric
    learner, the training points as the 1-NN reference. ``params``: the run's parameters;
    those the result does not record (e.g. a registry-only one) are added. One builder for
    ``dualscope solve --save`` / ``--json`` and the page's Export tab.

    Parameters
    ----------
    model : str
        A registry name (``"wwsvm"``, ...).
    problem : Problem
        The problem ``res`` solves.
    res : Result
        The solve's result.
    params : Mapping, optional
        The run's parameters.

    Returns
    -------
    solvers.saved.SavedModel
        The model, ready to save or to predict.
    """
    from solvers import saved

    info = problem.info
    ref = (problem.data["X"], problem.data["y"]) if saved.form_of(model).reference else None
    classes = info.get("class_names")
    extra = {k: v for k, v in (params or {}).items() if k not in res.params}
    return saved.from_fitted(res, model=model, zero_based=info.get("zero_based"),
                             feature_names=info.get("feature_names"),
                             class_names=classes, task_names=info.get("task_names"),
                             label_name=info.get("label_name"),
                             task_name=info.get("task_name") or info.get("time_name"),
                             reference=ref, params=extra,
                             preprocessing=info.get("preprocessing"))


def held_out_scores(model: str, problem: Problem, res: Any,
                    params: Mapping[str, Any] | None = None) -> tuple[Any, ...] | None:
    """The :mod:`solvers.scoring` scores of ``res`` on the held-out rows of a file problem
    (``info["test_table"]``): the fitted model's predictions
    (:meth:`solvers.saved.SavedModel.predict`, as ``dualscope predict`` makes them)
    against the held-out labels. None without held-out labelled rows."""
    from solvers.scoring import score_predictions

    test = problem.info.get("test_table")
    if test is None or test.y is None:
        return None
    sm = fitted_model(model, problem, res, params)
    tasks = test.tasks if test.tasks is not None else test.time
    pred = sm.predict(test.X, tasks if sm.needs_tasks else None)
    return score_predictions(sm.kind, test.y, pred)
