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

import gzip
import importlib
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from solvers import preprocess
from solvers.preprocess import FittedPreprocessing, Preprocessing

from .readers import (
    FORMATS,
    MAX_COLUMNS,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    NAMED_COLUMNS,
    READERS,
    TEXT_FORMATS,
    DataFileError,
    Reader,
    ReadRequest,
    Table,
)
from .readers.base import _scalar, columns_text, gz_error, one_line
from .readers.text import prescan_gz
from .registry import Problem

# The formats, their readers and the limits are documented in explorer.readers (and
# importable from here too).
__all__ = ["DataFileError", "FileRoles", "ReadRequest", "Reader", "Table", "detect_format",
           "fitted_model", "load_problem", "problem_from_table", "read_problem",
           "read_table", "roles", "split_table"]

#: Sparse input is densified for a model without sparse support only below this many bytes.
MAX_DENSE_BYTES = 256 * 1024**2


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
        A key of :data:`explorer.readers.FORMATS`.

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
        for f in TEXT_FORMATS:
            if lower.endswith(FORMATS[f]):
                return f
        raise DataFileError(f"{name}: a .gz file must be {', '.join(TEXT_FORMATS)} "
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


# ------------------------------------------------------------------------- tables


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
    if f in TEXT_FORMATS and p.name.lower().endswith(".gz") and max_bytes < math.inf:
        prescan_gz(p, max_bytes, MAX_LINE_BYTES)
    req = ReadRequest(label=label, task=task, time=time, need_label=need_label,
                      features=features, n_features=n_features, zero_based=zero_based,
                      max_bytes=max_bytes, max_line_bytes=MAX_LINE_BYTES,
                      max_columns=MAX_COLUMNS, prep=prep if tabular else None,
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
        raise gz_error(p, exc) from None
    except (ValueError, TypeError, OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{p.name}: {one_line(exc)}") from None
    except RecursionError:
        raise DataFileError(f"{p.name}: nested too deeply to read") from None
    except Exception as exc:  # a reader's own error (OverflowError, pyarrow's, ...)
        raise DataFileError(f"{p.name}: cannot be read as {f} ({type(exc).__name__}: "
                            f"{one_line(exc)})") from None


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
                            f"columns: {columns_text(table.feature_names)})")
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
    return read_problem(model, path, fmt=fmt, label=label, task=task, time=time, test=test,
                        test_size=test_size, seed=seed, max_bytes=max_bytes, prep=prep,
                        **opts)[0]


def read_problem(model: str, path: str | os.PathLike, *, fmt: str | None = None,
                 label: str | None = None, task: str | None = None, time: str | None = None,
                 test: str | os.PathLike | None = None, test_size: float | None = None,
                 seed: int = 0, max_bytes: float = MAX_FILE_BYTES,
                 prep: Preprocessing | None = None, **opts: Any) -> tuple[Problem, Table]:
    """``(problem, training table)`` of :func:`load_problem` (same parameters): the
    table as read, for a preview of the file.

    Parameters
    ----------
    model : str
        A registry name.
    path : str or path-like
        The training file.
    fmt, label, task, time, test, test_size, seed, max_bytes, prep, **opts
        As in :func:`load_problem`.

    Returns
    -------
    (Problem, Table)
        The problem and the training rows' table.
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
        return problem_from_table(model, table, held, **opts), table
    return table_problem(model, table, test_size, seed, **opts)


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
