"""Sweep hooks of safe triplet screening: the screening rate along a path."""

from __future__ import annotations

from typing import Any

from ...registry import Problem
from ...sweep.hooks import ModelHooks


class TripletHooks(ModelHooks):
    """No held-out score or split; the screening summary of every point."""

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Fraction of triplets screened (into L-hat and R-hat) and the certified radius."""
        n = max(int(result.n_triplets), 1)
        return {"screening_rate": float(result.screening_rate),
                "screened_L": result.screened_L.size / n,
                "screened_R": result.screened_R.size / n,
                "radius": float(result.radius)}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = TripletHooks()
