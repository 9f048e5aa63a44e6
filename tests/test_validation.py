"""Every invalid argument or data raises ValueError/TypeError naming the argument and value."""

import re

import numpy as np
import paper
import pytest
import scipy.sparse as sp

import pgs


def _data(m=12, n=4):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, n))
    y = np.where(np.arange(m) % 2 == 0, -1.0, 1.0)
    return X, y


def _raises(exc, pattern, **kwargs):
    X, y = _data()
    X = kwargs.pop("X", X)
    y = kwargs.pop("y", y)
    kwargs.setdefault("T", 5)
    kwargs.setdefault("seed", 0)
    with pytest.raises(exc, match=pattern) as info:
        paper.train(X, y, **kwargs)
    return info


@pytest.mark.parametrize("p, exc, pattern", [
    (1, ValueError, r"p must be in \(1, 2\], got p=1\.0"),
    (1.0, ValueError, r"p=1\.0"),
    (2.5, ValueError, r"p=2\.5"),
    (0.5, ValueError, r"p=0\.5"),
    (float("nan"), ValueError, r"p=nan"),
    (float("inf"), ValueError, r"p=inf"),
    ("2", TypeError, r"p must be a real number.*'2'"),
    (None, TypeError, r"p must be a real number.*None"),
    (True, TypeError, r"p must be a real number.*True"),
])
def test_bad_p(p, exc, pattern):
    _raises(exc, pattern, p=p)


@pytest.mark.parametrize("sigma, exc", [
    (0.0, ValueError), (-1e-3, ValueError), (float("nan"), ValueError),
    (float("inf"), ValueError), ("0.1", TypeError),
])
def test_bad_sigma(sigma, exc):
    _raises(exc, "sigma.*" + re.escape(repr(sigma) if exc is TypeError else str(sigma)),
            sigma=sigma)


@pytest.mark.parametrize("name", ["T", "k"])
@pytest.mark.parametrize("value, exc", [(0, ValueError), (-3, ValueError), (2.5, TypeError),
                                        ("4", TypeError)])
def test_bad_counts(name, value, exc):
    _raises(exc, f"{name} must be.*{re.escape(repr(value))}", **{name: value})


@pytest.mark.parametrize("B, exc, pattern", [
    (0.0, ValueError, r"B must be a finite number > 0, got B=0\.0"),
    (-2.0, ValueError, r"B=-2\.0"),
    (float("nan"), ValueError, r"B=nan"),
    (float("inf"), ValueError, r"B=inf"),
    ("big", ValueError, r"B=.big."),
    ([1.0], TypeError, r"B.*\[1\.0\]"),
])
def test_bad_B(B, exc, pattern):
    _raises(exc, pattern, B=B)


def test_unknown_loss_and_iterate():
    _raises(ValueError, r"loss='hinge2' is not one of hinge, logistic", loss="hinge2")
    _raises(TypeError, r"loss must be a string, got 3", loss=3)
    _raises(ValueError, r"iterate must be one of random, last, average, got iterate='best'",
            iterate="best")
    _raises(ValueError, r"iterate=None", iterate=None)


def test_other_arguments():
    _raises(ValueError, r"intercept_scaling=0\.0", intercept_scaling=0.0)
    _raises(TypeError, r"fit_intercept must be a bool, got 1", fit_intercept=1)
    _raises(ValueError, r"seed=-1", seed=-1)
    _raises(ValueError, r"epsilon=-0\.5", loss="huber", epsilon=-0.5)
    _raises(ValueError, r"epsilon must be > 0 for loss='smooth_hinge'", loss="smooth_hinge",
            epsilon=0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("fmt", ["dense", "csr", "csr32", "coo"])
def test_non_finite_X(bad, fmt):
    X, y = _data()
    X[5, 2] = bad
    if fmt == "csr":
        X = sp.csr_matrix(X)
    elif fmt == "csr32":
        X = sp.csr_matrix(X.astype(np.float32))
    elif fmt == "coo":
        X = sp.coo_matrix(X)
    # CSR input is checked row by row as the solver reads it: cyclic T = m reads row 5.
    _raises(ValueError, r"X contains a non-finite value \(" + re.escape(str(bad)), X=X,
            sampling="cyclic", T=X.shape[0])


@pytest.mark.parametrize("bad", ["nan", "index"])
@pytest.mark.parametrize("k", [1, 4, 20])
def test_bad_row_stops_before_it_changes_the_state(bad, k):
    """The kernel's check: row 20 of 40 is bad; in cyclic order the solver stops at the
    batch holding it, with lambda exactly that of a clean run stopped just before, and
    train names the entry. Runs that never read the row do not see it."""
    from pgs._core import SAMPLING_MODES
    from pgs.engine.solver import Solver
    from pgs.rules.losses import LOSS_NAMES
    X, y = _data(m=40)
    A = sp.csr_matrix(X)
    clean = A.copy()
    if bad == "nan":
        A.data[A.indptr[20] + 1] = np.nan
        message = r"X contains a non-finite value \(nan\)"
    else:
        A.indices[A.indptr[20] + 1] = 4                  # == n_features
        message = r"column index 4 is outside \[0, 4\)"

    def solver():
        return Solver(4, LOSS_NAMES.index("logistic"), 2.0, 1e-2, 0.0, 1.0, 0.0, k, 0,
                      False, np.array([1, 2, 3, 4], dtype=np.uint64),
                      SAMPLING_MODES.index("cyclic"))

    s_bad, s_clean = solver(), solver()
    assert s_bad.run(40 // k, A.data, A.indices, A.indptr, y) != 0
    assert s_bad.t == 20 // k                           # the batches before row 20
    s_clean.run(20 // k, clean.data, clean.indices, clean.indptr, y)
    assert np.array_equal(s_bad.lam, s_clean.lam)
    with pytest.raises(ValueError, match=message):
        paper.train(A, y, T=40 // k, k=k, sampling="cyclic", seed=0)
    # rows never read are not inspected: the same model as on the clean matrix
    unread = paper.train(A, y, T=20 // k, k=k, sampling="cyclic", seed=0, iterate="last")
    ref = paper.train(clean, y, T=20 // k, k=k, sampling="cyclic", seed=0, iterate="last")
    assert np.array_equal(unread.coef, ref.coef)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("loss", ["hinge", "squared"])
def test_non_finite_y(bad, loss):
    X, y = _data()
    y = y.copy()
    y[3] = bad
    _raises(ValueError, r"y contains NaN or infinity", y=y, loss=loss)


def test_shapes():
    X, y = _data()
    _raises(ValueError, r"X has 12 rows but y has 11 entries", y=y[:11])
    _raises(ValueError, r"X has 12 rows but y has 11 entries", X=sp.csr_matrix(X), y=y[:11])
    _raises(ValueError, r"X has 0 rows \(shape \(0, 4\)\)", X=np.zeros((0, 4)), y=y[:0])
    _raises(ValueError, r"X has 0 rows", X=sp.csr_matrix((0, 4)), y=y[:0])
    _raises(ValueError, r"X has 0 features \(shape \(12, 0\)\)", X=np.zeros((12, 0)))
    _raises(ValueError, r"X has 0 features", X=sp.csr_matrix((12, 0)))
    _raises(ValueError, r"y must be 1-D, got shape \(12, 1\)", y=y[:, None])
    _raises(ValueError, r"y must be 1-D, got shape \(\)", y=np.float64(1.0))
    _raises(ValueError, r"X must be a 2-D array or sparse matrix, got shape \(12,\)", X=X[:, 0])
    _raises(TypeError, r"X must be real-valued, got complex", X=X.astype(complex))
    _raises(TypeError, r"X must be numeric, got dtype", X=X.astype(str))


def test_classes():
    X, y = _data()
    _raises(ValueError, r"y has a single class \(np.float64\(1.0\)\)|y has a single class "
            r"\(1\.0\)", y=np.ones(12))
    # (more than two classes with a binary loss: one-vs-rest, tests/test_train_classes.py)
    assert isinstance(paper.train(X, np.arange(12) % 3, T=5, seed=0), pgs.OneVsRestModel)
    _raises(TypeError, r"y must be numeric for a regression loss", y=np.array(["a"] * 12),
            loss="squared")
    # A single target value is fine for regression.
    paper.train(X, np.ones(12), loss="squared", T=5, seed=0)


def _csr():
    X, y = _data()
    X[X < 0.3] = 0.0
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_malformed_csr_never_crashes(index_dtype):
    """Buffers mutated after construction (scipy checks little): ValueError, no segfault."""
    def fresh():
        A, y = _csr()
        A.indices = A.indices.astype(index_dtype)
        A.indptr = A.indptr.astype(index_dtype)
        return A, y

    A, y = fresh()
    A.indices[0] = 4                                     # == n_features
    with pytest.raises(ValueError, match=r"column index 4 is outside \[0, 4\)"):
        paper.train(A, y, T=5, seed=0, sampling="cyclic")
    A, y = fresh()
    A.indices[-1] = -1                                   # read last: iid over many draws
    with pytest.raises(ValueError, match=r"column index -1 is outside \[0, 4\)"):
        paper.train(A, y, T=500, seed=0)
    A, y = fresh()
    A.indices[-1] = 2**31 - 1 if index_dtype == np.int32 else 2**62
    with pytest.raises(ValueError, match=r"column index \d+ is outside \[0, 4\)"):
        paper.train(A, y, T=A.shape[0], k=A.shape[0], seed=0, sampling="cyclic")
    A, y = fresh()
    A.indptr[3], A.indptr[4] = A.indptr[4] + 1, A.indptr[3]     # decreasing
    with pytest.raises(ValueError, match=r"indptr is not a valid CSR index pointer"):
        paper.train(A, y, T=5, seed=0)
    A, y = fresh()
    A.indptr[-1] = A.data.shape[0] + 10                  # points past the buffers
    with pytest.raises(ValueError, match=r"indptr is not a valid CSR index pointer"):
        paper.train(A, y, T=5, seed=0)
    A, y = fresh()
    A.indptr[0] = -5
    with pytest.raises(ValueError, match=r"indptr is not a valid CSR index pointer"):
        paper.train(A, y, T=5, seed=0)
    A, y = fresh()
    A.indptr = A.indptr[:-1]                             # one row short
    with pytest.raises(ValueError, match=r"X.indptr has length 12, expected 13"):
        paper.train(A, y, T=5, seed=0)


def test_iterate_overflow_is_reported():
    """Lipschitz losses are unbounded by default; huge features overflow the margin and the
    kernel's status becomes a clear FloatingPointError, not garbage."""
    X, y = _data()
    with pytest.raises(FloatingPointError, match="became infinite or NaN"):
        paper.train(X * 1e300, y, loss="hinge", sigma=1e-300, T=50, seed=0)


@pytest.mark.parametrize("k", [16, 20])
def test_bad_row_inside_a_large_batch_leaves_no_partial_sums(k):
    """Batches of k >= 16 sum each row's step as its margin is taken; a bad row in the
    middle of a batch (row 20 is the batch's 5th or 1st) must leave nothing behind: the
    next batches, on clean data, give exactly lambda of a run that skipped the bad one."""
    from pgs.engine.solver import Solver
    from pgs.rules.losses import LOSS_NAMES
    X, y = _data(m=40)
    order = np.arange(4 * k) % 40          # (read in order: cyclic sampling over X[order])
    clean = paper.rows_of(sp.csr_matrix(X), order)
    A = clean.copy()
    A.data[A.indptr[20] + 1] = np.nan
    first = 20 // k * k                  # the bad batch: rows first .. first + k - 1

    def solver():
        return Solver(4, LOSS_NAMES.index("logistic"), 1.8, 1e-2, 0.0, 1.0, 0.0, k, 0,
                      False, np.array([1, 2, 3, 4], dtype=np.uint64), sampling=2)

    s_bad = solver()
    assert s_bad.run(4, A.data, A.indices, A.indptr, y[order]) == 1
    assert s_bad.t == first // k
    # (the bad batch's rows were drawn: the run goes on after them)
    assert s_bad.run(3, clean.data, clean.indices, clean.indptr, y[order]) == 0
    skipped = np.concatenate([order[:first], order[first + k:]])
    s_ref = solver()
    ref = paper.rows_of(sp.csr_matrix(X), skipped)
    s_ref.run(3, ref.data, ref.indices, ref.indptr, y[skipped])
    assert np.array_equal(s_bad.lam, s_ref.lam)
    assert np.array_equal(s_bad.u, s_ref.u)


@pytest.mark.parametrize("T", [2**62 + 1, 2**63, 10**30])
def test_huge_T_is_refused_by_name(T):
    X = sp.random(20, 5, density=0.5, random_state=0, format="csr")
    y = np.where(np.arange(20) % 2 == 0, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"T must be at most 2\*\*62"):
        paper.train(X, y, T=T)


@pytest.mark.parametrize("sigma", [0.1, "auto"])
@pytest.mark.parametrize("max_passes", [1e300, 2**70, 1e18])
def test_huge_max_passes_is_refused_by_name(sigma, max_passes):
    """max_passes past 2**62 iterations is a ValueError naming it (a fixed sigma ran without
    end; "auto" named T with a 300-digit number)."""
    X = sp.random(20, 5, density=0.5, random_state=0, format="csr")
    y = np.where(np.arange(20) % 2 == 0, -1.0, 1.0)
    value = re.escape(repr(float(max_passes)))
    with pytest.raises(ValueError, match=rf"max_passes={value} makes .* more than the 2\*\*62"):
        pgs.train(X, y, sigma=sigma, max_passes=max_passes)
