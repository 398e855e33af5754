"""Sweep hooks of cASO: the dimension of the learned shared structure."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Problem


def structure(problem: Problem, result: Any) -> dict[str, float]:
    """Numerical rank of ``U`` and the number of eigenvalues of ``M`` above 1/2."""
    s = np.linalg.svd(np.asarray(result.U), compute_uv=False)
    w = np.linalg.eigvalsh(np.asarray(result.M))
    return {"rank_U": int(np.sum(s > 1e-6 * max(s.max(initial=0.0), 1e-300))),
            "M_eigs_above_half": int(np.sum(w > 0.5))}
