"""Input handling: no copy of CSR input, non-canonical CSR, caller's arrays untouched, labels."""

import os
from pathlib import Path

import numpy as np
import paper
import pytest
import scipy.sparse as sp
from tracing import traced_peak

from pgs.rules.data import as_csr_buffers

ITERATES = ("random", "last", "average")


def _sparse(m, n, nnz_per_row, dtype=np.float64, index_dtype=np.int32, seed=0):
    rng = np.random.default_rng(seed)
    indptr = np.arange(0, m * nnz_per_row + 1, nnz_per_row)
    indices = np.concatenate(
        [np.sort(rng.choice(n, nnz_per_row, replace=False)) for _ in range(m)])
    data = rng.standard_normal(m * nnz_per_row)
    A = sp.csr_matrix((data.astype(dtype), indices, indptr), shape=(m, n))
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return A, y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_input_is_not_copied(dtype, index_dtype):
    """A few-MB CSR matrix: training allocates far less than X.data (numpy's buffers are
    traced by tracemalloc, as the control with a COO input shows); the buffers handed to the
    kernel are the caller's own objects; read-only buffers are accepted."""
    A, y = _sparse(4000, 3000, 100, dtype, index_dtype)
    assert A.data.nbytes >= 1_600_000

    b = as_csr_buffers(A)
    assert b.data is A.data and b.indices is A.indices and b.indptr is A.indptr

    peak, model = traced_peak(lambda: paper.train(A, y, T=2000, seed=0, iterate="average"))
    assert peak < A.data.nbytes / 8, (peak, A.data.nbytes)

    # Control: a COO matrix must be converted, and tracemalloc sees that copy.
    coo = A.tocoo()
    peak_coo, model_coo = traced_peak(
        lambda: paper.train(coo, y, T=2000, seed=0, iterate="average"))
    assert peak_coo > A.data.nbytes
    np.testing.assert_array_equal(model.coef, model_coo.coef)

    for arr in (A.data, A.indices, A.indptr):
        arr.flags.writeable = False
    model_ro = paper.train(A, y, T=2000, seed=0, iterate="average")
    np.testing.assert_array_equal(model.coef, model_ro.coef)
    assert model.intercept == model_ro.intercept


def _non_canonical(A, rng):
    """Same matrix, stored with shuffled, duplicated and explicitly zero entries."""
    data, indices, indptr = [], [], [0]
    n = A.shape[1]
    for i in range(A.shape[0]):
        lo, hi = A.indptr[i], A.indptr[i + 1]
        d = list(A.data[lo:hi])
        j = list(A.indices[lo:hi])
        if d:
            # split the first entry into two halves (exact in binary floating point)
            d[0] *= 0.5
            d.append(d[0])
            j.append(j[0])
        d.append(0.0)                      # an explicit zero, in a random column
        j.append(int(rng.integers(n)))
        order = rng.permutation(len(d))
        data += [d[o] for o in order]
        indices += [j[o] for o in order]
        indptr.append(len(data))
    B = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=A.shape)
    return B


@pytest.mark.parametrize("k", [3, 20])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.25])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
def test_non_canonical_csr_gives_the_same_model(p, loss, k):
    """Duplicated, unsorted and explicitly zero entries change nothing beyond rounding,
    row by row (k = 3) and in a large batch's per-column sums (k = 20)."""
    A, y = _sparse(60, 25, 6, seed=1)
    if loss == "squared":
        y = A @ np.linspace(-1, 1, 25)
    B = _non_canonical(A, np.random.default_rng(2))
    assert not B.has_canonical_format
    np.testing.assert_allclose(B.toarray(), A.toarray(), rtol=0, atol=0)
    for iterate in ITERATES:
        kw = dict(loss=loss, p=p, sigma=0.01, T=3000, k=k, seed=5, iterate=iterate)
        ma, mb = paper.train(A, y, **kw), paper.train(B, y, **kw)
        assert ma.iteration == mb.iteration
        w_a, w_b = ma.full_weights(), mb.full_weights()
        assert np.max(np.abs(w_a - w_b)) <= 1e-12 * np.max(np.abs(w_a))


def _snapshot(*arrays):
    return [np.array(a, copy=True) for a in arrays]


@pytest.mark.parametrize("fmt", ["dense64", "dense32", "fortran", "csr", "csr_noncanonical",
                                 "csr32_i64"])
@pytest.mark.parametrize("loss", ["hinge", "squared"])
def test_callers_arrays_are_never_modified(fmt, loss):
    A, y = _sparse(50, 12, 4, seed=3)
    if loss == "squared":
        y = A @ np.arange(12.0)
    if fmt == "dense64":
        X = A.toarray()
        bufs = [X]
    elif fmt == "dense32":
        X = A.toarray().astype(np.float32)
        bufs = [X]
    elif fmt == "fortran":
        X = np.asfortranarray(A.toarray())
        bufs = [X]
    elif fmt == "csr":
        X = A
        bufs = [X.data, X.indices, X.indptr]
    elif fmt == "csr_noncanonical":
        X = _non_canonical(A, np.random.default_rng(0))
        bufs = [X.data, X.indices, X.indptr]
    else:
        X = A.astype(np.float32)
        X.indices = X.indices.astype(np.int64)
        X.indptr = X.indptr.astype(np.int64)
        bufs = [X.data, X.indices, X.indptr]
    before = _snapshot(*bufs, y)
    for iterate in ITERATES:
        model = paper.train(X, y, loss=loss, p=1.5, T=500, k=2, seed=0, iterate=iterate)
        model.objective(X, y)
        model.predict(X)
    for a, b in zip(before, [*bufs, y], strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


LABELS = [
    (np.array(["spam", "ham"]), "ham"),          # strings: sorted, so "ham" is -1
    (np.array([1, 2]), 1),
    (np.array([0, 1]), 0),
    (np.array([False, True]), False),
    (np.array([-1, 1]), -1),
    (np.array([0.5, 3.0]), 0.5),
    (np.array(["b", "a"], dtype=object), "a"),
]


@pytest.mark.parametrize("values, negative", LABELS)
def test_two_labels_map_to_plus_minus_one(values, negative):
    """Any two labels: the smaller is -1, the larger +1, `classes` keeps them, `predict`
    returns them; the model is bit-identical to training on the +-1 targets themselves."""
    A, y_pm = _sparse(40, 10, 4, seed=4)
    positive = values[values != negative][0]
    labels = np.where(y_pm > 0, positive, negative).astype(values.dtype)
    for loss in ("hinge", "logistic"):
        m_lab = paper.train(A, labels, loss=loss, T=400, seed=9)
        m_pm = paper.train(A, y_pm, loss=loss, T=400, seed=9)
        np.testing.assert_array_equal(m_lab.coef, m_pm.coef)
        assert m_lab.intercept == m_pm.intercept
        assert list(m_lab.classes) == [negative, positive]
        assert list(m_pm.classes) == [-1.0, 1.0]
        pred = m_lab.predict(A)
        assert set(pred.tolist()) <= {negative, positive}
        np.testing.assert_array_equal(pred == positive, m_pm.predict(A) > 0)
        np.testing.assert_array_equal(pred == positive, m_lab.decision_function(A) > 0)
        assert m_lab.objective(A, labels) == m_pm.objective(A, y_pm)
        with pytest.raises(ValueError, match="labels other than the model's classes"):
            m_lab.objective(A, np.full(A.shape[0], "zzz" if values.dtype.kind in "UO" else 7))


def _shared_data():
    env = os.environ.get("PGS_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def test_mushrooms_labels_1_2():
    path = _shared_data() / "mushrooms" / "mushrooms"
    if not path.exists():
        pytest.skip(f"mushrooms not found at {path} (set PGS_SHARED_DATA)")
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(str(path))
    assert X.shape == (8124, 112) and set(np.unique(y)) == {1.0, 2.0}
    model = paper.train(X, y, loss="hinge", sigma=1e-4, seed=0)
    assert list(model.classes) == [1.0, 2.0]
    pred = model.predict(X)
    assert set(np.unique(pred)) == {1.0, 2.0}
    assert np.mean(pred == y) > 0.99                      # the set is linearly separable
    twin = paper.train(X, np.where(y == 2.0, 1.0, -1.0), loss="hinge", sigma=1e-4, seed=0)
    np.testing.assert_array_equal(model.coef, twin.coef)


@pytest.mark.parametrize("dtype, labels", [
    (dtype, labels)
    for dtype in (np.float64, np.float32, np.int64, np.int32, np.int8, np.uint16, np.bool_)
    for labels in ((0, 1), (-1, 1), (3, 7))
    if labels == (0, 1) or dtype not in (np.uint16, np.bool_)])    # (labels the dtype holds)
def test_numeric_targets_agree_with_sorting_every_value(dtype, labels):
    """Numeric labels of any dtype: np.unique's classes, the larger mapped to +1."""
    from pgs.rules.data import kernel_targets
    rng = np.random.default_rng(0)
    y = np.where(rng.random(300) < 0.3, labels[1], labels[0]).astype(dtype)
    y_kernel, classes = kernel_targets(y, 300, "hinge")
    expected = np.unique(y)
    np.testing.assert_array_equal(classes, expected)
    assert classes.dtype == expected.dtype
    np.testing.assert_array_equal(y_kernel, np.where(y == expected[1], 1.0, -1.0))
    assert y_kernel.dtype == np.float64
    if dtype is not np.bool_:
        y3 = y.copy()
        y3[7] = labels[0] + (labels[1] - labels[0]) // 2 if labels != (0, 1) else 2
        with pytest.raises(ValueError, match="y has 3 classes"):
            kernel_targets(y3, 300, "hinge")
    # known classes (a warm start's): the same mapping, and a third label refused
    again, same = kernel_targets(y, 300, "hinge", classes)
    np.testing.assert_array_equal(again, y_kernel)
    assert same is classes
    with pytest.raises(ValueError, match="single class"):
        kernel_targets(np.zeros(300, dtype=dtype), 300, "hinge")
    with pytest.raises(ValueError, match="labels other than the known classes"):
        kernel_targets(np.arange(300) % 3, 300, "hinge", np.array([0, 1]))


def test_targets_are_read_in_place_only_when_they_are_the_kernels():
    """Float64 regression targets, and float64 -1 / +1 labels (the estimators' one-vs-rest
    targets, columns of one array), are used as they are, strided too (no copy: the kernel
    reads them where they lie, with the bits of a contiguous copy); anything else is
    converted; pgs.train never writes to y."""
    from pgs.rules.data import kernel_targets
    rng = np.random.default_rng(1)
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    strided = np.repeat(y, 3)[1::3]
    for labels in (y, strided):
        assert kernel_targets(labels, 200, "squared")[0] is labels
        assert kernel_targets(labels, 200, "hinge")[0] is labels
        assert kernel_targets(labels, 200, "logistic", np.array([-1.0, 1.0]))[0] is labels
    for other in (y.astype(np.float32), (y > 0).astype(np.float64), y * 2.0):
        y_kernel, _ = kernel_targets(other, 200, "hinge")
        assert y_kernel is not other and y_kernel.flags["C_CONTIGUOUS"]
        np.testing.assert_array_equal(y_kernel, y)
    half = y.copy()
    half[3] = 0.5                                       # within [-1, 1], a third class
    with pytest.raises(ValueError, match="y has 3 classes"):
        kernel_targets(half, 200, "hinge")
    X = sp.random(200, 5, density=0.5, random_state=2, format="csr")
    before = y.copy()
    for loss in ("hinge", "squared"):
        one = paper.train(X, y, loss=loss, T=300, seed=0)
        two = paper.train(X, strided, loss=loss, T=300, seed=0)
        np.testing.assert_array_equal(two.coef, one.coef)
        assert two.intercept == one.intercept
    np.testing.assert_array_equal(y, before)


def test_malformed_csr_buffers_and_nan_labels_are_named():
    """A CSR whose data buffer is 2-D, an index pointer that does not start at 0, and
    object labels with NaN: ValueErrors that say what is wrong."""
    X = sp.random(20, 5, density=0.5, random_state=0, format="csr")
    y = np.where(np.arange(20) % 2 == 0, -1.0, 1.0)
    flat = X.copy()
    flat.data = flat.data.reshape(-1, 1)
    with pytest.raises(ValueError, match=r"X\.data must be 1-D"):
        paper.train(flat, y, T=5)
    shifted = X.copy()
    shifted.indptr = shifted.indptr + 3          # (scipy checks only on construction)
    shifted.data = np.concatenate([np.zeros(3), X.data])
    shifted.indices = np.concatenate([np.zeros(3, X.indices.dtype), X.indices])
    with pytest.raises(ValueError, match=r"indptr must start at 0, got indptr\[0\]=3"):
        paper.train(shifted, y, T=5)
    labels = np.array(["a", np.nan] * 10, dtype=object)
    with pytest.raises(ValueError, match="NaN labels"):
        paper.train(X, labels, T=5)


@pytest.mark.parametrize("X", [
    np.zeros((0, 5)), np.zeros((3, 0)), np.zeros((2, 3)),
    np.array([[0.0, 1.5, np.nan], [2.0, 0.0, -0.0]], dtype=np.float32),
    np.asfortranarray(np.arange(12.0).reshape(3, 4) - 5.0),
    np.arange(6).reshape(2, 3), np.array([[True, False]]),
])
def test_dense_rows_are_scipys_csr(X):
    """The compiled dense-to-CSR conversion gives scipy's buffers: zeros (-0 too) left
    out, NaN kept (the checks report it), float32 kept, other types as float64, int32
    indices."""
    from pgs.rules.data import _dense_to_csr
    data, indices, indptr = _dense_to_csr(X)
    want = sp.csr_matrix(X if X.dtype.kind == "f" else X.astype(np.float64))
    np.testing.assert_array_equal(data, want.data)
    assert data.dtype == want.dtype and indices.dtype == indptr.dtype == np.int32
    np.testing.assert_array_equal(indices, want.indices)
    np.testing.assert_array_equal(indptr, want.indptr)
