"""Make the packages beside this file part of ``solvers`` and ``explorer.models``.

``python -m pytest -p plugin`` (with this folder on ``PYTHONPATH``) or ``extend()`` in a
script: the toy model's files then sit where ``CONTRIBUTING.md`` puts a new model's.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def extend() -> None:
    """Append this folder's ``solvers``, ``solvers/reference`` and ``explorer/models``."""
    import explorer.models
    import solvers
    import solvers.reference

    for pkg, sub in ((solvers, "solvers"), (solvers.reference, "solvers/reference"),
                     (explorer.models, "explorer/models")):
        path = str(HERE / sub)
        if path not in pkg.__path__:
            pkg.__path__.append(path)


def pytest_configure(config: object) -> None:
    extend()
