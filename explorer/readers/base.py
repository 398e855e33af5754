"""What every format's reader shares: the table it returns, the request it takes, the
error it raises and the limits it applies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from solvers.preprocess import FittedPreprocessing, Preprocessing

__all__ = ["MAX_COLUMNS", "MAX_FILE_BYTES", "MAX_LINE_BYTES", "DataFileError", "ReadRequest",
           "Reader", "Table"]


#: Files larger than this (on disk; a ``.gz`` file counts 5 times its size) are refused
#: before they are read.
MAX_FILE_BYTES = 512 * 1024**2


#: Longest line of a text file (decompressed bytes; a longer one is refused as it streams).
MAX_LINE_BYTES = 64 * 1024**2


#: Most columns of a table file (CSV, TSV, Parquet), refused from its header beyond (wider
#: data: a sparse svmlight/LIBSVM file or a ``.npz``).
MAX_COLUMNS = 20_000


class DataFileError(ValueError):
    """A data file that cannot be used; the message names the file (one line)."""


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


@dataclass(frozen=True)
class ReadRequest:
    """What :func:`explorer.datafiles.read_table` asks of a format's reader.

    Every reader takes the whole request and uses what its format has: the role names,
    whether labels are required, the training data's feature columns / count / index
    base (a test or predict file), the limits and the preprocessing.

    Attributes
    ----------
    label, task, time : str or None
        Column (table formats) or array (``.npz``, ``.mat``) names of the roles.
    need_label : bool
        Refuse a file without labels (``False`` when predicting).
    features : sequence of str or None
        The training data's feature columns (a test or predict file).
    n_features : int or None
        The training data's feature count (svmlight).
    zero_based : bool or None
        The training file's index base (svmlight); None: the file's own.
    max_bytes : float
        Size budget of the (decompressed) bytes read.
    max_line_bytes : float
        Longest line of a text file.
    max_columns : int
        Most columns of a table file.
    prep : solvers.preprocess.Preprocessing or None
        Preprocessing to fit on this file's rows (table formats).
    fitted : solvers.preprocess.FittedPreprocessing or None
        The training data's preprocessing, applied to this file (table formats).
    """

    label: str | None = None
    task: str | None = None
    time: str | None = None
    need_label: bool = True
    features: Sequence[str] | None = None
    n_features: int | None = None
    zero_based: bool | None = None
    max_bytes: float = MAX_FILE_BYTES
    max_line_bytes: float = MAX_LINE_BYTES
    max_columns: int = MAX_COLUMNS
    prep: Preprocessing | None = None
    fitted: FittedPreprocessing | None = None


class Reader(Protocol):
    """A format's reader: ``reader(path, fmt, request) -> Table``
    (:data:`explorer.readers.READERS`)."""

    def __call__(self, p: Path, fmt: str, req: ReadRequest, /) -> Table: ...


def gz_error(p: Path, exc: BaseException) -> DataFileError:
    """The error for a truncated or corrupt ``.gz`` file."""
    return DataFileError(f"{p.name}: truncated or corrupt gzip file ({one_line(exc)})")


def one_line(exc: BaseException | str) -> str:
    """An exception's message on one line (its type's name when it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def find_column(columns: Sequence[str], name: str | None, what: str, option: str, p: Path,
                default: str | None = None) -> str | None:
    """The column ``name`` names (a column name or a position), ``default`` when it
    is present and ``name`` is None, else None; an unknown ``name`` names the option."""
    if name is None:
        return default if default in columns else None
    if name in columns:
        return name
    if name.isdigit() and int(name) < len(columns):
        return columns[int(name)]
    raise DataFileError(f"{p.name}: no {what} column {name!r} ({option}); columns: "
                        f"{columns_text(columns)}")


def columns_text(columns: Sequence[str]) -> str:
    """The first 12 column names, for messages."""
    cols = [str(c) for c in columns]
    return ", ".join(cols[:12]) + (f", ... ({len(cols)} columns)" if len(cols) > 12 else "")


def check_finite(X: np.ndarray, p: Path, names: Sequence[str], line_offset: int | None,
                  hint: bool = False) -> None:
    """Refuse a NaN or infinite feature, naming its line (or row) and column."""
    if X.size and not np.all(np.isfinite(X)):
        i, j = np.argwhere(~np.isfinite(X))[0]
        where = f"line {i + line_offset}, " if line_offset is not None else f"row {i}, "
        what = "missing value (NaN)" if np.isnan(X[i, j]) else f"value {X[i, j]!r}"
        tip = ("; use --missing drop (drop incomplete rows) or --missing mean"
               if hint and np.isnan(X[i, j]) else "")
        raise DataFileError(f"{p.name}: {where}column {names[j]!r}: {what}; features must "
                            f"be finite numbers{tip}")
