"""Number formatting and slider grids of the page kit."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

__all__ = ["certificate_digits", "fmt", "fmt_time", "log_options", "pretty"]


def fmt(x: Any) -> str:
    """Compact number for labels: 0.001 -> 1e-3, 2.0 -> 2, 0.5 -> 0.5."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x == 0 or not math.isfinite(x):
            return str(x)
        e = math.floor(math.log10(abs(x)))
        if -3 <= e <= 3:
            return f"{x:g}"
        m = x / 10.0 ** e
        return f"{m:g}e{e}" if abs(m - 1) > 1e-12 else f"1e{e}"
    return str(x)


def log_options(low: float, high: float, default: float | None = None,
                extra: list[float] | tuple[float, ...] = ()) -> list[float]:
    """1-2-5 steps per decade between ``low`` and ``high``, plus ``default`` and ``extra``
    values that are off that grid (e.g. a shared link's ``C=0.3``)."""
    out = []
    e0 = math.floor(math.log10(low))
    e1 = math.ceil(math.log10(high))
    for e in range(e0, e1 + 1):
        for m in (1.0, 2.0, 5.0):
            v = float(f"{m * 10.0 ** e:.12g}")
            if low * (1 - 1e-12) <= v <= high * (1 + 1e-12):
                out.append(v)
    for v in ([] if default is None else [default]) + list(extra):
        if all(abs(o - v) > 1e-12 * abs(v) for o in out):
            out.append(float(v))
    out.sort()
    return out


def certificate_digits(primal: float, dual: float) -> int:
    """Significant digits that show where ``primal`` and ``dual`` differ (6..17)."""
    scale = max(abs(primal), abs(dual), 1e-300)
    diff = abs(primal - dual)
    if diff == 0 or not math.isfinite(diff):
        return 8
    return int(min(17, max(6, math.ceil(math.log10(scale / diff)) + 2)))


def fmt_time(seconds: float) -> str:
    """A solve time for people: 2.3 ms, 0.41 s, 12.3 s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 0.1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


# Plain-text math of the registry summaries (they are also printed by the CLI), shown
# with Unicode symbols on the page.
_SYMBOLS = [
    (r"<=", "≤"), (r">=", "≥"), (r"\^T\b", "ᵀ"), (r"\^\{-1\}", "⁻¹"), (r"\|\|", "‖"),
    (r"\bsum_i\b", "∑ᵢ"), (r"\bl2,1\b", "ℓ₂,₁"), (r"\blp-norm\b", "ℓp-norm"),
    (r"\b([A-Za-z])_i\b", r"\1ᵢ"), (r"_p\b", "ₚ"),
    (r"\beta\b", "η"), (r"\btheta\b", "θ"), (r"\bmu\b", "μ"), (r"\blambda\b", "λ"),
    (r"\balpha\b", "α"),
]


def pretty(text: str) -> str:
    """ASCII math in a summary (``0 <= M <= I``, ``U^T``, ``eta``) as Unicode symbols."""
    for pat, rep in _SYMBOLS:
        text = re.sub(pat, rep, text)
    return text
