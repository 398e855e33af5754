"""Bounded, non-blocking reads and atomic writes of the files dualscope reads and writes.

Shared by :mod:`solvers.saved` (saved models) and ``explorer`` (data files, run JSON,
predictions, sweep tables): one place for

- :func:`atomic_path` / :func:`write_atomic`: a file is written to a temporary file in the
  same folder, flushed to disk, then put in place with :func:`os.replace` (a reader or a
  crash sees the old file or the new one, never a part);
- :func:`check_regular` / :func:`read_regular` / :func:`open_regular`: only a regular
  file is read (a FIFO, a device or a link to one is refused from :func:`os.stat`, before
  it is opened, and opened with ``O_NONBLOCK``), within a size budget;
- :func:`npz_arrays`: the named members of a ``.npz`` checked from their ``.npy`` headers
  (dtype, declared shape against the member's size and a byte budget) and only those read.

Every refusal is a ``ValueError`` whose message names the file (and the member).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["atomic_path", "check_regular", "npz_arrays", "npz_keys", "open_regular",
           "read_regular", "write_atomic"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path next to ``path``; on success it replaces ``path`` in one step.

    Yields the temporary file's path (created empty, mode 0600 until it is moved). When
    the block ends without an exception the file is flushed to disk, given the target's
    permissions (0644 for a new file) and moved over ``path`` with :func:`os.replace`;
    on an exception it is removed and ``path`` is untouched.
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        with contextlib.suppress(OSError):  # keep the target's permissions
            os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8 encoded) to ``path`` atomically (:func:`atomic_path`)."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(raw)
    return path


def check_regular(path: str | os.PathLike, max_bytes: float, what: str = "file"
                  ) -> os.stat_result:
    """``os.stat(path)`` of a regular file of at most ``max_bytes``, else a ``ValueError``.

    The check follows symbolic links (a link to a regular file is read; a link to a FIFO
    or to a device such as ``/dev/urandom`` is not) and never opens the file.
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise ValueError(f"{p}: no such file") from None
    except OSError as exc:
        raise ValueError(f"{p.name}: cannot read it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{p}: is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise ValueError(f"{p.name}: is {kind}, not a regular file; only regular files "
                         f"are read as a {what}")
    if st.st_size > max_bytes:
        raise ValueError(f"{p.name}: {st.st_size / 1024**2:,.1f} MB is beyond the "
                         f"{max_bytes / 1024**2:,.0f} MB limit of a {what}; refused "
                         "before reading it")
    return st


def open_regular(path: str | os.PathLike, max_bytes: float, what: str = "file") -> IO[bytes]:
    """``path`` opened for binary reading after :func:`check_regular` (``O_NONBLOCK``: a
    file swapped for a FIFO between the check and the open does not block; the opened
    file is checked again with :func:`os.fstat`)."""
    p = Path(path)
    check_regular(p, max_bytes, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise ValueError(f"{p.name}: cannot read it ({exc.strerror or exc})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
        os.close(fd)
        raise ValueError(f"{p.name}: changed while it was opened (not a regular file of at "
                         f"most {max_bytes / 1024**2:,.0f} MB)")
    return os.fdopen(fd, "rb")


def read_regular(path: str | os.PathLike, max_bytes: float, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them
    (:func:`open_regular`; a file that grows beyond the budget while read is refused)."""
    with open_regular(path, max_bytes, what) as fh:
        data = fh.read(int(min(max_bytes, 2**62)) + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{Path(path).name}: more than the {max_bytes / 1024**2:,.0f} MB "
                         f"limit of a {what}")
    return data


def _zip(source: Any, name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except Exception as exc:  # BadZipFile, OSError, EOFError, ValueError, ...
        raise ValueError(f"{name}: not a readable .npz file ({_line(exc)})") from None


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def npz_keys(source: str | os.PathLike | IO[bytes], name: str | None = None) -> list[str]:
    """The array names of a ``.npz`` (its ``*.npy`` members), read from the zip directory."""
    name = name or Path(str(getattr(source, "name", source))).name
    with _zip(source, name) as z:
        return [m[:-4] for m in z.namelist() if m.endswith(".npy")]


def npz_arrays(source: str | os.PathLike | IO[bytes], keys: Iterable[str] | None = None, *,
               max_bytes: float = 512 * 1024**2, name: str | None = None,
               kinds: str = "biufcUSM") -> dict[str, np.ndarray]:
    """The arrays ``keys`` (default: all) of a ``.npz``, each checked from its header first.

    Each member's ``.npy`` header is read (:func:`numpy.lib.format.read_magic`,
    ``read_array_header_*``) before its data: an object dtype (pickles), a dtype kind not
    in ``kinds``, a declared size larger than what the member holds (a truncated or forged
    member) or a total beyond ``max_bytes`` is refused without reading the data. Members
    not in ``keys`` are never read. Missing keys are left out of the result.

    Raises
    ------
    ValueError
        Naming the file (``name``, default the path's name) and the member.
    """
    from numpy.lib import format as npformat

    name = name or Path(str(getattr(source, "name", source))).name
    out: dict[str, np.ndarray] = {}
    total = 0
    with _zip(source, name) as z:
        members = {m[:-4]: m for m in z.namelist() if m.endswith(".npy")}
        wanted = list(members) if keys is None else [k for k in keys if k in members]
        for k in wanted:
            info = z.getinfo(members[k])
            try:
                with z.open(info) as fh:
                    version = npformat.read_magic(fh)
                    reader = (npformat.read_array_header_1_0 if version == (1, 0)
                              else npformat.read_array_header_2_0)
                    shape, fortran, dtype = reader(fh, max_header_size=100_000) \
                        if version in ((1, 0), (2, 0)) else (None, None, None)
                    if shape is None or dtype is None:
                        raise ValueError(f"unsupported .npy version {version}")
                    if dtype.hasobject:
                        raise ValueError("object arrays are not read (they need pickles)")
                    if dtype.kind not in kinds:
                        raise ValueError(f"dtype {dtype} is not read here")
                    count = int(np.prod(shape, dtype=object))
                    nbytes = count * dtype.itemsize
                    header = fh.tell()
                    if nbytes > info.file_size - header:
                        raise ValueError(f"its header declares shape {tuple(shape)} of "
                                         f"{dtype} ({nbytes:,} bytes) but the member holds "
                                         f"{max(info.file_size - header, 0):,} bytes")
                    total += nbytes
                    if total > max_bytes:
                        raise ValueError(f"its shape {tuple(shape)} of {dtype} takes the "
                                         f"arrays read beyond {max_bytes / 1024**2:,.0f} MB")
                    data = fh.read(nbytes)
            except ValueError as exc:
                raise ValueError(f"{name}: array {k!r}: {_line(exc)}") from None
            except MemoryError:
                raise
            except Exception as exc:  # BadZipFile (CRC), zlib.error, encrypted, ...
                raise ValueError(f"{name}: array {k!r}: unreadable ({type(exc).__name__}: "
                                 f"{_line(exc)})") from None
            if len(data) != nbytes:
                raise ValueError(f"{name}: array {k!r}: truncated ({len(data):,} of "
                                 f"{nbytes:,} bytes)")
            arr = np.frombuffer(data, dtype=dtype, count=count).copy()
            out[k] = arr.reshape(shape, order="F" if fortran else "C")
    return out

