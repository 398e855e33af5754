"""CSV and TSV files (pandas), read within the size and line bounds."""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from pathlib import Path

from .base import DataFileError, ReadRequest, Table, gz_error, one_line
from .frame import check_columns, from_frame
from .text import bounded_text, check_text

__all__ = ["FORMATS", "NAMED_COLUMNS", "TEXT", "read"]

#: Format name -> file extensions.
FORMATS: dict[str, tuple[str, ...]] = {"csv": (".csv",), "tsv": (".tsv", ".tab")}
#: Whether the columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = True
#: A text format (a ``.gz`` suffix is accepted).
TEXT = True


def read(p: Path, fmt: str, req: ReadRequest) -> Table:
    import pandas as pd

    max_bytes = req.max_bytes
    check_text(p, fmt)
    sep = "\t" if fmt == "tsv" else ","
    try:
        # the header first: the column count
        with bounded_text(p, max_bytes, req.max_line_bytes) as fh:
            first = next(csv.reader(io.TextIOWrapper(fh, encoding="utf-8",
                                                     errors="replace"), delimiter=sep), [])
        check_columns(p, len(first), req)
        with bounded_text(p, max_bytes, req.max_line_bytes) as fh:
            df = pd.read_csv(fh, sep=sep, skipinitialspace=True, low_memory=False,
                             compression=None, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise DataFileError(f"{p.name}: the file is empty") from None
    except pd.errors.ParserError as exc:
        raise DataFileError(f"{p.name}: {one_line(exc)}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise gz_error(p, exc) from None
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{p.name}: binary content (byte {exc.start}), not a {fmt} "
                            "text file") from None
    return from_frame(df, p, fmt, req, line_offset=2)
