"""Result objects of :func:`solve` and :func:`path`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ..base import Result, _frozen_array
from ..validation import (
    check_matrix,
)

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class TripletResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    M : ndarray, shape (d, d) or (d,)
        The learned metric (PSD), or its nonnegative diagonal.
    alpha : ndarray, shape (n_t,)
        The dual point of the certificate, ``D(alpha) = dual``: the KKT variables
        ``-loss'(<M', H_t>)`` at the iterate ``M'`` whose dual value was the best (or the
        dual solver's iterate), 1 on the triplets screened into L-hat and 0 on R-hat at
        that point.
    screened_L, screened_R : ndarray of int64
        Indices (rows of the triplet array) screened into L-hat / R-hat.
    lam : float
    radius : float
        Certified distance to the optimum: ``||M - M*||_F <= sqrt(2 gap / lam)``.
    loss_value : float
        The data term ``sum_t loss(<M, H_t>)``.
    n_triplets : int
    screening_log : Mapping[str, ndarray]
        One entry per (round, sphere): ``iteration``, ``sphere``, ``rule``,
        ``radius``, ``new_L``, ``new_R`` (triplets newly screened by that sphere),
        ``total_L``, ``total_R`` after the round, ``seconds``.
    step : float
        Last projected-gradient step (reused by warm starts).
    triplet_visits : int
        Triplets touched by loss passes and rule evaluations (a machine-independent
        cost: the naive solver touches every triplet once per iteration).
    fingerprint : tuple
        Identifies the triplet set (warm starts must use the same one).
    profile : Mapping[str, float]
        Where the time went (seconds): ``loss_pass`` (passes over the remaining
        triplets), ``pair_forms`` (per-pair quadratic forms and weighted sums),
        ``eig`` (``d x d`` eigendecompositions), ``screening`` (rules, status updates,
        compaction, the screened-triplet check); and ``loss_pass_visits``, the triplets
        the loss passes (the dual method: its passes over ``alpha``) touched, the part
        of :attr:`triplet_visits` that is not screening.
    notes : tuple of str
        What the solver decided on the fly (e.g. dynamic screening backing off).
    """

    M: np.ndarray
    alpha: np.ndarray
    screened_L: np.ndarray
    screened_R: np.ndarray
    lam: float
    radius: float
    loss_value: float
    n_triplets: int
    screening_log: Mapping[str, np.ndarray] = field(default_factory=dict)
    step: float = float("nan")
    fingerprint: tuple = ()
    triplet_visits: int = 0
    profile: Mapping[str, float] = field(default_factory=dict)
    notes: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "profile", MappingProxyType(dict(self.profile)))
        object.__setattr__(self, "notes", tuple(self.notes))
        log = {k: _frozen_array(v) for k, v in dict(self.screening_log).items()}
        object.__setattr__(self, "screening_log", MappingProxyType(log))

    @property
    def screening_rate(self) -> float:
        """Fraction of triplets screened at the end of the solve."""
        return (self.screened_L.size + self.screened_R.size) / max(self.n_triplets, 1)

    def status(self) -> np.ndarray:
        """Per triplet: 0 not screened, 1 screened into L-hat, 2 into R-hat."""
        s = np.zeros(self.n_triplets, dtype=np.int8)
        s[self.screened_L] = 1
        s[self.screened_R] = 2
        return s

    def transform(self, X: Any) -> np.ndarray:
        """Map ``X`` to the learned metric's space: ``X L`` with ``M = L L^T``."""
        X = check_matrix(X, "X", n_cols=self.M.shape[0])
        if self.M.ndim == 1:
            return X * np.sqrt(np.maximum(self.M, 0.0))
        w, V = np.linalg.eigh(self.M)
        return X @ (V * np.sqrt(np.maximum(w, 0.0)))


@dataclass(frozen=True, eq=False, kw_only=True)
class PathResult:
    """Result of :func:`path`: one entry per ``lambda`` of the regularisation path.

    Attributes
    ----------
    lambdas, primal, dual, gap, loss, n_iter, time : ndarray, shape (n_lam,)
        ``loss`` is the data term used by the termination rule; ``time`` the
        seconds spent on that lambda (screening included, ``compare`` excluded).
    Ms : ndarray, shape (n_lam, d, d) or (n_lam, d)
    rate_path : ndarray
        Fraction of triplets screened at the start of each lambda (path screening).
    rate_final : ndarray
        Fraction screened at the end of each lambda (path + dynamic screening).
    rate_range : ndarray
        Fraction screened by the range-based extension (``range_screening=True``).
    rate_by_sphere : Mapping[str, ndarray]
        Per sphere of ``screening``: fraction newly screened by it at path screening.
    compare_rates : Mapping[str, ndarray]
        ``"sphere:rule"`` -> fraction that sphere and rule alone screen at the start
        of each lambda (evaluated on all triplets, not used to screen).
    dynamic_rates : ndarray, shape (n_lam, n_rounds)
        Fraction screened after each screening round (NaN padded).
    triplet_visits : ndarray
        Per lambda: triplets touched by loss passes and screening rules.
    converged : ndarray of bool
        Per lambda: whether the solve reached ``tol``.
    n_triplets : int
    lam_max : float
    terminated_by : str
        ``"rule"`` (the paper's loss-decrease rule), ``"n_lambdas"``, ``"lambdas"`` (the
        end of a given grid), ``"lam_min"`` or ``"callback"``.
    total_time : float
    profile : Mapping[str, float]
        Seconds per part and ``loss_pass_visits`` summed over the path (see
        :attr:`TripletResult.profile`), and ``triplets_visited``.
    notes : tuple of str
        The per-lambda notes (``"lam=...: ..."``), e.g. dynamic screening backing off.
    params : Mapping[str, Any]
    final : TripletResult or None
        The last lambda's whole result (screened sets, certificate, history), as
        :func:`solve` returns it (None when no lambda ran).
    """

    lambdas: np.ndarray
    Ms: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    gap: np.ndarray
    loss: np.ndarray
    n_iter: np.ndarray
    time: np.ndarray
    rate_path: np.ndarray
    rate_final: np.ndarray
    rate_range: np.ndarray
    rate_by_sphere: Mapping[str, np.ndarray]
    compare_rates: Mapping[str, np.ndarray]
    dynamic_rates: np.ndarray
    triplet_visits: np.ndarray
    n_triplets: int
    lam_max: float
    terminated_by: str
    total_time: float
    converged: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)
    profile: Mapping[str, float] = field(default_factory=dict)
    notes: tuple = ()
    final: TripletResult | None = None

    def __post_init__(self) -> None:
        for name in ("lambdas", "Ms", "primal", "dual", "gap", "loss", "n_iter", "time",
                     "rate_path", "rate_final", "rate_range", "dynamic_rates", "converged",
                     "triplet_visits"):
            object.__setattr__(self, name, _frozen_array(getattr(self, name)))
        for name in ("rate_by_sphere", "compare_rates"):
            d = {k: _frozen_array(v) for k, v in dict(getattr(self, name)).items()}
            object.__setattr__(self, name, MappingProxyType(d))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "profile", MappingProxyType(dict(self.profile)))
        object.__setattr__(self, "notes", tuple(self.notes))

    @property
    def total_iterations(self) -> int:
        return int(np.sum(self.n_iter))
