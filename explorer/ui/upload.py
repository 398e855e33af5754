"""The "your file" choice of every page's dataset selector, and the model download.

The sidebar offers *built-in* datasets or *your file*: an uploader accepting the
formats of :mod:`explorer.datafiles`, the label / task / time columns, an optional
held-out fraction, and (in the main area) a preview: n, d, classes or tasks,
density and the first rows. The choice is one :class:`explorer.datasource.DataSource`
(:func:`upload_source`), the value the CLI and the sweeps use for files. An upload lives
in this session only: its bytes are kept in the session state, and on disk as one
private temporary copy (readable by this user only) that the source names, removed with
the upload; the URL keeps naming built-in datasets only, and the page says that a shared
link does not carry the file. The cost guard is computed from the real size of the
problem read from the file, before anything is solved.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from ..datasource import DataSource
from ..registry import ModelEntry, Problem

__all__ = ["YOUR_FILE", "Upload", "clear_upload", "file_controls", "file_guard",
           "model_downloads", "preview", "set_upload", "sweep_upload_spec", "upload_source",
           "upload_spec", "uploaded_problem"]

#: The dataset name shown (and used in keys) when the data comes from an upload.
YOUR_FILE = "your file"
_UPLOADS = "dualscope.uploads"


@dataclass(frozen=True)
class Upload:
    """One uploaded file of a page: name and bytes (the session's copy)."""

    name: str
    data: bytes

    @property
    def digest(self) -> str:
        return hashlib.blake2b(self.data, digest_size=8).hexdigest()


def _store() -> dict[str, Any]:
    return st.session_state.setdefault(_UPLOADS, {})


# ------------------------------------------------------------- the temporary copies
# The page's data source, and the Sweep tab's workers, read an upload from a file: a
# private ``mkdtemp`` folder per upload. It is removed when the upload is replaced or
# cleared, when the session's state is dropped, and at interpreter exit; a folder a
# running sweep reads is removed when that sweep ends (``_TEMP_READERS`` counts the
# sweeps reading each folder).
_TEMP_LOCK = threading.Lock()
_TEMP_READERS: dict[str, int] = {}  # live folder -> number of sweeps reading it now
_TEMP_RETIRED: set[str] = set()  # folders to remove once their last sweep ends


def _discard(folder: str) -> None:
    """Remove ``folder`` now, or when the last sweep reading it ends."""
    with _TEMP_LOCK:
        if _TEMP_READERS.get(folder, 0) > 0:
            _TEMP_RETIRED.add(folder)
            return
        _TEMP_READERS.pop(folder, None)
        _TEMP_RETIRED.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)


@atexit.register
def _remove_all() -> None:
    """At interpreter exit: every temporary copy still on disk."""
    with _TEMP_LOCK:
        folders = [*_TEMP_READERS, *_TEMP_RETIRED]
        _TEMP_READERS.clear()
        _TEMP_RETIRED.clear()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


class _TempCopy:
    """The upload's bytes in a private temporary folder; removed by :meth:`close` or when
    this object is dropped with the session's state."""

    __slots__ = ("__weakref__", "_finalizer", "folder", "path")

    def __init__(self, up: Upload) -> None:
        self.folder = tempfile.mkdtemp(prefix=f"dualscope_upload_{up.digest}_")
        self.path = os.path.join(self.folder, os.path.basename(up.name) or "upload.csv")
        with _TEMP_LOCK:
            _TEMP_READERS[self.folder] = 0
        self._finalizer = weakref.finalize(self, _discard, self.folder)
        self._finalizer.atexit = False  # _remove_all does it, regardless of readers
        with open(self.path, "wb") as f:
            f.write(up.data)

    def close(self) -> None:
        self._finalizer()


def _drop(cur: dict[str, Any] | None) -> None:
    """Remove the temporary copy of a replaced or cleared upload."""
    if cur is not None and isinstance(cur.get("copy"), _TempCopy):
        cur.pop("path", None)
        cur.pop("copy").close()


def set_upload(model: str, name: str, data: bytes) -> None:
    """Keep ``data`` as model ``model``'s uploaded file (what the uploader does; tests too)."""
    store = _store()
    _drop(store.get(model))
    store[model] = {"upload": Upload(name, bytes(data)), "cache": {}}


def clear_upload(model: str) -> None:
    """Forget model ``model``'s upload (the uploader was cleared) and its temporary copy."""
    _drop(_store().pop(model, None))


def _uploader_changed(model: str) -> None:
    if st.session_state.get(f"upload_{model}") is None:  # the user removed the file
        clear_upload(model)


def file_controls(entry: ModelEntry, sb: Any) -> DataSource | None:
    """Draw the uploader and the column choices; return the upload's data source (None
    before a file is given)."""
    from .. import datafiles

    exts = sorted({e.lstrip(".") for x in datafiles.FORMATS.values() for e in x} | {"gz"})
    roles = datafiles.roles(entry.name)
    sb.caption(f"{entry.name} reads: {roles.describe()}. Formats: "
               + ", ".join(datafiles.FORMATS) + ". A shared link does not carry an "
               "uploaded file: the URL names built-in datasets only.")
    got = sb.file_uploader("your data file", type=exts, key=f"upload_{entry.name}",
                           help="CSV/TSV (header row), LIBSVM/svmlight (.svm, .libsvm, "
                                ".txt, optionally .gz), NumPy .npz (X, y, tasks), Parquet, "
                                "MATLAB .mat (MALSAR: cell arrays X{t}, Y{t})",
                           on_change=_uploader_changed, args=(entry.name,))
    if got is not None:
        if got.size > datafiles.MAX_FILE_BYTES:  # from the size, before reading it
            sb.error(f"{got.name}: {got.size / 1024**2:,.1f} MB is beyond the size budget of "
                     f"{datafiles.MAX_FILE_BYTES / 1024**2:,.0f} MB; refused before reading it")
            return None
        cur = _store().get(entry.name)
        if cur is None or cur["upload"].name != got.name or \
                len(cur["upload"].data) != got.size:
            set_upload(entry.name, got.name, got.getvalue())
    cur = _store().get(entry.name)
    if cur is None:
        return None
    up: Upload = cur["upload"]
    sb.caption(f"using **{up.name}** ({len(up.data) / 1024:,.1f} KB, this session only)")
    opts: dict[str, Any] = {"label": None, "task": None, "time": None}
    try:
        fmt = datafiles.detect_format(up.name)
    except datafiles.DataFileError:
        fmt = None
    if fmt in datafiles.NAMED_COLUMNS:
        cols = _columns(up, cur)
        if cols:
            last = cols[-1]
            opts["label"] = sb.selectbox("label column", cols, index=cols.index(last),
                                         key=f"upload_label_{entry.name}")
            rest = ["(none)", *[c for c in cols if c != opts["label"]]]
            if roles.tasks:
                dflt = rest.index("task") if "task" in rest else 0
                t = sb.selectbox("task column", rest, index=dflt,
                                 key=f"upload_task_{entry.name}")
                opts["task"] = None if t == "(none)" else t
            if roles.time:
                dflt = rest.index("time") if "time" in rest else 0
                t = sb.selectbox("time column (task order)", rest, index=dflt,
                                 key=f"upload_time_{entry.name}")
                opts["time"] = None if t == "(none)" else t
    opts["test_size"] = float(sb.number_input(
        "held-out fraction (0 = none)", min_value=0.0, max_value=0.5, value=0.0, step=0.05,
        key=f"upload_test_{entry.name}"))
    named = fmt in datafiles.NAMED_COLUMNS
    opts["prep"] = _prep_controls(entry, sb, fmt, _columns(up, cur) if named else [], opts)
    return upload_source(entry, opts)


#: The upload panel's preprocessing defaults (the CLI's are none: it says what to add):
#: a file straight from elsewhere is standardised, its text columns one-hot encoded and its
#: incomplete rows dropped; the preview shows the columns that result.
UPLOAD_PREP = {"scale": "standard", "categorical": "onehot", "missing": "drop"}


def _prep_controls(entry: ModelEntry, sb: Any, fmt: str | None, cols: list[str],
                   opts: dict[str, Any]) -> Any:
    """The preprocessing choices (:mod:`solvers.preprocess`) of an upload."""
    from solvers.preprocess import CATEGORICAL, MISSING, SCALES, Preprocessing

    sb.caption("Preprocessing (fitted on the training rows, saved with the model; this "
               "panel standardises, one-hot encodes text columns and drops incomplete rows "
               "by default, the CLI does none of it unless asked)")
    scale = sb.selectbox("scale numeric columns", SCALES,
                         index=SCALES.index(UPLOAD_PREP["scale"]),
                         key=f"upload_scale_{entry.name}",
                         help="standard: mean 0, variance 1; maxabs: divide by max |x| "
                              "(keeps sparse files sparse)")
    from ..datafiles import NAMED_COLUMNS

    if fmt not in NAMED_COLUMNS:
        return Preprocessing(scale=scale)
    cat = sb.selectbox("text columns", CATEGORICAL,
                       index=CATEGORICAL.index(UPLOAD_PREP["categorical"]),
                       key=f"upload_categorical_{entry.name}",
                       help="onehot: one 0/1 column per value; drop the column; or an error")
    miss = sb.selectbox("missing values", MISSING, index=MISSING.index(UPLOAD_PREP["missing"]),
                        key=f"upload_missing_{entry.name}",
                        help="drop incomplete rows, fill in the training mean, or an error")
    roles = {opts.get("label"), opts.get("task"), opts.get("time")}
    ignore = sb.multiselect("leave out columns", [c for c in cols if c not in roles],
                            key=f"upload_ignore_{entry.name}")
    return Preprocessing(scale=scale, categorical=cat, missing=miss, ignore=tuple(ignore))


def _columns(up: Upload, cur: dict[str, Any]) -> list[str]:
    """The header of a table upload (read once per upload; [] when unreadable)."""
    if "columns" not in cur:
        try:
            import pandas as pd

            fmt = up.name.lower()
            buf = io.BytesIO(up.data)
            if fmt.endswith((".parquet", ".pq")):
                import pyarrow.parquet as pq

                cur["columns"] = [str(c) for c in pq.read_schema(buf).names]
            else:
                sep = "\t" if fmt.endswith((".tsv", ".tab", ".tsv.gz", ".tab.gz")) else ","
                comp = "gzip" if fmt.endswith(".gz") else None
                cur["columns"] = [str(c) for c in pd.read_csv(
                    buf, sep=sep, nrows=0, compression=comp).columns]
        except Exception:  # the full read reports the problem with its message
            cur["columns"] = []
    return cur["columns"]


def uploaded_problem(entry: ModelEntry, c: Any) -> Problem:
    """The Problem of the controls' data source, this session's upload (cached per key).

    Raises :class:`explorer.datafiles.DataFileError` for a bad file (nothing kept).
    """
    cur = _store().get(entry.name)
    if cur is None or c.source is None:
        raise ValueError("no file uploaded yet: choose a file in the sidebar")
    src = replace(c.source, seed=c.data_seed)
    key = (src.key, src.seed)
    cache = cur["cache"]
    if key in cache:
        return cache[key]
    problem, table = src.read()
    problem = replace(problem, info={**problem.info, "table": table})
    cache.clear()  # one problem per upload: the latest options
    cache[key] = problem
    return problem


def file_guard(entry: ModelEntry) -> Any:
    """A guard from the real size of the problem read from the upload.

    Memory: 8 working copies of the problem's arrays; work: the arrays' size relative
    to the page's default dataset (a rough proxy, said to be one).
    """
    from .. import limits
    from .problems import _CACHE, nbytes

    def guard(c: Any) -> str | None:
        problem = uploaded_problem(entry, c)
        size = nbytes({k: v for k, v in problem.data.items()})
        name = entry.default_dataset
        ds = entry.datasets[name]
        sizes = ds.full_sizes()
        base = _CACHE.get((entry.name, name, tuple(sorted(sizes.items())), 0),
                          lambda: ds(seed=0, **sizes))
        ratio = size / max(nbytes(dict(base.data)), 1)
        mem = 8.0 * size
        budget = limits.PAGE
        if mem <= budget.memory and ratio <= budget.work:
            return None
        return (f"This file makes a problem of {size / 1e6:,.1f} MB of arrays, about "
                f"{ratio:,.0f}× the default dataset's (a rough proxy for the work; ~"
                f"{mem / 1e9:.1f} GB with working copies). The page's budget is "
                f"{budget.describe()}. Use a smaller file, or solve anyway.")

    return guard


def preview(problem: Problem) -> None:
    """n, d, classes or tasks, density and the first rows of the uploaded data."""
    table = problem.info.get("table")
    if table is None:
        return
    info = problem.info
    parts = [f"n = {table.n:,}", f"d = {table.d:,}"]
    if info.get("class_names") is not None:
        names = [str(v) for v in info["class_names"]]
        parts.append(f"{len(names)} classes ({', '.join(names[:8])}"
                     f"{', ...' if len(names) > 8 else ''})")
    if info.get("task_names") is not None:
        parts.append(f"{len(info['task_names'])} tasks")
    parts.append(f"density {100 * table.density:.3g} %"
                 + (" (sparse)" if table.sparse else ""))
    if info.get("test_source") or "X_test" in info or "Xs_test" in info:
        parts.append("held-out rows in the structure and sweep scores")
    fp = info.get("preprocessing")
    if fp is not None:
        st.caption(f"Preprocessing: {fp.describe()} — the preview shows the columns after it.")
    with st.expander(f"Your file: {table.name} — " + ", ".join(parts), expanded=False):
        import pandas as pd

        st.dataframe(pd.DataFrame(table.head(5)), hide_index=True)
        st.caption("An uploaded file lives in this session only; a shared link does not "
                   "carry it.")


def model_downloads(entry: ModelEntry, problem: Problem, res: Any, sm: Any = None) -> None:
    """Download buttons of the learned model (.npz and JSON, :mod:`solvers.saved`);
    ``sm``: the model already built (:func:`explorer.datafiles.fitted_model`)."""
    if sm is None:
        from .. import datafiles

        sm = datafiles.fitted_model(entry.name, problem, res)
    base = f"dualscope_{entry.name}_{problem.name}_model".replace(" ", "_")
    a, b = st.columns(2)
    a.download_button("Download the learned model (.npz)", sm.to_bytes("npz"),
                      file_name=f"{base}.npz", mime="application/octet-stream",
                      icon=":material/download:", key="download_model_npz")
    b.download_button("Download the learned model (JSON)", sm.to_bytes("json"),
                      file_name=f"{base}.json", mime="application/json",
                      icon=":material/download:", key="download_model_json")
    st.caption("Named arrays (" + ", ".join(sorted(sm.arrays)) + "), parameters, certificate "
               "and the data's names; `solvers.saved.load_model(path).predict(X)` or "
               "`dualscope predict --model FILE --data new.csv` applies it.")


def upload_source(entry: ModelEntry, options: dict[str, Any]) -> DataSource:
    """The data source of this session's upload read with ``options`` (``label``, ``task``,
    ``time``, ``test_size``, ``prep``; empty values left out).

    The source names the upload's private temporary copy: its bytes written once to a
    folder readable by this user only, removed when the upload is replaced or cleared,
    with the session's state, or at interpreter exit (the sweep's worker processes read
    it too). Use :func:`sweep_upload_spec` around a sweep so that its folder outlives a
    replacement until the sweep ends.

    Parameters
    ----------
    entry : ModelEntry
        The page's model.
    options : dict
        The reading options chosen in the sidebar.

    Returns
    -------
    explorer.datasource.DataSource

    Raises
    ------
    ValueError
        When no file was uploaded.
    """
    from ..datasource import DataSource

    cur = _store().get(entry.name)
    if cur is None:
        raise ValueError("no file uploaded yet: choose a file in the sidebar")
    copy = cur.get("copy")
    if not isinstance(copy, _TempCopy) or not os.path.exists(copy.path):
        _drop(cur)
        copy = cur["copy"] = _TempCopy(cur["upload"])
        cur["path"] = copy.path
    return DataSource.from_file(entry.name, copy.path, **{k: v for k, v in options.items()
                                                          if v})


def upload_spec(entry: ModelEntry, options: dict[str, Any]) -> str:
    """The key of :func:`upload_source` (a ``file:`` dataset name for the sweep)."""
    return upload_source(entry, options).key


@contextlib.contextmanager
def sweep_upload_spec(entry: ModelEntry, c: Any) -> Iterator[str]:
    """:func:`upload_spec`, its temporary folder kept until the ``with`` block ends (a
    running sweep reads it even if the upload is replaced or cleared meanwhile)."""
    if c.source is None:
        raise ValueError("no file uploaded yet: choose a file in the sidebar")
    spec = c.source.key
    if not os.path.exists(c.source.path):
        raise ValueError("the uploaded file was replaced or removed; choose it again")
    folder = os.path.dirname(c.source.path)
    with _TEMP_LOCK:
        _TEMP_READERS[folder] = _TEMP_READERS.get(folder, 0) + 1
    try:
        yield spec
    finally:
        with _TEMP_LOCK:
            left = _TEMP_READERS.get(folder, 1) - 1
            if folder in _TEMP_READERS:
                _TEMP_READERS[folder] = left
            done = left == 0 and folder in _TEMP_RETIRED
        if done:
            _discard(folder)
