"""The rules themselves: which rows the samplers draw, which iterate `iterate="random"`
keeps, the closed form of `t_offset="auto"`, and the tie rule of `sigma="auto"`.

The other suites check that the kernel follows a row sequence exactly and that runs are
reproducible; these tests check the sequences and choices are the right ones, by their
distributions. Every statistical test runs on fixed seeds, so it is deterministic: a
chi-square statistic is compared with the quantile a correct sampler exceeds with
probability 1e-6 (chosen once; a wrong rule exceeds it by orders of magnitude).
"""

import math

import numpy as np
import paper
import pytest
import scipy.sparse as sp
from reference import loss_value
from scipy.stats import chi2

import pgs
from pgs.training import sigma_auto as SA

#: A correct sampler's chi-square statistic exceeds chi2.ppf(1 - ALPHA, df) with
#: probability ALPHA (the seeds are fixed: these tests are deterministic).
ALPHA = 1e-6


def _chi2_stat(counts, expected):
    counts = np.asarray(counts, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.sum((counts - expected) ** 2 / expected))


def _assert_fits(counts, probs, what):
    """Chi-square goodness of fit of `counts` to the probabilities `probs` (> 0)."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    stat = _chi2_stat(counts, counts.sum() * probs / probs.sum())
    limit = chi2.ppf(1.0 - ALPHA, probs.shape[0] - 1)
    assert stat < limit, f"{what}: chi-square {stat:.1f} >= {limit:.1f}, counts {counts}"


# ---------------------------------------------------------------- the row samplers


def _data(m, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    return X, y


def _draws(m, *, sampling, k, n_iter, seed, sample_weight=None, loss="hinge"):
    """The rows a run draws, iteration by iteration: the run is advanced one iteration
    at a time (a chunked run draws an unsplit run's rows) and its batch read from the
    solver's `rows` buffer after each. Returns an (n_iter, k) array."""
    X, y = _data(m)
    run = paper.prepare(X, y, loss=loss, sampling=sampling, k=k, T=n_iter, seed=seed,
                   sample_weight=sample_weight, sigma=0.1)
    solver, Xb = run.solver, run.Xb
    out = np.empty((n_iter, k), dtype=np.int64)
    for t in range(1, n_iter + 1):
        status = solver.run(t, Xb.data, Xb.indices, Xb.indptr, run.y_kernel, run.weights)
        assert status == 0
        out[t - 1] = solver.rows
    assert solver.t == n_iter and solver.consumed == n_iter * k
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_permutation_every_pass_is_a_fresh_permutation(weighted):
    """k = 1, one iteration at a time: each pass of m draws is a permutation of the rows,
    the solver's `perm` is the current pass, and no pass repeats the one before (m = 20:
    a repeat by chance has probability 1 / 20!)."""
    m, passes = 20, 30
    w = np.linspace(0.5, 3.0, m) if weighted else None
    rows = _draws(m, sampling="permutation", k=1, n_iter=m * passes, seed=4,
                  sample_weight=w)[:, 0].reshape(passes, m)
    for p in range(passes):
        assert np.array_equal(np.sort(rows[p]), np.arange(m)), f"pass {p}"
    for p in range(1, passes):
        assert not np.array_equal(rows[p], rows[p - 1]), f"pass {p} repeats pass {p - 1}"
    assert not np.array_equal(rows[0], np.arange(m))    # the first pass is shuffled too
    # the same run's perm attribute is the last pass
    X, y = _data(m)
    run = paper.prepare(X, y, sampling="permutation", k=1, T=m * passes, seed=4,
                   sample_weight=w, sigma=0.1)
    run.solver.run(m * passes, run.Xb.data, run.Xb.indices, run.Xb.indptr, run.y_kernel,
                   run.weights)
    assert np.array_equal(run.solver.perm, rows[-1])


def test_permutation_batches_are_consecutive_draws_of_the_passes():
    """k = m: every batch is one whole pass, the same rows in the same order as k = 1."""
    m, passes = 9, 12
    single = _draws(m, sampling="permutation", k=1, n_iter=m * passes, seed=7)
    batched = _draws(m, sampling="permutation", k=m, n_iter=passes, seed=7)
    assert np.array_equal(single.reshape(passes, m), batched)


def test_permutation_positions_are_uniform_over_many_passes():
    """Over 3000 passes each row's position in the pass is uniform on 0..m-1 (a
    chi-square test per row and over the whole m x m table), and so is the pair of
    positions of two rows ((a, b) with a != b: uniform over the m (m - 1) pairs)."""
    m, passes = 8, 3000
    rows = _draws(m, sampling="permutation", k=m, n_iter=passes, seed=11)
    for p in range(passes):
        assert np.array_equal(np.sort(rows[p]), np.arange(m))
    positions = np.argsort(rows, axis=1)          # positions[p, i]: where row i is
    table = np.zeros((m, m))
    for i in range(m):
        table[i] = np.bincount(positions[:, i], minlength=m)
        _assert_fits(table[i], np.ones(m), f"positions of row {i}")
    stat = _chi2_stat(table, passes / m)
    assert stat < chi2.ppf(1.0 - ALPHA, (m - 1) ** 2), stat
    pair = positions[:, 0] * m + positions[:, 1]
    counts = np.bincount(pair, minlength=m * m).reshape(m, m)
    assert np.all(np.diag(counts) == 0)
    _assert_fits(counts[~np.eye(m, dtype=bool)], np.ones(m * (m - 1)),
                 "joint positions of rows 0 and 1")
    # Consecutive passes agree on a row's position about 1 / m of the time.
    same = np.mean(positions[1:] == positions[:-1])
    assert abs(same - 1.0 / m) < 0.02, same


def test_iid_rows_are_uniform_and_independent():
    """sampling="iid" without weights: 24000 draws uniform over the rows (chi-square),
    at every place of the batch alike, and consecutive draws independent (the pairs
    uniform over all m^2)."""
    m, k, n_iter = 12, 12, 2000
    rows = _draws(m, sampling="iid", k=k, n_iter=n_iter, seed=5)
    assert rows.min() >= 0 and rows.max() < m
    _assert_fits(np.bincount(rows.ravel(), minlength=m), np.ones(m), "iid rows")
    # with replacement: some batch repeats a row (a permutation never would)
    assert any(np.unique(batch).shape[0] < k for batch in rows)
    # the same distribution whatever the place in the batch
    for r in (0, k - 1):
        _assert_fits(np.bincount(rows[:, r], minlength=m), np.ones(m), f"place {r}")
    flat = rows.ravel()
    pairs = np.bincount(flat[:-1] * m + flat[1:], minlength=m * m)
    _assert_fits(pairs, np.ones(m * m), "pairs of consecutive draws")
    # k = 1 step by step draws the same sequence as k = m batches
    single = _draws(m, sampling="iid", k=1, n_iter=5 * k, seed=5)
    assert np.array_equal(single.ravel(), rows[:5].ravel())


def test_iid_weighted_rows_are_drawn_in_proportion_to_weight():
    """sampling="iid" with weights (the alias sampler): row i with probability w_i / W
    (chi-square over the rows with weight > 0); a row of weight 0 is never drawn."""
    w = np.array([1.0, 2.0, 0.0, 4.0, 0.5, 3.0, 8.0, 1.5, 0.25, 6.0])
    m, n_iter = w.shape[0], 3000
    rows = _draws(m, sampling="iid", k=m, n_iter=n_iter, seed=9, sample_weight=w)
    counts = np.bincount(rows.ravel(), minlength=m)
    assert counts[2] == 0
    pos = w > 0
    _assert_fits(counts[pos], w[pos], "weighted iid rows")
    # not uniform: the heaviest row is drawn about 32 times as often as the lightest
    assert counts[6] > 20 * counts[8]


def test_estimators_default_sampling_is_the_reshuffled_permutation():
    """The estimators' unweighted default (sampling="auto") is a permutation per pass,
    and the rows such a run draws are a fresh permutation every pass."""
    pytest.importorskip("sklearn")
    from pgs import PGSClassifier
    X, y = _data(16)
    clf = PGSClassifier(sigma=0.1, T=64, random_state=0).fit(X, y)
    assert clf.params_["sampling"] == "permutation"
    rows = _draws(16, sampling="permutation", k=16, n_iter=4, seed=0)
    assert all(np.array_equal(np.sort(r), np.arange(16)) for r in rows)
    assert all(not np.array_equal(rows[p], rows[p + 1]) for p in range(3))


# ------------------------------------------------------------ iterate="random"


def test_random_iterate_is_uniform_on_1_to_T():
    """Over 3000 seeds with T = 5 the drawn iterate is uniform on {1, ..., 5}
    (chi-square), never outside it, and T itself is drawn."""
    X, y = _data(7)
    T, n_seeds = 5, 3000
    its = np.array([paper.train(X, y, T=T, iterate="random", seed=s, sigma=0.1).iteration
                    for s in range(n_seeds)])
    assert its.min() >= 1 and its.max() <= T
    counts = np.bincount(its, minlength=T + 1)
    assert counts[0] == 0 and counts[T] > 0
    _assert_fits(counts[1:], np.ones(T), "random iterate over seeds")


def test_random_iterate_with_warm_start_is_uniform_on_1_to_the_total():
    """A warm start of T2 more iterations after T1: the kept iterate is uniform over
    all T1 + T2 iterations (the earlier pick kept with probability T1 / (T1 + T2))."""
    X, y = _data(7)
    T1, T2, n_seeds = 3, 4, 2000
    its = []
    for s in range(n_seeds):
        first = paper.train(X, y, T=T1, iterate="random", seed=s, sigma=0.1, keep_state=True)
        more = paper.train(X, y, T=T2, iterate="random", seed=s + 10**6, sigma=0.1,
                         warm_start=first)
        assert more.T == T1 + T2
        assert 1 <= more.iteration <= T1 + T2
        if more.iteration <= T1:
            assert more.iteration == first.iteration
        its.append(more.iteration)
    counts = np.bincount(its, minlength=T1 + T2 + 1)
    assert counts[T1 + T2] > 0
    _assert_fits(counts[1:], np.ones(T1 + T2), "random iterate after a warm start")


@pytest.mark.parametrize("p", [2.0, 1.5])
@pytest.mark.parametrize("sampling", ["iid", "permutation"])
def test_random_iterate_is_the_iterate_at_the_drawn_t(p, sampling):
    """The returned coef and intercept are those of the same run stopped at the drawn
    iteration with iterate="last" (the same seed draws the same rows)."""
    X, y = _data(11, d=4, seed=3)
    seen = set()
    for seed in range(12):
        kw = dict(p=p, sigma=0.05, seed=seed, sampling=sampling, loss="logistic")
        rnd = paper.train(X, y, T=6, iterate="random", **kw)
        t = rnd.iteration
        seen.add(t)
        last = paper.train(X, y, T=t, iterate="last", **kw)
        np.testing.assert_allclose(rnd.coef, last.coef, rtol=1e-13, atol=0)
        assert rnd.intercept == pytest.approx(last.intercept, rel=1e-13, abs=0)
        if t < 6:   # and not the last iterate (the iterates differ)
            full = paper.train(X, y, T=6, iterate="last", **kw)
            assert not np.allclose(rnd.coef, full.coef)
    assert 6 in seen and len(seen) >= 4


# -------------------------------------------------------------- t_offset="auto"


def _q_norm_max(X, icpt, q):
    """max_i ||(x_i, icpt)||_q in NumPy."""
    A = np.column_stack([np.asarray(X, dtype=np.float64), np.full(X.shape[0], icpt)])
    return float(np.max(np.sum(np.abs(A) ** q, axis=1) ** (1.0 / q)))


#: sup |loss'| of each loss with a bounded derivative (the loss table of pgs/rules/losses.py
#: and the loss definitions: hinge-like slopes 1, modified Huber's linear branch -4 y z,
#: Huber's eps).
_BOUND = {"hinge": lambda eps: 1.0, "logistic": lambda eps: 1.0,
          "smooth_hinge": lambda eps: 1.0, "modified_huber": lambda eps: 4.0,
          "huber": lambda eps: eps, "epsilon_insensitive": lambda eps: 1.0,
          "absolute": lambda eps: 1.0}
#: The unbounded ones: |loss'(z, y)| <= 2 (|z| + |y|) (squared: 2 |z - y|; squared
#: hinge: 2 max(0, 1 - y z) with |y| = 1).
_UNBOUNDED = {"squared", "squared_hinge"}
_REGRESSION = {"squared", "huber", "epsilon_insensitive", "absolute"}


def _expected_t_offset(X, y, *, loss, p, sigma, icpt, eps=0.0, weights=None,
                       sampling="iid", B=None):
    """min(G^2 / (2 sigma F(0)), m), computed from the definitions."""
    m = X.shape[0]
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    yk = np.asarray(y, dtype=np.float64)
    if loss not in _REGRESSION:
        yk = np.where(yk > 0, 1.0, -1.0)
    f0 = float(np.sum(w * loss_value(loss, np.zeros(m), yk, eps)) / m)
    if f0 == 0.0:
        return 0.0
    q = p / (p - 1.0)
    gx = _q_norm_max(X, icpt, q)
    if loss in _UNBOUNDED:
        if B is None:
            B = math.sqrt(2.0 * (p - 1.0) * f0 / sigma)     # the automatic radius
        lip = 2.0 * (B * gx + np.max(np.abs(yk)))          # |z| <= ||w||_p ||x||_q
    else:
        lip = _BOUND[loss](eps)
    if weights is not None:
        lip *= np.mean(w) if sampling == "iid" else np.max(w)
    g = lip * gx
    return min(g * g / (2.0 * sigma * f0), float(m))


def _auto(X, y, **kw):
    return paper.train(X, y, T=1, t_offset="auto", seed=0, **kw).params["t_offset"]


def _t0_data(m=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.6)
    X[3] = 0.0                                             # an empty row
    X[7, 2] = 2.5                                          # the largest q-norms differ by q
    y = np.where(rng.random(m) < 0.4, -1.0, 1.0)
    y_reg = X @ rng.normal(size=d) + 0.5 + 0.3 * rng.normal(size=m)
    return X, y, y_reg


@pytest.mark.parametrize("p", [2.0, 1.5, 1.25, 1.8])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "smooth_hinge", "modified_huber"])
def test_t_offset_auto_closed_form_classification(loss, p):
    """p = 2 and p < 2 (the q-norm of the rows with the intercept column), by hand."""
    X, y, _ = _t0_data()
    for icpt, fit_intercept in ((1.0, True), (2.5, True), (1.0, False)):
        sigma = 8.0 if loss == "modified_huber" else 0.5    # (its bound is 4)
        expected = _expected_t_offset(X, y, loss=loss, p=p, sigma=sigma,
                                      icpt=icpt if fit_intercept else 0.0,
                                      eps=1.0 if loss == "smooth_hinge" else 0.0)
        assert 0.0 < expected < X.shape[0]              # not the cap
        got = _auto(X, y, loss=loss, p=p, sigma=sigma, intercept_scaling=icpt,
                    fit_intercept=fit_intercept)
        assert got == pytest.approx(expected, rel=1e-10)
        # a sparse X gives the same
        got_sp = _auto(sp.csr_matrix(X), y, loss=loss, p=p, sigma=sigma,
                       intercept_scaling=icpt, fit_intercept=fit_intercept)
        assert got_sp == pytest.approx(expected, rel=1e-10)


def test_t_offset_auto_p2_hinge_by_hand():
    """The simplest case written out: hinge (F(0) = 1, |loss'| <= 1), p = 2, rows
    (3, 4) and (1, 0) with intercept 1: G = sqrt(26), t0 = 26 / (2 sigma)."""
    X = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0]] * 10)
    y = np.array([1, -1, 1] * 10)
    assert _auto(X, y, sigma=1.0) == pytest.approx(13.0, rel=1e-13)
    assert _auto(X, y, sigma=2.0) == pytest.approx(6.5, rel=1e-13)
    assert _auto(X, y, sigma=0.25) == 30.0                  # capped at m = 30
    # logistic: F(0) = log 2
    assert _auto(X, y, sigma=1.0, loss="logistic") == pytest.approx(13.0 / math.log(2),
                                                                     rel=1e-13)


@pytest.mark.parametrize("p", [2.0, 1.5])
@pytest.mark.parametrize("loss", ["huber", "epsilon_insensitive", "absolute"])
def test_t_offset_auto_closed_form_regression_bounded(loss, p):
    X, _, y = _t0_data(seed=1)
    eps = {"huber": 0.7, "epsilon_insensitive": 0.2, "absolute": 0.0}[loss]
    kw = dict(loss=loss, p=p, sigma=0.3)
    expected = _expected_t_offset(X, y, icpt=1.0, eps=eps, **kw)
    assert 0.0 < expected < X.shape[0]
    extra = {} if loss == "absolute" else {"epsilon": eps}
    assert _auto(X, y, **kw, **extra) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("p", [2.0, 1.5])
@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_t_offset_auto_unbounded_derivative_is_bounded_on_the_domain(loss, p):
    """Squared and squared hinge: |loss'| bounded on the domain ||w||_p <= B, where
    |z| <= B max ||x||_q: the automatic B and a given B."""
    X, y_cls, y_reg = _t0_data(seed=2)
    y = y_reg if loss == "squared" else y_cls
    sigma = 50.0          # (a large sigma: a small domain, a t0 below the cap m)
    expected = _expected_t_offset(X, y, loss=loss, p=p, sigma=sigma, icpt=1.0)
    assert 0.0 < expected < X.shape[0]
    assert _auto(X, y, loss=loss, p=p, sigma=sigma) == pytest.approx(expected, rel=1e-10)
    expected_b = _expected_t_offset(X, y, loss=loss, p=p, sigma=sigma, icpt=1.0, B=0.05)
    assert 0.0 < expected_b < X.shape[0] and expected_b != pytest.approx(expected)
    assert _auto(X, y, loss=loss, p=p, sigma=sigma, B=0.05) == pytest.approx(expected_b,
                                                                              rel=1e-10)


@pytest.mark.parametrize("p", [2.0, 1.5])
@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
def test_t_offset_auto_weights_mean_under_iid_max_under_permutation(loss, p):
    """With sample weights, F(0) is the weighted mean loss (sum_i w_i loss_i / m) and
    the gradient bound is scaled by the mean weight under iid (rows drawn by weight,
    every gradient times the mean weight) but by the largest weight under permutation
    and cyclic (each row's gradient times its own weight)."""
    X, y_cls, y_reg = _t0_data(seed=3)
    y = y_reg if loss == "squared" else y_cls
    w = np.linspace(0.2, 3.0, X.shape[0])
    sigma = 60.0 if loss == "squared" else 2.0
    got = {}
    for sampling in ("iid", "permutation", "cyclic"):
        expected = _expected_t_offset(X, y, loss=loss, p=p, sigma=sigma, icpt=1.0,
                                      weights=w, sampling=sampling)
        assert 0.0 < expected < X.shape[0]
        got[sampling] = _auto(X, y, loss=loss, p=p, sigma=sigma, sample_weight=w,
                              sampling=sampling)
        assert got[sampling] == pytest.approx(expected, rel=1e-10), sampling
    # the two scalings differ by (max w / mean w)^2
    ratio = (w.max() / w.mean()) ** 2
    assert got["permutation"] == pytest.approx(got["iid"] * ratio, rel=1e-10)
    # unit weights are no weights
    ones = _auto(X, y, loss=loss, p=p, sigma=sigma, sample_weight=np.ones(X.shape[0]))
    assert ones == pytest.approx(_auto(X, y, loss=loss, p=p, sigma=sigma), rel=1e-12)


def test_t_offset_auto_is_capped_at_m():
    X, y, _ = _t0_data()
    for sigma in (1e-3, 1e-6):
        raw = _expected_t_offset(X, y, loss="hinge", p=2.0, sigma=sigma, icpt=1.0)
        assert raw == X.shape[0]
        assert _auto(X, y, sigma=sigma) == float(X.shape[0])
    # just below the cap it is not capped
    sigma = _q_norm_max(X, 1.0, 2.0) ** 2 / (2.0 * (X.shape[0] - 0.5))
    assert _auto(X, y, sigma=sigma) == pytest.approx(X.shape[0] - 0.5, rel=1e-12)


def test_t_offset_auto_is_zero_when_w0_is_optimal():
    """F(0) = 0: every target inside epsilon-insensitive's tube, squared with y = 0."""
    X, _, _ = _t0_data()
    y = np.linspace(-0.05, 0.05, X.shape[0])
    assert _auto(X, y, loss="epsilon_insensitive", epsilon=0.1) == 0.0
    assert _auto(X, np.zeros(X.shape[0]), loss="squared") == 0.0
    # weights that put all the loss's weight on rows of zero loss
    y2 = np.where(np.arange(X.shape[0]) < 5, 1.0, 0.0)
    w = np.where(y2 == 0.0, 1.0, 0.0)
    assert _auto(X, y2, loss="absolute", sample_weight=w) == 0.0
    assert _auto(X, y2, loss="absolute", sample_weight=w, sampling="permutation") == 0.0


# ----------------------------------------------------------------- sigma="auto"


def _separable(m=60, seed=0):
    """One positive feature times the label: w_1 > 0 after any update whatever sigma,
    so every sigma classifies every held-out row right (no intercept)."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    X = (y * (1.0 + rng.random(m)))[:, None]
    return X, y


def test_sigma_auto_ties_go_to_the_largest_sigma_end_to_end():
    """Every grid value scores 100%: the largest sigma is chosen (pgs.train and the
    classifier), whatever the order the grid is given in."""
    X, y = _separable()
    grid = [1e-3, 1e-2, 1e-1, 1.0]
    for given in (grid, grid[::-1], [1e-1, 1e-3, 1.0, 1e-2]):
        model = paper.train(X, y, sigma="auto", sigma_grid=given, fit_intercept=False,
                          seed=1, T=200)
        np.testing.assert_array_equal(model.sigma_scores, np.ones(4))
        assert model.params["sigma"] == 1.0
    pytest.importorskip("sklearn")
    clf = pgs.PGSClassifier(sigma_grid=grid, fit_intercept=False, random_state=2,
                            T=200).fit(X, y)
    np.testing.assert_array_equal(clf.sigma_scores_, np.ones(4))
    assert clf.sigma_ == 1.0


class _ConstantSE:
    """A `Holdout` stand-in whose paired standard error is `se` for every pair."""

    def __init__(self, se):
        self.se = se

    def se_of_difference(self, a, b):
        return self.se


def _choose(scores, keep, se=0.0):
    return SA._choose(list(range(len(scores))), np.array(scores, dtype=float),
                      [None] * len(scores), _ConstantSE(se), keep)


@pytest.mark.parametrize("scores, chosen", [
    ([0.5, 0.9, 0.9, 0.9, 0.3], 3),            # a tie in the middle: its largest sigma
    ([0.9, 0.9, 0.2, 0.1, 0.0], 1),            # at the small end
    ([0.1, 0.9, 0.2, 0.9, 0.0], 3),            # tied values apart
    ([0.7, 0.7, 0.7, 0.7, 0.7], 4),            # all tied
    ([0.1, 0.2, 0.9, 0.3, 0.4], 2),            # no tie: the argmax
    ([0.9, 0.2, 0.1, 0.3, 0.4], 0),            # the best alone at the small end
    ([np.nan, 0.8, np.nan, 0.8, 0.1], 3),      # NaN scores ignored
    ([np.nan] * 5, 4),                         # nothing scored: the largest sigma
    ([-np.inf, -np.inf, -np.inf, -2.0, -2.0], 4),  # R^2 can be -inf
])
def test_sigma_auto_final_choice_tie_rule_on_crafted_scores(scores, chosen):
    """With a standard error of 0: the largest grid value among those with the best score."""
    assert _choose(scores, 1) == [chosen]


@pytest.mark.parametrize("scores, keep, kept", [
    ([0.5, 0.9, 0.8, 0.7, 0.3, 0.6, 0.1], 4, [1, 2, 3, 5]),  # the best four, in grid order
    ([0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9], 4, [3, 4, 5, 6]),  # ties: the larger sigmas
    ([0.5, 0.9, 0.5, 0.5, 0.1], 3, [1, 2, 3]),               # a tie at the cut
    ([np.nan, 0.2, np.nan, 0.1], 2, [1, 3]),                 # NaN ranks last
])
def test_sigma_auto_halving_keeps_the_better_half_ties_to_larger_sigma(scores, keep, kept):
    assert _choose(scores, keep) == kept


@pytest.mark.parametrize("scores, se, keep, kept", [
    # within one SE of the best (0.85): 0.84 and 0.83, taken first by decreasing sigma
    ([0.80, 0.85, 0.84, 0.83, 0.50, 0.60, 0.70], 0.02, 2, [2, 3]),
    ([0.80, 0.85, 0.84, 0.83, 0.50, 0.60, 0.70], 0.02, 4, [0, 1, 2, 3]),
    ([0.80, 0.85, 0.84, 0.83, 0.50, 0.60, 0.70], 0.0, 2, [1, 2]),
    ([0.80, 0.85, 0.84, 0.83, 0.50, 0.60, 0.84], 0.02, 2, [3, 6]),
])
def test_sigma_auto_halving_prefers_the_larger_sigmas_within_one_standard_error(
        scores, se, keep, kept):
    assert _choose(scores, keep, se=se) == kept


@pytest.mark.parametrize("scores, se, chosen", [
    ([0.80, 0.85, 0.84, 0.83, 0.50], 0.02, 3),   # within one SE of the best: the largest
    ([0.80, 0.85, 0.84, 0.82, 0.50], 0.02, 2),   # 0.82 is just outside
    ([0.80, 0.85, 0.84, 0.83, 0.50], 0.0, 1),    # no tolerance: the argmax
    ([0.85, 0.10, 0.84, 0.20, 0.30], 0.02, 2),   # the band need not be contiguous
    ([0.80, np.nan, 0.84, np.nan, 0.50], 0.05, 2),  # NaN never chosen
])
def test_sigma_auto_one_standard_error_rule(scores, se, chosen):
    """The final choice: the largest sigma whose score is within one (paired) standard
    error of the best."""
    assert _choose(scores, 1, se=se) == [chosen]


def test_holdout_scores_and_paired_standard_error_closed_form():
    """The score is the (weighted) mean of the per-row scores; the standard error of a
    difference is that of the mean of the paired differences, sqrt(Var(d) / n_eff),
    with Kish's effective size under weights."""
    X_val = np.eye(4)
    holdout = SA.Holdout(X_val, lambda Z: Z[:, 0], None)
    a, b = np.array([1.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0])
    assert holdout.score(a) == 0.75
    d = a - b
    assert holdout.se_of_difference(a, b) == pytest.approx(
        math.sqrt(np.mean((d - d.mean()) ** 2) / 4), rel=1e-15)
    assert holdout.se_of_difference(a, a) == 0.0
    assert holdout.se_of_difference(np.array([-np.inf] * 4), a) == 0.0
    np.testing.assert_array_equal(holdout.values(np.array([[1.0], [2.0], [3.0], [4.0]]), [0.5]),
                                  [1.5, 2.5, 3.5, 4.5])
    w = np.array([1.0, 1.0, 2.0, 4.0])
    weighted = SA.Holdout(X_val, lambda Z: Z[:, 0], w)
    assert weighted.n_eff == pytest.approx(8.0**2 / 22.0, rel=1e-15)
    assert weighted.score(a) == pytest.approx(6.0 / 8.0, rel=1e-15)


def test_per_row_scores_closed_form():
    """Accuracy: 1 where the argmax (one problem: the margin above the threshold) is the
    class; R^2: 1 - e_i^2 / Var(y), whose mean is R^2; both of the rows given."""
    Z = np.array([[0.2, 0.1], [0.0, 0.3], [-1.0, -2.0]])
    rows = np.array([0, 2, 3])
    np.testing.assert_array_equal(SA.accuracy_per_row(np.array([0, 9, 0, 0]))(Z, rows), [1, 0, 1])
    np.testing.assert_array_equal(
        SA.accuracy_per_row(np.array([1, 9, 0, 0]), threshold=0.1)(Z[:, :1], rows), [1, 1, 1])
    y = np.array([1.0, 7.0, 2.0, 4.0])
    r2 = SA.r2_per_row(y, None)(np.array([[1.5], [2.0], [3.0]]), np.array([0, 2, 3]))
    r2_value = 1 - np.sum((y[[0, 2, 3]] - [1.5, 2.0, 3.0]) ** 2) / np.sum(
        (y[[0, 2, 3]] - y[[0, 2, 3]].mean()) ** 2)
    assert np.mean(r2) == pytest.approx(r2_value, rel=1e-14)
