"""Table I/O: sweep rows as CSV (exact float repr) or Parquet, and :class:`SweepTable`."""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .spec import CERTIFICATE, STRUCT_PREFIX

__all__ = ["SweepTable", "read_table", "write_table"]


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
    tail = [*CERTIFICATE, "score_name", "score"]
    struct = [c for c in cols if c.startswith(STRUCT_PREFIX)]
    end = ["error", "key"]
    head = [c for c in cols if c not in tail and c not in end and c not in struct]
    return head + [c for c in tail if c in cols] + struct + [c for c in end if c in cols]


def read_table(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a sweep table written by :func:`write_table` (CSV or Parquet)."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        pq = _pyarrow()
        return pq.read_table(path).to_pylist()
    with path.open(newline="", encoding="utf-8") as fh:
        return [{k: _coerce(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("writing or reading Parquet needs pyarrow (pip install pyarrow); "
                          "or use a .csv output") from exc
    return pq


def write_table(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Write rows as CSV (exact float repr) or Parquet (``.parquet``), atomically."""
    path = Path(path)
    cols = _columns(rows)
    tmp = path.with_name(path.name + ".tmp")
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
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            for r in rows:
                w.writerow([_fmt(r.get(c)) for c in cols])
    os.replace(tmp, path)


class SweepTable(list):
    """The rows of a sweep (a list of dicts) with conveniences."""

    def ok(self) -> SweepTable:
        """Rows without error."""
        return SweepTable(r for r in self if not r.get("error"))

    def errors(self) -> SweepTable:
        return SweepTable(r for r in self if r.get("error"))

    def to_frame(self):
        """A pandas DataFrame (pandas needed)."""
        import pandas as pd

        return pd.DataFrame(list(self), columns=_columns(self))


