"""The compiled kernel against the NumPy transcription of Figure 1 (tests/reference.py).

Both run on the SAME sampled rows (`paper.on_rows`: the rows chosen, read in order), so the
only difference is floating-point rounding: the kernel keeps w_t = c_t * u (docs/design.md
section 3) while the reference materialises w_t = grad r*(lambda / (t sigma)) at every step.
Agreement to 1e-10 relative (in the max norm) for every loss, p, k, B, intercept, input
format and iterate.
"""

import numpy as np
import paper
import pytest
import scipy.sparse as sp
from reference import pegasos_reference, pgs_reference

import pgs
import pgs.engine.solver
from pgs.rules.data import as_csr_buffers
from pgs.rules.losses import loss_spec
from pgs.rules.validation import MULTICLASS_LOSSES

M, N, T, SIGMA = 30, 9, 120, 0.05
RTOL = 1e-10


def _problem(seed=0, m=M, n=N):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.45)
    X[3] = 0.0                                   # an empty row
    X[:, 5] = 0.0                                # a column that is never touched
    y_cls = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    y_reg = X @ rng.standard_normal(n) + 0.3 * rng.standard_normal(m)
    return X, y_cls, y_reg


def _csr(X, index_dtype):
    A = sp.csr_matrix(X)
    # scipy's constructor downcasts index arrays that fit into int32: set them afterwards.
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    assert as_csr_buffers(A).indices.dtype == index_dtype
    return A


def _rel(a, b):
    scale = max(np.max(np.abs(b)), np.finfo(float).tiny)
    return np.max(np.abs(a - b)) / scale


def _targets(loss):
    X, y_cls, y_reg = _problem()
    return X, (y_cls if loss_spec(loss).is_classification else y_reg)


def _check_against_reference(X_in, X_ref, y, *, loss, p, k, B, fit_intercept, rtol):
    rows = np.random.default_rng(1).integers(0, X_ref.shape[0], T * k)
    common = dict(loss=loss, p=p, sigma=SIGMA, T=T, k=k, B=B, fit_intercept=fit_intercept,
                  seed=3)
    last = paper.on_rows(X_in, y, rows, iterate="last", **common)
    B_used = last.params["B"]
    if B is None and loss_spec(loss).auto_radius:
        # B=None means "auto" for losses with unbounded gradients: the reference needs it too.
        assert B_used is not None and B_used > 0
    else:
        assert B_used == B
    icpt = 1.0 if fit_intercept else 0.0
    its = pgs_reference(X_ref, y, loss=loss, p=p, sigma=SIGMA, T=T, k=k, rows=rows,
                        B=B_used, icpt=icpt, eps=last.params["epsilon"])
    its = np.array(its)
    if B is not None:
        # The radius must actually bind somewhere, or the projection path goes untested.
        norms = np.sum(np.abs(its) ** p, axis=1) ** (1 / p)
        assert np.any(np.isclose(norms, B_used, rtol=1e-12, atol=0))
    if not fit_intercept:
        assert np.all(its[:, -1] == 0.0) and last.intercept == 0.0

    assert last.iteration == T
    assert _rel(last.full_weights(), its[-1]) < rtol

    avg = paper.on_rows(X_in, y, rows, iterate="average", **common)
    assert avg.iteration == T
    assert _rel(avg.full_weights(), its.mean(axis=0)) < rtol

    rnd = paper.on_rows(X_in, y, rows, iterate="random", **common)
    assert 1 <= rnd.iteration <= T
    assert _rel(rnd.full_weights(), its[rnd.iteration - 1]) < rtol
    return its


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("B", [None, 0.3])
@pytest.mark.parametrize("k", [1, 7])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.25])
@pytest.mark.parametrize("loss", [n for n in pgs.LOSS_NAMES if n not in MULTICLASS_LOSSES])
def test_kernel_matches_figure1_float64(loss, p, k, B, fit_intercept):
    """float64, dense and CSR with int32 and int64 indices, all three iterates."""
    X, y = _targets(loss)
    for X_in in (X, _csr(X, np.int32), _csr(X, np.int64)):
        _check_against_reference(X_in, X, y, loss=loss, p=p, k=k, B=B,
                                 fit_intercept=fit_intercept, rtol=RTOL)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("p", [2.0, 1.5, 1.25])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared", "huber"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_kernel_matches_figure1_float32(loss, p, fit_intercept, index_dtype):
    """float32 X is read in place and promoted to double per product.

    So the kernel runs Figure 1 exactly on the float32-rounded values: against the reference on
    X.astype(float32) the agreement is as tight as in float64. Against the unrounded float64
    data the trajectory moves by the float32 rounding of X only (checked loosely: 1e-4).
    """
    X, y = _targets(loss)
    X32 = X.astype(np.float32)
    A = _csr(X32, index_dtype)
    assert as_csr_buffers(A).data.dtype == np.float32
    its = _check_against_reference(A, X32.astype(np.float64), y, loss=loss, p=p, k=7, B=None,
                                   fit_intercept=fit_intercept, rtol=RTOL)
    its64 = _check_against_reference(X, X, y, loss=loss, p=p, k=7, B=None,
                                     fit_intercept=fit_intercept, rtol=RTOL)
    assert _rel(its[-1], its64[-1]) < 1e-4


@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.25])
def test_chunked_solver_runs_equal_one_run(p):
    """Solver.run to T1 then to T2 is bit-identical to one run to T2 (the resumable state)."""
    X, y, _ = _problem()
    b = as_csr_buffers(X)
    seq = np.random.SeedSequence(11)
    args = (N, pgs.LOSS_NAMES.index("logistic"), p, SIGMA, 0.0, 1.0, 0.0, 3, 50, True)
    one = pgs.engine.solver.Solver(*args, seq.generate_state(4, dtype=np.uint64))
    two = pgs.engine.solver.Solver(*args, seq.generate_state(4, dtype=np.uint64))
    assert one.run(200, b.data, b.indices, b.indptr, y) == 0
    assert two.run(37, b.data, b.indices, b.indptr, y) == 0
    assert two.run(200, b.data, b.indices, b.indptr, y) == 0
    assert one.t == two.t == 200
    np.testing.assert_array_equal(one.last(), two.last())
    np.testing.assert_array_equal(one.average(), two.average())
    np.testing.assert_array_equal(one.w_pick, two.w_pick)
    np.testing.assert_array_equal(one.rng_state, two.rng_state)


@pytest.mark.parametrize("sparse", [False, True])
def test_p2_k1_reproduces_pegasos(sparse):
    """p=2, k=1, no B, no intercept is Pegasos' own multiplicative update, on the same rows.

    Not bitwise: Pegasos rescales w by (1 - 1/t) every step, PGS divides the running sum
    lambda by t*sigma, so the roundings differ (agreement to 1e-12 relative).
    """
    X, y, _ = _problem(seed=5, m=60, n=15)
    T_ = 2000
    rows = np.random.default_rng(2).integers(0, X.shape[0], T_)
    X_in = sp.csr_matrix(X) if sparse else X
    peg = np.array(pegasos_reference(X, y, sigma=SIGMA, T=T_, rows=rows))
    common = dict(loss="hinge", p=2.0, sigma=SIGMA, T=T_, k=1, B=None, fit_intercept=False,
                  seed=0)
    last = paper.on_rows(X_in, y, rows, iterate="last", **common)
    assert _rel(last.coef, peg[-1]) < 1e-12
    rnd = paper.on_rows(X_in, y, rows, iterate="random", **common)
    assert _rel(rnd.coef, peg[rnd.iteration - 1]) < 1e-12
    # and the Figure 1 transcription agrees with Pegasos too (the two references are consistent)
    fig1 = pgs_reference(X, y, loss="hinge", p=2.0, sigma=SIGMA, T=T_, k=1, rows=rows)
    assert _rel(fig1[-1][:-1], peg[-1]) < 1e-12


@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.25, 1.1])
def test_long_run_average_is_accurate(p):
    """The lazily folded average over a long run equals a compensated sum of w_1..w_T.

    Regression test: spans u_j * (C - clast_j) used to cancel catastrophically for p < 2
    (C dominated by the huge early c_t); p=1.25 was off by 6e-5 relative at T=1e4 and by 0.7
    at T=1e5 before the kernel restarted C periodically.
    """
    X, y, _ = _problem()
    b = as_csr_buffers(X)
    T_ = 20000
    state = np.random.SeedSequence(1).generate_state(4, dtype=np.uint64)
    s = pgs.engine.solver.Solver(N, pgs.LOSS_NAMES.index("hinge"), p, SIGMA, 0.0, 1.0, 0.0, 1, 0,
                         True, state)
    acc = np.zeros(N + 1)
    comp = np.zeros(N + 1)
    for t in range(1, T_ + 1):
        assert s.run(t, b.data, b.indices, b.indptr, y) == 0
        step = s.last() - comp                  # Kahan summation of the materialised iterates
        tot = acc + step
        comp = (tot - acc) - step
        acc = tot
    assert _rel(s.average(), acc / T_) < 1e-12


@pytest.mark.parametrize("B", [None, 0.05])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.7, 1.25])
def test_average_where_the_scale_jumps(p, B):
    """p >= 1.2 keeps its average as C u - wsum (one vector; see _fold_average), whose
    rounding grows with how far c_t falls within one iteration.
    Squared loss with outlying targets (a few 1e4 times the rest) makes lam jump, and
    with a binding radius B, c_t with it: the average must still equal a compensated
    sum of the materialised iterates to 1e-12, over 20,000 iterations at k = 1 and
    k = 3."""
    X, _, y = _problem()
    y = y.copy()
    y[::50] *= 1e4
    b = as_csr_buffers(X)
    for k in (1, 3):
        T_ = 20000 // k
        state = np.random.SeedSequence(2).generate_state(4, dtype=np.uint64)
        s = pgs.engine.solver.Solver(N, pgs.LOSS_NAMES.index("squared"), p, SIGMA,
                             0.0 if B is None else B, 1.0, 0.0, k, 0, True, state)
        acc = np.zeros(N + 1)
        comp = np.zeros(N + 1)
        scales = []
        for t in range(1, T_ + 1):
            assert s.run(t, b.data, b.indices, b.indptr, y) == 0
            scales.append(s.scale)
            step = s.last() - comp
            tot = acc + step
            comp = (tot - acc) - step
            acc = tot
        if B is not None:
            # (the radius binds and moves c_t: some iteration cuts it by 4x or more)
            assert np.min(np.array(scales[1:]) / np.array(scales[:-1])) < 0.25
        assert _rel(s.average(), acc / T_) < 1e-12


@pytest.mark.parametrize("p", [1.5, 1.8, 1.7, 1.1])
def test_average_across_a_parked_coordinate(p):
    """A feature of 1e125 takes its |lam_j| / S past ratio_hi (2^(900 / q): 2^300 to
    2^400 here) in one update: u_j is
    parked (counted as 0 by the one-vector average of p >= 1.2, by the spans of p < 1.2)
    and the loop rescales. Every coordinate of the average, large or small,
    must still equal a compensated sum of the materialised iterates to 1e-13."""
    rng = np.random.default_rng(0)
    m, n = 30, 10
    X = rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.5)
    X[:, 9] = rng.standard_normal(m)        # (u_9 is not 0 when it is parked)
    X[7, 9] = 1e125
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    b = as_csr_buffers(sp.csr_matrix(X))
    s = pgs.engine.solver.Solver(n, pgs.LOSS_NAMES.index("hinge"), p, 0.1, 0.0, 1.0, 0.0, 1, 0,
                         True, np.ones(4, dtype=np.uint64))
    T_ = 3000
    acc = np.zeros(n + 1)
    comp = np.zeros(n + 1)
    for t in range(1, T_ + 1):
        assert s.run(t, b.data, b.indices, b.indptr, y) == 0
        step = s.last() - comp
        tot = acc + step
        comp = (tot - acc) - step
        acc = tot
    assert s.lam_scale >= 1e124                     # (rescaled to the parked one)
    ref = acc / T_
    assert np.abs(ref[9]) > 1e115 and np.all(np.abs(ref[:3]) < 1.0)
    np.testing.assert_allclose(s.average(), ref, rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("p", [1.01, 1.02, 1.05, 1.1])
def test_every_iterate_matches_for_p_near_one(p):
    """Every w_t (t = 1..T) and the average, for p near 1 (q = 101 .. 11), where a term
    |lam_j|^q of Q can collapse by 1e13 in one update and |lam_j|^(q-1) leaves the double
    range: the regime of the kernel's scaled storage and exact-Q safeguards.

    Regression test: at p = 1.01 some w_t were off by 2e-3 (Q rounded at the scale of a
    term that later collapsed) and the average by 0.44.
    """
    X, y, _ = _problem()
    T_, k = 300, 3
    rows = np.random.default_rng(1).integers(0, X.shape[0], T_ * k)
    b = as_csr_buffers(paper.rows_of(X, rows))        # (read in order: cyclic sampling)
    its = np.array(pgs_reference(X, y, loss="hinge", p=p, sigma=SIGMA, T=T_, k=k, rows=rows,
                                 icpt=1.0))
    s = pgs.engine.solver.Solver(N, pgs.LOSS_NAMES.index("hinge"), p, SIGMA, 0.0, 1.0, 0.0, k,
                                 0, True, np.ones(4, dtype=np.uint64), sampling=2)
    for t in range(1, T_ + 1):
        assert s.run(t, b.data, b.indices, b.indptr, y[rows]) == 0
        assert _rel(s.last(), its[t - 1]) < 1e-12, t
    assert _rel(s.average(), its.mean(axis=0)) < 1e-12


def test_p_close_to_one_long_run():
    """p = 1.01 (q = 101) over 10^4 iterations: |lam_j|^q passes 1e308 near t = 8200.

    Regression test: the kernel stored u and Q for lam itself and failed with
    FloatingPointError; it now stores them for lam / s with s a power of two.
    """
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 20))
    y = np.where(X @ rng.standard_normal(20) > 0, 1.0, -1.0)
    T_ = 10000
    rows = np.random.default_rng(1).integers(0, X.shape[0], T_)
    model = paper.on_rows(X, y, rows, loss="logistic", p=1.01, sigma=1e-2, T=T_, seed=0,
                          iterate="last")
    its = pgs_reference(X, y, loss="logistic", p=1.01, sigma=1e-2, T=T_, k=1, rows=rows,
                        icpt=1.0)
    assert np.all(np.isfinite(model.coef))
    assert _rel(model.full_weights(), its[-1]) < 1e-10


@pytest.mark.parametrize("p", [1.01, 1.25, 1.5, 1.8])
@pytest.mark.parametrize("a", [2.0**-400, 2.0**100])
def test_rescaled_features_give_rescaled_weights(p, a):
    """Features times a (a power of two), sigma times a^2 and intercept_scaling a: the margins,
    hence the whole trajectory, are unchanged and w becomes w / a (grad r* is 1-homogeneous).

    Regression test: with features of 2^-400, |lam_j|^(q-1) underflowed to 0 and the model
    was silently the zero vector (p < 2); with 2^100 and p = 1.01, Q overflowed.
    """
    X, y, _ = _problem()
    for iterate in ("last", "average", "random"):
        kw = dict(loss="hinge", p=p, T=300, k=3, seed=4, iterate=iterate)
        base = paper.train(X, y, sigma=SIGMA, **kw)
        scaled = paper.train(X * a, y, sigma=SIGMA * a * a, intercept_scaling=a, **kw)
        assert scaled.iteration == base.iteration
        # pow is not exactly homogeneous: a relative error d in lam is (q-1) d in u
        rtol = 5e-13 * p / (p - 1)
        assert _rel(scaled.coef * a, base.coef) < rtol
        assert scaled.intercept == pytest.approx(base.intercept, rel=rtol)


@pytest.mark.parametrize("k", [16, 33])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.25])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
def test_large_batches_match_reference(loss, p, k):
    """Batches of k >= 16 rows (which repeat rows and columns) against Figure 1, for the
    last and the averaged iterate."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 9)) * (rng.random((60, 9)) < 0.6)
    y = np.where(rng.standard_normal(60) > 0, 1.0, -1.0)
    if loss == "squared":
        y = rng.standard_normal(60)
    T_ = 40
    rows = rng.integers(0, 60, T_ * k)
    for iterate in ("last", "average"):
        model = paper.on_rows(sp.csr_matrix(X), y, rows, loss=loss, p=p, sigma=0.1, T=T_,
                              k=k, iterate=iterate)
        ref = pgs_reference(X, y, loss=loss, p=p, sigma=0.1, T=T_, k=k, rows=rows,
                            B=model.params["B"], icpt=1.0)
        expected = ref[-1] if iterate == "last" else np.mean(ref, axis=0)
        assert _rel(model.full_weights(), expected) < 1e-10


@pytest.mark.parametrize("p", [2.0, 1.5, 1.8, 1.25, 1.15])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wide_large_batches_match_reference(p, dtype):
    """Large batches on a wide X (300 columns) whose batches repeat rows and share
    popular columns, with the average (kept by spans for p < 1.2): Figure 1 to 1e-10."""
    rng = np.random.default_rng(11)
    m, n, k, T_ = 150, 300, 64, 25
    popular = rng.random(n) ** 6                      # a few columns in most rows
    X = (rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.02 + 0.5 * popular))
    X = X.astype(dtype).astype(np.float64)
    y = np.where(X @ rng.standard_normal(n) > 0, 1.0, -1.0)
    rows = rng.integers(0, m, T_ * k)
    A = sp.csr_matrix(X.astype(dtype))
    model = paper.on_rows(A, y, rows, loss="logistic", p=p, sigma=0.05, T=T_, k=k,
                          iterate="average")
    ref = pgs_reference(X, y, loss="logistic", p=p, sigma=0.05, T=T_, k=k, rows=rows,
                        B=model.params["B"], icpt=1.0)
    assert _rel(model.full_weights(), np.mean(ref, axis=0)) < 1e-10
