"""Build and open the documentation site.

::

    python -m explorer.docs build [--fresh] [--out DIR]   # sphinx-build -W into DIR
    python -m explorer.docs open [--out DIR]              # the built index.html
    dualscope docs build | open                           # the same

The sources are ``notebooks/`` (MyST pages beside the jupytext notebooks; the Sphinx
configuration in ``notebooks/_sphinx/conf.py``). The build runs ``sphinx-build -W
--keep-going`` (every warning is an error, all of them listed), executes the notebooks
with ``DUALSCOPE_NOTEBOOK_SMALL=1`` and caches their outputs in
``notebooks/_build/.jupyter_cache`` (a notebook runs again only when its cells change;
``--fresh`` clears the cache and rebuilds every page; ``build(cache=...)`` uses another
cache, which :func:`execute_notebook` fills too: the test suite executes each notebook
once for its own checks and for the site). It needs the ``docs`` extra
(``pip install -e ".[docs]"``) and a source checkout (the notebooks are not installed
with the package). The site is ``notebooks/_build/html`` and loads nothing from another
host. ``DUALSCOPE_DOCS_EXECUTE`` overrides myst-nb's execution mode (``cache`` by
default; ``off`` builds the pages without running the notebooks: no outputs, for a
quick look at the text).

This module imports nothing heavy: ``dualscope docs`` keeps the command line light.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import webbrowser
from pathlib import Path
from typing import Any

__all__ = ["BUILD", "CACHE", "CONF", "SOURCE", "build", "build_command", "built_index",
           "execute_notebook", "main", "method_figure", "open_site"]

ROOT = Path(__file__).resolve().parents[1]
#: The site's sources: the notebooks and the MyST pages.
SOURCE = ROOT / "notebooks"
#: The folder of ``conf.py`` (outside ``notebooks/*.py``, which are all notebooks).
CONF = SOURCE / "_sphinx"
#: The default output folder (gitignored).
BUILD = SOURCE / "_build" / "html"
#: The default notebook execution cache (jupyter-cache; gitignored).
CACHE = SOURCE / "_build" / ".jupyter_cache"
#: The environment of every notebook run: the small sizes.
NOTEBOOK_ENV = {"DUALSCOPE_NOTEBOOK_SMALL": "1"}


def build_command(out: Path = BUILD, *, fresh: bool = False, jobs: str = "auto"
                  ) -> list[str]:
    """The ``sphinx-build`` command line of :func:`build`.

    Parameters
    ----------
    out : path
        Where the HTML goes.
    fresh : bool
        Rebuild every page (``-E``), not only the changed ones.
    jobs : str
        Sphinx's ``-j``: ``"auto"`` (one process per core: the notebooks execute two
        at a time on two cores) or a number.

    Returns
    -------
    list of str
        ``python -m sphinx -W --keep-going -j JOBS -b html -c CONF -d DOCTREES SOURCE
        OUT``.
    """
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-j", str(jobs),
           "-b", "html", "-c", str(CONF), "-d", str(Path(out).parent / "doctrees")]
    if fresh:
        cmd.append("-E")
    return [*cmd, str(SOURCE), str(out)]


def _check_sources() -> None:
    if not (CONF / "conf.py").is_file():
        raise FileNotFoundError(f"no site sources at {SOURCE} (the site is built from a "
                                "source checkout: git clone, then pip install -e \".[docs]\")")


def build(out: Path | str = BUILD, *, fresh: bool = False, quiet: bool = False,
          cache: Path | str | None = None) -> Path:
    """Build the site with ``sphinx-build -W`` (warnings are errors).

    Parameters
    ----------
    out : path
        The output folder (default ``notebooks/_build/html``).
    fresh : bool
        Clear the notebook execution cache and the previous build first.
    quiet : bool
        Pass ``-q`` (only warnings and errors are printed).
    cache : path, optional
        The notebook execution cache (default :data:`CACHE`).

    Returns
    -------
    Path
        The built ``index.html``.

    Raises
    ------
    subprocess.CalledProcessError
        When Sphinx fails or warns (its output says where).
    FileNotFoundError
        When there are no site sources (an installed copy, not a checkout).
    """
    _check_sources()
    out = Path(out).resolve()
    cache = Path(CACHE if cache is None else cache).resolve()
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, **NOTEBOOK_ENV, "DUALSCOPE_DOCS_CACHE": str(cache)}
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # a quiet kernel under -W
    cmd = build_command(out, fresh=fresh)
    if quiet:
        cmd.insert(3, "-q")
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    return out / "index.html"


def execute_notebook(path: Path | str, *, cache: Path | str | None = None,
                     timeout: int = 600) -> tuple[Any, bool]:
    """A teaching notebook executed with the small sizes, or its outputs from ``cache``.

    The cache is the site's (jupyter-cache, the one myst-nb reads and writes): a
    notebook whose code cells and kernel are those of a cached run is not run again,
    and a successful run is added to it, so that a later :func:`build` with the same
    ``cache`` shows these outputs instead of executing the notebook once more. Only
    successful runs are cached (a cell that raises raises here), and the key is the
    notebook's code, not the library's: a cache is valid for one version of the code
    (the test suite uses a fresh one per session).

    Parameters
    ----------
    path : path
        A jupytext notebook (``notebooks/NN_name.py``).
    cache : path, optional
        The cache folder (default :data:`CACHE`).
    timeout : int
        Seconds allowed per cell.

    Returns
    -------
    notebook : nbformat.NotebookNode
        The notebook with its outputs.
    cached : bool
        Whether the outputs came from the cache.

    Raises
    ------
    nbclient.exceptions.CellExecutionError
        When a cell raises (an assertion of the notebook fails).
    """
    import time

    import jupytext
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from nbclient import NotebookClient

    path = Path(path).resolve()
    store = get_cache(str(Path(CACHE if cache is None else cache).resolve()))
    nb = jupytext.read(path)
    try:
        store.match_cache_notebook(nb)
    except KeyError:
        pass
    else:
        return store.merge_match_into_notebook(nb)[1], True
    # no timing metadata in the cells: jupyter-cache's key includes the cells' metadata
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute(env={**os.environ, **NOTEBOOK_ENV})
    store.cache_notebook_bundle(
        CacheBundleIn(nb, str(path), data={"execution_seconds": time.perf_counter() - start}),
        check_validity=False, overwrite=True)
    return nb, False


def built_index(out: Path | str | None = None) -> Path | None:
    """The built site's ``index.html``, or ``None`` when the site is not built.

    Parameters
    ----------
    out : path, optional
        The folder :func:`build` wrote (default :data:`BUILD`, read when called).

    Returns
    -------
    Path or None
        The page, if it exists.

    Examples
    --------
    >>> import tempfile
    >>> from explorer import docs
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     print(docs.built_index(tmp))
    None
    """
    index = Path(BUILD if out is None else out).resolve() / "index.html"
    return index if index.is_file() else None


def open_site(out: Path | str = BUILD) -> Path:
    """Open the built site's ``index.html`` in the default browser.

    Parameters
    ----------
    out : path
        The folder :func:`build` wrote.

    Returns
    -------
    Path
        The page opened.

    Raises
    ------
    FileNotFoundError
        When the site is not built.
    """
    index = Path(out).resolve() / "index.html"
    if not index.is_file():
        raise FileNotFoundError(f"{index} is not built yet: run python -m explorer.docs "
                                "build")
    print(f"opening {index.as_uri()}", flush=True)
    webbrowser.open(index.as_uri())
    return index


def method_figure(model: str, *, tol: float = 1e-8, max_iter: int = 2000) -> Any:
    """The certified gap per iteration of each ``method`` of ``model`` (a model page's figure).

    Every method solves the dashboard's default problem (the model's default dataset at
    its default sizes, seed 0, default parameters) from scratch; iterations, not
    seconds, so the figure does not depend on the machine that built the site.

    Parameters
    ----------
    model : str
        A registry name (``"wwsvm"``, ...).
    tol, max_iter : float, int
        The stopping rule of every run.

    Returns
    -------
    plotly.graph_objects.Figure
        One line per method that takes the problem (legend: the method and why it
        stopped).
    """
    import warnings

    from explorer import registry
    from explorer.figures import comparison_figure

    entry = registry.get(model)
    dataset = entry.datasets[entry.default_dataset]
    problem = dataset(seed=0, **{k: v[0] for k, v in dataset.sizes.items()})
    (method,) = [p for p in entry.params if p.name == "method"]
    runs = {}
    for name in method.choices:
        with warnings.catch_warnings():  # a baseline may stop at its floor or max_iter
            warnings.simplefilter("ignore")
            try:
                res = entry.solve(problem, tol=tol, max_iter=max_iter, method=name)
            except ValueError:  # a method that refuses this problem (MT-MKL's ipm
                continue        # beyond its size) has no line
        runs[f"{name} ({res.stop_reason}, {res.n_iter} it.)"] = res.history
    return comparison_figure(runs, x="iteration",
                             title=f"certified gap per iteration, {entry.default_dataset} "
                                   f"data at the dashboard's default sizes")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``build`` / ``open`` arguments to ``parser``."""
    parser.add_argument("action", choices=["build", "open"],
                        help="build the site (sphinx-build -W) or open the built one")
    parser.add_argument("--out", default=str(BUILD), metavar="DIR",
                        help="output folder (default: notebooks/_build/html)")
    parser.add_argument("--fresh", action="store_true",
                        help="clear the notebook cache and rebuild every page")


def run(args: argparse.Namespace) -> int:
    """Carry out parsed arguments (see :func:`configure`); return the exit status."""
    if args.action == "open":
        open_site(args.out)
        return 0
    try:
        index = build(args.out, fresh=args.fresh)
    except subprocess.CalledProcessError as exc:
        print(f"dualscope docs: sphinx-build failed (exit status {exc.returncode})",
              file=sys.stderr)
        return 1
    print(f"built {index}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m explorer.docs build|open``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).

    Returns
    -------
    int
        The exit status: 0, 1 when Sphinx fails or warns, 2 without site sources or a
        built site.
    """
    parser = argparse.ArgumentParser(prog="python -m explorer.docs",
                                     description="Build or open the documentation site.")
    configure(parser)
    try:
        return run(parser.parse_args(argv))
    except FileNotFoundError as exc:
        print(f"dualscope docs: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
