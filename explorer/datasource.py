"""Where a problem's data comes from: one value for the CLI, the sweeps and the pages.

A :class:`DataSource` is either a built-in dataset of a model (its name, sizes and the
seed that draws it) or a user's data file (its path and the reading options: the
label/task/time columns, the format, a held-out file or fraction). Its :attr:`~DataSource.key`
is its serialised form: the dataset's name for a built-in one, the ``file:PATH?...``
name of ``explorer.datafiles.file_spec`` for a file; :meth:`DataSource.parse` reads
both back. Sweeps carry the key in their ``dataset`` column, so a row names exactly the
data it was solved on.

Examples
--------
>>> from explorer.datasource import DataSource
>>> src = DataSource.parse("wwsvm", "blobs", sizes={"n": 60, "k": 3, "d": 4}, seed=1)
>>> src.key, src.is_file
('blobs', False)
>>> src.problem().data["X"].shape
(60, 4)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from . import datafiles, registry
from .datafiles import FILE_PREFIX

__all__ = ["DataSource", "resolve"]


def _frozen(m: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class DataSource:
    """A model's data: a built-in dataset with sizes and seed, or a file with options.

    Parameters
    ----------
    model : str
        The registry name of the model the data is for.
    name : str
        The built-in dataset's name, or ``""`` for a file.
    sizes : Mapping
        A built-in dataset's sizes (the others take their defaults).
    seed : int
        The seed that draws a built-in dataset, or a file's ``test_size`` split.
    path : str or None
        The data file (absolute), or None for a built-in dataset.
    options : Mapping
        A file's reading options (``explorer.datafiles.file_spec``'s keywords).
    """

    model: str
    name: str = ""
    sizes: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", _frozen(self.sizes))
        object.__setattr__(self, "options", _frozen(self.options))

    @classmethod
    def parse(cls, model: str, name: str | None = None, *,
              sizes: Mapping[str, Any] | None = None, seed: int = 0) -> DataSource:
        """The source named ``name``: a ``file:`` key or a built-in dataset's name.

        Parameters
        ----------
        model : str
            The model's registry name.
        name : str or None
            A :attr:`key`; None is the model's default dataset.
        sizes : Mapping, optional
            A built-in dataset's sizes (a file has none).
        seed : int
            The seed of the data.

        Returns
        -------
        DataSource

        Raises
        ------
        ValueError
            An unknown dataset (naming the available ones), an unknown file option, or
            sizes given for a file.
        """
        entry = registry.get(model)
        name = name or entry.default_dataset
        if name.startswith(FILE_PREFIX):
            if sizes:
                raise ValueError(f"sizes {sorted(sizes)} apply to the built-in datasets, "
                                 "not to a data file")
            path, opts = datafiles.parse_file_spec(name)
            return cls(model=model, seed=seed, path=path, options=opts)
        if name not in entry.datasets:
            raise ValueError(f"model {model} has no dataset {name!r}; "
                             f"available: {list(entry.datasets)}")
        return cls(model=model, name=name, sizes=dict(sizes or {}), seed=seed)

    @classmethod
    def from_file(cls, model: str, path: str | os.PathLike, *, seed: int = 0,
                  **options: Any) -> DataSource:
        """The source of a data file read with ``options`` (label, task, time, ...)."""
        return cls.parse(model, datafiles.file_spec(path, **options), seed=seed)

    @property
    def is_file(self) -> bool:
        """Whether the data is a user's file."""
        return self.path is not None

    @property
    def key(self) -> str:
        """The serialised source (without sizes and seed): what :meth:`parse` reads."""
        if self.path is not None:
            return datafiles.file_spec(self.path, **self.options)
        return self.name

    def dataset(self) -> registry.Dataset:
        """The :class:`explorer.registry.Dataset` that builds this source's problems."""
        if self.path is not None:
            return datafiles.file_dataset(self.model, self.key)
        return registry.get(self.model).datasets[self.name]

    def read(self) -> tuple[registry.Problem, datafiles.Table]:
        """A file's problem and the table read from it (for a preview).

        Returns
        -------
        (explorer.registry.Problem, explorer.datafiles.Table)
            As :func:`explorer.datafiles.read_problem` reads them (``seed`` draws a
            ``test_size`` split).

        Raises
        ------
        ValueError
            For a built-in dataset (it has no file).
        """
        if self.path is None:
            raise ValueError(f"{self.name!r} is a built-in dataset, not a file")
        return datafiles.read_problem(self.model, self.path, seed=self.seed, **self.options)

    def problem(self) -> registry.Problem:
        """The problem of this source (built-in: drawn with :attr:`seed` at :attr:`sizes`)."""
        return self.dataset()(seed=self.seed, **self.sizes)


def resolve(model: str, name: str | None = None) -> tuple[str, registry.Dataset]:
    """``(key, Dataset)`` of the source named ``name``.

    Parameters
    ----------
    model : str
        The model's registry name.
    name : str or None
        A built-in dataset's name or a ``file:`` key (None: the model's default).

    Returns
    -------
    (str, explorer.registry.Dataset)
        The source's key and the dataset that builds its problems.
    """
    src = DataSource.parse(model, name)
    return src.key, src.dataset()
