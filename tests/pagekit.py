"""Helpers shared by the AppTest page tests: open a model page, read its metrics and charts."""

from __future__ import annotations

import base64
import json

import numpy as np
from streamlit.testing.v1 import AppTest

TIMEOUT = 120


def model_page(name: str) -> AppTest:
    """The registered page of model ``name`` as a headless AppTest (not yet run)."""
    return AppTest.from_string(
        f"from explorer.registry import get\nget({name!r}).render_page()",
        default_timeout=TIMEOUT,
    )


def loaded(name: str) -> AppTest:
    """The page of model ``name`` after its first run, which must show no error."""
    at = model_page(name)
    at.run()
    ok(at)
    return at


def ok(at: AppTest) -> None:
    """No exception and no error message on the page."""
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def metrics(at: AppTest) -> dict[str, str]:
    """``label -> value`` of every ``st.metric``."""
    return {m.label: m.value for m in at.metric}


def specs(at: AppTest) -> list[dict]:
    """The plotly figure JSON of every chart, in page order."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def title(spec: dict) -> str:
    """A figure's title text ('' when it has none; the line breaks of a wrapped title
    read as spaces)."""
    t = spec.get("layout", {}).get("title", {})
    text = t.get("text", "") if isinstance(t, dict) else str(t or "")
    return (text or "").replace("<br>", " ")


def titles(at: AppTest) -> list[str]:
    """The titles of every chart, in page order."""
    return [title(s) for s in specs(at)]


def chart(at: AppTest, prefix: str) -> dict:
    """The first chart whose title starts with ``prefix`` (fails listing the titles present)."""
    found = [s for s in specs(at) if title(s).startswith(prefix)]
    assert found, f"no chart titled {prefix!r}; have {titles(at)}"
    return found[0]


def array(v) -> np.ndarray:
    """A plotly data array: a list, or a typed array ``{"dtype", "bdata", "shape"}``."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            dims = shape if isinstance(shape, list) else [int(x) for x in str(shape).split(",")]
            a = a.reshape(dims)
        return a.astype(float)
    return np.asarray(v, dtype=float)
