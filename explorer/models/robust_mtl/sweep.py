"""Sweep hooks of robust temporal MTL: row sparsity and rank of the task weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Problem


def structure(problem: Problem, result: Any) -> dict[str, float]:
    """Non-zero rows and numerical rank of ``W`` (relative threshold 1e-6)."""
    W = np.asarray(result.W)
    rows = np.linalg.norm(W, axis=1)
    s = np.linalg.svd(W, compute_uv=False)
    scale = max(float(s.max(initial=0.0)), 1e-300)
    return {"nonzero_rows": int(np.sum(rows > 1e-6 * scale)),
            "rank": int(np.sum(s > 1e-6 * scale))}
