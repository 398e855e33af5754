"""A palmerpenguins-like raw CSV, written deterministically by the tests.

The layout of palmerpenguins' ``penguins.csv`` (species, island, bill and flipper
measurements in mm, body mass in grams, sex, year; ``NA`` for missing), 344 rows drawn
from per-species means and standard deviations of the published data set, with 11
incomplete rows (2 with every measurement and the sex missing, 9 with the sex
missing), as the original has.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: species -> (count, {island: count}, means, sds) of bill length, bill depth,
#: flipper length, body mass.
SPECIES = {
    "Adelie": (152, {"Biscoe": 44, "Dream": 56, "Torgersen": 52},
               (38.79, 18.35, 189.95, 3700.66), (2.66, 1.22, 6.54, 458.57)),
    "Chinstrap": (68, {"Dream": 68}, (48.83, 18.42, 195.82, 3733.09),
                  (3.34, 1.14, 7.13, 384.34)),
    "Gentoo": (124, {"Biscoe": 124}, (47.50, 14.98, 217.19, 5076.02),
               (3.08, 0.98, 6.48, 504.12)),
}
COLUMNS = ("species", "island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm",
           "body_mass_g", "sex", "year")


def penguin_rows(seed: int = 40) -> list[list[str]]:
    """The rows (as text, ``NA`` for missing) of the penguins-like table."""
    rng = np.random.default_rng(seed)
    rows: list[list[str]] = []
    for species, (n, islands, mean, sd) in SPECIES.items():
        isl = np.repeat(list(islands), list(islands.values()))
        sex = np.where(np.arange(n) % 2 == 0, "male", "female")
        shift = np.where(sex == "male", 0.5, -0.5)  # males larger by about one sd
        z = rng.standard_normal((n, 4)) * 0.85 + shift[:, None]
        m = np.asarray(mean) + z * np.asarray(sd)
        year = 2007 + np.arange(n) % 3
        for i in range(n):
            rows.append([species, str(isl[i]), f"{m[i, 0]:.1f}", f"{m[i, 1]:.1f}",
                         f"{round(m[i, 2])}", f"{round(m[i, 3] / 25) * 25}", str(sex[i]),
                         str(year[i])])
    gone = [3, 271]  # every measurement and the sex missing (as rows 4 and 272 of the original)
    for i in gone:
        rows[i][2:7] = ["NA"] * 5
    for i in (8, 9, 10, 11, 47, 178, 218, 256, 268):  # the sex missing
        rows[i][6] = "NA"
    return rows


def write_penguins(path: str | Path, seed: int = 40) -> Path:
    """Write the penguins-like CSV to ``path``."""
    p = Path(path)
    lines = [",".join(COLUMNS)] + [",".join(r) for r in penguin_rows(seed)]
    p.write_text("\n".join(lines) + "\n")
    return p
