"""Parsing the command line's values, shared by ``dualscope`` and its ``sweep``.

The error types of the command line live here too, so that every subcommand module
(:mod:`explorer.cli`, :mod:`explorer.sweep.cli`) can raise them without importing the
other: :class:`CLIError` is printed as one line ``dualscope: ...`` with exit status 2.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .registry import Dataset

__all__ = ["CLIError", "Terminated", "parse_number", "parse_pairs", "parse_size"]


class CLIError(Exception):
    """A user-facing error whose message is final (printed as is, exit status 2)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by a command that handles it (``sweep``): the
    same unwinding as Ctrl-C (rows kept, workers ended), exit status 143."""



def parse_pairs(pairs: list[str] | None, what: str) -> dict[str, str]:
    """``KEY=VALUE`` items of a repeatable option ``what`` as a dict (keys and values
    stripped); a malformed item or a repeated key is a :class:`CLIError` naming ``what``.
    Shared by every
    subcommand (``solve``, ``check``, ``sweep``)."""
    out: dict[str, str] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CLIError(f"{what} expects KEY=VALUE, got {item!r}")
        key = key.strip()
        if key in out:
            raise CLIError(f"{what} {key} is given twice ({key}={out[key]} and "
                           f"{key}={value.strip()}); give each {what} key once")
        out[key] = value.strip()
    return out


def parse_number(text: str, what: str, *, integer: bool) -> int | float:
    """``text`` as a finite float (or an integral int), or a CLIError naming ``what``."""
    kind = "an integer" if integer else "a number"
    try:
        x = float(text)
    except ValueError:
        raise CLIError(f"{what} must be {kind}, got {text!r}") from None
    if not math.isfinite(x):
        raise CLIError(f"{what} must be finite, got {text!r}")
    if integer:
        if not x.is_integer():
            raise CLIError(f"{what} must be an integer, got {text!r}")
        return int(x)
    return x


def parse_size(ds: Dataset, key: str, text: str) -> int | float:
    """The value of ``--size key=text`` (a finite number; an integer for integer sizes)."""
    if key not in ds.sizes:
        raise CLIError(f"dataset {ds.name!r} has no size {key!r}; available: "
                       f"{list(ds.sizes)}")
    default = ds.sizes[key][0]
    integer = isinstance(default, int) and not isinstance(default, bool)
    return parse_number(text, f"--size {key}", integer=integer)
