"""The documentation site: built with warnings as errors, complete, and offline.

The site is built once per session (``explorer.docs.build``: ``sphinx-build -W``, the
notebooks executed with ``DUALSCOPE_NOTEBOOK_SMALL=1``) into a temporary folder; its
notebook runs go to the session's fresh execution cache, which
``tests/test_notebooks.py`` shares (``notebook_cache`` in ``conftest.py``). Deselect with
``-m "not docs"``. The browser test (also marked ``browser``) opens the built pages in
a headless Chromium that may reach nothing but the site's own files.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import types
from pathlib import Path

import pytest
from browserkit import chromium
from filelock import FileLock

import solvers
from explorer import cli, docs
from explorer.docs_sphinx import MATHJAX_LEFT_OUT, OWN_PACKAGES, own_unresolved

pytestmark = pytest.mark.docs

#: API page (under api/) of each documented module.
API_PAGES = {
    "solvers": "solvers", "solvers.base": "base", "solvers.wwsvm": "wwsvm",
    "solvers.caso": "caso", "solvers.robust_mtl": "robust_mtl",
    "solvers.triplet_screening": "triplet_screening", "solvers.mtmkl": "mtmkl",
    "solvers.estimators": "estimators", "solvers.saved": "saved",
    "explorer.registry": "registry", "explorer.datafiles": "datafiles",
    "explorer.sweep": "sweep", "explorer.docs": "docs", "solvers.reference": "reference",
    "explorer.datasource": "datasource", "solvers.scoring": "scoring",
    "solvers.preprocess": "scoring", "explorer.readers": "readers",
}
MODELS = ("wwsvm", "caso", "robust_mtl", "triplet_screening", "mtmkl")
PAGES = ("index", "getting_started", "gallery", "benchmarks", "release_notes",
         "models/index", *(f"models/{m}" for m in MODELS), "api/index", "api/cli",
         *(f"api/{p}" for p in API_PAGES.values()),
         *(p.stem for p in sorted(docs.SOURCE.glob("*.py"))))
#: plotly trace types that fetch map tiles, fonts or topojson from the network.
NETWORK_TRACES = ("scattergeo", "choropleth", "scattermapbox", "choroplethmapbox",
                  "densitymapbox", "scattermap", "choroplethmap", "densitymap")
#: Elements whose URL attribute the browser loads while showing the page (``<a href>``
#: is a link the reader may follow, not a load).
_LOADS = re.compile(
    r"<(script|link|img|iframe|source|video|audio|embed|object|track|input)\b[^>]*?"
    r"\b(src|href|data|poster|srcset)\s*=\s*[\"']?\s*(https?:)?//", re.I)
_CSS_LOADS = re.compile(r"(url\(\s*[\"']?\s*(https?:)?//|@import\s+[\"']?\s*(https?:)?//)",
                        re.I)


def _trace_types(script: str) -> list[str]:
    """The trace types of every ``Plotly.newPlot(id, data, ...)`` call in ``script``."""
    types_: list[str] = []
    for m in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]*\",\s*", script):
        data, _ = json.JSONDecoder().raw_decode(script, m.end())
        types_ += [trace.get("type", "scatter") for trace in data]
    return types_


@pytest.fixture(scope="session")
def site(shared_tmp, notebook_cache) -> Path:
    """The built site: one build per session, shared by the pytest-xdist workers (the
    first to need it builds it under a lock, the others wait and read it; a failed
    build leaves no mark, so every test that needs the site fails). Its notebook runs
    are shared with ``tests/test_notebooks.py`` on the same worker (``notebook_cache``)."""
    root = shared_tmp / "site"
    out, done = root / "html", root / "built"
    with FileLock(f"{root}.lock"):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)
            index = docs.build(out, quiet=True, cache=notebook_cache)
            assert index.is_file()
            done.touch()
    return out


def _html(site: Path, page: str) -> str:
    return (site / f"{page}.html").read_text(encoding="utf-8")


def test_the_build_treats_warnings_as_errors():
    cmd = docs.build_command(Path("out"))
    assert "-W" in cmd and "--keep-going" in cmd
    assert cmd[cmd.index("-c") + 1] == str(docs.CONF)
    # the sources are the notebooks' folder; conf.py stays out of notebooks/*.py
    assert not (docs.SOURCE / "conf.py").exists()


def test_every_page_is_built(site):
    missing = [p for p in PAGES if not (site / f"{p}.html").is_file()]
    assert not missing, missing
    assert len(list(docs.SOURCE.glob("*.py"))) >= 9


def test_every_public_name_is_in_the_api_reference(site):
    missing = []
    for module, page in API_PAGES.items():
        mod = importlib.import_module(module)
        html = _html(site, f"api/{page}")
        for name in mod.__all__:
            value = getattr(mod, name)
            anchor = (f'id="module-{value.__name__}"' if isinstance(value, types.ModuleType)
                      else f'id="{module}.{name}"')
            where = "".join(_html(site, f"api/{p}") for p in API_PAGES.values()) \
                if isinstance(value, types.ModuleType) else html
            if anchor not in where:
                missing.append(f"{module}.{name}")
    assert not missing, missing


def test_the_cli_reference_has_every_subcommand(site):
    html = _html(site, "api/cli")
    for name in [s.name for s in cli.SUBCOMMANDS] + ["sweep"]:
        assert f'id="cli-dualscope-{name}"' in html, name
    assert "--max-iter" in html and "--grid" in html and "--port" in html


def test_model_pages_have_the_dual_the_certificate_the_methods_and_a_figure(site):
    for model in MODELS:
        html = _html(site, f"models/{model}")
        for heading in ("The problem", "Its dual", "The certificate", "References"):
            assert heading in html, (model, heading)
        assert "Which" in html and "method" in html
        assert html.count('class="math notranslate nohighlight"') >= 3, model
        assert f"api/{model}.html" in html and f"0{MODELS.index(model) + 1}_" in html
        # the figure: each method's certified gap, computed at build time
        assert html.count("plotly-graph-div") >= 1 and "plotly.min.js" in html, model
        assert len(set(_trace_types(html))) >= 1 and "Traceback" not in html, model


#: An inline cross-reference (a role such as ``{py:func}``) rendered as code; resolved,
#: Sphinx wraps it in ``<a class="reference internal" ...>``.
_XREF = re.compile(r'(<a class="reference internal"[^>]*>)?<code class="xref py [^"]*">'
                   r'(.*?)</code>', re.S)


def unresolved_references(html: str) -> list[str]:
    """The text of every cross-reference in ``html`` that links nowhere."""
    return [re.sub(r"<[^>]+>", "", m.group(2)) for m in _XREF.finditer(html)
            if not m.group(1)]


def test_the_unresolved_reference_check_finds_one():
    ok = ('<a class="reference internal" href="api/wwsvm.html#solvers.wwsvm.solve">'
          '<code class="xref py py-func docutils literal notranslate"><span class="pre">'
          'solve</span></code></a>')
    broken = ('<code class="xref py py-func docutils literal notranslate">'
              '<span class="pre">_helper</span></code>')
    assert unresolved_references(ok + broken) == ["_helper"]


def test_cross_references_between_models_api_and_notebooks_resolve(site):
    """A reference to a dualscope name that resolves nowhere is a build warning (hence
    an error: ``explorer.docs_sphinx.own_unresolved``). On the built pages: every
    reference of the model pages, the notebooks and the other narrative pages links
    somewhere; on the API pages only other packages' names (numpy, scikit-learn, ...:
    no inventory offline) may stay unlinked. The model pages, their API pages and their
    notebooks link to each other."""
    broken = {}
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel in ("genindex.html", "search.html", "py-modindex.html"):
            continue
        found = unresolved_references(path.read_text(encoding="utf-8"))
        if rel.startswith("api/"):
            found = [t for t in found if t.split(".")[0] in OWN_PACKAGES]
        if found:
            broken[rel] = found
    assert not broken, broken
    for i, model in enumerate(MODELS, start=1):
        notebook = next(p.stem for p in docs.SOURCE.glob(f"0{i}_*.py"))
        page, api = _html(site, f"models/{model}"), _html(site, f"api/{model}")
        assert f'href="../api/{model}.html' in page and f'href="../{notebook}.html' in page
        assert f'href="../models/{model}.html' in api and f'href="../{notebook}.html' in api


def test_a_reference_to_an_own_name_must_resolve():
    from sphinx.addnodes import pending_xref

    def ref(target, **kw):
        return pending_xref("", refdomain="py", reftype="func", reftarget=target,
                            refexplicit=False, **kw)

    assert own_unresolved(ref("solvers.wwsvm.nowhere")) == "solvers.wwsvm.nowhere"
    assert own_unresolved(ref("_helper", **{"py:module": "solvers.caso"})) \
        == "solvers.caso._helper"
    assert own_unresolved(ref(".pairs._Blocks", refspecific=True)) == "pairs._Blocks"
    assert own_unresolved(ref("numpy.load")) is None  # another package
    assert own_unresolved(ref("float")) is None
    assert own_unresolved(ref("array_like", refspecific=True)) is None  # a type word
    hint = pending_xref("", refdomain="py", reftype="class", reftarget="solvers.x.Y")
    assert own_unresolved(hint) is None  # a signature's type hint, not a role


def test_release_notes_and_getting_started_come_from_the_repository(site):
    notes = _html(site, "release_notes")
    assert "Unreleased" in notes and "0.1.0" in notes
    # one section per version, the newest the installed one, and the site names it
    assert f"{solvers.__version__} (" in notes and 'id="unreleased"' in notes
    assert f"dualscope {solvers.__version__}" in _html(site, "index")
    assert f"documents dualscope <strong>{solvers.__version__}</strong>" in notes
    start = _html(site, "getting_started")
    assert "dualscope warmup" in start and "Your own data" in start
    assert "python -m explorer.docs build" in start


def test_no_page_loads_anything_from_another_host(site):
    """No ``<script src>``, stylesheet, font, image or frame from another host, in any
    HTML page; no ``url()`` / ``@import`` of one in any CSS; no remote MathJax or plotly;
    the vendored plotly.js is asked for no network trace (maps, geo) and MathJax's
    speech explorer (which fetches its rules from a CDN) is not shipped."""
    offenders = []
    for path in site.rglob("*"):
        rel = path.relative_to(site)
        if path.suffix == ".html":
            text = path.read_text(encoding="utf-8")
            offenders += [f"{rel}: {m.group(0)[:120]}" for m in _LOADS.finditer(text)]
            for style in re.findall(r"<style[^>]*>(.*?)</style>", text, flags=re.S | re.I):
                offenders += [f"{rel}: <style> {m.group(0)}"
                              for m in _CSS_LOADS.finditer(style)]
            for script in re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", text,
                                     flags=re.S | re.I):
                offenders += [f"{rel}: inline script names {u}"
                              for u in re.findall(r"https?://[^\s\"'<>)]+", script)]
                offenders += [f"{rel}: a {t} trace" for t in _trace_types(script)
                              if t in NETWORK_TRACES]
            if "plotly.js v" in text or "cdn.plot.ly" in text or "cdnjs" in text:
                offenders.append(f"{rel}: an embedded or remote plotly.js / MathJax")
        elif path.suffix == ".css":
            css = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8",
                                                          errors="replace"), flags=re.S)
            offenders += [f"{rel}: {m.group(0)}" for m in _CSS_LOADS.finditer(css)]
        elif path.name in MATHJAX_LEFT_OUT:
            offenders.append(f"{rel}: shipped")
    assert not offenders, offenders[:20]
    mathjax = site / "_static" / "mathjax" / "MathJax.js"
    assert mathjax.is_file() and (site / "_static" / "plotly.min.js").is_file()


def test_math_and_figures_use_the_sites_own_files(site):
    model = _html(site, "models/wwsvm")
    assert re.search(r'<script[^>]+src="\.\./_static/mathjax/MathJax\.js\?config=', model)
    notebook = _html(site, "01_wwsvm")
    assert notebook.count("plotly-graph-div") >= 3
    assert re.search(r'<script[^>]+src="_static/plotly\.min\.js', notebook)
    assert "plotly.min.js" not in _html(site, "getting_started")  # only where it draws
    # every notebook page that draws shows figures, and nothing failed in a cell
    for path in sorted(docs.SOURCE.glob("*.py")):
        html = _html(site, path.stem)
        assert "Traceback" not in html and "ipythontb" not in html, path.name


@pytest.mark.browser
def test_in_a_browser_offline_equations_typeset_and_figures_draw(site):
    """The built pages opened from disk in Chromium with every non-file request blocked:
    the model page's equations are typeset by MathJax and a notebook's figures draw."""
    blocked: list[str] = []

    def guard(route):
        if route.request.url.split(":", 1)[0] in ("http", "https", "ws", "wss"):
            blocked.append(route.request.url)
            route.abort()
        else:  # the site's files (file:), about:blank, data: and blob: URLs
            route.continue_()

    with chromium("tests/test_docs_site.py") as browser:
        page = browser.new_page()
        page.route("**/*", guard)
        page.goto((site / "models" / "wwsvm.html").as_uri())
        page.wait_for_function(
            "() => document.querySelectorAll('.MathJax, .MathJax_Display, "
            "mjx-container').length >= 3", timeout=60_000)
        errors = page.evaluate("() => document.querySelectorAll('.MathJax_Error, "
                               "merror').length")
        assert errors == 0
        page.goto((site / "01_wwsvm.html").as_uri())
        page.wait_for_function(
            "() => document.querySelectorAll('.plotly-graph-div .main-svg').length >= 3",
            timeout=60_000)
        # MathJax typesets after the figures may have drawn: wait for it (it must appear)
        page.wait_for_function("() => document.querySelectorAll('.MathJax').length > 0",
                               timeout=60_000)
        traces = page.evaluate(
            "() => [...document.querySelectorAll('.plotly-graph-div')]"
            ".map(d => (d.data || []).length)")
        assert min(traces) >= 1, traces
    assert not blocked, json.dumps(blocked[:5])
