"""svmlight / LIBSVM files (scikit-learn's reader), read within the size and line
bounds; sparse CSR features."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .base import DataFileError, ReadRequest, Table, gz_error, one_line
from .text import bounded_text, check_text

__all__ = ["FORMATS", "NAMED_COLUMNS", "TEXT", "read"]

#: Format name -> file extensions.
FORMATS: dict[str, tuple[str, ...]] = {"svmlight": (".svm", ".libsvm", ".svmlight", ".txt")}
#: Whether the columns have names (the preprocessing's columns, a model's features).
NAMED_COLUMNS = False
#: A text format (a ``.gz`` suffix is accepted).
TEXT = True


def read(p: Path, fmt: str, req: ReadRequest) -> Table:
    """A svmlight/LIBSVM file. ``zero_based`` None (a training file): the index base is
    the file's own (0 if it uses feature 0, else 1, as scikit-learn's ``"auto"``) and is
    recorded in ``extra["zero_based"]``; given (a test or predict file): the training
    file's base and ``n_features``, so the columns line up whatever indices it uses."""
    from sklearn.datasets import load_svmlight_file

    features, n_features = req.features, req.n_features  # svmlight rows always have a label
    zero_based, max_bytes = req.zero_based, req.max_bytes

    check_text(p, fmt)
    own = zero_based is None
    try:
        kw = {"n_features": n_features} if n_features and not own else {}
        with bounded_text(p, max_bytes, req.max_line_bytes) as fh:
            X, y, qid = load_svmlight_file(fh, query_id=True, dtype=np.float64,
                                           zero_based=True if own else bool(zero_based),
                                           **kw)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise gz_error(p, exc) from None
    except OverflowError:
        raise DataFileError(f"{p.name}: a feature index (or qid) is too large (beyond "
                            f"{np.iinfo(np.int32).max:,}); not a usable svmlight/LIBSVM "
                            "file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        text = one_line(exc)
        if "Invalid index 0" in text:
            raise DataFileError(f"{p.name}: uses feature index 0, but the training file's "
                                "features are numbered from 1 (one-based); the test file "
                                "must use the training file's numbering") from None
        if "n_features was set to" in text:
            raise DataFileError(f"{p.name}: uses feature indices beyond the training "
                                f"file's {n_features} features ({text})") from None
        raise DataFileError(f"{p.name}: not a valid svmlight/LIBSVM file ({text})"
                            ) from None
    if X.shape[0] == 0:
        raise DataFileError(f"{p.name}: no data rows")
    X = X.tocsr()
    if own:  # scikit-learn's "auto": one-based unless feature 0 occurs
        zero_based = bool(X.nnz == 0 or X.indices.min() == 0)
        if not zero_based:
            X = X[:, 1:]
        if n_features:
            X = _pad_columns(X, n_features, p)
    if not np.all(np.isfinite(X.data)):
        i = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0],
                                side="right") - 1)
        raise DataFileError(f"{p.name}: line {i + 1}: a feature value is not finite")
    if not np.all(np.isfinite(y)):
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        raise DataFileError(f"{p.name}: line {i + 1}: the label is not finite")
    yy = y.astype(np.int64) if np.all(y == np.round(y)) else y
    tasks = np.asarray(qid, dtype=np.int64) if np.unique(qid).size > 1 else None
    X.sort_indices()
    names = tuple(features) if features is not None else tuple(
        f"f{j}" for j in range(X.shape[1]))
    return Table(X=X, y=yy, feature_names=names, path=str(p), fmt=fmt, tasks=tasks,
                 label_name="label", task_name="qid" if tasks is not None else None,
                 extra={"zero_based": bool(zero_based)})


def _pad_columns(X: Any, n: int, p: Path) -> Any:
    """``X`` with ``n`` columns (empty ones added on the right); refuses more than ``n``."""
    import scipy.sparse as sp

    if X.shape[1] > n:
        raise DataFileError(f"{p.name}: uses feature indices beyond the training file's "
                            f"{n} features")
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n))
