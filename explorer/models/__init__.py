"""One subpackage per model; each defines ``ENTRY`` (an :class:`explorer.registry.ModelEntry`).

Layout of a model subpackage::

    __init__.py   ENTRY: datasets, parameters, solve/reference adapters, bench, page
    data.py       synthetic generator(s) faithful to the paper + real-data loaders
    figures.py    plotly figure builders (pure functions of results)
    page.py       the Streamlit page: ``render()``
    bench.py      ``run(quick, progress) -> BenchReport``
"""
