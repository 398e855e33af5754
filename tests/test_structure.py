"""The package's structure: no import circles, one data source value."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in ("solvers", "explorer"):
        for p in (ROOT / pkg).rglob("*.py"):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path], name: str) -> set[str]:
    """The project's modules that module ``name`` imports (anywhere in it, lazily too).

    ``from pkg import sub`` counts as an import of ``pkg.sub`` (and of ``pkg`` only when a
    name taken from it is not a submodule).
    """
    out: set[str] = set()
    path = mods[name]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in mods}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = {f"{target}.{a.name}" for a in node.names}
            found = subs & set(mods)
            out |= found
            if len(found) < len(subs) and target in mods:
                out.add(target)
    out.discard(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_finder_reads_relative_and_lazy_imports(tmp_path):
    mods = _modules()
    assert "explorer.limits" in _imports(mods, "explorer.cli")
    assert "explorer.cliargs" in _imports(mods, "explorer.sweep.cli")  # from ..cliargs import
    assert "explorer.datafiles" in _imports(mods, "explorer.cli")  # imported inside a function


def test_no_import_circles():
    """solvers/ and explorer/ import each other's modules without a circle."""
    mods = _modules()
    cycles = _cycles({m: _imports(mods, m) for m in mods})
    assert cycles == []


def test_a_data_source_round_trips_through_its_key(tmp_path):
    from explorer import datafiles
    from explorer.datasource import DataSource

    rng = np.random.default_rng(0)
    f = tmp_path / "d.csv"
    rows = "\n".join(f"{a:.3f},{b:.3f},{c}" for a, b, c in zip(
        rng.normal(size=40), rng.normal(size=40), rng.integers(0, 3, 40), strict=True))
    f.write_text("a,b,y\n" + rows + "\n")
    src = DataSource.from_file("wwsvm", f, label="y", test_size=0.25)
    assert src.is_file and src.key.startswith(datafiles.FILE_PREFIX)
    again = DataSource.parse("wwsvm", src.key)
    assert again == src and again.key == src.key
    p = src.problem()
    assert p.data["X"].shape == (30, 2) and p.info["X_test"].shape == (10, 2)
    built = DataSource.parse("wwsvm", "blobs", sizes={"n": 50, "k": 3, "d": 4}, seed=2)
    assert not built.is_file and built.key == "blobs"
    a, b = built.problem(), built.problem()
    np.testing.assert_array_equal(a.data["X"], b.data["X"])
    assert a.data["X"].shape == (50, 4)


def test_a_data_source_names_what_is_wrong():
    from explorer.datasource import DataSource

    with pytest.raises(ValueError, match="available"):
        DataSource.parse("wwsvm", "nope")
    with pytest.raises(ValueError, match="not to a data file"):
        DataSource.parse("wwsvm", "file:/tmp/x.csv", sizes={"n": 3})
    with pytest.raises(ValueError, match="unknown file option"):
        DataSource.parse("wwsvm", "file:/tmp/x.csv?colour=red")


def test_any_backend_object_runs_a_sweep_and_the_table_names_the_backends():
    """A sweep runs on any object of the Backend protocol; the table drives the choices."""
    from explorer import sweep

    class Recording:
        name = "recording"
        workers = 1

        def __init__(self) -> None:
            self.chains = 0
            self.closed = False

        def imap(self, chains):
            for chain in chains:
                self.chains += 1
                yield list(sweep.iter_chain(chain))

        def close(self) -> None:
            self.closed = True

    b = Recording()
    assert isinstance(b, sweep.Backend)
    spec = sweep.SweepSpec(model="wwsvm", dataset="blobs", grid={"C": [0.1, 1.0]},
                           sizes={"n": 40, "k": 3, "d": 4}, seeds=(0, 1))
    table = sweep.run(spec, backend=b)
    assert b.chains == 2 and len(table) == 4 and not table.errors()
    serial = sweep.run(spec, backend="serial")
    key = ["data_seed", "C", "primal", "dual"]
    assert sorted(tuple(r[k] for k in key) for r in table) == sorted(
        tuple(r[k] for k in key) for r in serial)
    assert sweep.BACKENDS == ("auto", *sweep.TABLE)
    names = [k.name for k in sweep.available()]
    assert {"processes", "serial"} <= set(names) and set(names) <= set(sweep.TABLE)
    assert isinstance(sweep.make_backend("serial"), sweep.Backend)


def _model_literals(root: Path = ROOT) -> set[tuple[str, str]]:
    """``(file, model)`` for every string constant (docstrings aside) that names a model
    (``"wwsvm"``, ``"solvers.wwsvm"``, ``"explorer.models.wwsvm.x"``) outside the model's
    own files (``solvers/<m>.py``, ``solvers/_<m>_kernels.py``, ``solvers/<m>/``,
    ``solvers/reference/<m>.py``, ``explorer/models/<m>/``) and the registry."""
    from explorer.registry import entries

    models = {e.name for e in entries()}
    found = set()
    for path in sorted([*root.glob("solvers/**/*.py"), *root.glob("explorer/**/*.py")]):
        rel = path.relative_to(root)
        if rel.as_posix() == "explorer/registry.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                  ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr)
                and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(
                    node) in docs:
                continue
            for m in models:
                v = node.value
                if not (v == m or v.startswith((f"{m}.", f"solvers.{m}",
                                                f"explorer.models.{m}"))):
                    continue
                parts = rel.parts
                own = (parts[:2] == ("explorer", "models") and parts[2] == m) or (
                    parts[0] == "solvers" and (
                        parts[1] in (f"{m}.py", f"_{m}_kernels.py", m)
                        or parts[1:] == ("reference", f"{m}.py")))
                if not own:
                    found.add((rel.as_posix(), m))
    return found


def test_the_name_finder_finds_a_name_outside_the_models_files(tmp_path):
    files = {"explorer/bench.py": 'NAME = "caso"\n',
             "explorer/doc.py": '"""Benchmarks caso."""\n',
             "explorer/models/caso/x.py": 'NAME = "caso"\n',
             "explorer/registry.py": 'NAME = "caso"\n',
             "solvers/_caso_kernels.py": 'FAMILY = "caso"\n',
             "solvers/load.py": 'M = "solvers.caso"\n'}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert _model_literals(tmp_path) == {("explorer/bench.py", "caso"),
                                         ("solvers/load.py", "caso")}


def test_no_model_is_named_outside_its_own_files():
    assert _model_literals() == set(), "name the model through its registry entry"
