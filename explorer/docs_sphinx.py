"""Sphinx extension of the dualscope site (``extensions = [..., "explorer.docs_sphinx"]``).

It keeps every page offline and generates what is derived from the code:

- ``dualscope-api``: a module and every name of its ``__all__`` (autodoc alone leaves out
  the constants without a ``#:`` comment and the names built on first use);
- ``dualscope-gap-figure``: a model page's figure, each method's certified gap, computed
  in the Sphinx process (:func:`explorer.docs.method_figure`);
- ``dualscope-cli``: a directive that writes the help of ``dualscope`` and of each of its
  subcommands, from the argparse parsers of :mod:`explorer.cli` (one section each);
- plotly.js once: a figure output is drawn from its plotly JSON (:class:`PlotlyMime`, a
  myst-nb mime renderer registered in ``pyproject.toml``) rather than from plotly's own
  notebook HTML, which embeds plotly.js in each notebook and asks a CDN for MathJax in
  every figure; that one-time plotly.js output is dropped, and ``_static/plotly.min.js``
  (the copy that the ``plotly`` package ships) is loaded by each page that draws a
  figure;
- every reference to a dualscope name resolves: one that does not is a warning, hence an
  error under ``-W`` (:func:`own_unresolved`; Sphinx itself is not nitpicky here, as
  the names of numpy, scikit-learn and the type words of docstrings have no page);
- MathJax: the MathJax 2.7 files of the ``jupyter-server-mathjax`` wheel are copied to
  ``_static/mathjax/`` (``mathjax_path`` in ``conf.py`` points there).

Only imported by Sphinx: the command line's light import path never loads it.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import io
import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx

__all__ = [
    "MATHJAX_LEFT_OUT",
    "OWN_PACKAGES",
    "PLOTLY_JSON",
    "APIModule",
    "CLIHelp",
    "GapFigure",
    "PlotlyMime",
    "api_directives",
    "clean_figure_html",
    "cli_help_texts",
    "figure_html",
    "own_unresolved",
    "setup",
]

#: A ``<script src=...>`` that loads from another host (plotly's figures ask a CDN for
#: MathJax).
_REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc=[\"']https?://[^\"']*[\"'][^>]*>\s*</script>",
                            re.I)
#: The start of the plotly.js bundle that plotly's notebook renderer embeds once.
_PLOTLY_BUNDLE = "* plotly.js v"
_PLOTLY_DIV = "plotly-graph-div"
#: Files of the MathJax 2.7 distribution not copied to the site (they name a CDN).
MATHJAX_LEFT_OUT = ("mathjax-sre.js",)
#: The mime type of a plotly figure in a notebook output.
PLOTLY_JSON = "application/vnd.plotly.v1+json"


class PlotlyMime:
    """myst-nb renderer of plotly figures: a ``<div>`` and ``Plotly.newPlot``, nothing else.

    Registered under the ``myst_nb.mime_renderers`` entry point; HTML builders prefer it
    to the figure's ``text/html`` (plotly's notebook HTML, with a CDN MathJax).
    """

    mime_priority_overrides: ClassVar[list[tuple[str, str, int]]] = [
        (b, PLOTLY_JSON, 25) for b in ("html", "dirhtml", "singlehtml")]

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list[nodes.Element] | None:
        """The figure's HTML as a raw node, or ``None`` for any other mime type."""
        if data.mime_type != PLOTLY_JSON or inline:
            return None
        return [nodes.raw("", figure_html(data.content), format="html",
                          classes=["output", "text_html"])]


def figure_html(figure: Any) -> str:
    """A plotly figure as a ``<div>`` drawn by the site's plotly.js (no plotly.js inside).

    Parameters
    ----------
    figure : dict or plotly.graph_objects.Figure
        The figure (its plotly JSON, as a notebook output holds it, or the object).

    Returns
    -------
    str
        The ``<div>`` and a script that calls ``Plotly.newPlot`` once the page's scripts
        (``_static/plotly.min.js`` among them, loaded at the end of the page) are loaded.
    """
    import plotly.io as pio

    html = pio.to_html(figure, include_plotlyjs=False, include_mathjax=False,
                       full_html=False, default_width="100%", default_height="520px",
                       validate=False, config={"responsive": True})
    m = re.search(r"<script[^>]*>(.*?)</script>", html, flags=re.S)
    if m:
        html = (f"{html[:m.start()]}<script>document.addEventListener("
                f"'DOMContentLoaded', function () {{{m.group(1)}}});</script>"
                f"{html[m.end():]}")
    return html


class GapFigure(Directive):
    """``.. dualscope-gap-figure:: MODEL``: each method's certified gap per iteration.

    The figure of :func:`explorer.docs.method_figure`, computed in the Sphinx process
    when the page is read (a model page is then a plain MyST page: no kernel is
    started for it) and drawn with the site's plotly.js.
    """

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        """The figure as a raw HTML node."""
        from explorer.docs import method_figure

        html = figure_html(method_figure(self.arguments[0]))
        return [nodes.raw("", html, format="html", classes=["output", "text_html"])]


def cli_help_texts() -> list[tuple[str, str]]:
    """``(command, help text)`` of ``dualscope`` and of each subcommand, in help order.

    Returns
    -------
    list of (str, str)
        ``("dualscope", ...)`` first, then ``("dualscope solve", ...)`` and so on, the
        text being what ``--help`` prints (at a fixed width of 88 columns).
    """
    import os

    from explorer import cli

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"
    try:
        out: list[tuple[str, str]] = []
        names = [s.name for s in cli.SUBCOMMANDS]
        if "sweep" not in names:
            names.append("sweep")
        for argv in ([], *([n] for n in names)):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
                cli.main([*argv, "--help"])
            out.append((" ".join(["dualscope", *argv]), buf.getvalue().rstrip()))
        return out
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


class CLIHelp(Directive):
    """``.. dualscope-cli::``: one section per command with its ``--help`` text."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        """The sections (a title and a literal block each)."""
        result: list[nodes.Node] = []
        for command, text in cli_help_texts():
            sid = nodes.make_id("cli " + command)
            section = nodes.section(ids=[sid], names=[nodes.fully_normalize_name(command)])
            section += nodes.title(command, "", nodes.literal(command, command))
            block = nodes.literal_block(text, text)
            block["language"] = "text"
            section += block
            result.append(section)
        return result


def api_directives(modname: str) -> list[str]:
    """The reST that documents every name of ``modname.__all__``.

    ``.. automodule::`` with ``:members:`` documents the classes and functions of
    ``__all__`` and the constants that have a ``#:`` comment where they are defined;
    autodoc leaves out the other constants (``METHODS = PARAMS["method"].choices``, a
    re-exported ``PARAMS``) and the names a module builds on first use (its
    ``__getattr__``). Those get an explicit ``autodata`` / ``autoclass`` /
    ``autoexception`` / ``autofunction`` after the module.

    Parameters
    ----------
    modname : str
        A module with ``__all__``.

    Returns
    -------
    list of str
        The lines, starting with ``.. automodule:: modname``.
    """
    import importlib
    import inspect
    import types

    from sphinx.pycode import ModuleAnalyzer, PycodeError

    module = importlib.import_module(modname)
    try:
        documented = {name for (_, name) in
                      ModuleAnalyzer.for_module(modname).find_attr_docs()}
    except PycodeError:  # pragma: no cover - a module without source
        documented = set()
    lines = [f".. automodule:: {modname}", ""]
    for name in getattr(module, "__all__", ()):
        lazy = name not in vars(module)
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            continue
        if inspect.isclass(value) or inspect.isroutine(value):
            if not lazy:
                continue
            kind = ("autoexception" if inspect.isclass(value)
                    and issubclass(value, BaseException) else
                    "autoclass" if inspect.isclass(value) else "autofunction")
        elif name in documented:  # its ``#:`` comment: automodule documents it
            continue
        else:
            kind = "autodata"
        lines += [f".. {kind}:: {modname}.{name}", ""]
    return lines


class APIModule(Directive):
    """``.. dualscope-api:: MODULE``: the module and every name of its ``__all__``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        """Parse :func:`api_directives` of the module in place."""
        from docutils.statemachine import StringList
        from sphinx.util.nodes import nested_parse_with_titles

        lines = api_directives(self.arguments[0])
        if type(self.state).__module__.startswith("myst_parser"):  # a MyST page: its
            lines = ["```{eval-rst}", *lines, "```"]  # nested content is Markdown
        container = nodes.section()
        container.document = self.state.document
        source = self.state.document.current_source or "<dualscope-api>"
        nested_parse_with_titles(self.state, StringList(lines, source=source), container)
        return list(container.children)


def clean_figure_html(html: str) -> tuple[str, bool]:
    """A notebook output's HTML without remote scripts or an embedded plotly.js.

    Parameters
    ----------
    html : str
        The ``text/html`` of one output cell.

    Returns
    -------
    html : str
        The same HTML less every ``<script src="http(s)://...">`` and, if the output is
        plotly's one-time activation (plotly.js inline), empty.
    draws : bool
        Whether the output draws a plotly figure (the page then needs plotly.js).
    """
    if _PLOTLY_BUNDLE in html[:5000] and _PLOTLY_DIV not in html:
        return "", False
    return _REMOTE_SCRIPT.sub("", html), _PLOTLY_DIV in html


def _doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for raw in list(doctree.findall(nodes.raw)):
        if "html" not in raw.get("format", "").split():
            continue
        text = raw.astext()
        cleaned, _ = clean_figure_html(text)
        if cleaned == text:
            continue
        if cleaned:
            raw.replace_self(nodes.raw("", cleaned, format="html"))
        else:
            raw.parent.remove(raw)


#: The packages whose names a reference must resolve to (other hosts' names, numpy's or
#: scikit-learn's, have no page here: no inventory is fetched offline).
OWN_PACKAGES = ("solvers", "explorer")


def own_unresolved(node: Any) -> str | None:
    """The target of an unresolved Python reference to one of this project's names.

    ``node`` is a ``pending_xref`` that Sphinx could not resolve. Only a role counts
    (``:func:`name```, ``{py:func}`name```; not a signature's type hint nor a word of a
    docstring's type field); it names this project when its target starts with a
    package of :data:`OWN_PACKAGES`, or when it is relative (``.name``, or a first part
    that is no importable package: looked up from the module being documented).

    Parameters
    ----------
    node : sphinx.addnodes.pending_xref
        The reference.

    Returns
    -------
    str or None
        The target, or ``None`` for another domain, a type word or another package's
        name.
    """
    # "refexplicit" is set by a role, not by a signature's type hint
    if node.get("refdomain") != "py" or "refexplicit" not in node.attributes:
        return None
    raw = str(node.get("reftarget", "")).lstrip("~")
    target = raw.lstrip(".")
    top = target.split(".")[0]
    if not target:
        return None
    if top in OWN_PACKAGES:
        return target
    if node.get("refspecific") and not raw.startswith("."):
        return None  # a word of a docstring's type field ("array_like", "optional")
    if not raw.startswith(".") and (hasattr(builtins, top)
                                    or importlib.util.find_spec(top) is not None):
        return None  # a builtin or another package's name (numpy, os, ...): no page here
    module = node.get("py:module") or ""
    return f"{module}.{target}" if module else target


def _missing_reference(app: Sphinx, env: Any, node: Any, contnode: Any) -> None:
    target = own_unresolved(node)
    if target is not None:
        from sphinx.util import logging

        logging.getLogger(__name__).warning(
            "unresolved reference to %s (a dualscope name without a page here)", target,
            location=node, type="dualscope", subtype="ref")


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                  doctree: Any) -> None:
    if _PLOTLY_DIV in context.get("body", ""):
        app.add_js_file("plotly.min.js", priority=400)


def _copy_assets(app: Sphinx, exc: BaseException | None) -> None:
    if exc is not None or app.builder.format != "html":
        return
    import jupyter_server_mathjax
    import plotly

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
                 static / "plotly.min.js")
    mathjax = Path(jupyter_server_mathjax.__file__).parent / "static"
    # mathjax-sre.js (the speech explorer, off unless chosen in MathJax's menu) fetches
    # its rule files from a CDN: left out, so that nothing on the site names one
    shutil.copytree(mathjax, static / "mathjax", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*MATHJAX_LEFT_OUT))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive and the offline hooks."""
    app.add_directive("dualscope-cli", CLIHelp)
    app.add_directive("dualscope-api", APIModule)
    app.add_directive("dualscope-gap-figure", GapFigure)
    app.connect("doctree-resolved", _doctree_resolved)
    app.connect("missing-reference", _missing_reference)
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _copy_assets)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
