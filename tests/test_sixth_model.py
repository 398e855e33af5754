"""A sixth model from ``CONTRIBUTING.md``'s checklist alone runs everywhere.

``tests/sixth_model/`` holds a toy ridge regression written the documented way (a solver
module with ``PARAMS``, ``solve``, the objectives and its ``SAVED_FORM``; a cvxpy
reference; a registry entry with data, cost, bench and page). It is placed beside the
project's models by appending its folders to the packages' search paths in a fresh
process (``tests/sixth_model/plugin.py``); the contract suite, save/load/predict and the
CLI then run on it without any change to ``solvers/`` or ``explorer/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOY = Path(__file__).resolve().parent / "sixth_model"


def _env(tmp_path: Path) -> dict[str, str]:
    where = tmp_path / "toy"
    shutil.copytree(TOY, where)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(where), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run(env: dict[str, str], code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=600)


def test_the_contract_suite_passes_on_a_sixth_model(tmp_path):
    env = _env(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "plugin", "-p", "no:cacheprovider",
         str(ROOT / "tests" / "test_contract.py"), "-k", "ridge_toy"],
        env=env, cwd=ROOT, text=True, capture_output=True, timeout=900)
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    # every contract test ran on it: bad values of each parameter, callback, max_iter,
    # warm start, cvxpy bracket, JSON round trip, recorded parameters
    passed = int(out.stdout.rsplit(" passed", 1)[0].split()[-1])
    assert passed >= 10 and " failed" not in out.stdout, tail


def test_a_sixth_model_saves_predicts_and_runs_from_the_cli(tmp_path):
    env = _env(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.01 * rng.normal(size=60)
    csv = tmp_path / "toy.csv"
    csv.write_text("a,b,c,target\n" + "\n".join(
        ",".join(f"{v:.6f}" for v in (*x, t)) for x, t in zip(X, y, strict=True)) + "\n")
    cli = ("import sys, plugin; plugin.extend(); from explorer.cli import main; "
           "sys.exit(main(sys.argv[1:]))")

    def dualscope(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", cli, *argv], env=env, cwd=tmp_path,
                              text=True, capture_output=True, timeout=600)

    listed = dualscope("list")
    assert listed.returncode == 0 and "ridge_toy" in listed.stdout, listed.stderr
    built_in = dualscope("solve", "ridge_toy", "--dataset", "synthetic", "--size", "n=30",
                         "--quiet")
    assert built_in.returncode == 0, built_in.stderr
    fit = dualscope("solve", "ridge_toy", "--data", str(csv), "--label", "target",
                    "--test-size", "0.25", "--save", "m.npz", "--quiet")
    assert fit.returncode == 0, fit.stderr
    pred = dualscope("predict", "--model", "m.npz", "--data", str(csv), "--out", "p.csv")
    assert pred.returncode == 0, pred.stderr
    check = _run(env, (
        "import numpy as np, plugin; plugin.extend()\n"
        "from solvers.saved import load_model\n"
        "sm = load_model('m.npz')\n"
        "X = np.loadtxt('toy.csv', delimiter=',', skiprows=1)[:, :3]\n"
        "p = np.loadtxt('p.csv', delimiter=',', skiprows=1)\n"
        "assert sm.model == 'ridge_toy' and sm.n_features == 3 and not sm.needs_tasks\n"
        "np.testing.assert_allclose(p, X @ sm.arrays['w'], rtol=1e-9, atol=1e-9)\n"
        "np.testing.assert_allclose(sm.arrays['w'], [1.0, -2.0, 0.5], atol=0.1)  # ridge shrinks\n"
        "print('ok', sm.certificate['converged'])\n"), tmp_path)
    assert check.returncode == 0 and "ok True" in check.stdout, check.stderr
