"""The iteration offset t0 (`t_offset`): w_t = grad r*(lambda_t / ((t + t0) sigma)).

Checked against the NumPy transcription of Figure 1 with t sigma replaced by (t + t0) sigma
(tests/reference.py), against an independent transcription of SGD with scikit-learn's
"optimal" step 1/(sigma (t + t0)) (which p = 2, k = 1 must reproduce), for exact warm-start
continuation, for its validation, and for the objective gap its guarantee states.
"""

import math

import numpy as np
import paper
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from reference import loss_value, pgs_reference, sgd_offset_reference

import pgs

M, N, T, SIGMA = 30, 9, 120, 0.05
RTOL = 1e-10


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((M, N)) * (rng.random((M, N)) < 0.45)
    y = np.where(rng.random(M) < 0.4, -1.0, 1.0)
    y_reg = X @ rng.standard_normal(N) + 0.3 * rng.standard_normal(M)
    return X, y, y_reg


def _rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), np.finfo(float).tiny)


@pytest.mark.parametrize("t_offset", [0.5, 7.0, 1000.0])
@pytest.mark.parametrize("B", [None, 0.3])
@pytest.mark.parametrize("k", [1, 7])
@pytest.mark.parametrize("p", [2.0, 1.5, 1.25])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
def test_kernel_matches_reference_with_offset(loss, p, k, B, t_offset):
    """All three iterates, CSR input, intercept on, against Figure 1 with (t + t0) sigma."""
    X, y_cls, y_reg = _problem()
    y = y_reg if loss == "squared" else y_cls
    rows = np.random.default_rng(1).integers(0, M, T * k)
    common = dict(loss=loss, p=p, sigma=SIGMA, T=T, k=k, B=B, seed=3, t_offset=t_offset,
                  intercept_scaling=0.7)
    last = paper.on_rows(sp.csr_matrix(X), y, rows, iterate="last", **common)
    its = np.array(pgs_reference(X, y, loss=loss, p=p, sigma=SIGMA, T=T, k=k, rows=rows,
                                 B=last.params["B"], icpt=0.7, eps=last.params["epsilon"],
                                 t_offset=t_offset))
    assert last.params["t_offset"] == t_offset
    assert _rel(last.full_weights(), its[-1]) < RTOL
    avg = paper.on_rows(sp.csr_matrix(X), y, rows, iterate="average", **common)
    assert _rel(avg.full_weights(), its.mean(axis=0)) < RTOL
    rnd = paper.on_rows(sp.csr_matrix(X), y, rows, iterate="random", **common)
    assert _rel(rnd.full_weights(), its[rnd.iteration - 1]) < RTOL


@pytest.mark.parametrize("t_offset", [1.0, 25.0, 1e4])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "smooth_hinge"])
def test_p2_k1_is_sgd_with_offset_step(loss, t_offset):
    """p = 2, k = 1, no projection: every iterate is SGD's with step 1/(sigma (t + t0))."""
    X, y, _ = _problem(2)
    rows = np.random.default_rng(4).integers(0, M, T)
    sgd = sgd_offset_reference(X, y, loss=loss, sigma=SIGMA, T=T, rows=rows,
                               t_offset=t_offset, icpt=1.0, eps=1.0)
    for t in (1, 2, 17, T):
        model = paper.on_rows(X, y, rows, loss=loss, sigma=SIGMA, T=t, seed=0, iterate="last",
                              t_offset=t_offset)
        assert _rel(model.full_weights(), sgd[t - 1]) < 1e-11


def test_zero_offset_is_the_paper_bit_for_bit():
    X, y, _ = _problem()
    a = paper.train(X, y, T=500, seed=5, iterate="average")
    b = paper.train(X, y, T=500, seed=5, iterate="average", t_offset=0)
    assert np.array_equal(a.full_weights(), b.full_weights())
    assert b.params["t_offset"] == 0.0


def test_offset_shrinks_the_early_iterates():
    """The first iterate is -lambda_1 / ((1 + t0) sigma): (1 + t0) times smaller."""
    X, y, _ = _problem()
    rows = np.array([0, np.flatnonzero(y != y[0])[0]])     # (row 0 first; both classes)
    w0 = paper.on_rows(X, y, rows, sigma=SIGMA, T=1, iterate="last").full_weights()
    w9 = paper.on_rows(X, y, rows, sigma=SIGMA, T=1, iterate="last", t_offset=9).full_weights()
    np.testing.assert_allclose(w9 * 10.0, w0, rtol=1e-14)


@pytest.mark.parametrize("iterate", ["last", "average"])
def test_warm_start_continues_with_the_same_offset(iterate):
    X, y, _ = _problem()
    kw = dict(loss="logistic", seed=2, iterate=iterate, t_offset=40.0)
    once = paper.train(X, y, T=300, **kw)
    first = paper.train(X, y, T=120, keep_state=True, **kw)
    kw.pop("seed")
    both = paper.train(X, y, T=180, warm_start=first, **kw)
    assert np.array_equal(both.full_weights(), once.full_weights())
    with pytest.raises(ValueError, match="t_offset"):
        paper.train(X, y, T=10, loss="logistic", iterate=iterate, warm_start=first,
                  t_offset=41.0)


@pytest.mark.parametrize("bad, error", [(-1.0, ValueError), (float("nan"), ValueError),
                                        (float("inf"), ValueError), ("fast", ValueError),
                                        (True, TypeError), (None, TypeError)])
def test_t_offset_validation(bad, error):
    X, y, _ = _problem()
    with pytest.raises(error, match="t_offset"):
        paper.train(X, y, T=5, t_offset=bad)
    with pytest.raises(error, match="t_offset"):
        pgs.PGSClassifier(T=5, t_offset=bad).fit(X, y)


def _logistic_objective(Xa, y, v, sigma):
    return 0.5 * sigma * v @ v + loss_value("logistic", Xa @ v, y, 0.0).mean()


def test_average_iterate_gap_within_the_stated_bound():
    """E F(w_avg) - F* <= (t0 F(0) + G^2 (1 + ln T) / (2 sigma)) / T (train's docstring).

    The bound holds in expectation over the row draws (three seeds here). The gap must
    also be small in absolute terms (convergence) while t0 is small next to T; a t0 of
    T / 4 pays its t0 F(0) / T term visibly (measured: 6e-3 against 1e-4 at t0 <= 100).
    """
    rng = np.random.default_rng(7)
    m, n, sigma, T_ = 200, 12, 0.01, 20_000
    X = rng.standard_normal((m, n)) / math.sqrt(n)
    y = np.where(X @ rng.standard_normal(n) + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    Xa = np.hstack([X, np.ones((m, 1))])
    res = so.minimize(lambda v: _logistic_objective(Xa, y, v, sigma), np.zeros(n + 1),
                      jac=lambda v: sigma * v + Xa.T @ (-y / (1.0 + np.exp(y * (Xa @ v)))) / m,
                      method="L-BFGS-B", options=dict(gtol=1e-12, ftol=1e-16, maxiter=5000))
    f_star = res.fun
    G2 = np.max(np.sum(Xa**2, axis=1))             # |logistic'| <= 1
    for t0 in (0.0, 100.0, 5000.0):
        gaps = []
        for seed in range(3):
            model = paper.train(X, y, loss="logistic", sigma=sigma, T=T_, seed=seed,
                              iterate="average", t_offset=t0)
            gaps.append(_logistic_objective(Xa, y, model.full_weights(), sigma) - f_star)
        bound = (t0 * math.log(2.0) + G2 * (1.0 + math.log(T_)) / (2.0 * sigma)) / T_
        assert min(gaps) > -1e-12
        assert np.mean(gaps) <= bound
        if t0 <= T_ / 20:
            assert np.mean(gaps) < 1e-3


@pytest.mark.parametrize("t_offset", [0.0, 7.0])
@pytest.mark.parametrize("s", [1.0, 10.0])
def test_hinge_bias_lives_on_a_grid_of_s2_over_sigma_t(s, t_offset):
    """Why intercept_scaling = 10 collapses: with hinge, every gradient adds -+s to lambda_b,
    so b = s * w_b = s^2 n / (sigma (T + t0)) for an integer n. At s = 10, sigma = 1e-4,
    T = 2e5 the grid step is 5 while the optimum's |b| is about 1
    (bench/results/ovr_gap_quick.md)."""
    X, y, _ = _problem(3)
    ns = []
    for T_ in range(990, 1000):
        model = paper.train(X, y, sigma=SIGMA, T=T_, seed=1, iterate="last",
                          intercept_scaling=s, t_offset=t_offset)
        ns.append(model.intercept * SIGMA * (T_ + t_offset) / s**2)
    assert np.all(np.abs(np.array(ns) - np.round(ns)) < 1e-9)
    assert np.any(np.round(ns) != 0)


@pytest.mark.parametrize("q", [2.0, 2.25, 3.0, 2.5, 11.0])
@pytest.mark.parametrize("dtype, index_dtype", [(np.float64, np.int32), (np.float32, np.int64)])
def test_row_stats_match_numpy(q, dtype, index_dtype):
    """The one scan of X (pgs.rules.defaults.row_stats): the sums of ||x_i||_2^2 and
    ||x_i||_q^2 and max_i ||x_i||_q, against NumPy on the same buffers (empty rows
    included); a non-finite value gives NaN. t_offset="auto"'s G adds the column s."""
    from pgs.rules.data import CSRBuffers
    from pgs.rules.defaults import row_stats
    rng = np.random.default_rng(3)
    A = sp.random(400, 60, density=0.1, random_state=4, format="csr", dtype=np.float64)
    A.data = rng.standard_normal(A.nnz)
    A = (sp.diags(np.where(np.arange(400) % 50 == 0, 0.0, 1.0)) @ A).tocsr()
    A.eliminate_zeros()                                 # 8 empty rows
    assert np.sum(np.diff(A.indptr) == 0) >= 8
    data = A.data.astype(dtype)
    indptr = A.indptr.astype(index_dtype)
    indices = A.indices.astype(index_dtype)
    dense = np.abs(A.toarray().astype(dtype).astype(np.float64))
    norms_q = np.sum(dense ** q, axis=1) ** (1.0 / q)
    stats = row_stats(CSRBuffers(data, indices, indptr, A.shape), q)
    assert math.isclose(stats["max_q"], norms_q.max(), rel_tol=1e-12)
    assert math.isclose(stats["sq_q"], np.sum(norms_q ** 2), rel_tol=1e-12)
    assert math.isclose(stats["sq"], np.sum(dense ** 2), rel_tol=1e-12)
    assert stats["rows"] == 400
    bad = data.copy()
    bad[7] = np.nan
    assert math.isnan(row_stats(CSRBuffers(bad, indices, indptr, A.shape), q)["max_q"])


def _ragged(dtype, index_dtype, m=300, seed=5):
    """CSR buffers with rows of 0 to 600 entries (past the scan's 128-entry chunks) and
    values over 20 binary orders of magnitude, both signs."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 601, m) * (rng.random(m) < 0.9)      # ~10% empty rows
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    data = (rng.choice([-1.0, 1.0], indptr[-1]) * 2.0 ** rng.uniform(-10, 10, indptr[-1]))
    return data.astype(dtype), indptr


@pytest.mark.parametrize("p", [2.0, 1.5, 1.8, 1.3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_compiled_row_scan_matches_numpy(p, dtype, index_dtype):
    """pgs._core.row_norms: each row's ||x||_2^2 and ||x||_q^2 (q = p / (p - 1)) within
    1e-13 of NumPy's (the kernel's powers), 0 for an empty row, one array for p = 2."""
    from pgs import _core
    data, indptr = _ragged(dtype, index_dtype)
    q = p / (p - 1.0)
    sq, sq_q = _core.row_norms(data, indptr, q)
    a = np.abs(data.astype(np.float64))
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    np.testing.assert_allclose(sq, np.bincount(rows, a * a, len(sq)), rtol=1e-13, atol=0)
    ref_q = np.bincount(rows, a ** q, len(sq)) ** (2.0 / q)
    np.testing.assert_allclose(sq_q, ref_q, rtol=1e-13, atol=0)
    assert np.all(sq[np.diff(indptr) == 0] == 0.0) and (sq_q is sq) == (p == 2.0)


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_compiled_row_scan_same_bits_in_row_blocks(p):
    """X split into blocks of rows at uneven points (the blocks' buffers start at 0, so a
    row's entries sit at other offsets): every row's values keep their bits."""
    from pgs import _core
    data, indptr = _ragged(np.float64, np.int64)
    whole = _core.row_norms(data, indptr, p / (p - 1.0))
    cuts = [0, 1, 2, 37, 38, 151, 299, 300]
    for i, a in enumerate(whole):
        parts = [_core.row_norms(data[indptr[lo]:indptr[hi]], indptr[lo:hi + 1] - indptr[lo],
                                 p / (p - 1.0))[i]
                 for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)]
        np.testing.assert_array_equal(a, np.concatenate(parts))


def _sampled(first, m, stride):
    """The rows (of m, from global index `first`) whose index hashes to a multiple of
    `stride`: SplitMix64's finaliser, in NumPy."""
    z = np.arange(first, first + m, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.flatnonzero(z % np.uint64(stride) == 0)


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
@pytest.mark.parametrize("stride", [1, 3, 7])
def test_compiled_row_scan_reads_the_rows_whose_index_hashes_to_a_multiple(p, stride):
    """With `stride`, the norms are those of the rows whose index in the whole X hashes to
    a multiple of it (the whole scan's, bit for bit), also for blocks of rows given their
    first row's index."""
    from pgs import _core
    data, indptr = _ragged(np.float64, np.int64)
    q = p / (p - 1.0)
    sq_all, sq_q_all = _core.row_norms(data, indptr, q)
    sq, sq_q = _core.row_norms(data, indptr, q, stride)
    rows = np.arange(300) if stride == 1 else _sampled(0, 300, stride)
    assert 300 / stride / 2 < rows.size < 300 / stride * 2
    np.testing.assert_array_equal(sq, sq_all[rows])
    np.testing.assert_array_equal(sq_q, sq_q_all[rows])
    assert (sq_q is sq) == (p == 2.0)
    cuts = [0, 1, 2, 37, 38, 151, 299, 300]
    for i, whole in enumerate((sq, sq_q)):
        parts = [_core.row_norms(data[indptr[lo]:indptr[hi]], indptr[lo:hi + 1] - indptr[lo],
                                 q, stride, lo)[i]
                 for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)]
        np.testing.assert_array_equal(np.concatenate(parts), whole)
    with pytest.raises(ValueError, match="stride must be >= 1"):
        _core.row_norms(data, indptr, q, 0)


def test_row_stats_read_one_row_in_m_over_q_sample_rows(monkeypatch):
    """Up to 2 Q_SAMPLE_ROWS rows every row is read; past it one row in m // Q_SAMPLE_ROWS
    (hashed), unless `full` (the t_offset rule's maximum needs every row)."""
    from pgs.rules import defaults as D
    from pgs.rules.data import CSRBuffers
    monkeypatch.setattr(D, "Q_SAMPLE_ROWS", 50)
    data, indptr = _ragged(np.float64, np.int64)              # 300 rows: stride 6
    Xb = CSRBuffers(data, np.zeros(data.shape[0], np.int64), indptr, (300, 1))
    q = 1.5 / 0.5
    sq, sq_q = D.row_sq_norms(Xb, q)
    rows = _sampled(0, 300, 6)
    sampled, full = D.row_stats(Xb, q), D.row_stats(Xb, q, full=True)
    assert sampled["read"] == rows.size and full["read"] == 300
    assert sampled["rows"] == full["rows"] == 300
    assert sampled["sq_q"] == math.fsum(sq_q[rows]) and full["sq_q"] == math.fsum(sq_q)
    assert sampled["sq"] == math.fsum(sq[rows]) and full["sq"] == math.fsum(sq)
    assert full["max_q"] == math.sqrt(np.max(sq_q))
    # the rules read means over the rows read
    assert D.intercept_rate(sampled) == D.INTERCEPT_RATE * math.fsum(sq[rows]) / rows.size


@pytest.mark.parametrize("schedule, full", [("pgs", True), ("asgd", False)])
def test_one_scan_serves_every_rule_of_a_call(monkeypatch, schedule, full):
    """A call reads X's rows once for all its "auto" rules: every row when t_offset's
    maximum needs them ("pgs" schedule), else the sample."""
    from pgs.rules import defaults as D
    monkeypatch.setattr(D, "Q_SAMPLE_ROWS", 50)                # (300 rows: one in 6)
    data, indptr = _ragged(np.float64, np.int64)
    X = sp.csr_matrix((data, np.zeros(data.shape[0], np.int64), indptr), shape=(300, 1))
    strides = []
    real = D.row_sq_norms
    monkeypatch.setattr(D, "row_sq_norms", lambda *a: strides.append(a[2]) or real(*a))
    y = np.where(np.arange(300) % 3 == 0, 1.0, -1.0)
    pgs.train(X, y, sigma=1e-3, T=10, p=1.5, schedule=schedule, intercept="column", seed=0)
    assert strides == [1 if full else 6]
