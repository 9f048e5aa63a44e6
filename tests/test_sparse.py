"""The l1 term (docs/sparse.md): the lazy truncation against the eager NumPy reference
(SMIDAS's step), its exact zeros, the iterates a sparse fit returns, its state through
chunks, warm starts, threads, Dask and the model file, and `pgs.sparse`'s rules."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from reference import asgd_step, mirror_descent_reference, multiclass_reference

import pgs
from pgs.engine.solver import solver_of
from pgs.rules.params import Params
from pgs.sparse import l1_max, l1_path


def _data(m=60, n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.5)
    w = rng.normal(size=n) * (np.arange(n) < n // 3)      # (a sparse truth)
    y = np.where(X @ w + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    return X, y


def _step(schedule, sigma, eta0):
    return asgd_step(eta0, sigma) if schedule == "asgd" else (lambda t: 1.0 / (sigma * (t + 1)))


def _fit(X, y, schedule, eta0, **kw):
    extra = dict(eta0=eta0) if schedule == "asgd" else dict(t_offset=0)
    return pgs.train(X, y, schedule=schedule, sampling="cyclic", seed=0, **extra, **kw)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
def test_dual_averaging_equals_the_eager_reference_at_p2(schedule, loss, k):
    """p = 2: the iterate reads lam truncated by U (dual averaging), so the margins and the
    last iterate are the eager reference's (to rounding), with the same exact zeros; the
    constant column is never truncated."""
    X, y = _data()
    T, sigma, eta0, l1 = 240, 0.05, 0.4, 0.6 * l1_max(X, y, loss)
    for icpt in (0.0, 0.7):
        ref = mirror_descent_reference(X, y, loss=loss, p=2.0, sigma=sigma, T=T, k=k,
                                       rows=np.arange(T * k) % X.shape[0], icpt=icpt,
                                       step=_step(schedule, sigma, eta0), l1=l1)
        column = dict(intercept="column", intercept_scaling=icpt) if icpt else \
            dict(fit_intercept=False)
        model = _fit(X, y, schedule, eta0, loss=loss, p=2.0, sigma=sigma, T=T, k=k, l1=l1,
                     iterate="last", **column)
        w = ref[-1][0]
        assert np.sum(w[:-1] == 0.0) >= 1          # (the test reaches the zeros)
        np.testing.assert_allclose(model.coef, w[:-1], rtol=1e-10, atol=1e-13)
        np.testing.assert_array_equal(model.coef == 0.0, w[:-1] == 0.0)
        np.testing.assert_allclose(model.intercept, w[-1] * icpt, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("p", [1.5, 1.3])
def test_lazy_truncation_at_p_below_2_is_within_the_documented_difference(p):
    """p < 2: the margins read lam truncated as owed (1.5 where it reads, other p by the
    row's truncation first), but the q-norm in the scale counts an untouched coordinate's
    owed truncation only when a row reads it: within 5% of the largest weight here
    (docs/sparse.md), with the same zeros."""
    X, y = _data()
    T, sigma, eta0, l1 = 240, 0.05, 0.4, 0.6 * l1_max(X, y, "logistic")
    for schedule in ("asgd", "pgs"):
        ref = mirror_descent_reference(X, y, loss="logistic", p=p, sigma=sigma, T=T, k=1,
                                       rows=np.arange(T) % X.shape[0],
                                       step=_step(schedule, sigma, eta0), l1=l1)
        model = _fit(X, y, schedule, eta0, loss="logistic", p=p, sigma=sigma, T=T, l1=l1,
                     iterate="last", fit_intercept=False)
        w = ref[-1][0][:-1]
        assert 1e-4 < np.max(np.abs(model.coef - w)) < 0.05 * np.max(np.abs(w))
        np.testing.assert_array_equal(model.coef == 0.0, w == 0.0)


def test_renormalised_dual_keeps_what_is_owed():
    """"asgd" with sigma eta0 = 1 - 1e-6 renormalises lam (zs below 1e-30) at iteration
    46,250: U and paid are rescaled with it, so the iterates still equal the eager
    reference's (without the rescaling, 0.12 off where the largest weight is 0.2)."""
    X, y = _data()
    T, sigma, l1 = 47_000, 0.5, 0.3 * l1_max(X, y, "logistic")
    eta0 = 0.999999 / sigma
    ref = mirror_descent_reference(X, y, loss="logistic", p=2.0, sigma=sigma, T=T, k=1,
                                   rows=np.arange(T) % X.shape[0], step=asgd_step(eta0, sigma),
                                   l1=l1)
    model = _fit(X, y, "asgd", eta0, loss="logistic", p=2.0, sigma=sigma, T=T, l1=l1,
                 iterate="last", fit_intercept=False)
    np.testing.assert_allclose(model.coef, ref[-1][0][:-1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", ["multinomial", "crammer_singer"])
def test_k_output_losses_truncate_every_class(loss):
    """K outputs: each class's dual vector pays its own debts (p = 2: the reference's)."""
    X, _ = _data(m=60)
    y = np.argmax(X[:, :3], axis=1).astype(float)
    T, sigma, eta0, l1 = 180, 0.05, 0.4, 0.1
    ref = multiclass_reference(X, y, 3, loss=loss, p=2.0, sigma=sigma, T=T, k=1,
                               rows=np.arange(T) % 60, step=asgd_step(eta0, sigma), l1=l1)
    model = _fit(X, y, "asgd", eta0, loss=loss, p=2.0, sigma=sigma, T=T, l1=l1,
                 iterate="last", fit_intercept=False)
    np.testing.assert_allclose(model.coef, ref[-1][0][:, :-1], rtol=1e-9, atol=1e-12)
    assert np.any(model.coef == 0.0)


@pytest.mark.parametrize("p", [1.5, 1.3])
def test_average_is_zero_off_the_last_iterates_support(p):
    """iterate="average" with l1 at p < 2: the plain average where the last iterate is
    non-zero, exact zeros elsewhere (the rule of docs/sparse.md); at p = 2 the fit returns
    dual averaging's own iterate, its "average" resolved to "last"."""
    X, y = _data(m=200, n=40, seed=3)
    assert pgs.train(X, y, sigma=0.01, max_passes=1, l1=0.01).params["iterate"] == "last"
    assert pgs.train(X, y, sigma=0.01, max_passes=1, p=p, l1=0.01).params["iterate"] == \
        "average"
    avg = pgs.train(X, y, p=p, sigma=0.01, max_passes=3, l1=0.8 * l1_max(X, y), seed=1,
                    keep_state=True)
    s = solver_of(Params(**{k: v for k, v in avg.params.items()
                            if k in Params.__dataclass_fields__}), X.shape[1],
                  np.ones(4, dtype=np.uint64))
    s.set_state(avg._state)
    plain = np.empty(s.n_cols)
    s._iterate_to(plain[:, None], True)
    support = s.last()[:-1] != 0.0
    assert 0 < np.count_nonzero(support) < X.shape[1]
    assert np.count_nonzero(plain[:-1][~support]) > 0      # (the rule changes something)
    np.testing.assert_array_equal(avg.coef != 0.0, support)
    np.testing.assert_array_equal(avg.coef[support], plain[:-1][support])


def test_l1_zero_keeps_no_debts_and_the_random_iterate_is_refused():
    """l1 = 0 keeps no paid buffer (the kernel runs the code of a fit without l1: the rest
    of the suite checks its bits); l1 > 0 with iterate="random" is a ValueError naming both."""
    X, y = _data()
    assert pgs.train(X, y, sigma=0.05, max_passes=2, l1=0.0, keep_state=True)._state["paid"] \
        is None
    with pytest.raises(ValueError, match="iterate='random'.*l1"):
        pgs.train(X, y, sigma=0.05, l1=0.1, iterate="random")
    with pytest.raises(ValueError, match="l1"):
        pgs.train(X, y, sigma=0.05, l1=-1.0)


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_sparse_state_resumes_and_saves(p, tmp_path):
    """A run split by a warm start equals one run bit for bit (paid and U are state); the
    model file keeps l1 and objective() counts its term."""
    X, y = _data(m=80, n=30)
    kw = dict(p=p, sigma=0.02, l1=0.02, seed=2, iterate="last", keep_state=True)
    whole = pgs.train(X, y, T=300, **kw)
    half = pgs.train(X, y, T=140, **kw)
    np.testing.assert_array_equal(pgs.train(X, y, T=160, warm_start=half, **kw).coef,
                                  whole.coef)
    whole.save(tmp_path / "m.pgs")
    loaded = pgs.load_model(tmp_path / "m.pgs")
    assert loaded.params["l1"] == 0.02
    np.testing.assert_array_equal(loaded.coef, whole.coef)
    norm = np.sum(np.abs(whole.full_weights()) ** p) ** (1.0 / p)
    expected = 0.02 * norm**2 / (2.0 * (p - 1.0)) + 0.02 * np.sum(np.abs(whole.coef))
    assert loaded.regulariser() == pytest.approx(expected, rel=1e-12)
    assert loaded.objective(X, y) - loaded.regulariser() == pytest.approx(
        np.mean(np.maximum(0.0, 1.0 - y * loaded.decision_function(X))), rel=1e-12)


@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
def test_threads_merge_the_truncated_duals(schedule):
    """n_jobs = 2: the workers' dual vectors merge with U (p = 2: every gradient kept, the
    merged vector read truncated by the merged U), so the model is sparse and the same
    bits on every call."""
    X, y = _data(m=400, n=60, seed=5)
    kw = dict(sigma=0.01, l1=0.1 * l1_max(X, y), seed=4, n_jobs=2, max_passes=3,
              schedule=schedule)
    a, b = pgs.train(X, y, keep_state=True, **kw), pgs.train(X, y, **kw)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert 0 < np.count_nonzero(a.coef) < X.shape[1]
    if schedule == "pgs":       # (the paper's step: U = l1 t, as one worker's)
        assert a._state["U"] == pytest.approx(kw["l1"] * a.T, rel=1e-12)


def test_l1_max_is_where_the_optimum_turns_zero():
    """l1_max = ||(1/m) sum_i s_i loss'(0, y_i) x_i||_inf: for logistic loss, no bias, a long
    run of the paper's schedule (dual averaging at p = 2) gives w = 0 from l1_max on and a
    weight 2% below it."""
    X, y = _data(m=100, n=10, seed=7)
    top = l1_max(X, y, "logistic", fit_intercept=False)
    assert top == pytest.approx(np.max(np.abs(X.T @ (-0.5 * y))) / 100, rel=1e-12)
    kw = dict(loss="logistic", sigma=0.05, fit_intercept=False, schedule="pgs",
              iterate="last", seed=0, max_passes=200)
    assert np.count_nonzero(pgs.train(X, y, l1=top, **kw).coef) == 0
    assert np.count_nonzero(pgs.train(X, y, l1=0.98 * top, **kw).coef) == 1
    weights = np.linspace(0.5, 2.0, 100)
    assert l1_max(X, y, "logistic", weights, fit_intercept=False) == pytest.approx(
        np.max(np.abs(X.T @ (-0.5 * y * weights))) / 100, rel=1e-12)
    K = 3
    yk = np.arange(100) % K
    onehot = np.eye(K)[yk]
    assert l1_max(sp.csr_matrix(X), yk, "multinomial", fit_intercept=False) == pytest.approx(
        np.max(np.abs(X.T @ (1.0 / K - onehot))) / 100, rel=1e-12)
    with pytest.raises(ValueError, match="crammer_singer"):
        l1_max(X, yk, "crammer_singer")


def test_l1_max_is_the_largest_absolute_gradient_entry():
    """The largest |entry|, negative ones too: hinge's gradient at w = 0 is
    (1/m) sum_i -y_i x_i, here (0.5, -1.0), so l1_max is 1.0 (not 0.5); flipping y flips
    the gradient's signs and leaves l1_max."""
    X, y = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([-1.0, 1.0])
    assert l1_max(X, y) == 1.0
    assert l1_max(X, -y) == 1.0
    Xd, yd = _data(m=100, n=10, seed=7)
    assert l1_max(Xd, -yd, "logistic") == l1_max(Xd, yd, "logistic")


@pytest.mark.parametrize("p", [2.0, 1.5])
def test_l1_term_leaves_the_intercept_column_out(p):
    """With intercept="column" the bias's weight b / s is in the l_p norm but not in the
    l1 term (over the features): regulariser() by hand."""
    X, _ = _data(m=80, n=10, seed=5)
    y = np.where(np.arange(80) < 60, 1.0, -1.0)         # (3 to 1: a bias to fit)
    sigma, l1, s = 0.02, 0.01, 0.5
    model = pgs.train(X, y, p=p, sigma=sigma, l1=l1, intercept="column", intercept_scaling=s,
                      seed=0, max_passes=3)
    assert abs(model.intercept) > 1e-3
    w = np.r_[model.coef, model.intercept / s]
    expected = (sigma * np.sum(np.abs(w) ** p) ** (2.0 / p) / (2.0 * (p - 1.0))
                + l1 * np.sum(np.abs(model.coef)))
    assert model.regulariser() == pytest.approx(expected, rel=1e-12)


def test_l1_path_warm_starts_down_the_values():
    """l1_path fits decreasing l1, each continuing the last one's run (t grows), fewer
    non-zeros at larger l1, scored on the validation rows."""
    X, y = _data(m=300, n=50, seed=8)
    path = l1_path(X, y, [0.001, 0.05, 0.01], sigma=0.01, seed=0, validation=(X[:100], y[:100]))
    assert [pt.l1 for pt in path] == [0.05, 0.01, 0.001]
    assert [pt.model.T for pt in path] == [600, 1200, 1800]
    nnz = [pt.n_nonzero for pt in path]
    assert nnz[0] < nnz[-1]
    assert path[-1].score == np.mean(path[-1].model.predict(X[:100]) == y[:100])
    default = l1_path(X, y, sigma=0.01, seed=0, n_l1=3)
    assert default[0].l1 == pytest.approx(l1_max(X, y)) and len(default) == 3
    with pytest.raises(ValueError, match="sigma"):
        l1_path(X, y, sigma="auto")


def test_l1_path_names_its_bad_arguments_before_any_fit(monkeypatch):
    """Each bad argument of l1_path is a ValueError or TypeError naming it, raised before the
    first fit (a validation y of the wrong length failed in NumPy after every fit)."""
    X, y = _data(m=40, n=6, seed=3)

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before the arguments were checked")

    monkeypatch.setattr(pgs.sparse, "train", no_fit)
    for kw, exc, pattern in [
            (dict(ratio="0.1"), TypeError, r"ratio must be a number > 0, got '0\.1'"),
            (dict(ratio=1.0), ValueError, r"ratio=1\.0"),
            (dict(l1s=0.1), TypeError, r"l1s must be a non-empty sequence.*l1s=0\.1"),
            (dict(l1s=[]), TypeError, r"l1s must be a non-empty sequence.*l1s=\[\]"),
            (dict(l1s=[0.1, -1]), ValueError, r"l1s=-1\.0"),
            (dict(validation=(X[:10], y[:9])), ValueError,
             r"validation's y_val must have shape \(10,\).*\(9,\)"),
            (dict(validation=(X[:10, :5], y[:10])), ValueError, r"X_val has 5 features, X has 6"),
            (dict(validation=X), TypeError, r"validation must be a pair")]:
        with pytest.raises(exc, match=pattern):
            l1_path(X, y, sigma=0.01, **kw)
    with pytest.raises(ValueError, match=r"l1_max\(X, y\) is 0.*give l1s"):
        l1_path(np.zeros((40, 6)), y, sigma=0.01)       # (no l1s given: none to blame)


def test_l1_path_r2_of_a_constant_target_is_scikit_learns():
    """R^2 of a constant y is undefined: 1.0 for exact predictions, else 0.0 (it was -8e292)."""
    X, _ = _data(m=40, n=6, seed=3)
    y = np.full(40, 3.0)
    path = l1_path(X, y, [0.1], sigma=0.01, loss="squared", seed=0)
    assert not np.allclose(path[0].model.predict(X), y)
    assert path[0].score == 0.0
    exact = pgs.Model(coef=np.zeros(6), intercept=3.0, iteration=1, T=1, classes=None,
                      params=path[0].model.params)
    assert pgs.sparse._score(exact, X, y) == 1.0
    assert pgs.sparse._score(exact, X, y + np.arange(40)) == pytest.approx(
        1.0 - np.sum(np.arange(40.0) ** 2) / np.sum((np.arange(40.0) - 19.5) ** 2))


def test_pgs_sparse_is_an_attribute_of_pgs(tmp_path):
    """``import pgs`` is enough for ``pgs.sparse.l1_max`` (as the docs write it). (From
    another directory: in the checkout `import pgs` would find the uncompiled source.)"""
    code = "import pgs; print(pgs.sparse.l1_max.__name__, pgs.sparse.l1_path.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.stdout.split() == ["l1_max", "l1_path"], out.stderr


def _exact_l1_logistic(X, y, sigma, l1, iters=5000):
    """The minimiser of sigma ||w||^2 / 2 + l1 ||w||_1 + mean logistic loss (no bias), by
    FISTA (accelerated proximal gradient) to the precision of double."""
    m = X.shape[0]
    L = 0.25 * np.linalg.norm(X, 2) ** 2 / m + sigma
    w = v = np.zeros(X.shape[1])
    tk = 1.0
    for _ in range(iters):
        g = -(X.T @ (y / (1.0 + np.exp(y * (X @ v))))) / m + sigma * v
        u = v - g / L
        w_next = np.sign(u) * np.maximum(np.abs(u) - l1 / L, 0.0)
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * tk * tk)) / 2.0
        v = w_next + (tk - 1.0) / t_next * (w_next - w)
        w, tk = w_next, t_next
    return w


@pytest.mark.parametrize("schedule", ["pgs", "asgd"])
def test_p2_fit_finds_the_exact_support_and_objective(schedule):
    """p = 2 (dual averaging's iterate), 20 passes: objective within 1e-3 of the exact
    minimiser's and the same support (measured: gaps 1.6e-5 and 1.4e-4, 7 of 30
    weights, none extra or missing)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 30)) * (rng.random((500, 30)) < 0.5)
    y = np.where(X @ (rng.normal(size=30) * (np.arange(30) < 8)) + 0.5 * rng.normal(size=500)
                 > 0, 1.0, -1.0)
    sigma, l1 = 1e-2, 0.2 * l1_max(X, y, "logistic")
    exact = _exact_l1_logistic(X, y, sigma, l1)
    model = pgs.train(X, y, loss="logistic", sigma=sigma, l1=l1, fit_intercept=False,
                      schedule=schedule, max_passes=20, seed=0)
    gap = model.objective(X, y) - (sigma / 2 * exact @ exact + l1 * np.abs(exact).sum()
                                   + np.mean(np.logaddexp(0.0, -y * (X @ exact))))
    assert 0.0 <= gap < 1e-3
    np.testing.assert_array_equal(model.coef != 0.0, np.abs(exact) > 1e-6)
    assert 0 < np.count_nonzero(exact) < 30


@pytest.mark.parametrize("B", [0.5, 2.0])
@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
def test_p2_projection_reads_the_truncated_iterates_norm(schedule, B):
    """p = 2 with l1 and a radius B: the projection rescales the truncated iterate by its
    own norm (lam's, untruncated, shrank it ever more: a fit worse the longer it ran), so
    every iterate is the eager reference's; the constant column is never truncated."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12)) * (rng.random((60, 12)) < 0.5)
    y = X @ (rng.normal(size=12) * (np.arange(12) < 4)) + 0.3 * rng.normal(size=60)
    T, sigma, eta0, l1 = 240, 0.05, 0.1, 0.3 * l1_max(X, y, "squared")
    for icpt in (0.0, 0.7):
        ref = mirror_descent_reference(X, y, loss="squared", p=2.0, sigma=sigma, T=T, k=1,
                                       rows=np.arange(T) % 60, icpt=icpt, B=B, l1=l1,
                                       step=_step(schedule, sigma, eta0))
        column = dict(intercept="column", intercept_scaling=icpt) if icpt else \
            dict(fit_intercept=False)
        model = _fit(X, y, schedule, eta0, loss="squared", p=2.0, sigma=sigma, T=T, l1=l1,
                     B=B, iterate="last", **column)
        w = ref[-1][0]
        np.testing.assert_allclose(model.coef, w[:-1], rtol=1e-10, atol=1e-13)
        np.testing.assert_array_equal(model.coef == 0.0, w[:-1] == 0.0)
        np.testing.assert_allclose(model.intercept, w[-1] * icpt, rtol=1e-10, atol=1e-13)


def test_p2_fit_with_a_radius_improves_with_passes():
    """The reported case: squared loss's "auto" B with l1 at p = 2, more passes a better
    objective, below the all-zero model's, and the estimator's R^2 positive."""
    X = sp.random(300, 40, density=0.2, format="csr", random_state=0)
    y = X @ np.random.default_rng(0).standard_normal(40)
    objs = [pgs.train(X, y, loss="squared", sigma=1e-3, l1=0.1, max_passes=mp,
                      seed=0).objective(X, y) for mp in (2, 10, 50)]
    zero = pgs.train(X, y, loss="squared", sigma=1e-3, l1=1e3, T=1, seed=0)
    assert np.count_nonzero(zero.coef) == 0
    assert objs[2] <= objs[1] <= objs[0] < zero.objective(X, y)
    est = pgs.PGSRegressor(sigma=1e-3, l1=0.1, max_passes=50, random_state=0).fit(X, y)
    assert est.score(X, y) > 0.0


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_huge_l1_gives_zeros_with_threads(p):
    """l1 = 1e307: U saturates (finite), so threads' merges stay finite and give the
    all-zero model of one thread."""
    X = sp.random(300, 40, density=0.2, format="csr", random_state=0)
    y = np.sign(X @ np.random.default_rng(0).standard_normal(40))
    for n_jobs in (1, 2):
        model = pgs.train(X, y, p=p, sigma=1e-3, l1=1e307, n_jobs=n_jobs, seed=0)
        assert np.count_nonzero(model.coef) == 0


@pytest.mark.parametrize("p", [2.0, 1.5])
def test_warm_start_may_change_l1(p):
    """A warm start may change l1 (as l1_path does); at p = 2 an l1 > 0 fit keeps no
    average, so continuing one with l1 = 0 asks for iterate='last' by name, and
    continuing an l1 = 0 fit with l1 > 0 leaves its average behind."""
    X, y = _data()
    kw = dict(sigma=1e-2, T=100, seed=0, p=p)
    plain = pgs.train(X, y, keep_state=True, **kw)
    sparse = pgs.train(X, y, warm_start=plain, l1=0.2, keep_state=True, **kw)
    assert sparse.T == 200 and np.count_nonzero(sparse.coef) < X.shape[1]
    if p == 2.0:
        with pytest.raises(ValueError, match=r"trained with l1=0.2.*l1=0.0 needs iterate='last'"):
            pgs.train(X, y, warm_start=sparse, **kw)
        back = pgs.train(X, y, warm_start=sparse, iterate="last", **kw)
    else:
        back = pgs.train(X, y, warm_start=sparse, **kw)
    assert back.T == 300 and back.params["l1"] == 0.0
    # an average left behind: the last iterate is the unsplit run's, bit for bit
    last = pgs.train(X, y, warm_start=plain, iterate="last", **kw)
    np.testing.assert_array_equal(last.coef, pgs.train(X, y, **dict(kw, T=200),
                                                       iterate="last").coef)


def _random_labels(m=300, n=40, seed=2, K=2):
    X = sp.random(m, n, density=0.2, format="csr", random_state=0)
    rng = np.random.default_rng(seed)
    return X, (rng.choice([-1.0, 1.0], m, p=[0.3, 0.7]) if K == 2 else rng.integers(0, K, m))


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_l1_from_l1_max_on_gives_the_null_model(p):
    """From l1_max on, w = 0 with the best bias b0 is optimal (the certificate): p = 2's
    dual averaging gives w = 0 (its bias SGD's), p < 2's fit (whose truncated dual kept its
    last steps' noise) is set to the null model: no bias; logistic's free bias
    log(n+ / n-); multinomial's log shares."""
    X, y = _random_labels()
    kw = dict(loss="logistic", p=p, sigma=1e-3, seed=0, max_passes=3)
    exact = dict(abs=1e-12) if p < 2.0 else dict(abs=0.1)
    none = pgs.train(X, y, l1=l1_max(X, y, "logistic", fit_intercept=False),
                     fit_intercept=False, **kw)
    assert np.count_nonzero(none.coef) == 0 and none.intercept == 0.0
    free = pgs.train(X, y, l1=l1_max(X, y, "logistic"), **kw)
    assert np.count_nonzero(free.coef) == 0
    assert free.intercept == pytest.approx(np.log(np.sum(y > 0) / np.sum(y < 0)), **exact)
    X3, y3 = _random_labels(K=3)
    multi = pgs.train(X3, y3, l1=l1_max(X3, y3, "multinomial"), **dict(kw, loss="multinomial"))
    share = np.bincount(y3) / y3.shape[0]
    assert np.count_nonzero(multi.coef) == 0
    np.testing.assert_allclose(multi.predict_proba(X3[:2]), [share, share],
                               rtol=1e-12 if p < 2.0 else 0.1)
    none3 = pgs.train(X3, y3, l1=l1_max(X3, y3, "multinomial", fit_intercept=False),
                      fit_intercept=False, **dict(kw, loss="multinomial"))
    assert np.count_nonzero(none3.coef) == 0
    np.testing.assert_array_equal(none3.intercept, np.zeros(3))
    path = l1_path(X3, y3, loss="multinomial", p=p, sigma=1e-3, seed=0, n_l1=2)
    assert path[0].n_nonzero == 0 and path[1].n_nonzero > 0


def test_l1_max_with_a_bias_at_hinges_kink():
    """Hinge with a free bias on 70/30 classes: b0 = 1 (the kink), and the certificate's
    subgradient gives each positive row -n-/n+ and each negative +1 (their mean is 0): a
    bound (another mix of the kink's subgradients may certify a smaller l1); well below it
    weights stay."""
    X, y = _random_labels()
    n_pos, n_neg = np.sum(y > 0), np.sum(y < 0)
    g = np.where(y > 0, -n_neg / n_pos, 1.0)
    top = l1_max(X, y, "hinge")
    assert top == pytest.approx(np.max(np.abs(X.T @ g)) / X.shape[0], rel=1e-8)
    assert l1_max(X, -y, "hinge") == pytest.approx(top, rel=1e-12)
    kw = dict(sigma=1e-3, seed=0, max_passes=3)
    at = pgs.train(X, y, l1=top, p=1.5, **kw)
    assert np.count_nonzero(at.coef) == 0 and at.intercept == pytest.approx(1.0, abs=1e-8)
    assert np.count_nonzero(pgs.train(X, y, l1=top, p=2.0, **kw).coef) == 0
    assert np.count_nonzero(pgs.train(X, y, l1=0.3 * top, p=2.0, **kw).coef) > 0


def test_regression_l1_max_takes_the_bias_at_zero():
    """A regression's best bias is not computed: l1_max takes the bias at 0 with a bias
    too (a null model's check of a regression never runs: b0 unknown)."""
    X, _ = _random_labels()
    y = X @ np.ones(40) + 3.0
    assert l1_max(X, y, "squared") == l1_max(X, y, "squared", fit_intercept=False)
    # (squared loss (z - y)^2: its derivative at 0 is -2 y)
    assert l1_max(X, y, "squared") == pytest.approx(2 * np.max(np.abs(X.T @ y)) / 300,
                                                    rel=1e-12)
