"""Number formatting shared by the CLI and the pages (numpy-free, import-light).

A duality gap that is exactly zero (or a rounding-level negative number) is not a
measurement of 0: the primal and dual values agree to the last bit, so the gap is
below the floating-point resolution of the objective. :func:`gap_text` says so instead
of printing ``0.000e+00``.
"""

from __future__ import annotations

import math

__all__ = ["BELOW_PRECISION", "gap_text"]

#: How an exactly-zero (or rounding-level negative) gap is shown.
BELOW_PRECISION = "below machine precision"


def gap_text(gap: float, fmt: str = ".3e", width: int = 0, short: bool = False) -> str:
    """``gap`` formatted with ``fmt``, or :data:`BELOW_PRECISION` when it is ``<= 0``.

    ``short``: ``"0"`` instead (for a narrow box that says why elsewhere). ``width``
    right-aligns the text (for the CLI's columns; a longer text is kept whole).
    """
    g = float(gap)
    if math.isfinite(g) and g <= 0.0:
        text = "0" if short else BELOW_PRECISION
    else:
        text = format(g, fmt)
    return text.rjust(width)
