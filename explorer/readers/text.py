"""Text files read within bounds: decompressed bytes and line lengths counted as they
stream, binary content refused from the first bytes."""

from __future__ import annotations

import contextlib
import gzip
import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .base import DataFileError, gz_error

__all__ = ["bounded_text", "check_text", "prescan_gz"]


def _open_text_head(p: Path, nbytes: int = 65536) -> bytes:
    """The first bytes of a text file (decompressed), for the binary-content check."""
    try:
        if p.name.lower().endswith(".gz"):
            with gzip.open(p, "rb") as f:
                return f.read(nbytes)
        with open(p, "rb") as f:
            return f.read(nbytes)
    except (EOFError, OSError, zlib.error) as exc:
        raise gz_error(p, exc) from None


class _Bounded(io.RawIOBase):
    """A binary stream of a text file's (decompressed) bytes that counts them as they are
    read: beyond ``max_bytes`` in all, or a line beyond ``max_line`` bytes, the read
    raises a :class:`DataFileError` naming the file (the budget applies to what is read,
    not to the size on disk)."""

    def __init__(self, raw: Any, p: Path, max_bytes: float, max_line: float) -> None:
        self._raw, self._p, self._max, self._max_line = raw, p, max_bytes, max_line
        self.total = 0
        self._run = 0  # bytes since the last newline

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)
        if not n:
            return 0
        self.total += n
        if self.total > self._max:
            raise DataFileError(
                f"{self._p.name}: more than {self._max / 1024**2:,.0f} MB of "
                f"{'decompressed ' if self._p.name.lower().endswith('.gz') else ''}text "
                "(the size budget); refused while reading it")
        chunk = bytes(memoryview(b)[:n])
        first = chunk.find(b"\n")
        if first < 0:
            self._run += n
        else:
            if self._run + first > self._max_line:
                self._run += first
            else:
                self._run = n - chunk.rfind(b"\n") - 1
        if self._run > self._max_line:
            raise DataFileError(f"{self._p.name}: a line longer than "
                                f"{self._max_line / 1024**2:,.0f} MB; refused while reading "
                                "it")
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


@contextlib.contextmanager
def bounded_text(p: Path, max_bytes: float, max_line: float) -> Iterator[BinaryIO]:
    """The (decompressed) bytes of text file ``p`` as a buffered stream bounded by
    ``max_bytes`` and ``max_line`` (:class:`_Bounded`)."""
    raw = gzip.open(p, "rb") if p.name.lower().endswith(".gz") else open(p, "rb",
                                                                         buffering=0)
    with io.BufferedReader(_Bounded(raw, p, max_bytes, max_line), buffer_size=1 << 20) as fh:
        yield fh


def prescan_gz(p: Path, max_bytes: float, max_line: float) -> None:
    """Decompress a ``.gz`` once without parsing, counting its bytes and line lengths
    (:class:`_Bounded`): a compression bomb is refused in seconds, before a parser holds
    any of it."""
    try:
        with bounded_text(p, max_bytes, max_line) as fh:
            while fh.read(1 << 20):
                pass
    except (EOFError, OSError, zlib.error) as exc:
        raise gz_error(p, exc) from None


def check_text(p: Path, fmt: str) -> None:
    """Refuse an empty text file or one with binary content in its first bytes."""
    head = _open_text_head(p)
    if not head.strip():
        raise DataFileError(f"{p.name}: the file is empty")
    bad = head.find(b"\x00")
    if bad < 0:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # not just a character cut at the buffer's end
                bad = exc.start
    if bad >= 0:
        line = head[:bad].count(b"\n") + 1
        raise DataFileError(f"{p.name}: line {line}: binary content (byte {bad}), not a "
                            f"{fmt} text file")
