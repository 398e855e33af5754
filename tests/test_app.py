"""The dashboard headless with Streamlit's AppTest: every page, a control change, errors."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pagekit as pk
import pytest
from streamlit.testing.v1 import AppTest

from explorer.home import pretty
from explorer.registry import entries
from explorer.ui import log_options

# the app's background kernel warm-up would run inside the test process
os.environ.setdefault("DUALSCOPE_WARMUP", "0")

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = pk.TIMEOUT
MODELS = [e.name for e in entries()]


def _badges(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown if "start]" in m.value)


def test_home_page_lists_every_model():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "duality-gap certificate" in text
    for e in entries():
        assert pretty(e.summary)[:40] in text
    latex = [x.value for x in at.latex]
    assert len(latex) >= 1 + len(MODELS)  # the certificate and every model's objective
    for x in latex:  # no environment cut in half (KaTeX would show red source)
        assert x.count("\\begin{") == x.count("\\end{"), x
    assert "<=" not in text and "^T" not in text  # summaries' ASCII math as symbols


def test_home_page_links_to_the_documentation_site_once_built(tmp_path, monkeypatch):
    from explorer import docs

    monkeypatch.setattr(docs, "BUILD", tmp_path / "html")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    assert "dualscope docs build" in " ".join(c.value for c in at.caption)
    assert not [b for b in at.button if b.key == "open_docs"]
    # built: a link to its index.html and a button that opens it
    (tmp_path / "html").mkdir()
    index = tmp_path / "html" / "index.html"
    index.write_text("<html></html>", encoding="utf-8")
    opened = []
    monkeypatch.setattr(docs, "open_site", lambda out: opened.append(Path(out)))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert f"]({index.as_uri()})" in text
    at.button(key="open_docs").click().run()
    assert not at.exception
    assert opened == [index.parent]


@pytest.mark.parametrize("name", MODELS)
def test_model_page_solves_and_reacts_to_a_slider(name):
    entry = next(e for e in entries() if e.name == name)
    at = pk.model_page(name)
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    m0 = pk.metrics(at)
    assert {"primal", "dual (lower bound)", "relative gap", "iterations"} <= set(m0)
    assert "cold start" in _badges(at)
    assert at.get("plotly_chart"), "no chart drawn"
    # the first log-scale parameter moves one notch: re-solve, warm-started
    p = next(p for p in entry.params if p.log)
    values = log_options(p.low, p.high, p.default)
    cur = values.index(min(values, key=lambda v: abs(v - at.select_slider(key=p.name).value)))
    new = values[cur - 1] if cur > 0 else values[cur + 1]
    at.select_slider(key=p.name).set_value(new).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.select_slider(key=p.name).value == new
    assert "warm start" in _badges(at)


def test_wwsvm_page_controls_comparison_reference_and_export():
    at = pk.model_page("wwsvm")
    at.run()
    before = pk.metrics(at)["primal"]
    at.select_slider(key="C").set_value(0.5).run()
    assert not at.exception and not at.error
    assert pk.metrics(at)["primal"] != before
    assert "warm start" in _badges(at)
    at.selectbox(key="method").set_value("iterative").run()
    assert "method **iterative**" in _badges(at)
    at.button(key="run_comparison").click().run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["method"]) == ["Walrus (exact block)", "iterative (Shark-style)"]
    assert table["converged"].all()
    at.button(key="run_reference").click().run()
    m = pk.metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-6
    assert at.get("download_button")


def test_wwsvm_reference_is_refused_above_the_size_limit():
    at = pk.model_page("wwsvm")
    at.run()
    at.selectbox(key="dataset").set_value("digits").run()
    at.slider(key="n").set_value(1797).run()
    assert not at.exception
    assert any("refused" in i.value for i in at.info)
    assert all(b.key != "run_reference" for b in at.button)


def test_errors_are_messages_and_the_last_good_result_stays():
    script = (
        "import streamlit as st\n"
        "from explorer.registry import get\n"
        "entry = get('wwsvm')\n"
        "if st.session_state.get('break_it'):\n"
        "    def bad(problem, **kw):\n"
        "        raise ValueError('C must lie in (0, inf), got -1')\n"
        "    object.__setattr__(entry, 'solve', bad)\n"
        "try:\n"
        "    entry.render_page()\n"
        "finally:\n"
        "    import explorer.models.wwsvm as m\n"
        "    object.__setattr__(entry, 'solve', m._solve)\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    good = pk.metrics(at)["primal"]
    at.session_state["break_it"] = True
    at.select_slider(key="C").set_value(0.5).run()  # a change that triggers a solve
    assert not at.exception
    assert any("C must lie in" in e.value for e in at.error)
    assert pk.metrics(at)["primal"] == good
    assert any("last successful run" in c.value for c in at.caption)


def test_a_rerun_without_changes_reuses_the_certified_result():
    at = pk.model_page("wwsvm")
    at.run()
    first = pk.metrics(at)
    at.button(key="run_comparison").click().run()  # a rerun that changes no control
    assert pk.metrics(at) == first  # same result object: same time, same iterations


def test_switching_dataset_starts_from_its_default_sizes():
    at = pk.model_page("wwsvm")
    at.run()
    at.slider(key="n").set_value(5000).run()  # valid for blobs, above digits' 1797
    at.selectbox(key="dataset").set_value("digits").run()
    assert not at.exception, at.exception
    assert at.slider(key="n").value == 600
    assert "digits" in " ".join(c.value for c in at.caption)


# ----------------------------------------------------------------------------- URL state


def test_bad_url_values_are_named_with_the_value_used_and_off_grid_values_kept():
    at = pk.model_page("wwsvm")
    at.query_params.update({"C": "0.3", "tol": "abc", "n": "100000", "dataset": "nonexistent",
                            "method": "fastest"})
    at.run()
    assert not at.exception, at.exception
    notes = " | ".join(w.value for w in at.warning)
    assert "**n=100000**" in notes and "**n = 5000**" in notes
    assert "**tol=abc** is not a number" in notes and "**tol = 1e-6**" in notes
    assert "**dataset=nonexistent**" in notes and "**dataset = blobs**" in notes
    assert "**method=fastest**" in notes and "**method = auto**" in notes  # the page's
    assert "C=" not in notes  # 0.3 is valid, off the 1-2-5 grid: kept, no message
    assert at.select_slider(key="C").value == 0.3
    assert at.slider(key="n").value == 5000
    assert "C = 0.3" not in notes


@pytest.mark.parametrize("spread", ["1", "2"])
def test_wwsvm_page_certifies_overlapping_classes_at_c_100(spread):
    # the page's default method (auto: the primal interior-point method at this d*k)
    at = pk.model_page("wwsvm")
    at.query_params.update({"C": "100", "spread": spread})
    at.run()
    pk.ok(at)
    m = pk.metrics(at)
    assert float(m["relative gap"]) <= 1e-6, m
    assert "NOT converged" not in " ".join(x.value for x in at.markdown)


def test_a_url_value_the_solver_rejects_is_named():
    at = pk.model_page("wwsvm")
    at.query_params.update({"C": "-1"})
    at.run()
    assert not at.exception, at.exception
    notes = " | ".join(w.value for w in at.warning)
    assert "**C=-1**" in notes and "**C = 1**" in notes
    assert at.select_slider(key="C").value == 1.0


# ----------------------------------------------------------------------------- kit pieces


def test_incompatible_warm_start_solves_cold_and_other_errors_propagate():
    import numpy as np

    from explorer.registry import get
    from explorer.ui import Controls
    from explorer.ui.solve import solve_with_warm_start
    from explorer.ui.state import LastRun, PageState
    from solvers.base import IncompatibleWarmStart
    from solvers.validation import check_init

    with pytest.raises(IncompatibleWarmStart, match=r"init\.alpha has shape"):
        check_init(type("R", (), {"alpha": np.zeros((2, 2))})(), object, alpha=(3, 2))

    entry = get("wwsvm")
    calls = []

    def fake_solve(problem, *, init=None, **kw):
        calls.append(init)
        if init is not None:
            raise IncompatibleWarmStart("init does not match this problem")
        return "cold result"

    c = Controls("blobs", {"n": 20}, 0, {"C": 1.0}, 1e-6, 10)
    state = PageState(last=LastRun(c.problem_key(entry), c, "old result", None, False))
    import explorer.ui.solve as mod

    orig = mod.page_state
    mod.page_state = lambda name: state
    try:
        fake = type("E", (), {"name": "wwsvm", "solve": staticmethod(fake_solve)})()
        res, warm = solve_with_warm_start(fake, None, c)
        assert (res, warm) == ("cold result", False) and calls == ["old result", None]

        def broken(problem, *, init=None, **kw):
            raise ValueError("C must lie in (0, inf)")  # not a warm-start problem: shown

        fake.solve = broken
        with pytest.raises(ValueError, match="C must lie"):
            solve_with_warm_start(fake, None, c)
    finally:
        mod.page_state = orig


def test_problem_cache_is_bounded_by_memory():
    import numpy as np

    from explorer.registry import Problem
    from explorer.ui import ProblemCache

    cache = ProblemCache(max_bytes=3 * 8_000)
    made = []

    def make(i):
        made.append(i)
        return Problem({"X": np.zeros(1000)}, f"p{i}", info={"extra": [np.zeros(0)]})

    for i in range(5):
        cache.get(("k", i), lambda i=i: make(i))
    assert len(cache) == 3 and cache.total == 24_000
    cache.get(("k", 4), lambda: make(99))  # a hit: not rebuilt
    assert 99 not in made
    big = ProblemCache(max_bytes=10)
    big.get(("big",), lambda: make(7))  # the newest stays even above the bound
    assert len(big) == 1


def test_certificate_digits_show_the_difference():
    from explorer.ui import certificate_digits

    p, d = 34.39912345678, 34.39912345001
    k = certificate_digits(p, d)
    assert f"{p:.{k}g}" != f"{d:.{k}g}"
    assert certificate_digits(1.0, 1.0) == 8


# ----------------------------------------------------------------------------- issue 14


def test_caso_h_is_limited_by_d_and_explained():
    at = pk.model_page("caso")
    at.run()
    at.slider(key="d").set_value(2).run()
    assert not at.exception, at.exception
    h = at.slider(key="h")
    assert h.max == 2.0 and h.value <= 2.0
    assert any("h is the trace of M" in c.value for c in at.sidebar.caption)
    assert not at.error, [e.value for e in at.error]


def test_mtmkl_flips_are_limited_by_d():
    at = pk.model_page("mtmkl")
    at.run()
    at.slider(key="d").set_value(3).run()
    assert not at.exception, at.exception
    assert at.slider(key="flips").max == 3
    assert not at.error, [e.value for e in at.error]


def test_heavy_sizes_ask_for_confirmation_and_keep_the_last_result():
    at = pk.model_page("mtmkl")
    at.run()
    good = pk.metrics(at)["primal"]
    at.slider(key="d").set_value(1000)
    at.slider(key="depth").set_value(7).run()  # one rerun: ~4 GB by the cost model
    assert not at.exception, at.exception
    assert any("solve anyway" in w.value and "GB of memory" in w.value for w in at.warning)
    assert any(b.key == "confirm_cost" for b in at.button)
    assert pk.metrics(at)["primal"] == good  # the last good result stays on screen
    assert any("last successful run" in c.value for c in at.caption)


def test_the_page_guard_is_the_datasets_cost_model():
    from explorer.limits import PAGE
    from explorer.registry import get
    from explorer.ui.guards import cost_guard

    # every page's guard asks exactly when Dataset.estimate is over the page's budget
    for name, sizes in (("wwsvm", {"n": 5000, "k": 10, "d": 100}),
                        ("mtmkl", {"depth": 7, "d": 1000}), ("caso", {})):
        entry = get(name)
        c = SimpleNamespace(dataset=entry.default_dataset, sizes=sizes)
        mem, secs = entry.datasets[c.dataset].estimate(sizes)
        msg = cost_guard(entry)(c)
        assert (msg is not None) == (mem > PAGE.memory or secs > PAGE.seconds), (name, msg)
    # WW-SVM at n=5000, k=10, d=100 (a second of CPU) solves without asking
    at = pk.model_page("wwsvm")
    at.run()
    at.slider(key="d").set_value(100).run()
    at.slider(key="k").set_value(10).run()
    pk.ok(at)
    assert not any(b.key == "confirm_cost" for b in at.button)
    # a dataset without a time model falls back to the product of its size controls
    from explorer.registry import Dataset

    toy = Dataset("toy", "toy", lambda seed=0, **s: None, sizes={"n": (10, 1, 10**6)})
    fake = SimpleNamespace(datasets={"toy": toy})
    msg = cost_guard(fake)(SimpleNamespace(dataset="toy", sizes={"n": 2000}))
    assert msg is not None and "200× the default problem" in msg
    assert cost_guard(fake)(SimpleNamespace(dataset="toy", sizes={"n": 500})) is None


def test_a_failed_dataset_build_keeps_the_last_result():
    script = (
        "import streamlit as st\n"
        "from explorer.registry import get\n"
        "import explorer.ui.problems as pr\n"
        "entry = get('wwsvm')\n"
        "if st.session_state.get('break_it'):\n"
        "    class Broken:\n"
        "        def get(self, key, make):\n"
        "            raise ValueError('informative must be at most d')\n"
        "    pr._CACHE, saved = Broken(), pr._CACHE\n"
        "    try:\n"
        "        entry.render_page()\n"
        "    finally:\n"
        "        pr._CACHE = saved\n"
        "else:\n"
        "    entry.render_page()\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    good = pk.metrics(at)["primal"]
    at.session_state["break_it"] = True
    at.select_slider(key="C").set_value(0.5).run()
    assert not at.exception, at.exception
    assert any("build the dataset" in e.value and "informative" in e.value for e in at.error)
    assert pk.metrics(at)["primal"] == good
    assert any("last successful run" in c.value for c in at.caption)


def test_sweep_tab_appears_when_the_sweep_panel_exists():
    at = pk.model_page("wwsvm")
    at.run()
    assert "Sweep" not in [t.label for t in at.tabs] or _has_sweep_module()
    script = (
        "import importlib.machinery, sys, types, streamlit as st\n"
        "mod = types.ModuleType('explorer.sweep_panel')\n"
        "mod.__spec__ = importlib.machinery.ModuleSpec('explorer.sweep_panel', None)\n"
        "def render(entry, dataset, sizes, seed, params):\n"
        "    st.markdown(f'sweep for {entry.name} on {dataset} C={params[\"C\"]}')\n"
        "mod.render = render\n"
        "saved = sys.modules.get('explorer.sweep_panel')\n"
        "sys.modules['explorer.sweep_panel'] = mod\n"
        "try:\n"
        "    from explorer.registry import get\n"
        "    get('wwsvm').render_page()\n"
        "finally:\n"
        "    if saved is None:\n"
        "        sys.modules.pop('explorer.sweep_panel', None)\n"
        "    else:\n"
        "        sys.modules['explorer.sweep_panel'] = saved\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    assert "Sweep" in [t.label for t in at.tabs]
    assert any("sweep for wwsvm on blobs C=1" in m.value for m in at.markdown)


def _has_sweep_module() -> bool:
    import importlib.util

    return importlib.util.find_spec("explorer.sweep_panel") is not None


def test_convergence_figure_one_axis_or_both_and_decimated():
    from types import SimpleNamespace

    import numpy as np

    from explorer.figures import MAX_POINTS, convergence_figure

    n = 5000
    h = SimpleNamespace(iteration=np.arange(1, n + 1), time=np.linspace(0.001, 2.0, n),
                        primal=1 + 1 / np.arange(1, n + 1), dual=1 - 1 / np.arange(1, n + 1),
                        gap=2 / np.arange(1, n + 1))
    import json

    one = json.loads(convergence_figure(h, x="time").to_json())
    titles = [a["text"] for a in one["layout"]["annotations"]]
    assert titles == ["objective vs time", "duality gap vs time"]
    assert all(pk.array(t["x"]).size <= MAX_POINTS for t in one["data"])
    xs = pk.array(one["data"][0]["x"])
    assert xs[0] == pytest.approx(0.001) and xs[-1] == pytest.approx(2.0)  # first, last rows
    both = json.loads(convergence_figure(h, x="both").to_json())
    assert len(both["layout"]["annotations"]) == 4
    with pytest.raises(ValueError, match="x must be"):
        convergence_figure(h, x="epochs")


def test_compile_time_is_shown_apart_from_the_solve_time():
    def page():
        from types import SimpleNamespace

        from explorer.ui import metrics_row

        res = SimpleNamespace(primal=34.399123456, dual=34.399120001, gap=3.455e-6,
                              rel_gap=1.0e-7, n_iter=12, time=0.0021, compile_time=2.13,
                              converged=True, stop_reason="converged", method="bcd")
        metrics_row(res, warm=False)

    at = AppTest.from_function(page, default_timeout=TIMEOUT)
    at.run()
    m = pk.metrics(at)
    assert m["time"] == "2.1 ms"
    assert m["primal"] != m["dual (lower bound)"] and m["primal"].startswith("34.399123")
    assert "(+2.1 s one-time compilation, not counted)" in _badges(at)


def test_a_run_stopped_at_max_iter_continues_from_where_it_stopped():
    at = pk.model_page("caso")
    at.run()
    at.number_input(key="max_iter").set_value(2)
    at.number_input(key="data_seed").set_value(1).run()  # a new problem: a cold start
    pk.ok(at)
    assert any("not converged" in md.value for md in at.markdown)
    before = float(pk.metrics(at)["relative gap"])
    assert any(b.key == "continue_solve" for b in at.button)
    at.button(key="continue_solve").click().run()
    pk.ok(at)
    after = float(pk.metrics(at)["relative gap"])
    assert after < before  # two more iterations from the stopped iterate
    assert any("warm start" in md.value for md in at.markdown)


def test_exact_zero_gaps_are_drawn_and_labelled_below_machine_precision():
    import numpy as np

    from explorer.figures import BELOW_PRECISION, comparison_figure, convergence_figure
    from explorer.numfmt import gap_text

    h = SimpleNamespace(iteration=np.arange(1, 5), time=np.linspace(0.1, 0.4, 4),
                        primal=np.array([3.0, 2.0, 2.0, 2.0]),
                        dual=np.array([1.0, 2.0 - 1e-9, 2.0, 2.0]),
                        gap=np.array([2.0, 1e-9, 0.0, -1e-17]))
    fig = convergence_figure(h, x="iteration")
    gap = next(t for t in fig.data if t.name == "duality gap")
    assert np.all(np.isfinite(np.asarray(gap.y, dtype=float)))  # nothing vanishes
    zero = next(t for t in fig.data if t.name == BELOW_PRECISION)
    assert list(zero.x) == [3, 4]
    assert np.allclose(zero.y, np.finfo(float).eps * 3.0)  # the objective's resolution
    assert fig.layout.yaxis.title.text == "objective"  # every axis titled
    assert fig.layout.yaxis2.title.text == "duality gap"
    cmp = comparison_figure({"a": h, "b": h}, x="time")
    assert sum(t.name == BELOW_PRECISION for t in cmp.data) == 2
    assert sum(bool(t.showlegend is not False) for t in cmp.data
               if t.name == BELOW_PRECISION) == 1
    assert gap_text(0.0) == gap_text(-1e-18) == "below machine precision"
    assert gap_text(1e-3) == "1.000e-03" and gap_text(2e-5, ".2e") == "2.00e-05"
    assert gap_text(0.0, short=True) == "0"  # a metric box: the note says why
