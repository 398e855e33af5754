"""The weights of the solver's cost models, in one table.

The screening decisions (whether a path-screening pass, a dynamic round or an early
refresh of the active set pays) compare predicted work in *loss-pass visits*:
one visit is one triplet of a loss pass by pair ids (:func:`.kernels._evaluate`). The
weights below convert the other kinds of work into that unit; they are fitted to the
bench's timings (``dualscope bench triplet_screening``) and may need refitting on
another machine. They change which rounds run, never what a round certifies: screening
stays safe whatever the weights.

A :class:`Tuning` is passed to :func:`.api.solve` and :func:`.regpath.path` as
``_tuning`` (default :data:`DEFAULT`); the fields that differ from the default are
recorded in ``result.params["_tuning"]``.

Not in the table: :data:`.pairs.BLOCK_ROW` (the shortest average row for which the
triplets are kept in anchor blocks), fixed when a :class:`.TripletProblem` is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

__all__ = ["DEFAULT", "Tuning"]

#: Fields counted in whole units (triplets, lambdas): positive integers.
_INTS = ("sample", "probe_min", "retest_min", "theta_sample", "skip_lambdas")
#: Fields that are shares or factors in (0, 1].
_SHARES = ("cand_share", "adaptive_shrink", "dual_shrink", "pair_compaction")


@dataclass(frozen=True)
class Tuning:
    """Cost-model weights and decision thresholds of the triplet solver.

    *Visits* are loss-pass visits (one triplet of a loss pass by pair ids). "Table n" is
    the bench table (``dualscope bench triplet_screening``) whose measurements refit the
    field: 0 "screened vs naive paths" (with the time per part), 1 the whole path, 4 the
    hinge path, 6 the paper's practical setting (the active set on the fine path).

    Attributes
    ----------
    block_triplet_weight : float
        Path screening's anchor-block pass (:func:`.kernels._path_rule_blocks`), visits
        per triplet (margins and rule). Table 0.
    block_row_weight : float
        The same pass, visits per row of a block (sums, pair counts, pairs in use). Table 0.
    keep_weight : float
        The same pass, visits per triplet that remains (compaction). Table 0.
    pair_pass_weight : float
        Path screening's pair-id pass (:func:`.kernels._path_rule`), visits per triplet.
        Table 0.
    path_overhead : float
        Fixed cost of a path-screening pass or re-test (the sphere, the fold of L-hat,
        the new subset), visits. Table 0.
    scan_weight : float
        The range-based scan (:func:`.kernels._path_scan`), visits per evaluated triplet.
        Table 1.
    pass_weight : float
        The range-based scan's threshold pass, visits per triplet. Table 1.
    cand_weight : float
        A re-test of path screening (:func:`.kernels._path_retest`), visits per candidate
        looked at. Table 6.
    retest_weight : float
        The same re-test, visits per triplet re-tested (two pair forms, the rule). Table 6.
    path_pay_margin : float
        Path screening runs at a lambda when its predicted gain is at least this many
        times its predicted cost (the model is optimistic in situ). Table 0.
    probe_min : int
        Above this many triplets, the share a path-screening pass would screen is
        estimated on a sample first. Table 0.
    sample : int
        Size of that sample (triplets; standard error under 1.6 points of share).
    retest_min : int
        Below this many triplets path screening always runs the full pass (no candidates
        kept). Table 6.
    cand_share : float
        Share of all triplets a full pass keeps as candidates for re-testing (the
        slack-radius quantile ``theta``), in (0, 1]. Table 6.
    theta_sample : int
        Sample on which that quantile is estimated (triplets).
    pair_weight : float
        Per-pair forms and weighted sums, visits per pair and dimension (what a screened
        triplet also saves, :func:`.pathscreen.visits_saved`). Table 0.
    gram_weight : float
        The Gram route's products over the points (:class:`.pairs._Forms`), visits per
        multiply-add. Table 6.
    pair_compaction : float
        A subset of triplets keeps its parent's pairs unless fewer than this share of
        them remain in use (:meth:`.pairs._Data.restrict`), in (0, 1]; 1: any pair out
        of use is dropped. Compacting costs a pass over the subset, the per-pair forms
        ``O(P d)`` per evaluation. Table 0.
    pay_margin : float
        A dynamic screening round runs only when its best-case gain
        is at least this many times its cost. Table 0.
    round_overhead : float
        Fixed cost of a dynamic screening round (spheres, bookkeeping, Python), visits.
        Table 0.
    rule_weight : float
        A screening round's rule pass with the status update, visits per remaining
        triplet and sphere. Table 0.
    skip_lambdas : int
        Lambdas without dynamic rounds after one on which they did not pay (doubled
        while that repeats; a schedule, not fitted).
    adaptive_shrink : float
        Adaptive dynamic screening: a round is due when the duality-gap ball's radius
        is below this share of the last screening sphere's radius, in (0, 1].
    workset_weight : float
        Building the active set's working set at a refresh (:func:`.kernels._work_set`),
        visits per remaining triplet. Table 6.
    refresh_overhead : float
        Cost of an active-set refresh beyond its passes (certificate, history row, the
        working set's arrays, Python), visits. Table 6.
    block_pass_triplet : float
        A loss pass in anchor blocks (:func:`.kernels._block_loss_pass`), visits of the
        pair-id pass per triplet. Table 0.
    block_pass_row : float
        The same pass, visits per row of a block. Table 0.
    sorted_pass_element : float
        The sorted loss pass (:func:`.kernels._sorted_loss_pass`), visits per row and
        column of its blocks. Table 0.
    dual_shrink : float
        The dual method's APG lets its step grow back by ``L <- dual_shrink L`` before
        each line search (TFOCS's default 0.9), in (0, 1]. Table 4.
    """

    block_triplet_weight: float = 0.5
    block_row_weight: float = 32.0
    keep_weight: float = 2.1
    pair_pass_weight: float = 7.0
    path_overhead: float = 34_000
    scan_weight: float = 6.0
    pass_weight: float = 0.5
    cand_weight: float = 0.5
    retest_weight: float = 4.0
    path_pay_margin: float = 1.5
    probe_min: int = 65_536
    sample: int = 1024
    retest_min: int = 65_536
    cand_share: float = 0.1
    theta_sample: int = 4096
    pair_weight: float = 0.15
    gram_weight: float = 0.02
    pair_compaction: float = 1.0
    pay_margin: float = 2.0
    round_overhead: float = 40_000
    rule_weight: float = 3.5
    skip_lambdas: int = 3
    adaptive_shrink: float = 0.5
    workset_weight: float = 2.0
    refresh_overhead: float = 100_000
    block_pass_triplet: float = 0.15
    block_pass_row: float = 7.5
    sorted_pass_element: float = 2.5
    dual_shrink: float = 0.9

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in _INTS:
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise ValueError(f"Tuning.{f.name} must be a nonnegative int, got {v!r}")
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(v) or v < 0:
                raise ValueError(f"Tuning.{f.name} must be a finite number >= 0, got {v!r}")
            if f.name in _SHARES and not 0 < v <= 1:
                raise ValueError(f"Tuning.{f.name} must be in (0, 1], got {v!r}")

    def overrides(self) -> dict[str, Any]:
        """The fields that differ from :data:`DEFAULT` (what ``result.params`` records),
        as a new dict (cached: each lambda of a path records it)."""
        return dict(self._overrides)

    @cached_property
    def _overrides(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(DEFAULT, f.name)}


#: The default table, fitted to the bench's timings (see :class:`Tuning`).
DEFAULT = Tuning()
