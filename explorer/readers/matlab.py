"""MATLAB ``.mat`` files (scipy.io): ``X`` and ``Y``, or MALSAR's one cell per task."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import DataFileError, ReadRequest, Table, check_finite, one_line

__all__ = ["FORMATS", "NAMED_COLUMNS", "TEXT", "read"]

#: Format name -> file extensions.
FORMATS: dict[str, tuple[str, ...]] = {"mat": (".mat",)}
#: Whether the columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = False
#: A text format (a ``.gz`` suffix is accepted).
TEXT = False


def read(p: Path, fmt: str, req: ReadRequest) -> Table:
    from scipy.io import loadmat

    label, need_label = req.label, req.need_label  # tasks: MALSAR's cells

    try:
        m = loadmat(str(p))
    except Exception as exc:  # scipy raises ValueError / TypeError / MatReadError
        raise DataFileError(f"{p.name}: not a readable MATLAB .mat file ({one_line(exc)})"
                            ) from None
    keys = sorted(k for k in m if not k.startswith("__"))
    xk = "X" if "X" in m else None
    yk = label or next((k for k in ("Y", "y") if k in m), None)
    if xk is None or (yk is None and need_label) or (yk is not None and yk not in m):
        raise DataFileError(f"{p.name}: a .mat data file needs variables 'X' and 'Y' "
                            f"(MALSAR: cell arrays X{{t}}, Y{{t}}); found: "
                            f"{', '.join(keys) or 'none'}")
    Xm: np.ndarray = m[xk]
    Ym: np.ndarray | None = m[yk] if yk else None
    for key, val in ((xk, Xm), (yk, Ym)):
        parts = val.ravel() if val is not None and val.dtype == object else [val]
        if any(np.iscomplexobj(c) for c in parts if c is not None):
            raise DataFileError(f"{p.name}: {key} holds complex numbers; features and labels "
                                "must be real (convert the file, e.g. real() or abs() in "
                                "MATLAB)")
    if Xm.dtype == object:  # MALSAR: one cell per task
        cells = [np.asarray(c) for c in Xm.ravel()]
        ycells = [np.asarray(c).ravel() for c in Ym.ravel()] if Ym is not None else None
        if ycells is not None and len(ycells) != len(cells):
            raise DataFileError(f"{p.name}: X has {len(cells)} cells, {yk} has "
                                f"{len(ycells)}")
        d = {c.shape[1] if c.ndim == 2 else -1 for c in cells}
        if len(d) != 1 or -1 in d:
            raise DataFileError(f"{p.name}: the cells X{{t}} must be 2-D with one common "
                                f"number of columns, got {sorted(d)}")
        for t, c in enumerate(cells):
            if ycells is not None and ycells[t].shape[0] != c.shape[0]:
                raise DataFileError(f"{p.name}: task {t + 1}: X{{{t + 1}}} has {c.shape[0]} "
                                    f"rows, {yk}{{{t + 1}}} has {ycells[t].shape[0]}")
        X = np.vstack([c.astype(np.float64) for c in cells])
        y = np.concatenate(ycells) if ycells is not None else None
        tasks = np.concatenate([np.full(c.shape[0], t + 1) for t, c in enumerate(cells)])
    else:
        X = np.asarray(Xm, dtype=np.float64)
        y = np.asarray(Ym).ravel() if Ym is not None else None
        tasks = None
        if y is not None and y.shape[0] != X.shape[0]:
            raise DataFileError(f"{p.name}: X has {X.shape[0]} rows, {yk} has {y.shape[0]}")
    if X.shape[0] == 0:
        raise DataFileError(f"{p.name}: no data rows")
    names = tuple(f"x{j}" for j in range(X.shape[1]))
    check_finite(X, p, names, None)
    if y is not None:
        if y.dtype.kind not in "iuf" or not np.all(np.isfinite(y)):
            raise DataFileError(f"{p.name}: {yk} must hold finite numbers")
        if y.dtype.kind == "f" and np.all(y == np.round(y)):
            y = y.astype(np.int64)
    return Table(X=np.ascontiguousarray(X), y=y, feature_names=names, path=str(p), fmt=fmt,
                 tasks=tasks, label_name=yk, task_name="cell" if tasks is not None else None)
