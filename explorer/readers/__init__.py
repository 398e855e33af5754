"""One small module per data-file format, behind one protocol.

Each format module defines ``FORMATS`` (format name -> file extensions), ``NAMED_COLUMNS``
(its columns have names), ``TEXT`` (a text format, ``.gz`` accepted) and
``read(path, fmt, request) -> Table`` (:class:`~explorer.readers.base.Reader`), which takes
the whole :class:`~explorer.readers.base.ReadRequest` (roles, the training data's columns,
the limits) and raises :class:`~explorer.readers.base.DataFileError` naming the file. A new
format is a new module listed in :data:`MODULES`. :mod:`explorer.datafiles` builds tables,
problems and saved models on top.
"""

from __future__ import annotations

from types import ModuleType

from . import delimited, matlab, npz, parquet, svmlight
from .base import (
    MAX_COLUMNS,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    DataFileError,
    Reader,
    ReadRequest,
    Table,
)

__all__ = ["FORMATS", "MAX_COLUMNS", "MAX_FILE_BYTES", "MAX_LINE_BYTES", "MODULES",
           "NAMED_COLUMNS", "READERS", "TEXT_FORMATS", "DataFileError", "ReadRequest",
           "Reader", "Table"]

#: The format modules, in the order formats are listed and extensions are tried.
MODULES: tuple[ModuleType, ...] = (delimited, svmlight, npz, parquet, matlab)

#: Format name -> file extensions (a ``.gz`` suffix is accepted for the text formats).
FORMATS: dict[str, tuple[str, ...]] = {f: e for m in MODULES for f, e in m.FORMATS.items()}
#: Format name -> its reader (one protocol, :class:`~explorer.readers.base.Reader`).
READERS: dict[str, Reader] = {f: m.read for m in MODULES for f in m.FORMATS}
#: The formats whose columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = frozenset(f for m in MODULES if m.NAMED_COLUMNS for f in m.FORMATS)
#: The text formats (read within the line bounds; ``.gz`` accepted).
TEXT_FORMATS = tuple(f for m in MODULES if m.TEXT for f in m.FORMATS)
