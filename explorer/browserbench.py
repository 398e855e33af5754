"""Browser benchmark of the dashboard: ``python -m explorer.browserbench``.

Starts ``streamlit run`` on the app, drives a headless Chromium (playwright with the
system browser) and reports per model page:

- ``first visit``: from navigation to the page being idle with its metrics drawn
  (a fresh browser page; kernels loaded from numba's cache or compiled);
- ``slider move``: from one key press on the page's first log-scale slider to the page
  being idle again and painted (input to idle);
- ``server``: the server-side part of that rerun (script running → not running), wall
  and the server process's CPU seconds; the browser's CPU seconds (Chromium and its
  renderers) for the same interval. CPU seconds do not grow with the load of a shared
  machine; the 1-minute load average is printed beside the wall times.

Idle means ``[data-testid='stApp']`` has ``data-test-script-state='notRunning'`` after
the rerun started, followed by two animation frames (the charts are painted).
This is a measurement tool, never a test: it prints a table (and ``--json PATH``).

Options: ``--models wwsvm caso``, ``--moves 3`` (slider moves averaged), ``--same-tab``
(open the app once, then reach each page from the sidebar: a first visit without the
frontend's start-up in a new tab),
``--cold`` (a fresh, empty numba cache directory for the server: the compile-on-first-
visit case), ``--no-warmup`` (the server does not warm kernels in the background).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM_ARGS", "find_chromium", "install_hint", "main", "serve"]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def install_hint() -> str:
    """One line telling a user how to get a Chromium for the browser test and bench."""
    return ("a Chromium is needed: `sudo apt-get install -y chromium` (Debian) or "
            "`python -m playwright install --with-deps chromium` (Ubuntu/other), "
            "or set DUALSCOPE_CHROMIUM=/path/to/chromium")


def find_chromium() -> str | None:
    """The Chromium to drive: ``$DUALSCOPE_CHROMIUM``, a system chromium, or None
    (then playwright's own downloaded browser is used if it exists)."""
    env = os.environ.get("DUALSCOPE_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def launch(pw: Any) -> Any:
    """A headless Chromium (system browser first, then playwright's own)."""
    from playwright.sync_api import Error as PlaywrightError

    exe = find_chromium()
    try:
        return pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
    except PlaywrightError as exc:  # no browser at all: one clear line
        raise RuntimeError(install_hint()) from exc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerURL(str):
    """The server's base URL, with the server's process id (for CPU accounting)."""

    pid: int = 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def browser_cpu_seconds(exclude: int = 0) -> dict[int, float]:
    """CPU seconds per live descendant of this process (the browser, its renderers and the
    playwright driver), the server ``exclude`` and its children left out (Linux ``/proc``).

    Subtract two readings with :func:`cpu_delta` (processes that exited in between are
    left out rather than counted negative)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    me, total = os.getpid(), {}
    for pid in parent:
        p, inside = pid, False
        while p and p in parent:
            if p == exclude:
                break
            if parent[p] == me:
                inside = True
                break
            p = parent[p]
        if inside:
            total[pid] = cpu_seconds(pid)
    return total


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two :func:`browser_cpu_seconds` readings."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


@contextmanager
def serve(env: dict[str, str] | None = None, timeout: float = 120.0):
    """The dashboard as ``dualscope app`` starts it (``python -m explorer.serve``) on a
    free port; yields the base URL."""
    root = Path(__file__).resolve().parents[1]
    port = _free_port()
    proc = subprocess.Popen(  # what `dualscope app` runs
        [sys.executable, "-m", "explorer.serve", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=root, env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = ServerURL(f"http://127.0.0.1:{port}")
    url.pid = proc.pid
    deadline = time.time() + timeout
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("streamlit did not start:\n" +
                                       (proc.stdout.read() if proc.stdout else "")) from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# A MutationObserver records when the script state flips (performance.now() times).
_OBSERVE = """() => {
  window.__ds = [];
  const app = document.querySelector("[data-testid='stApp']");
  const rec = () => window.__ds.push([app.getAttribute('data-test-script-state'),
                                      performance.now()]);
  new MutationObserver(rec).observe(app, {attributes: true,
                                          attributeFilter: ['data-test-script-state']});
  return performance.now();
}"""

_IDLE_AFTER = """(t0) => {
  const ev = window.__ds || [];
  const i = ev.findIndex(e => e[1] >= t0 && e[0] === 'running');
  if (i < 0) return false;
  const j = ev.findIndex((e, k) => k > i && e[0] === 'notRunning');
  return j >= 0;
}"""

_TIMES_AFTER = """async (t0) => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const ev = window.__ds;
  const i = ev.findIndex(e => e[1] >= t0 && e[0] === 'running');
  const j = ev.findIndex((e, k) => k > i && e[0] === 'notRunning');
  return [ev[i][1], ev[j][1], performance.now()];
}"""


def _idle(page: Any, timeout: float = 180_000) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']",
                           timeout=timeout)


def _slider(page: Any, entry: Any) -> tuple[str, Any] | None:
    p = next((p for p in entry.params if p.log), None)
    if p is None:
        return None
    return p.name, page.locator(f"[role='group'][aria-label='{p.name}'] "
                                "input[type='range']").first


def bench_page(browser: Any, url: str, entry: Any, moves: int = 3,
               tab: Any = None) -> dict[str, Any]:
    """One page: first visit (a fresh tab, or ``tab``: a click in its sidebar) and moves."""
    page = tab or browser.new_page(viewport={"width": 1280, "height": 900})
    pid = getattr(url, "pid", 0)
    c_first = cpu_seconds(pid)
    b_first = browser_cpu_seconds(exclude=pid)
    t0 = time.perf_counter()
    if tab is None:
        page.goto(f"{url}/{entry.name}")
    else:  # in-app navigation: the frontend is already loaded
        t_obs = page.evaluate(_OBSERVE)
        page.locator(f"[data-testid='stSidebarNavLink'][href$='/{entry.name}']").click()
        page.wait_for_function(_IDLE_AFTER, arg=t_obs, timeout=300_000)
    page.wait_for_selector("[data-testid='stMetric']", timeout=300_000)
    _idle(page)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(r)))")
    first = time.perf_counter() - t0
    row: dict[str, Any] = {"page": entry.name, "first_visit_s": first,
                           "first_visit_server_cpu_s": cpu_seconds(pid) - c_first,
                           "first_visit_browser_cpu_s": cpu_delta(b_first,
                                                                  browser_cpu_seconds(pid)),
                           "charts": page.locator(".js-plotly-plot").count()}
    found = _slider(page, entry)
    if found is None:
        if tab is None:
            page.close()
        return row
    name, thumb = found
    idle, server, cpu = [], [], []
    bcpu = []
    for k in range(moves):
        c0 = cpu_seconds(pid)
        b0 = browser_cpu_seconds(exclude=pid)
        t_obs = page.evaluate(_OBSERVE)
        thumb.focus()
        t_press = page.evaluate("() => performance.now()")
        thumb.press("ArrowLeft" if k % 2 == 0 else "ArrowRight")
        page.wait_for_function(_IDLE_AFTER, arg=max(t_obs, t_press - 1), timeout=300_000)
        start, end, painted = page.evaluate(_TIMES_AFTER, max(t_obs, t_press - 1))
        idle.append((painted - t_press) / 1000)
        server.append((end - start) / 1000)
        cpu.append(cpu_seconds(pid) - c0)
        bcpu.append(cpu_delta(b0, browser_cpu_seconds(exclude=pid)))
    row.update({"slider": name, "slider_move_s": sum(idle) / len(idle),
                "slider_move_max_s": max(idle), "server_rerun_s": sum(server) / len(server),
                "server_cpu_s": sum(cpu) / len(cpu),
                "browser_cpu_s": sum(bcpu) / len(bcpu), "moves": moves,
                "load_avg_1min": os.getloadavg()[0]})
    if tab is None:
        page.close()
    return row


def run(models: list[str] | None = None, moves: int = 3, cold: bool = False,
        warmup: bool = True, same_tab: bool = False) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    from .registry import entries

    env: dict[str, str] = {}
    tmp = None
    if cold:
        tmp = tempfile.mkdtemp(prefix="dualscope-numba-")
        env["NUMBA_CACHE_DIR"] = tmp
    if not warmup:
        env["DUALSCOPE_WARMUP"] = "0"
    chosen = [e for e in entries() if models is None or e.name in models]
    rows = []
    try:
        with serve(env) as url, sync_playwright() as pw:
            browser = launch(pw)
            try:
                tab = None
                if same_tab:  # open the app on its home page once, then navigate inside it
                    tab = browser.new_page(viewport={"width": 1280, "height": 900})
                    t0 = time.perf_counter()
                    tab.goto(url)
                    tab.wait_for_selector("[data-testid='stSidebarNavLink']", timeout=300_000)
                    tab.wait_for_selector(".katex", timeout=300_000)
                    _idle(tab)
                    rows.append({"page": "home", "first_visit_s": time.perf_counter() - t0,
                                 "first_visit_server_cpu_s": float("nan"),
                                 "first_visit_browser_cpu_s": float("nan")})
                    print(_fmt_row(rows[-1]), flush=True)
                for entry in chosen:
                    rows.append(bench_page(browser, url, entry, moves=moves, tab=tab))
                    print(_fmt_row(rows[-1]), flush=True)
            finally:
                browser.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _fmt_row(r: dict[str, Any]) -> str:
    move = (f"{r['slider_move_s']:6.2f} s (max {r['slider_move_max_s']:.2f}, server "
            f"{r['server_rerun_s']:.2f} s wall / {r['server_cpu_s']:.2f} s CPU, browser "
            f"{r['browser_cpu_s']:.2f} s CPU, load "
            f"{r['load_avg_1min']:.1f})" if "slider_move_s" in r else "   n/a")
    return (f"{r['page']:<18} first visit {r['first_visit_s']:6.2f} s "
            f"(CPU: server {r['first_visit_server_cpu_s']:.2f} s, browser "
            f"{r['first_visit_browser_cpu_s']:.2f} s)   slider move {move}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explorer.browserbench",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--moves", type=int, default=3)
    ap.add_argument("--cold", action="store_true",
                    help="fresh numba cache directory (compile on first visit)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no background kernel warm-up in the server")
    ap.add_argument("--same-tab", action="store_true",
                    help="open the app once and visit the pages from its sidebar "
                         "(first visits without the frontend's start-up)")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    try:
        rows = run(args.models, args.moves, cold=args.cold, warmup=not args.no_warmup,
                   same_tab=args.same_tab)
    except RuntimeError as exc:
        print(f"browserbench: {exc}", file=sys.stderr)
        return 2
    if args.json:
        from solvers.fileio import write_atomic

        write_atomic(args.json, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
