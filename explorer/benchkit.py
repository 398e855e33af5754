"""Benchmark plumbing: timing, ratio tables, JSON.

Benchmarks report machine-independent ratios measured in one run (the
project's solver against cvxpy/Clarabel at the same objective, the paper's
method against its baseline). Tests never time anything; this module is only
used by ``dualscope bench``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BenchReport",
    "BenchTable",
    "best_of",
    "cpu_time_without_jit",
    "debian_path",
    "load_average",
    "loglog_slope",
    "machine_info",
    "rel_diff",
    "school_path",
    "school_problem",
    "shared_file",
    "time_to_target",
]


def rel_diff(a: float, b: float) -> float:
    """``|a - b| / max(1, |b|)``: the relative objective difference used everywhere."""
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


def loglog_slope(sizes: Sequence[float], times: Sequence[float]) -> float:
    """Fitted growth exponent: least-squares slope of ``log(time)`` against ``log(size)``."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.maximum(np.asarray(times, float), 1e-9))
    return float(np.polyfit(x, y, 1)[0]) if x.size >= 2 else float("nan")


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Run ``fn`` ``repeat`` times; return the best wall time and the last value."""
    best = np.inf
    value = None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return float(best), value


def cpu_time_without_jit(fn: Callable[[], Any]) -> tuple[float, Any, list[str]]:
    """CPU seconds (``time.process_time``) of ``fn()``, excluding numba compilation:
    when a kernel compiled (or loaded) inside the run, ``fn`` runs again and that run
    is timed. Returns ``(seconds, value, names of the functions compiled in the first
    run)`` so callers can say so."""
    from numba.core import event

    with event.install_recorder("numba:compile") as rec:
        t0 = time.process_time()
        value = fn()
        seconds = time.process_time() - t0
    compiled = sorted({getattr(getattr(ev.data.get("dispatcher"), "py_func", None),
                               "__name__", "?") for _, ev in rec.buffer if ev.is_start})
    if compiled:
        t0 = time.process_time()
        value = fn()
        seconds = time.process_time() - t0
    return float(seconds), value, compiled


def time_to_target(history, target_rel_gap: float | None = None,
                   target_ratio: float | None = None) -> tuple[float, int]:
    """Time and iteration at which a run's history first reached a target.

    ``target_rel_gap`` compares ``history.rel_gap``; ``target_ratio`` compares
    the gap divided by the first recorded gap. Returns ``(nan, -1)`` if never.
    """
    if target_rel_gap is not None:
        hit = np.nonzero(history.rel_gap <= target_rel_gap)[0]
    elif target_ratio is not None:
        g0 = history.gap[0] if history.gap[0] > 0 else 1.0
        hit = np.nonzero(history.gap / g0 <= target_ratio)[0]
    else:
        raise ValueError("give target_rel_gap or target_ratio")
    if hit.size == 0:
        return float("nan"), -1
    i = int(hit[0])
    return float(history.time[i]), int(history.iteration[i])


#: The folder of the project's real data sets next to the repository (``../shared/data``);
#: users give their own paths.
SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def shared_file(name: str, env: str) -> str | None:
    """A real data file: ``$env`` when set, else ``name`` in ``SHARED_DATA``;
    ``None`` when absent (the real-data tables are then skipped)."""
    value = os.environ.get(env)
    path = Path(value) if value else SHARED_DATA / name
    return str(path) if path.is_file() else None


def school_path() -> str | None:
    """MALSAR's ``school.mat``: ``$DUALSCOPE_SCHOOL`` or ``../shared/data``; ``None``
    when absent."""
    return shared_file("school.mat", "DUALSCOPE_SCHOOL")


def debian_path() -> str | None:
    """The Debian-sections train part (svmlight): ``$DUALSCOPE_DEBIAN_TRAIN`` or
    ``../shared/data``; ``None`` when absent."""
    return shared_file("debian_sections_train.svm.gz", "DUALSCOPE_DEBIAN_TRAIN")


def school_problem(model: str, path: Any, *, seed: int = 0) -> Any:
    """School as ``explorer.filebench`` reads it: 75 % of each school for training.

    The table is split by ``split_table(table, 0.25, seed)`` after the project's data
    reader; a model with binary labels (its file roles say ``binary``: MT-MKL) gets a
    score above the median of the training scores.

    Parameters
    ----------
    model : str
        A registry name.
    path : str, os.PathLike or explorer.datafiles.Table
        ``school.mat``, or its table already read.
    seed : int
        The split's seed.

    Returns
    -------
    Problem
        ``model``'s problem of the training rows, the held-out rows in its ``info``.
    """
    from dataclasses import replace

    from . import datafiles

    table = path if isinstance(path, datafiles.Table) else datafiles.read_table(path)
    train, test = datafiles.split_table(table, 0.25, seed=seed)
    if datafiles.roles(model).labels == "binary" and train.y is not None \
            and test.y is not None:
        med = float(np.median(train.y))
        train = replace(train, y=np.where(train.y > med, "high", "low"))
        test = replace(test, y=np.where(test.y > med, "high", "low"))
    return datafiles.problem_from_table(model, train, test)


def load_average() -> str:
    """The 1/5/15-minute load averages as text (for a table's notes)."""
    try:
        return "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "load average unavailable"


def machine_info() -> dict[str, Any]:
    """Where the numbers were measured."""
    import numba
    import scipy

    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
    }


def _fmt(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not np.isfinite(v):
            return "—"
        a = abs(v)
        if a == 0:
            return "0"
        if a >= 1e5 or a < 1e-3:
            return f"{v:.2e}"
        if a >= 100:
            return f"{v:.1f}"
        return f"{v:.3g}"
    return str(v)


@dataclass
class BenchTable:
    """One table of a benchmark report."""

    title: str
    columns: Sequence[str]
    rows: list[list[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *row: Any) -> None:
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values, table has {len(self.columns)} columns")
        self.rows.append(list(row))

    def to_markdown(self) -> str:
        cells = [[_fmt(v) for v in r] for r in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        line = "| " + " | ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True))
        sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
        out = [f"### {self.title}", "", line + " |", sep]
        for r in cells:
            out.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if self.notes:
            out.append("")
            out.extend(f"- {n}" for n in self.notes)
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        def plain(v):
            if isinstance(v, np.generic):
                return v.item()
            if isinstance(v, float) and not np.isfinite(v):
                return None
            return v

        return {
            "title": self.title,
            "columns": list(self.columns),
            "rows": [[plain(v) for v in r] for r in self.rows],
            "notes": list(self.notes),
        }


@dataclass
class BenchReport:
    """A model's benchmark: tables plus where they were measured."""

    model: str
    tables: list[BenchTable] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=machine_info)

    def to_markdown(self) -> str:
        head = f"## dualscope bench {self.model}\n\nmachine: " + ", ".join(
            f"{k}={v}" for k, v in self.machine.items()
        )
        return "\n\n".join([head, *(t.to_markdown() for t in self.tables)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "machine": self.machine,
            "tables": [t.to_dict() for t in self.tables],
        }

    def write_json(self, path: str) -> None:
        from solvers.fileio import write_atomic

        write_atomic(path, json.dumps(self.to_dict(), indent=2))
