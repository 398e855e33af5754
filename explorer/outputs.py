"""Output files: never overwrite what is not ours, always write atomically.

One guard for every file dualscope writes (``solve --json``/``--save``, ``predict --out``,
``bench --json``, the sweep table): :func:`guard_output` refuses, unless ``force``,

- the input files of the same command (the data, test or model file), whatever they are;
- an existing file that is not a file of the same kind written by dualscope (each kind
  is an :class:`OutputKind` whose ``recognise`` reads the file and raises when it is not
  one; an existing file of the kind is overwritten, as rerunning a command should).

Writes go through :func:`solvers.fileio.write_atomic` (a temporary file in the same folder,
then :func:`os.replace`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BENCH_JSON", "PREDICTIONS", "RUN_JSON", "SAVED_MODEL", "OutputKind", "OverwriteError",
           "guard_output", "same_file", "write_atomic"]

#: Bytes read at most to recognise an existing output file.
RECOGNISE_BYTES = 256 * 1024**2


class OverwriteError(ValueError):
    """An output path that names a file dualscope does not overwrite (without ``force``)."""


@dataclass(frozen=True)
class OutputKind:
    """A kind of file dualscope writes.

    Attributes
    ----------
    what : str
        The kind in words (``"a dualscope run JSON"``).
    recognise : callable
        ``recognise(path) -> value``; raises (any ``Exception``) when ``path`` is not such
        a file written by dualscope. Its value is returned by :func:`guard_output`.
    suffixes : tuple of str
        The file name endings the kind is written with (empty: any).
    """

    what: str
    recognise: Callable[[Path], Any]
    suffixes: tuple[str, ...] = ()


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` are the same existing file (links and ``..`` resolved)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def guard_output(path: str | os.PathLike, *, kind: OutputKind | None = None,
                 inputs: Iterable[tuple[str, str | os.PathLike | None]] = (),
                 force: bool = False, option: str = "--out",
                 error: type[Exception] = OverwriteError,
                 warning: type[Warning] = UserWarning) -> Any:
    """Refuse to write ``path`` over an input or over a file that is not ours.

    Parameters
    ----------
    path : path
        The output file.
    kind : OutputKind, optional
        What the output is; an existing file must be one (checked by its ``recognise``).
        None: any existing file that is not an input may be overwritten.
    inputs : iterable of (option, path)
        The command's input files (``("--data", "train.csv")``); ``path`` may never be one.
    force : bool
        Overwrite anyway (a warning says what is overwritten).
    option : str
        The output's option name, for messages.
    error : exception class
        Raised on a refusal (default :class:`OverwriteError`, a ``ValueError``).
    warning : warning class
        The category of the warning under ``force``.

    Returns
    -------
    The value of ``kind.recognise(path)`` when ``path`` exists and is of the kind, else None.
    """
    p = Path(path).expanduser()
    hint = "choose another file, or pass --force to overwrite it"
    for opt, src in inputs:
        if src is not None and same_file(p, Path(src).expanduser()):
            msg = f"{option} {str(path)!r} is the input file of {opt}"
            if not force:
                raise error(f"{msg}; refusing to overwrite it ({hint})")
            warnings.warn(f"{msg}; overwriting it (--force)", warning, stacklevel=2)
            return None
    if kind is not None and kind.suffixes and p.suffix.lower() not in kind.suffixes:
        raise error(f"{option} {str(path)!r}: {kind.what} ends in "
                    f"{' or '.join(kind.suffixes)}")
    if kind is None or not (p.exists() or p.is_symlink()):
        return None
    try:
        return kind.recognise(p)
    except Exception as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        msg = f"{option} {str(path)!r} exists and is not {kind.what} ({why})"
        if not force:
            raise error(f"{msg}; refusing to overwrite it ({hint})") from None
        warnings.warn(f"{msg}; overwriting it (--force)", warning, stacklevel=2)
        return None


# --------------------------------------------------------------------- the kinds


def _json_object(p: Path) -> dict[str, Any]:
    from solvers.fileio import read_regular  # solvers (numba) only when a file is read

    doc = json.loads(read_regular(p, RECOGNISE_BYTES, "JSON file").decode("utf-8"))
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def _run_json(p: Path) -> dict[str, Any]:
    doc = _json_object(p)
    missing = [k for k in ("model", "dataset", "params", "result") if k not in doc]
    if missing or not isinstance(doc.get("result"), dict):
        raise ValueError(f"no {', '.join(missing) or 'result'} entry")
    return doc


def _bench_json(p: Path) -> dict[str, Any]:
    doc = _json_object(p)
    if "model" not in doc or not isinstance(doc.get("tables"), list):
        raise ValueError("not a benchmark report")
    return doc


def _saved_model(p: Path) -> Any:
    from solvers.saved import load_model

    return load_model(p)


#: Header of every predictions CSV dualscope writes: its last column.
PREDICTION_COLUMN = "prediction"


def _predictions(p: Path) -> int:
    """Rows of a predictions CSV as ``predict --out`` writes it: a header ``prediction``
    or ``TASK,prediction`` and rows of as many fields (all rows are checked)."""
    from solvers.fileio import read_regular

    text = read_regular(p, RECOGNISE_BYTES, "predictions file").decode("utf-8")
    rows = csv.reader(io.StringIO(text, newline=""))
    header = next(rows, None)
    if not header or header[-1] != PREDICTION_COLUMN or len(header) > 2:
        raise ValueError(f"its header is not '{PREDICTION_COLUMN}' or 'TASK,"
                         f"{PREDICTION_COLUMN}'")
    n = 0
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ValueError(f"line {i} has {len(row)} fields, not {len(header)}")
        n += 1
    return n


RUN_JSON = OutputKind("a dualscope run JSON (solve/check --json)", _run_json)
BENCH_JSON = OutputKind("a dualscope benchmark JSON (bench --json)", _bench_json)
SAVED_MODEL = OutputKind("a saved dualscope model (--save)", _saved_model, (".npz", ".json"))
PREDICTIONS = OutputKind("a dualscope predictions CSV (predict --out)", _predictions)


def write_atomic(*args: Any, **kwargs: Any) -> Any:
    """:func:`solvers.fileio.write_atomic` (imported on first use: ``import explorer.cli``
    and ``dualscope --help`` load no numerical library)."""
    from solvers.fileio import write_atomic as _write

    return _write(*args, **kwargs)
