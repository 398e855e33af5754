"""How a fitted metric is saved and applied (:class:`solvers.saved.SavedForm`).

The saved model holds ``L`` with ``M = L^T L`` (``transform(X) = X L^T``: Euclidean
distances there are the learned ones), optionally ``M`` itself, and optionally reference
points ``X_ref`` with class codes ``y_ref``: ``predict`` is then the label of the nearest
reference point under ``M`` (1-NN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..saved import SavedForm, array_specs

__all__ = ["SAVED_FORM", "metric_factor"]


def metric_factor(M: np.ndarray) -> np.ndarray:
    """``L`` with ``M = L^T L`` (``M`` a PSD matrix, or its diagonal as a vector).

    Parameters
    ----------
    M : ndarray
        The metric, (d, d) or its diagonal (d,).

    Returns
    -------
    ndarray
        ``L`` (d, d): the eigenvectors scaled by the square roots of the eigenvalues
        (negative rounding clipped to 0), one row per eigenvalue.
    """
    M = np.diag(M) if M.ndim == 1 else M
    w, V = np.linalg.eigh((M + M.T) / 2)
    return (V * np.sqrt(np.maximum(w, 0.0))).T


def _transform(sm: Any, X: np.ndarray, _tasks: Any) -> np.ndarray:
    return X @ sm.arrays["L"].T


def _predict(sm: Any, X: np.ndarray, _tasks: Any) -> np.ndarray:
    a = sm.arrays
    if "X_ref" not in a:
        raise ValueError("this metric model was saved without reference points; "
                         "use transform(X)")
    Z, R = _transform(sm, X, None), a["X_ref"] @ a["L"].T
    d2 = (np.einsum("ij,ij->i", Z, Z)[:, None] - 2.0 * Z @ R.T
          + np.einsum("ij,ij->i", R, R)[None, :])
    codes = a["y_ref"][np.argmin(d2, axis=1)]
    return sm.class_names[codes] if sm.class_names is not None else codes


def _check(sm: Any, bad: Any, sizes: dict[str, tuple[int, str]]) -> None:
    has_x, has_y = "X_ref" in sm.arrays, "y_ref" in sm.arrays
    if has_x != has_y:
        raise bad("arrays.X_ref" if has_y else "arrays.y_ref",
                  "the reference points need both X_ref and y_ref")
    if has_y and sm.arrays["y_ref"].size:
        yr = sm.arrays["y_ref"]
        top = sizes["c"][0] if "c" in sizes else None
        if yr.min() < 0 or (top is not None and yr.max() >= top):
            raise bad("arrays.y_ref", f"class codes must lie in [0, "
                                      f"{top if top is not None else 'inf'}), got "
                                      f"[{int(yr.min())}, {int(yr.max())}]")


def _prepare(res: Any, est: Any, arrays: dict[str, np.ndarray], names: dict[str, Any],
             reference: Any) -> None:
    arrays["L"] = (np.array(est.components_) if est is not None
                   else metric_factor(np.asarray(res.M)))
    if reference is None:
        return
    Xr = np.asarray(reference[0], dtype=np.float64)
    yr = np.asarray(reference[1])
    if Xr.ndim != 2 or Xr.shape[1] != arrays["L"].shape[1] or yr.shape != (Xr.shape[0],):
        raise ValueError("reference must be (X (n, d), y (n,)) of the model's features")
    if yr.dtype.kind not in "iu":
        cls, yr = np.unique(yr, return_inverse=True)
        if names["class_names"] is None:
            names["class_names"] = cls
    arrays["X_ref"], arrays["y_ref"] = Xr, yr.astype(np.int64)


#: How a fitted metric is saved and applied.
SAVED_FORM = SavedForm(
    arrays=array_specs(("L", "r d", True), ("M", "d d", False, "iuf", "d"), ("X_ref", "p d"),
                       ("y_ref", "p", False, "iu")),
    names={"feature_names": "d", "class_names": "c", "task_names": None},
    features=("L", 1), decide=_transform, predict=_predict, transform=True, reference=True,
    kind="metric",
    check=_check, prepare=_prepare)
