"""NumPy ``.npz`` files: only the arrays with a role are read, each checked from its
header first."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import DataFileError, ReadRequest, Table, check_finite, one_line

__all__ = ["FORMATS", "NAMED_COLUMNS", "TEXT", "read"]

#: Format name -> file extensions.
FORMATS: dict[str, tuple[str, ...]] = {"npz": (".npz",)}
#: Whether the columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = False
#: A text format (a ``.gz`` suffix is accepted).
TEXT = False


def read(p: Path, fmt: str, req: ReadRequest) -> Table:
    from solvers.fileio import npz_arrays, npz_keys

    label, task, time, need_label = req.label, req.task, req.time, req.need_label
    features, max_bytes = req.features, req.max_bytes

    # only the arrays a data file has roles for are read, each checked from its .npy
    # header first (dtype, declared size against the member and the size budget)
    wanted = ["X", label or "y", task or "tasks", time or "time", "feature_names",
              "triplets"]
    try:
        keys = sorted(npz_keys(p))
        data = npz_arrays(p, [k for k in dict.fromkeys(wanted) if k in keys],
                          max_bytes=max_bytes, kinds="biufU")
    except ValueError as exc:
        raise DataFileError(one_line(exc)) from None
    if "X" not in data:
        raise DataFileError(f"{p.name}: no array 'X' (keys: {', '.join(keys) or 'none'})")
    X = np.asarray(data["X"])
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DataFileError(f"{p.name}: 'X' must be a non-empty 2-D array, got shape "
                            f"{X.shape}")
    if X.dtype.kind not in "iufb":
        raise DataFileError(f"{p.name}: 'X' must be numeric, got dtype {X.dtype}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    names = tuple(str(s) for s in data["feature_names"]) if "feature_names" in data else \
        tuple(f"x{j}" for j in range(X.shape[1]))
    if features is not None and len(features) != X.shape[1]:
        raise DataFileError(f"{p.name}: {X.shape[1]} features, the training data had "
                            f"{len(features)}")
    check_finite(X, p, names, None)
    ykey = label or "y"

    def role(key: str | None, default: str) -> np.ndarray | None:
        k = key or default
        if k not in data:
            if key is not None:
                raise DataFileError(f"{p.name}: no array {k!r} (keys: {', '.join(keys)})")
            return None
        a = np.asarray(data[k]).ravel()
        if a.dtype.kind not in "biufU":
            raise DataFileError(f"{p.name}: {k!r} must hold numbers or text, got dtype "
                                f"{a.dtype}")
        if a.shape[0] != X.shape[0]:
            raise DataFileError(f"{p.name}: {k!r} has {a.shape[0]} entries, 'X' has "
                                f"{X.shape[0]} rows")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise DataFileError(f"{p.name}: {k!r}[{int(np.flatnonzero(~np.isfinite(a))[0])}]"
                                " is not finite")
        return a

    y = role(label, "y")
    if y is None and need_label:
        raise DataFileError(f"{p.name}: no label array 'y' (keys: {', '.join(keys)})")
    T = data.get("triplets")
    return Table(X=X, y=y, feature_names=names, path=str(p), fmt=fmt,
                 tasks=role(task, "tasks"), time=role(time, "time"),
                 label_name=ykey if y is not None else None,
                 task_name=(task or "tasks") if (task or "tasks") in data else None,
                 time_name=(time or "time") if (time or "time") in data else None,
                 triplets=None if T is None else np.asarray(T))
