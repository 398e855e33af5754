"""Parsing the command line's values, shared by ``dualscope`` and its ``sweep``.

The error types of the command line live here too, so that every subcommand module
(``explorer.cli``, ``explorer.sweep.cli``) can raise them without importing the
other: :class:`CLIError` is printed as one line ``dualscope: ...`` with exit status 2.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .registry import Dataset

__all__ = ["CLIError", "Terminated", "parse_number", "parse_pairs", "parse_size",
           "prep_options", "preprocessing_of"]


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


def prep_options(s: argparse.ArgumentParser) -> None:
    """The preprocessing options (:mod:`solvers.preprocess`), fitted on the training rows
    and saved with the model."""
    g = s.add_argument_group("preprocessing of a data file (saved with the model; "
                             "`dualscope predict` applies it)")
    g.add_argument("--scale", choices=("none", "standard", "maxabs"), default=None,
                   help="scale the numeric feature columns: standard (mean 0, variance 1) "
                        "or maxabs (divide by max |x|; keeps sparse files sparse); default "
                        "none")
    g.add_argument("--categorical", choices=("onehot", "drop", "error"), default=None,
                   help="text feature columns: one 0/1 column per value (onehot), dropped, "
                        "or an error (default)")
    g.add_argument("--missing", choices=("error", "drop", "mean"), default=None,
                   help="missing values: an error (default), drop incomplete rows, or fill "
                        "in the training mean (most frequent value of a text column)")
    g.add_argument("--features", metavar="COL,...", help="only these feature columns")
    g.add_argument("--ignore", metavar="COL,...", help="leave these columns out")


def preprocessing_of(args: argparse.Namespace) -> Any:
    """The :class:`solvers.preprocess.Preprocessing` of the options (None: none given)."""
    keys = ("scale", "categorical", "missing", "features", "ignore")
    given = {k: getattr(args, k, None) for k in keys if getattr(args, k, None) is not None}
    if not given:
        return None
    from solvers.preprocess import Preprocessing

    try:
        return Preprocessing.from_spec(given)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
