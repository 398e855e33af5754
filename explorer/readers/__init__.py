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
from .base import (  # re-exported
    MAX_COLUMNS as MAX_COLUMNS,
)
from .base import (
    MAX_FILE_BYTES as MAX_FILE_BYTES,
)
from .base import (
    MAX_LINE_BYTES as MAX_LINE_BYTES,
)
from .base import (
    DataFileError as DataFileError,
)
from .base import (
    Reader as Reader,
)
from .base import (
    ReadRequest as ReadRequest,
)
from .base import (
    Table as Table,
)

# DataFileError, ReadRequest, Reader and Table are documented with explorer.datafiles;
# the limits MAX_FILE_BYTES, MAX_LINE_BYTES and MAX_COLUMNS are in explorer.readers.base.
__all__ = ["FORMATS", "MODULES", "NAMED_COLUMNS", "READERS", "TEXT_FORMATS"]

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
