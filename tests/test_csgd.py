"""Tests of Constrained SGD (pgs.train_csgd, pgs.train_cadaline, pgs._csgd)."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
from pgs._csgd import CSGDSolver
from pgs.models.base import LinearModel
from pgs.rules.data import as_csr_buffers
from pgs.training.csgd import _fit, auto_eta0

sys.path.insert(0, str(Path(__file__).parent))
from csgd_reference import csgd_reference  # noqa: E402

VARIANTS = ("csgd", "ncsgd", "sgd")


def _problem(m=120, n=12, density=0.5, seed=0):
    """Sparse-ish non-negative rows (non-centred, as the paper assumes) and noisy targets."""
    rng = np.random.default_rng(seed)
    X = rng.random((m, n))
    X[rng.random((m, n)) > density] = 0.0
    w = rng.normal(size=n)
    y = X @ w + 0.7 + 0.3 * rng.normal(size=m)
    return X, y


def _kernel(X, y, rows, **kw):
    """(coef, intercept) of the compiled kernel on a fixed row sequence."""
    W, _, _ = _fit(X, np.asarray(y, dtype=np.float64).reshape(len(y), -1), T=len(rows),
                      seed=0, fixed_rows=rows, **kw)
    icpt = W[-1] if kw.get("fit_intercept", True) else np.zeros(W.shape[1])
    return W[:-1], icpt


# ---------------------------------------------------------- agreement with Algorithm 1

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("iterate", ["last", "average"])
@pytest.mark.parametrize("fmt", ["dense", "csr32", "csr64"])
def test_kernel_matches_algorithm_1(variant, fit_intercept, iterate, fmt):
    X, y = _problem()
    rows = np.random.default_rng(1).integers(0, X.shape[0], 900)
    if fmt == "dense":
        Xin = X
    else:
        Xin = sp.csr_matrix(X)
        idx = np.int32 if fmt == "csr32" else np.int64
        # set the buffers directly: scipy's constructor would downcast int64 to int32
        Xin.indices, Xin.indptr = Xin.indices.astype(idx), Xin.indptr.astype(idx)
        assert Xin.indices.dtype == idx
    kw = dict(eta0=0.08, variant=variant, switch=60, fit_intercept=fit_intercept,
              iterate=iterate)
    coef, icpt = _kernel(Xin, y, rows, **kw)
    ref_coef, ref_icpt = csgd_reference(X, y, rows, **kw)
    np.testing.assert_allclose(coef[:, 0], ref_coef, rtol=0, atol=1e-10)
    assert abs(icpt[0] - ref_icpt) < 1e-10


@pytest.mark.parametrize("variant", VARIANTS)
def test_float32_data(variant):
    X, y = _problem()
    X32 = sp.csr_matrix(X.astype(np.float32))
    rows = np.random.default_rng(2).integers(0, X.shape[0], 700)
    kw = dict(eta0=0.08, variant=variant, switch=60, fit_intercept=True, iterate="last")
    coef, icpt = _kernel(X32, y, rows, **kw)
    # The kernel computes in float64 on the float32 values: exact against them ...
    ref32, ref32_b = csgd_reference(X32.toarray().astype(np.float64), y, rows, **kw)
    np.testing.assert_allclose(coef[:, 0], ref32, rtol=0, atol=1e-10)
    assert abs(icpt[0] - ref32_b) < 1e-10
    # ... and within float32's rounding of the data against the float64 run.
    ref64, _ = csgd_reference(X, y, rows, **kw)
    np.testing.assert_allclose(coef[:, 0], ref64, rtol=0, atol=1e-4 * np.abs(ref64).max())


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("iterate", ["last", "average"])
def test_several_outputs_match_independent_regressors(variant, iterate):
    """C-Adaline's K outputs share a pass; each equals Algorithm 1 on its own column."""
    X, y = _problem(seed=3)
    rng = np.random.default_rng(3)
    Y = np.column_stack([y, rng.normal(size=y.shape[0]), (y > 0.5).astype(float)])
    rows = rng.integers(0, X.shape[0], 800)
    kw = dict(eta0=0.05, variant=variant, switch=50, fit_intercept=True, iterate=iterate)
    coef, icpt = _kernel(sp.csr_matrix(X), Y, rows, **kw)
    ref_coef, ref_icpt = csgd_reference(X, Y, rows, **kw)
    np.testing.assert_allclose(coef, ref_coef, rtol=0, atol=1e-10)
    np.testing.assert_allclose(icpt, ref_icpt, rtol=0, atol=1e-10)


def test_exact_recomputation_every_step_and_never_agree():
    """Folding gamma S into a and recomputing D, N must not change the iterates."""
    X, y = _problem(seed=4)
    Xb = as_csr_buffers(X)
    rows = np.random.default_rng(4).integers(0, X.shape[0], 600)
    out = []
    for every in (1, 7, 10**12):
        s = CSGDSolver(X.shape[1], 1, 0, 0.08, 50, 1.0, True,
                       np.array([1, 2, 3, 4], dtype=np.uint64))
        s.recompute_every = every
        assert s.run(len(rows), Xb.data, Xb.indices, Xb.indptr, y, rows) == 0
        out.append((s.last(), s.average()))
    for last, avg in out[1:]:
        np.testing.assert_allclose(last, out[0][0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(avg, out[0][1], rtol=0, atol=1e-12)


def test_maintained_scalars_stay_exact():
    """D = <S, a> and N = ||S||^2, maintained incrementally, match their exact values."""
    X, y = _problem(m=300, n=40, seed=5)
    Xb = as_csr_buffers(X)
    s = CSGDSolver(X.shape[1], 2, 1, 0.05, 1, 1.0, False,
                   np.array([5, 6, 7, 8], dtype=np.uint64))
    s.recompute_every = 10**12          # never: measure the raw drift
    Y = np.column_stack([y, -y]).reshape(-1)
    for t_end in (1000, 5000, 20000):
        assert s.run(t_end, Xb.data, Xb.indices, Xb.indptr, Y) == 0
        S = s.S()
        assert abs(s.N - S @ S) <= 1e-12 * (S @ S)
        exact = s.exact_D()
        scale = np.abs(S) @ np.abs(s.a())
        np.testing.assert_array_less(np.abs(s.D - exact), 1e-12 * scale)


def test_duplicate_columns_in_a_row():
    """A CSR row naming a column twice acts as the summed entry (the kernel reads S_j live)."""
    X, y = _problem(m=30, n=6, seed=6)
    C = sp.csr_matrix(X)
    # split each stored value v into two entries v/4 and 3v/4 on the same column
    data, indices, indptr = [], [], [0]
    for i in range(C.shape[0]):
        lo, hi = C.indptr[i], C.indptr[i + 1]
        for v, j in zip(C.data[lo:hi], C.indices[lo:hi], strict=True):
            data += [v / 4, 3 * v / 4]
            indices += [j, j]
        indptr.append(len(data))
    Xdup = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=C.shape)
    assert not Xdup.has_canonical_format
    rows = np.random.default_rng(6).integers(0, X.shape[0], 300)
    kw = dict(eta0=0.1, variant="csgd", switch=15, fit_intercept=True, iterate="average")
    a, _ = _kernel(Xdup, y, rows, **kw)
    b, _ = _kernel(C, y, rows, **kw)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_zero_rows_without_intercept_skip_the_projection():
    """||xbar|| = 0 leaves the hyperplane undefined: the step is not projected (no NaN)."""
    X, y = _problem(m=20, n=5, seed=7)
    X[:3] = 0.0
    rows = np.array([0, 1, 2, 0] + list(np.random.default_rng(7).integers(0, 20, 100)))
    kw = dict(eta0=0.1, variant="ncsgd", switch=1, fit_intercept=False, iterate="last")
    coef, _ = _kernel(sp.csr_matrix(X), y, rows, **kw)
    ref, _ = csgd_reference(X, y, rows, **kw)
    assert np.all(np.isfinite(coef))
    np.testing.assert_allclose(coef[:, 0], ref, rtol=0, atol=1e-10)


def test_chunked_run_equals_single_run():
    X, y = _problem(seed=8)
    Xb = as_csr_buffers(X)
    state = np.array([9, 9, 9, 9], dtype=np.uint64)
    one = CSGDSolver(X.shape[1], 1, 0, 0.1, 40, 1.0, True, state)
    one.run(1000, Xb.data, Xb.indices, Xb.indptr, y)
    two = CSGDSolver(X.shape[1], 1, 0, 0.1, 40, 1.0, True, state)
    for t_end in (1, 17, 400, 1000):
        two.run(t_end, Xb.data, Xb.indices, Xb.indptr, y)
        two.average()                       # a flush in between changes nothing
    assert np.array_equal(one.last(), two.last())
    assert np.array_equal(one.average(), two.average())


# ---------------------------------------------------------------- convergence

def test_reaches_least_squares_optimum_on_well_conditioned_problem():
    rng = np.random.default_rng(10)
    m, n = 2000, 10
    X = rng.normal(size=(m, n)) + 1.0     # not centred: the projection has work to do
    y = X @ rng.normal(size=n) + 1.5 + 0.5 * rng.normal(size=m)
    A = np.hstack([X, np.ones((m, 1))])
    sol = np.linalg.lstsq(A, y, rcond=None)[0]
    l_opt = 0.5 * np.mean((A @ sol - y) ** 2)
    for variant, iterate in (("csgd", "last"), ("csgd", "average"), ("ncsgd", "average")):
        model = pgs.train_csgd(X, y, variant=variant, iterate=iterate, T=50 * m, seed=0)
        excess = model.objective(X, y) - l_opt
        assert 0 <= excess < 1e-2 * l_opt, (variant, iterate, excess, l_opt)
        np.testing.assert_allclose(model.coef, sol[:-1], atol=0.02)
        assert abs(model.intercept - sol[-1]) < 0.1


def test_ncsgd_never_above_sgd_corollary():
    """Paper's strongly convex set-up (uniform[0,1] rows, Gaussian w*, noise variance 0.2),
    same eta0 and the same sample sequence: averaged over seeds, NCSGD's excess loss is
    never above plain SGD's.  Early (while the mean direction is being learned) it is far
    below; late both follow the small eigenvalues and agree to the seed-to-seed noise,
    hence the 1 % allowance."""
    n, d = 2000, 20
    checks = [10, 30, 100, 300, 1000, 3000, 10000]
    excess = {1: [], 2: []}
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = rng.random((n, d))
        y = X @ rng.normal(size=d) + rng.normal(size=n) * np.sqrt(0.2)
        A = np.hstack([X, np.ones((n, 1))])
        l_opt = 0.5 * np.mean((A @ np.linalg.lstsq(A, y, rcond=None)[0] - y) ** 2)
        Xb = as_csr_buffers(X)
        for v in (1, 2):   # ncsgd, sgd
            s = CSGDSolver(d, 1, v, 0.03, 1, 1.0, False,
                           np.array([seed + 1, 2, 3, 4], dtype=np.uint64))
            curve = []
            for t in checks:
                s.run(t, Xb.data, Xb.indices, Xb.indptr, y)
                curve.append(0.5 * np.mean((A @ s.last()[:, 0] - y) ** 2) - l_opt)
            excess[v].append(curve)
    ncsgd, sgd = np.mean(excess[1], axis=0), np.mean(excess[2], axis=0)
    assert np.all(ncsgd <= 1.01 * sgd), (ncsgd, sgd)
    assert ncsgd[0] < 0.85 * sgd[0]


def test_auto_eta0_is_close_to_the_best_of_a_grid():
    """eta0="auto" (no knowledge of the Hessian) lands within 3x of the best grid loss."""
    rng = np.random.default_rng(11)
    n, d = 3000, 30
    X = rng.random((n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=n) * np.sqrt(0.2)
    A = np.hstack([X, np.ones((n, 1))])
    l_opt = 0.5 * np.mean((A @ np.linalg.lstsq(A, y, rcond=None)[0] - y) ** 2)
    auto = pgs.train_csgd(X, y, seed=0)
    grid = []
    for eta0 in 2.0 ** np.arange(-8, 3):
        try:
            grid.append(pgs.train_csgd(X, y, eta0=float(eta0), seed=0).objective(X, y) - l_opt)
        except FloatingPointError:
            pass
    assert auto.objective(X, y) - l_opt <= 3 * min(grid)
    assert auto.eta0_ > 0 and auto.params["eta0"] == "auto"


def test_auto_eta0_search_reports_its_trials():
    X, y = _problem(m=400, seed=12)
    Xb = as_csr_buffers(X)
    eta0, trials = auto_eta0(Xb, y.reshape(-1, 1), variant_id=0, switch=200, icpt=1.0,
                             average=False, seq=np.random.SeedSequence(0))
    etas = [e for e, _ in trials]
    losses = dict(trials)
    assert eta0 in etas and len(trials) >= 2
    assert losses[eta0] == min(losses.values())


# ------------------------------------------------------------ API and robustness

def test_determinism_and_seed_dependence():
    X, y = _problem(seed=13)
    a = pgs.train_csgd(X, y, seed=42)
    b = pgs.train_csgd(sp.csr_matrix(X), y, seed=42)
    c = pgs.train_csgd(X, y, seed=43)
    assert np.array_equal(a.coef, b.coef) and a.intercept == b.intercept
    assert a.eta0_ == b.eta0_
    assert not np.array_equal(a.coef, c.coef)
    d = pgs.train_csgd(X, y, seed=None)
    e = pgs.train_csgd(X, y, seed=np.random.SeedSequence(d.params["seed"]))
    assert np.array_equal(d.coef, e.coef)


def test_model_attributes_and_objective():
    X, y = _problem(seed=14)
    model = pgs.train_csgd(X, y, T=500, eta0=0.1, switch=30, variant="ncsgd",
                           iterate="average", seed=0)
    # a sibling of pgs.Model (the PGS model) under the shared base, not a subclass of it
    assert isinstance(model, LinearModel) and not isinstance(model, pgs.Model)
    assert model.T == 500 and model.eta0_ == 0.1 and not model.is_classifier
    assert model.params == dict(T=500, eta0=0.1, switch=30, variant="ncsgd",
                                fit_intercept=True, iterate="average", sampling="iid",
                                seed=0)
    z = X @ model.coef + model.intercept
    np.testing.assert_allclose(model.predict(X), z)
    assert model.objective(X, y) == pytest.approx(0.5 * np.mean((y - z) ** 2))
    sw = np.linspace(0.0, 2.0, len(y))
    assert model.objective(X, y, sw) == pytest.approx(0.5 * np.mean(sw * (y - z) ** 2))
    assert "CSGDModel" in repr(model)
    assert pgs.train_csgd(X, y, T=10, seed=0).params["switch"] == X.shape[0] // 2
    assert pgs.train_csgd(X, y, seed=0).T == 10 * X.shape[0]


def test_caller_arrays_untouched():
    X, y = _problem(seed=15)
    X32 = sp.csr_matrix(X.astype(np.float32))
    copies = [X.copy(), y.copy(), X32.data.copy(), X32.indices.copy(), X32.indptr.copy()]
    pgs.train_csgd(X, y, seed=0)
    pgs.train_csgd(X32, y, seed=0, iterate="average")
    pgs.train_cadaline(X32, (y > 0.7).astype(int), seed=0)
    for before, after in zip(copies, [X, y, X32.data, X32.indices, X32.indptr], strict=True):
        assert np.array_equal(before, after)


def test_divergence_is_an_error_not_a_crash():
    X, y = _problem(seed=16)
    with pytest.raises(FloatingPointError, match="eta0"):
        pgs.train_csgd(X * 1e3, y, eta0=1e6, variant="sgd", seed=0)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(T=0), ValueError, "T"),
    (dict(T=2.5), TypeError, "T"),
    (dict(eta0=-1.0), ValueError, "eta0"),
    (dict(eta0=float("nan")), ValueError, "eta0"),
    (dict(eta0="fast"), ValueError, "eta0"),
    (dict(eta0=None), TypeError, "eta0"),
    (dict(switch=0), ValueError, "switch"),
    (dict(switch="third"), ValueError, "switch"),
    (dict(switch=1.5), TypeError, "switch"),
    (dict(variant="adam"), ValueError, "variant"),
    (dict(variant=1), ValueError, "variant"),
    (dict(iterate="random"), ValueError, "iterate"),
    (dict(fit_intercept="yes"), TypeError, "fit_intercept"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(seed=1.5), ValueError, "seed"),
])
def test_bad_arguments(kwargs, exc, match):
    X, y = _problem(m=20, seed=17)
    with pytest.raises(exc, match=match):
        pgs.train_csgd(X, y, **kwargs)
    with pytest.raises(exc, match=match):
        pgs.train_cadaline(X, (y > 0.7).astype(int), **kwargs)


@pytest.mark.parametrize("X, y, exc, match", [
    (np.ones(5), np.ones(5), ValueError, "2-D"),
    (np.ones((5, 2)), np.ones(4), ValueError, "rows"),
    (np.array([[1.0, np.nan]] * 3), np.ones(3), ValueError, "non-finite"),
    (np.ones((3, 2)), np.array([1.0, np.inf, 0.0]), ValueError, "NaN or infinity"),
    (np.ones((3, 2)), np.array(["a", "b", "c"]), TypeError, "numeric"),
    (np.ones((0, 2)), np.ones(0), ValueError, "0 rows"),
    (np.array([["a", "b"]]), np.ones(1), TypeError, "numeric"),
])
def test_bad_data(X, y, exc, match):
    with pytest.raises(exc, match=match):
        pgs.train_csgd(X, y, seed=0)


def test_cadaline_bad_labels():
    X, _ = _problem(m=20, seed=18)
    with pytest.raises(ValueError, match="class"):
        pgs.train_cadaline(X, np.zeros(20), seed=0)
    with pytest.raises(ValueError, match="rows"):
        pgs.train_cadaline(X, np.arange(19) % 2, seed=0)


def test_fixed_rows_out_of_range():
    X, y = _problem(m=20, seed=19)
    with pytest.raises(ValueError, match="fixed_rows"):
        _fit(X, y.reshape(-1, 1), T=5, eta0=0.1, switch="half", variant="csgd",
             fit_intercept=True, iterate="last", seed=0, fixed_rows=[0, 1, 2, 20, 3])


# ---------------------------------------------------------------- C-Adaline

def test_cadaline_on_digits():
    """C-Adaline minimises the least-squares loss of the 0/1 class indicators, so after its
    default 10 passes its test accuracy should be within 2 points of the exact
    least-squares one-vs-rest classifier (numpy.linalg.lstsq, ~0.94 on this split)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = X / 16.0                                         # to [0, 1], as the paper's MNIST
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    A = np.hstack([Xtr, np.ones((len(Xtr), 1))])
    W = np.linalg.lstsq(A, (ytr[:, None] == np.arange(10)).astype(float), rcond=None)[0]
    acc_lstsq = np.mean(np.argmax(np.hstack([Xte, np.ones((len(Xte), 1))]) @ W, 1) == yte)
    model = pgs.train_cadaline(Xtr, ytr, seed=0)
    assert np.array_equal(model.classes, np.arange(10))
    assert model.decision_function(Xte).shape == (len(Xte), 10)
    acc = np.mean(model.predict(Xte) == yte)
    assert acc >= acc_lstsq - 0.02, (acc, acc_lstsq)
    # string labels map back through `classes`
    names = np.array([f"digit{k}" for k in range(10)])
    m2 = pgs.train_cadaline(Xtr, names[ytr], seed=0)
    assert np.array_equal(m2.predict(Xte), names[model.predict(Xte)])
    assert m2.objective(Xte, names[yte]) == pytest.approx(model.objective(Xte, yte))


# ---------------------------------------------------------------- sampling

def test_permutation_sampling_visits_every_row_once_per_epoch():
    """sampling="permutation": the kernel's epoch order is a permutation, and the run equals
    the fixed-row run on that order (so every row was used exactly once)."""
    X, y = _problem(m=50, seed=20)
    Xb = as_csr_buffers(X)
    state = np.array([3, 1, 4, 1], dtype=np.uint64)
    s = CSGDSolver(X.shape[1], 1, 0, 0.1, 25, 1.0, True, state, False, True)
    assert s.run(50, Xb.data, Xb.indices, Xb.indptr, y) == 0
    order = s.perm.copy()
    assert np.array_equal(np.sort(order), np.arange(50))
    assert not np.array_equal(order, np.arange(50))
    ref = CSGDSolver(X.shape[1], 1, 0, 0.1, 25, 1.0, True, state)
    ref.run(50, Xb.data, Xb.indices, Xb.indptr, y, order)
    assert np.array_equal(s.last(), ref.last())
    assert np.array_equal(s.average(), ref.average())
    # the next epoch is a fresh order, and chunked runs are bit-identical
    s.run(100, Xb.data, Xb.indices, Xb.indptr, y)
    assert not np.array_equal(s.perm, order)
    chunked = CSGDSolver(X.shape[1], 1, 0, 0.1, 25, 1.0, True, state, False, True)
    for t_end in (7, 50, 51, 100):
        chunked.run(t_end, Xb.data, Xb.indices, Xb.indptr, y)
    assert np.array_equal(chunked.last(), s.last())


def test_train_csgd_permutation_is_deterministic_and_converges():
    X, y = _problem(m=300, seed=21)
    a = pgs.train_csgd(X, y, sampling="permutation", seed=5)
    b = pgs.train_csgd(X, y, sampling="permutation", seed=5)
    assert np.array_equal(a.coef, b.coef) and a.params["sampling"] == "permutation"
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    l_opt = 0.5 * np.mean((A @ np.linalg.lstsq(A, y, rcond=None)[0] - y) ** 2)
    assert a.objective(X, y) - l_opt < 0.05 * l_opt
    with pytest.raises(ValueError, match="sampling"):
        pgs.train_csgd(X, y, sampling="cyclic")


def test_auto_eta0_survives_rows_of_very_different_norms():
    """The LMS start 1/mean||x||^2 can diverge when one row dominates; the search must
    then go down, not return a diverging step size."""
    rng = np.random.default_rng(22)
    X = rng.random((500, 8))
    X[::100] *= 300.0
    y = X @ rng.normal(size=8) + 0.1 * rng.normal(size=500)
    model = pgs.train_csgd(X, y, variant="sgd", seed=0)
    assert np.isfinite(model.objective(X, y)) and model.eta0_ > 0
    lms_start = 1.0 / (np.mean(np.sum(X**2, axis=1)) + 1.0)
    assert model.eta0_ < lms_start       # the search went down from its start


def test_overflowing_rows_are_named_not_blamed_on_eta0():
    """Rows whose squared norm overflows: a ValueError about X, not 'eta0=0.0 is too
    large'."""
    X = sp.random(30, 4, density=0.6, random_state=0, format="csr") * 1e200
    with pytest.raises(ValueError, match="too large for CSGD"):
        pgs.train_csgd(X, np.arange(30.0))
