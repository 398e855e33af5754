"""From a pandas frame (CSV, TSV, Parquet) to a :class:`~explorer.readers.base.Table`:
the role columns, the preprocessing of the feature columns, the checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from solvers import preprocess
from solvers.preprocess import FittedPreprocessing, Preprocessing

from .base import DataFileError, ReadRequest, Table, check_finite, columns_text, find_column

__all__ = ["check_columns", "from_frame"]


def from_frame(df: Any, p: Path, fmt: str, req: ReadRequest, line_offset: int) -> Table:
    """The :class:`Table` of a pandas frame read from a table file (CSV, TSV, Parquet):
    roles found by name, features preprocessed, every message naming file and line."""
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
        raise DataFileError(f"{p.name}: no data rows (header only: {columns_text(columns)})")
    task_col = find_column(columns, task, "task", "--task", p, default="task")
    time_col = find_column(columns, time, "time", "--time", p, default="time")
    taken = {c for c in (task_col, time_col) if c}
    if label is not None and not need_label and fitted is not None and label not in columns:
        label_col = None  # predicting: the training label column, when the file has it
    elif label is not None:
        label_col = find_column(columns, label, "label", "--label", p)
    elif features is not None:  # predicting: the label is whatever is not a feature
        skip = set(features) | taken
        rest = [c for c in columns if c not in skip]
        label_col = rest[-1] if rest else None
    else:
        rest = [c for c in columns if c not in taken]
        label_col = rest[-1] if rest else None
    if need_label and label_col is None:
        raise DataFileError(f"{p.name}: no label column; columns: {columns_text(columns)}")
    if features is None:
        skip = taken | set(prep.ignore) | ({label_col} if label_col is not None else set())
        feats = [c for c in columns if c not in skip]
    else:
        have = set(columns)
        missing = [c for c in features if c not in have]
        if missing:
            what = "of the training data " if fitted is not None or prep.features is None \
                else "(--features) "
            raise DataFileError(f"{p.name}: the feature columns {columns_text(missing)} {what}are "
                                f"missing; columns: {columns_text(columns)}")
        feats = [c for c in features if c not in prep.ignore]
    unknown = [c for c in prep.ignore if c not in columns]
    if unknown and fitted is None:
        raise DataFileError(f"{p.name}: no column {unknown[0]!r} (--ignore); columns: "
                            f"{columns_text(columns)}")
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
        raise DataFileError(f"{p.name}: no feature columns (columns: {columns_text(columns)})")
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
    check_finite(X, p, feats, line_offset, hint=True)
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


def check_columns(p: Path, n: int, req: ReadRequest) -> None:
    """Refuse a table file with more than ``req.max_columns`` columns (from its header)."""
    if n > req.max_columns:
        raise DataFileError(f"{p.name}: {n:,} columns, more than the {req.max_columns:,} a "
                            "table file may have; refused from its header")
