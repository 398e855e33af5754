"""Ridge regression's data: a synthetic generator and a user's file."""

from __future__ import annotations

import numpy as np

from ...registry import Problem


def synthetic(seed: int = 0, n: int = 40, d: int = 5, noise: float = 0.1) -> Problem:
    """``y = X w + noise`` with Gaussian ``X`` and ``w``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + noise * rng.normal(size=n)
    return Problem(data={"X": X, "y": y}, name="synthetic",
                   description=f"{n} samples, {d} features")


def _file_roles():
    from ...datafiles import FileRoles

    return FileRoles(labels="real")


#: What a data file must hold for this model.
FILE_ROLES = _file_roles()


def from_table(table, test=None, **_opts) -> Problem:
    """Features and real-valued targets of a user's file."""
    from ...datafiles import dense, source_info

    info = source_info(table, test)
    if test is not None:
        info["X_test"] = dense(test, "ridge_toy")
        info["y_test"] = test.y.astype(float)
    return Problem(data={"X": dense(table, "ridge_toy"), "y": table.y.astype(float)},
                   name=table.name, description=f"file {table.name}", info=info)
