"""Bring X and y to the kernel's form: raw CSR buffers (no copy when possible), float64 targets."""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from pgs import _core
from pgs.rules.losses import loss_spec

_FLOATS = (np.float32, np.float64)
_INDEX = (np.int32, np.int64)


@dataclass(eq=False)
class CSRBuffers:
    """The three CSR arrays handed to the kernel (float32/64 data, int32/64 indices and
    indptr of one dtype) and the matrix's shape. `entries_checked`: every column index and
    value was checked, not only the index pointer (see `entry_problem`)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple
    entries_checked: bool = True

    def matrix(self):
        """The buffers as a scipy CSR matrix (no copy)."""
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape, copy=False)


#: Entries per chunk of `check_csr`'s scan (bounded temporaries on any X).
_CHECK_CHUNK = 2**20


def check_csr(data, indices, indptr, n_features, entries=True):
    """None when raw CSR buffers (of at least one row) are consistent, else a message naming
    the first problem: an invalid index pointer, then (unless ``entries=False``: the kernel
    checks each row it reads) a column index outside ``[0, n_features)`` or a non-finite
    value."""
    if (indptr[0] < 0 or indptr[-1] > data.shape[0] or indptr[-1] > indices.shape[0]
            or np.any(indptr[1:] < indptr[:-1])):
        return "indptr is not a valid CSR index pointer for its data and indices"
    for lo in range(int(indptr[0]), int(indptr[-1]), _CHECK_CHUNK) if entries else ():
        hi = min(lo + _CHECK_CHUNK, int(indptr[-1]))
        cols, values = indices[lo:hi], data[lo:hi]
        bad_col = (cols < 0) | (cols >= n_features)
        bad = bad_col | ~np.isfinite(values)
        if np.any(bad):
            j = int(np.argmax(bad))
            if bad_col[j]:
                return f"column index {cols[j]} is outside [0, {n_features})"
            return f"X contains a non-finite value ({values[j]})"
    return None


def _dense_to_csr(X):
    """A dense 2-D array's CSR buffers (data float32 or float64; int32 indices and index
    pointer where they fit, as scipy makes them): the compiled `pgs._core.dense_row_counts`
    and `dense_fill`."""
    X = np.ascontiguousarray(X, dtype=X.dtype if X.dtype in _FLOATS else np.float64)
    indptr = _core.dense_row_counts(X)
    index = np.int32 if max(indptr[-1], X.shape[1]) <= np.iinfo(np.int32).max else np.int64
    data, indices = np.empty(indptr[-1], dtype=X.dtype), np.empty(indptr[-1], dtype=index)
    _core.dense_fill(X, data, indices)
    return data, indices, indptr.astype(index, copy=False)


def as_csr_buffers(X, *, name="X", check_entries=True):
    """Return `X` as `CSRBuffers`, reading a CSR float32/64 matrix's buffers in place (other
    input is converted once). ``check_entries=False`` checks only the index pointer, for a
    kernel that checks each row it reads (a full pass would cost as much as a cyclic epoch).
    TypeError for non-numeric or complex input, ValueError for anything else wrong."""
    if isinstance(X, CSRBuffers):      # (validated: the estimators check X once for all)
        problem = entry_problem(X) if check_entries else None
        if problem is not None:
            raise ValueError(problem)
        X.entries_checked = X.entries_checked or check_entries
        return X
    copied = False
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got {X.ndim} dimensions")
        if X.format != "csr":
            X = X.tocsr()
            copied = True
        if X.dtype not in _FLOATS:
            _check_numeric_dtype(X.dtype, name)
            X = X.astype(np.float64)
            copied = True
        data, indices, indptr = X.data, X.indices, X.indptr
        if indices.dtype not in _INDEX:
            indices = indices.astype(np.int64)
            copied = True
        if indptr.dtype != indices.dtype:
            if indptr.dtype == np.int64 and indptr.shape[0] and indptr[-1] > np.iinfo(np.int32).max:
                indices = indices.astype(np.int64)
                copied = True
            else:
                # Only the small index pointer is converted; data and indices stay shared.
                indptr = indptr.astype(indices.dtype)
        shape = X.shape
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array or sparse matrix, got shape {X.shape}")
        _check_numeric_dtype(X.dtype, name)
        data, indices, indptr = _dense_to_csr(X)
        shape = X.shape
        copied = True
    if shape[0] == 0:
        raise ValueError(f"{name} has 0 rows (shape {shape}); at least 1 is required")
    if shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {shape}); at least 1 is required")
    for part, arr in (("data", data), ("indices", indices), ("indptr", indptr)):
        if arr.ndim != 1:
            raise ValueError(f"{name}.{part} must be 1-D, got shape {arr.shape}")
    data, indices, indptr = (np.ascontiguousarray(a) for a in (data, indices, indptr))
    if indptr.shape[0] and indptr[0] > 0:
        raise ValueError(f"{name}.indptr must start at 0, got indptr[0]={indptr[0]}")
    if indptr.shape[0] != shape[0] + 1:
        raise ValueError(f"{name}.indptr has length {indptr.shape[0]}, expected {shape[0] + 1}")
    # A converted X was just written in full: checking it too costs little by comparison.
    check_entries = check_entries or copied
    problem = check_csr(data, indices, indptr, shape[1], check_entries)
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    return CSRBuffers(data, indices, indptr, shape, check_entries)


def entry_problem(Xb):
    """The first bad entry of `Xb` as a message, or None: after the kernel stopped on a
    non-finite margin, it tells bad input apart from a numerical overflow."""
    if Xb.entries_checked:
        return None
    problem = check_csr(Xb.data, Xb.indices, Xb.indptr, Xb.shape[1])
    return None if problem is None else f"X: {problem}"


def _check_numeric_dtype(dtype, name):
    if dtype.kind == "c":
        raise TypeError(f"{name} must be real-valued, got complex dtype {dtype}")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {dtype}")


def two_class_signs(y, neg, pos):
    """(+1.0 where y == pos else -1.0, to be read only: y itself if it is float64 -1 and
    +1 already; how many labels are neither neg nor pos)."""
    is_pos = y == pos
    n_other = y.shape[0] - np.count_nonzero(is_pos) - np.count_nonzero(y == neg)
    if y.dtype == np.float64 and neg == -1.0 and pos == 1.0 and n_other == 0:
        return y, 0     # (the estimators' one-vs-rest targets: columns read in place)
    return np.where(is_pos, 1.0, -1.0), n_other


def check_y_shape(y, n_samples):
    """`y` as an array, checked to be 1-D with one entry per row of X."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} rows but y has {y.shape[0]} entries")
    return y


def class_indices(y, n_samples, classes=None):
    """(each row's class index as float64, the sorted classes); known `classes` (a warm
    start's, partial_fit's) let y hold only some of them."""
    y = check_y_shape(y, n_samples)
    if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity")
    if y.dtype.kind == "O" and any(isinstance(v, float) and v != v for v in y):
        # (NaN never equals itself: np.unique would count every one as a class)
        raise ValueError("y contains NaN labels")
    try:
        found = np.unique(y)        # (with return_inverse, 30x slower: numpy 2.4)
    except TypeError as exc:
        raise TypeError(f"y's labels cannot be compared: {exc}") from None
    if classes is None:
        if found.shape[0] < 2:
            raise ValueError(f"y has a single class ({found[0]!r}); a classification loss "
                             "needs two")
        classes = found
    unknown = np.setdiff1d(found, classes)
    if unknown.size:
        raise ValueError(f"y holds labels other than the known classes {classes}: {unknown}")
    return np.searchsorted(classes, y).astype(np.float64), classes


def kernel_classes(loss, n_classes=2):
    """The values `loss`'s kernel targets take (`kernel_targets`): 0 .. K-1 for a K-output
    loss, -1 and +1 for two classes, None for a regression."""
    spec = loss_spec(loss)
    if spec.multiclass:
        return np.arange(n_classes, dtype=np.float64)
    return np.array([-1.0, 1.0]) if spec.is_classification else None


def kernel_targets(y, n_samples, loss, classes=None):
    """Validate targets; return (y_kernel, classes): for a K-output loss (docs/design.md 6d)
    each row's class index and the sorted classes (`class_indices`); for a binary one -1 for
    the smaller of two labels, +1 for the larger, and the two (known `classes`, a warm
    start's, let y hold one of them: y itself if it is float64 -1 and +1 already, as the
    estimators' one-vs-rest targets are); for a regression y as float64 (itself if it is)
    and None. (y itself may be strided: the kernel reads it where it lies.)"""
    spec = loss_spec(loss)
    if spec.is_classification and not spec.multiclass:
        y = check_y_shape(y, n_samples)
        if y.dtype.kind in "biuf" and y.shape[0]:
            # Numbers: min and max (or the known two) find two classes in O(n), where
            # np.unique sorts (the sigma search checks each candidate's targets: the sort
            # made the default a9a call 1.2x as long); else `class_indices` names the fault.
            lo, hi = (y.min(), y.max()) if classes is None else classes
            signs, n_other = two_class_signs(y, lo, hi)
            if lo != hi and n_other == 0:
                return signs, np.array([lo, hi], dtype=y.dtype) if classes is None else classes
    if spec.is_classification:
        index, classes = class_indices(y, n_samples, classes)
        if not spec.multiclass and classes.shape[0] > 2:
            raise ValueError(f"y has {classes.shape[0]} classes; this loss is binary (pgs.train "
                             "trains one problem a class from the labels)")
        return (index if spec.multiclass else 2.0 * index - 1.0), classes
    y = check_y_shape(y, n_samples)
    if y.dtype.kind not in "biuf":
        raise TypeError(f"y must be numeric for a regression loss, got dtype {y.dtype}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity")
    return np.asarray(y, dtype=np.float64), None
