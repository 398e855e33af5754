"""Parquet files (pandas with pyarrow); the column count checked from the schema."""

from __future__ import annotations

from pathlib import Path

from .base import DataFileError, ReadRequest, Table, one_line
from .frame import check_columns, from_frame

__all__ = ["FORMATS", "NAMED_COLUMNS", "TEXT", "read"]

#: Format name -> file extensions.
FORMATS: dict[str, tuple[str, ...]] = {"parquet": (".parquet", ".pq")}
#: Whether the columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = True
#: A text format (a ``.gz`` suffix is accepted).
TEXT = False


def read(p: Path, fmt: str, req: ReadRequest) -> Table:
    import pandas as pd

    try:
        import pyarrow.parquet as pq

        check_columns(p, len(pq.read_schema(p).names), req)
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
        raise DataFileError(f"{p.name}: not a readable Parquet file ({one_line(exc)})"
                            ) from None
    return from_frame(df, p, fmt, req, line_offset=0)
