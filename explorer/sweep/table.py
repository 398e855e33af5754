"""Table I/O: sweep rows as CSV (exact float repr) or Parquet, and :class:`SweepTable`.

Writing is atomic: the table goes to a temporary file in the same directory, which then
replaces the target (:func:`os.replace`), so an interrupted sweep never leaves half a
row. Reading validates: :func:`load_table` refuses a file that is not a dualscope sweep
table (:class:`TableError`) and drops, naming the file and the line, every row that is
partial or corrupt (a truncated last line, appended garbage, bytes that are not UTF-8
text, a row with the wrong number of fields or a key that is not a sweep point).
"""

from __future__ import annotations

import csv
import io
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .spec import CERTIFICATE, STRUCT_PREFIX

__all__ = ["SweepTable", "TableError", "TableRead", "TableWarning", "load_table", "read_table",
           "write_table"]

#: Columns a dualscope sweep table always has.
REQUIRED = ("model", "dataset", "data_seed", "key")
#: The fields of a point key (:func:`explorer.sweep.point_key`).
KEY_FIELDS = frozenset({"model", "dataset", "sizes", "seed", "fold", "cv", "params", "tol",
                        "max_iter"})


class TableError(ValueError):
    """A file that is not a (readable) dualscope sweep table."""


class TableWarning(UserWarning):
    """Rows of a sweep table dropped on reading (partial or corrupt)."""


@dataclass
class TableRead:
    """The valid rows of a table file and one message per row dropped."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _coerce(text: str) -> Any:
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: dict[str, None] = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    # certificate and bookkeeping last, in a fixed order
    tail = [*CERTIFICATE, "score_name", "score", "score_error"]
    struct = [c for c in cols if c.startswith(STRUCT_PREFIX)]
    end = ["error", "key"]
    head = [c for c in cols if c not in tail and c not in end and c not in struct]
    return head + [c for c in tail if c in cols] + struct + [c for c in end if c in cols]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def row_problem(row: Mapping[str, Any]) -> str | None:
    """Why ``row`` is not a valid sweep row (None: it is)."""
    text = row.get("key")
    try:
        key = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        key = None
    if not isinstance(key, dict) or not KEY_FIELDS <= set(key):
        return "its key is not a sweep point (a truncated or edited row)"
    if (row.get("model"), row.get("dataset")) != (key["model"], key["dataset"]) or \
            row.get("data_seed") != key["seed"]:
        return "its model, dataset or data seed disagree with its key"
    error = row.get("error")
    if error is not None and not isinstance(error, str):
        return "its error column is not text"
    if not error:
        for col in ("primal", "dual", "gap", "rel_gap", "time"):
            if col in row and not _is_number(row[col]):
                return f"its {col} is not a number ({row[col]!r})"
        if "n_iter" in row and not (isinstance(row["n_iter"], int)
                                    and not isinstance(row["n_iter"], bool)):
            return f"its n_iter is not an integer ({row['n_iter']!r})"
        for col in ("converged", "warm"):
            if col in row and not isinstance(row[col], bool):
                return f"its {col} is not True/False ({row[col]!r})"
    return None


def _check_header(path: Path, cols: Sequence[str], what: str) -> None:
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise TableError(f"{path} is not a dualscope sweep table ({what} lacks the "
                         f"column(s) {', '.join(repr(c) for c in missing)})")


def _bad_text(row: Sequence[str]) -> bool:
    return any("\udc80" <= ch <= "\udcff" for v in row for ch in v)


def load_table(path: str | os.PathLike) -> TableRead:
    """The valid rows of the sweep table ``path`` (CSV or Parquet) and what was dropped.

    Raises :class:`TableError` (naming the file) if ``path`` is not a dualscope sweep
    table: unreadable, or its header lacks the columns every table has. Each row that is
    partial or corrupt is left out and named in ``dropped`` (``"FILE line N: ..."``); a
    repeated key keeps its first row.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file.

    Returns
    -------
    TableRead
        ``rows`` (a list of dicts, values typed back) and ``dropped`` (messages).
    """
    path = Path(path)
    out = TableRead()
    seen: set[str] = set()

    def keep(row: dict[str, Any], where: str) -> None:
        why = row_problem(row)
        if why is None and row["key"] in seen:
            why = "it repeats the key of an earlier row"
        if why is None:
            seen.add(row["key"])
            out.rows.append(row)
        else:
            out.dropped.append(f"{path} {where}: {why}; row dropped")

    if path.suffix.lower() in (".parquet", ".pq"):
        pq = _pyarrow()
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
            raise TableError(f"{path} is not a readable Parquet file "
                             f"({type(exc).__name__}: {exc})") from None
        _check_header(path, table.column_names, "its schema")
        for i, row in enumerate(table.to_pylist()):
            keep(row, f"row {i + 1}")
        return out
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    if not text:
        return out
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except csv.Error as exc:
        raise TableError(f"{path} is not a dualscope sweep table (line 1: {exc})") from None
    if _bad_text(header):
        raise TableError(f"{path} is not a dualscope sweep table (line 1 is not UTF-8 text)")
    _check_header(path, header, "line 1")
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            out.dropped.append(f"{path} line {start}: not CSV ({exc}); the rest of the file "
                               "dropped")
            break
        if not fields:
            continue
        where = f"line {start}"
        if _bad_text(fields):
            out.dropped.append(f"{path} {where}: bytes that are not UTF-8 text; row dropped")
        elif len(fields) != len(header):
            out.dropped.append(f"{path} {where}: a partial row ({len(fields)} of "
                               f"{len(header)} fields); row dropped")
        else:
            keep({k: _coerce(v) for k, v in zip(header, fields, strict=True)}, where)
    return out


def read_table(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a sweep table written by :func:`write_table` (CSV or Parquet).

    The rows :func:`load_table` keeps; each row dropped is a :class:`TableWarning`
    naming the file and the line.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file.

    Returns
    -------
    list of dict
        The rows.
    """
    result = load_table(path)
    for msg in result.dropped:
        warnings.warn(msg, TableWarning, stacklevel=2)
    return result.rows


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("writing or reading Parquet needs pyarrow (pip install pyarrow); "
                          "or use a .csv output") from exc
    return pq


def write_table(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Write rows as CSV (exact float repr) or Parquet (``.parquet``), atomically.

    The rows go to a temporary file next to ``path`` (flushed to disk), which then
    replaces ``path`` in one step: a reader or a crash sees the old table or the new one,
    never a part.

    Parameters
    ----------
    rows : sequence of Mapping
        The rows (their keys are the columns).
    path : str or path-like
        ``.parquet`` or ``.pq`` for Parquet, anything else CSV.
    """
    path = Path(path)
    cols = _columns(rows)
    from solvers.fileio import atomic_path  # numba-free import of explorer.sweep

    with atomic_path(path) as tmp:
        if path.suffix.lower() in (".parquet", ".pq"):
            pq = _pyarrow()
            import pyarrow as pa

            data = {}
            for c in cols:
                vals = [r.get(c) for r in rows]
                kinds = {type(v) for v in vals if v is not None}
                if kinds <= {int, float} and float in kinds:
                    vals = [None if v is None else float(v) for v in vals]
                elif len(kinds) > 1:
                    vals = [None if v is None else _fmt(v) for v in vals]
                data[c] = vals
            pq.write_table(pa.table(data), tmp)
        else:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(cols)
                for r in rows:
                    w.writerow([_fmt(r.get(c)) for c in cols])


class SweepTable(list):
    """The rows of a sweep (a list of dicts) with conveniences.

    Parameters
    ----------
    iterable : iterable of dict
        The rows.

    Examples
    --------
    >>> from explorer.sweep import SweepTable
    >>> table = SweepTable([{"C": 1.0, "gap": 0.0}, {"C": 2.0, "error": "diverged"}])
    >>> len(table.ok()), len(table.errors())
    (1, 1)
    """

    def ok(self) -> SweepTable:
        """Rows without error."""
        return SweepTable(r for r in self if not r.get("error"))

    def errors(self) -> SweepTable:
        return SweepTable(r for r in self if r.get("error"))

    def to_frame(self):
        """A pandas DataFrame (pandas needed)."""
        import pandas as pd

        return pd.DataFrame(list(self), columns=_columns(self))


