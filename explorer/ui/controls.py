"""Sidebar controls bound to the URL query, checked before Streamlit sees them.

Streamlit's ``bind="query-params"`` drops an unparsable value silently. Here every
bound value in the URL is read and checked first: an invalid or out-of-range value
gives a visible note naming the parameter, the value read and the value used instead;
an off-grid but valid value (``C=0.3`` on a 1-2-5 grid) is kept as an extra option.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from ..datasource import DataSource
from ..registry import ModelEntry, Param
from .fmt import fmt, log_options
from .state import PageState, page_state
from .upload import YOUR_FILE

__all__ = ["MAX_URL_VALUE", "TOL_OPTIONS", "Controls", "Limits", "UrlNote", "param_widget",
           "parse_url_number", "sidebar_controls"]

TOL_OPTIONS = [10.0 ** -e for e in range(2, 13)]

# The kit writes a control's value into the session state when it corrects a URL value
# or clamps to a dependent limit, and still passes the default (the URL omits values
# equal to it); Streamlit logs a warning with a stack dump for that combination.
logging.getLogger("streamlit.elements.lib.policies").setLevel(logging.ERROR)

#: ``limits(chosen) -> {name: (low, high, why)}``: bounds of a control that depend on the
#: values chosen above it (sizes first, then model parameters), with the reason in the
#: user's terms (e.g. ``{"h": (0.25, d, "h is the trace of M, at most d")}``).
Limits = Callable[[Mapping[str, Any]], Mapping[str, tuple[float, float, str]]]


@dataclass(frozen=True)
class UrlNote:
    """A URL value that could not be used as given."""

    name: str
    raw: str
    reason: str
    used: Any = None

    def text(self) -> str:
        return (f"URL parameter **{self.name}={self.raw}** {self.reason}; "
                f"using **{self.name} = {fmt(self.used)}** instead.")


@dataclass
class Controls:
    """Everything the sidebar decided, in one place."""

    dataset: str
    sizes: dict[str, Any]
    data_seed: int
    params: dict[str, Any]
    tol: float
    max_iter: int
    extras: dict[str, Any] = field(default_factory=dict)
    notes: list[UrlNote] = field(default_factory=list, compare=False)
    limited: list[str] = field(default_factory=list, compare=False)
    #: the data file chosen ("your file"): its source, None until a file is uploaded (a
    #: built-in dataset is ``dataset`` with ``sizes`` and ``data_seed``; see ``ui.upload``)
    source: DataSource | None = None

    @property
    def from_file(self) -> bool:
        """Whether "your file" is chosen (uploaded or not yet)."""
        return self.source is not None or self.dataset == YOUR_FILE

    def problem_key(self, entry: ModelEntry) -> tuple:
        key = (entry.name, self.dataset, tuple(sorted(self.sizes.items())), self.data_seed)
        return (*key, self.source.key) if self.source is not None else key

    def model_params(self, exclude: tuple[str, ...] = ("method",)) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if k not in exclude}


# ----------------------------------------------------------------------------- URL checks


#: Longest URL value read (a float's repr needs at most 24 characters).
MAX_URL_VALUE = 40


def parse_url_number(raw: str, *, integer: bool) -> int | float:
    """The number a URL value stands for; ``ValueError`` with the reason otherwise.

    Every integer and float control of every page reads its URL value through this
    function. The reason is worded to follow ``URL parameter name=value``: "is not a
    number", "is not a finite number", "is not a whole number", "is too long (...)".
    ``±inf``, ``nan``, values that overflow a float (``1e400``) and overlong values are
    refused; integers are whole floats (``5``, ``5.0``, ``1e3``).
    """
    text = raw.strip()
    if len(text) > MAX_URL_VALUE:
        raise ValueError(f"is too long ({len(text)} characters; at most {MAX_URL_VALUE})")
    try:
        v = float(text)
    except (ValueError, OverflowError):
        raise ValueError("is not a number") from None
    if not math.isfinite(v):
        raise ValueError("is not a finite number")
    if integer:
        if not v.is_integer():
            raise ValueError("is not a whole number")
        return int(v)
    return v


def _url_text(v: Any) -> str:
    """``v`` as the URL writes it (``5``, ``0.3``, ``walrus``, ``true``)."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def _pin_url(key: str, text: str) -> None:
    """Make the URL say ``key=text``, also for the widget bound to ``key``.

    A bound widget seeds itself from the URL of the page load (not from the session
    state) and parses it itself: a value this module refused (``inf`` in an integer
    input raises ``OverflowError`` inside Streamlit) or a repeated key (Streamlit takes
    the last) must not reach it. Streamlit has no public call for the page-load copy
    of the query, so it is replaced here, next to the current one.
    """
    from streamlit.runtime.state import get_session_state

    with get_session_state().query_params() as qp:
        initial = getattr(qp, "_initial_query_params", None)
        if isinstance(initial, dict) and key in initial:
            initial[key] = [text]
        qp.set_corrected_value(key, text, "string_value")


class _UrlChecker:
    """Checks one page's URL values once per raw value and remembers what it decided.

    A repeated key (``?k=3&k=5``) counts once: the first value is used, and a note
    says so.
    """

    def __init__(self, ps: PageState):
        self.ps = ps
        self.notes: list[UrlNote] = []

    def fresh(self, key: str, name: str | None = None) -> str | None:
        """The (first) raw URL value of ``key`` if it was not checked yet in this session."""
        vals = st.query_params.get_all(key)
        if not vals:
            return None
        seen = "&".join(vals)
        if self.ps.url_checked.get(key) == seen:
            return None
        self.ps.url_checked[key] = seen
        raw = vals[0]
        if len(vals) > 1:
            shown = ", ".join(v if len(v) <= MAX_URL_VALUE else v[:MAX_URL_VALUE] + "..."
                              for v in vals[:5]) + (", ..." if len(vals) > 5 else "")
            self.notes.append(UrlNote(name or key, shown, f"is given {len(vals)} times "
                                      "(only the first value is read)", raw))
            self.pin(key, raw)
        return raw

    def pin(self, key: str, text: str) -> None:
        _pin_url(key, text)
        self.ps.url_checked[key] = text

    def reject(self, key: str, name: str, raw: str, reason: str, fallback: Any,
               text: Callable[[Any], str] = _url_text) -> None:
        st.session_state[key] = fallback
        if len(raw) > MAX_URL_VALUE:
            raw = raw[:MAX_URL_VALUE] + "..."
        self.notes.append(UrlNote(name, raw, reason, fallback))
        self.pin(key, text(fallback))

    def number(self, key: str, name: str, lo: float, hi: float, default: Any, *,
               integer: bool, validate: Callable[[Any], Any] | None = None,
               grid: bool = False) -> None:
        raw = self.fresh(key, name)
        if raw is None:
            return
        text = fmt if grid else _url_text  # a select-slider matches its labels
        try:
            v = parse_url_number(raw, integer=integer)
            if validate is not None:
                v = validate(v)
        except (ValueError, TypeError) as exc:
            reason = str(exc) if str(exc).startswith("is ") else f"is invalid ({exc})"
            if isinstance(exc, ValueError) and "could not convert" in str(exc):
                reason = "is not a number"
            self.reject(key, name, raw, reason, default, text)
            return
        if v < lo or v > hi:
            used = type(default)(min(max(v, lo), hi)) if not grid else (lo if v < lo else hi)
            self.reject(key, name, raw, f"is outside the control's range [{fmt(lo)}, "
                                        f"{fmt(hi)}]", used, text)
            return
        if raw != text(v):  # " 5", "5.0", "1e3": the widget reads the plain form
            self.pin(key, text(v))
        if grid:
            self.ps.extra_options.setdefault(key, [])
            if v not in self.ps.extra_options[key]:
                self.ps.extra_options[key].append(float(v))

    def choice(self, key: str, name: str, options: list[Any], default: Any) -> None:
        raw = self.fresh(key, name)
        if raw is None:
            return
        if raw not in [str(o) for o in options]:
            self.reject(key, name, raw, "is not one of " + ", ".join(map(str, options)),
                        default)
        else:
            st.session_state[key] = next(o for o in options if str(o) == raw)

    def boolean(self, key: str, name: str, default: bool) -> None:
        raw = self.fresh(key, name)
        if raw is None:
            return
        if raw.lower() not in ("true", "false", "1", "0"):
            self.reject(key, name, raw, "is not true/false", default)


# ----------------------------------------------------------------------------- widgets


def param_widget(p: Param, key: str, container: Any = None, *,
                 low: float | None = None, high: float | None = None,
                 checker: _UrlChecker | None = None) -> Any:
    """The widget of one :class:`~explorer.registry.Param`, bound to the URL query.

    ``low``/``high`` narrow the registry's range (dependent limits).
    """
    c = container or st
    common = {"key": key, "help": p.help or None, "bind": "query-params"}
    ps = checker.ps if checker is not None else None
    validate = p.spec.validate if p.spec is not None else None
    if p.kind == "choice":
        opts = list(p.choices)
        if checker:
            checker.choice(key, p.name, opts, p.default)
        return c.selectbox(p.name, opts, index=opts.index(p.default), **common)
    if p.kind == "bool":
        if checker:
            checker.boolean(key, p.name, bool(p.default))
        return c.toggle(p.name, value=bool(p.default), **common)
    if p.kind == "int":
        ilo = int(low if low is not None else (p.low if p.low is not None else 0))
        ihi = int(high if high is not None else
                  (p.high if p.high is not None else max(10, 10 * int(p.default))))
        idefault = min(max(int(p.default), ilo), ihi)
        if checker:
            checker.number(key, p.name, ilo, ihi, idefault, integer=True, validate=validate)
        _clamp_state(key, ilo, ihi)
        if ihi - ilo <= 200:
            return c.slider(p.name, ilo, ihi, idefault, **common)
        return c.number_input(p.name, ilo, ihi, idefault, step=1, **common)
    if p.log:
        assert p.low is not None and p.high is not None  # a log range is bounded
        lo = float(low if low is not None else p.low)
        hi = float(high if high is not None else p.high)
        if checker:
            checker.number(key, p.name, lo, hi, p.default, integer=False, validate=validate,
                           grid=True)
        opts = log_options(lo, hi, p.default, extra=(ps.extra_options.get(key, []) if ps
                                                     else []))
        default = min(opts, key=lambda v: abs(math.log(v) - math.log(p.default)))
        cur = st.session_state.get(key)
        if cur is not None and cur not in opts:
            st.session_state[key] = min(opts, key=lambda v: abs(math.log(v) - math.log(cur)))
        return c.select_slider(p.name, opts, value=default, format_func=fmt, **common)
    lo = float(low if low is not None else (p.low if p.low is not None else 0.0))
    hi = float(high if high is not None else (p.high if p.high is not None else 1.0))
    default = min(max(float(p.default), lo), hi)
    step = float(p.step) if p.step else (float(p.high or hi) - float(p.low or lo)) / 100
    if checker:
        checker.number(key, p.name, lo, hi, default, integer=False, validate=validate)
    _clamp_state(key, lo, hi)
    return c.slider(p.name, lo, hi, default, step=step, **common)


def _clamp_state(key: str, lo: float, hi: float) -> None:
    cur = st.session_state.get(key)
    if isinstance(cur, (int, float)) and not isinstance(cur, bool) and not lo <= cur <= hi:
        st.session_state[key] = type(cur)(min(max(cur, lo), hi))


def sidebar_controls(entry: ModelEntry, *, fixed: dict[str, Any] | None = None,
                     limits: Limits | None = None) -> Controls:
    """Draw the sidebar; return the chosen configuration.

    ``fixed`` pins parameters that the page sets itself (they get no widget);
    ``limits`` narrows controls whose range depends on the values chosen above them.
    """
    fixed = fixed or {}
    ps = page_state(entry.name)
    check = _UrlChecker(ps)
    sb = st.sidebar
    sb.subheader("Data")
    from .upload import file_controls

    # not bound to the URL: a link names built-in datasets only (it cannot carry a file)
    source = sb.segmented_control("data source", ["built-in", YOUR_FILE], default="built-in",
                                  key="data_source") or "built-in"
    chosen_file = source == YOUR_FILE
    file_source = file_controls(entry, sb) if chosen_file else None
    names = list(entry.datasets)
    # no format_func: a bound selectbox writes its displayed text into the URL, and the
    # URL should carry the short name (``?dataset=digits``)
    check.choice("dataset", "dataset", names, names[0])
    ds = sb.selectbox("dataset", names, index=0, key="dataset", bind="query-params",
                      disabled=chosen_file)
    dataset = entry.datasets[ds]
    sb.caption(dataset.title if not chosen_file else "(built-in datasets: choose 'built-in' "
               "above)")
    pnames = {p.name for p in entry.params}
    # Datasets share size names (n, d, ...): on a switch, start from the new defaults.
    switched = ps.dataset not in (None, ds)
    ps.dataset = ds
    chosen: dict[str, Any] = {}
    limited: list[str] = []

    def bounds(name: str, low: Any, high: Any) -> tuple[Any, Any]:
        if limits is None:
            return low, high
        lim = limits(dict(chosen)).get(name)
        if lim is None:
            return low, high
        lo, hi, why = lim
        new = (type(low)(max(low, lo)), type(high)(min(high, hi)))
        if new != (low, high):
            limited.append(f"**{name}** ≤ {fmt(new[1])}: {why}")
        return new

    sizes: dict[str, int | float] = {}
    for name, (default, low, high) in ({} if chosen_file else dataset.sizes).items():
        key = f"data_{name}" if name in pnames or name in ("tol", "max_iter") else name
        low, high = bounds(name, low, high)
        integer = isinstance(default, int)
        dflt = type(default)(min(max(default, low), high))
        if switched:
            st.session_state[key] = dflt
        else:
            check.number(key, name, low, high, dflt, integer=integer)
        _clamp_state(key, low, high)
        label = f"{name} (0 = all)" if dataset.real and name == "n" else name
        if integer:
            sizes[name] = int(sb.slider(label, int(low), int(high), int(dflt), key=key,
                                        bind="query-params"))
        else:
            step = float(dataset.sizes[name][2] - dataset.sizes[name][1]) / 100
            sizes[name] = float(sb.slider(label, float(low), float(high), float(dflt),
                                          step=step, key=key, bind="query-params"))
        chosen[name] = sizes[name]
    check.number("data_seed", "data seed", 0, 10_000, 0, integer=True)
    data_seed = int(sb.number_input("data seed", 0, 10_000, 0, key="data_seed",
                                    bind="query-params"))
    sb.subheader("Model")
    params = {}
    for p in entry.params:
        if p.name in fixed:
            params[p.name] = fixed[p.name]
        else:
            lo, hi = (p.low, p.high)
            if p.kind in ("int", "float") and p.low is not None and p.high is not None:
                lo, hi = bounds(p.name, p.low, p.high)
            params[p.name] = param_widget(p, p.name, sb, low=lo, high=hi, checker=check)
        chosen[p.name] = params[p.name]
    sb.subheader("Solver")
    tol_default = min(TOL_OPTIONS, key=lambda v: abs(math.log(v) - math.log(entry.tol)))
    check.number("tol", "tol", 1e-12, 0.01, tol_default, integer=False, grid=True)
    tol_opts = sorted(set(TOL_OPTIONS) | set(ps.extra_options.get("tol", [])))
    tol = sb.select_slider("tol (relative gap)", tol_opts, value=tol_default, format_func=fmt,
                           key="tol", bind="query-params")
    check.number("max_iter", "max_iter", 1, 1_000_000, int(entry.max_iter), integer=True)
    max_iter = int(sb.number_input("max_iter", 1, 1_000_000, int(entry.max_iter), step=10,
                                   key="max_iter", bind="query-params"))
    if limited:
        sb.caption("Limits that depend on other controls: " + "; ".join(limited))
    c = Controls(ds, sizes, data_seed, params, float(tol), max_iter, notes=check.notes,
                 limited=limited)
    if chosen_file:
        c.dataset, c.source = YOUR_FILE, file_source
    # the note says which value the control actually took
    values = {**{f"data_{k}" if k in pnames else k: v for k, v in sizes.items()}, **params,
              "dataset": ds, "tol": c.tol, "max_iter": max_iter, "data_seed": data_seed}
    c.notes = [UrlNote(n.name, n.raw, n.reason, values.get(_key_of(n.name, pnames, sizes),
                                                           n.used)) for n in check.notes]
    return c


def _key_of(name: str, pnames: set[str], sizes: Mapping[str, Any]) -> str:
    if name == "data seed":
        return "data_seed"
    return f"data_{name}" if name in sizes and name in pnames else name
