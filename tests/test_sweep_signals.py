"""Signals end a ``dualscope sweep --backend processes`` cleanly (issue 41).

Each test runs a small sweep in its own session (a subprocess), waits until the first rows
are written, sends the signal(s) and checks: the exit status and message, the time to
exit, that no process of the session (workers, forkserver, resource tracker) is left and
that the finished rows are kept in ``--out``. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil  # distributed (the test extra) requires it
import pytest

from explorer.sweep.table import load_table

#: The sweep: 16 one-point chains (one per seed), each about a second on 2 workers.
SWEEP = ["sweep", "wwsvm", "--dataset", "blobs", "--size", "n=3000", "--size", "d=50",
         "--size", "k=10", "--set", "C=1", "--set", "method=iterative",
         "--seeds", ",".join(map(str, range(16))), "--backend", "processes",
         "--workers", "2", "--quiet"]
#: Ctrl-C as a terminal delivers it (a background shell may have set SIGINT ignored).
LAUNCH = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
          "from explorer.cli import main; sys.exit(main(sys.argv[1:]))")


def _session(sid: int) -> list[int]:
    """Live (non-zombie) processes of session ``sid``."""
    out = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if os.getsid(p.pid) == sid and p.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (OSError, psutil.Error):
            pass
    return out


def _start(out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *SWEEP, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env=dict(os.environ))
    deadline = time.monotonic() + 180
    while not out.exists():  # the first rows are flushed
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended early: {proc.communicate()[1].decode()[-500:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("no row within 180 s")
        time.sleep(0.1)
    assert len(_session(proc.pid)) >= 4  # the sweep, forkserver, tracker, workers
    return proc


def _finish(proc: subprocess.Popen, within: float) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the sweep did not exit within {within} s")
    return proc.returncode, err.decode(), time.monotonic() - t0


def _no_process_left(sid: int) -> None:
    deadline = time.monotonic() + 10
    while _session(sid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _session(sid)
    if left:
        os.killpg(sid, signal.SIGKILL)
    assert not left, f"processes left running: {left}"


def _rows_kept(out: Path) -> int:
    found = load_table(out)
    assert not found.dropped
    assert found.rows and all(r["model"] == "wwsvm" for r in found.rows)
    return len(found.rows)


def test_ctrl_c_stops_the_workers_and_keeps_the_rows(tmp_path):
    out = tmp_path / "s.csv"
    proc = _start(out)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal sends it to the whole group
    code, err, secs = _finish(proc, within=30)
    assert code == 130 and err.strip().endswith("dualscope: interrupted"), err
    assert "Traceback" not in err
    _no_process_left(proc.pid)
    _rows_kept(out)


def test_a_second_ctrl_c_exits_at_once_with_the_rows_kept(tmp_path):
    out = tmp_path / "s.csv"
    proc = _start(out)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    code, err, secs = _finish(proc, within=15)
    assert code == 130 and "Traceback" not in err, err
    assert secs < 10
    _no_process_left(proc.pid)
    _rows_kept(out)
    assert not [p for p in tmp_path.iterdir() if p.name != "s.csv"]  # no temporary file


def test_sigterm_stops_workers_forkserver_and_resource_tracker(tmp_path):
    out = tmp_path / "s.csv"
    proc = _start(out)
    os.kill(proc.pid, signal.SIGTERM)  # the sweep's process only, as `kill PID` does
    code, err, secs = _finish(proc, within=30)
    assert code == 143 and err.strip().endswith("dualscope: terminated (SIGTERM)"), err
    _no_process_left(proc.pid)
    _rows_kept(out)
