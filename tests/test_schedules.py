"""The step schedules, the weighted average and the free bias (docs/design.md 6c) against the
NumPy reference of stochastic mirror descent (tests/reference.py), for every kind of p;
their state resumed and merged as the kernel promises; and the defaults' one place."""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from reference import (
    asgd_rounds_reference,
    asgd_step,
    mirror_descent_reference,
    pgs_reference,
    weighted_average,
)

import pgs
from pgs.engine import rounds as P
from pgs.rules import defaults as D
from pgs.training.fit import fit, prepare

P_VALUES = [2.0, 1.5, 1.8, 1.3]


def _data(m=40, n=8, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.6)
    score = X @ rng.normal(size=n) + 0.5 * rng.normal(size=m)
    y = score + 0.3 if regression else np.where(score > 0.2, 1.0, -1.0)
    return X, y


def _cyclic_rows(m, T, k):
    return np.arange(T * k) % m


# Each variant: the loss, and what it adds (weights, a projection, the regularised column).
VARIANTS = {
    "logistic": dict(loss="logistic"),
    "hinge, weights": dict(loss="hinge", weights=True),
    "squared, B": dict(loss="squared", B=2.0),
    "logistic, column": dict(loss="logistic", intercept="column", intercept_scaling=0.7),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("p", P_VALUES)
def test_asgd_matches_mirror_descent_reference(p, k, variant):
    """The kernel's "asgd" schedule (zs, the gradient weight eta / zs, the t-weighted lazy
    average, the free bias's steps) equals the reference iterate by iterate: the last,
    the t-weighted average and the drawn iterate."""
    cfg = dict(VARIANTS[variant])
    regression = cfg["loss"] == "squared"
    X, y = _data(regression=regression)
    m, T, sigma, eta0 = X.shape[0], 90, 0.05, 0.4
    weights = np.random.default_rng(1).uniform(0.2, 2.0, m) if cfg.pop("weights", False) \
        else None
    column = cfg.get("intercept") == "column"
    # the free bias moves by 0.01 mean ||x||^2 eta (pgs.rules.defaults.intercept_rate)
    rate = 0.0 if column else 0.01 * np.mean(np.sum(X * X, axis=1))
    ref = mirror_descent_reference(
        X, y, loss=cfg["loss"], p=p, sigma=sigma, T=T, k=k, rows=_cyclic_rows(m, T, k),
        step=asgd_step(eta0, sigma), B=cfg.get("B"), icpt=0.7 if column else 0.0,
        bias_rate=rate, weights=weights)
    kw = dict(cfg, p=p, sigma=sigma, T=T, k=k, schedule="asgd", eta0=eta0,
              sampling="cyclic", sample_weight=weights, seed=0)

    def coef_b(model):
        return np.r_[model.coef, model.intercept]

    def expected(w, b):
        return np.r_[w[:-1], w[-1] * 0.7 if column else b]

    np.testing.assert_allclose(coef_b(pgs.train(X, y, iterate="last", **kw)),
                               expected(*ref[-1]), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(coef_b(pgs.train(X, y, iterate="average", **kw)),
                               expected(*weighted_average(ref)), rtol=1e-9, atol=1e-12)
    rnd = pgs.train(X, y, iterate="random", **dict(kw, seed=5))
    np.testing.assert_allclose(coef_b(rnd), expected(*ref[rnd.iteration - 1]), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("p", P_VALUES)
def test_pgs_schedule_is_the_papers_step_in_the_general_form(p):
    """The reference's general form with eta_t = 1 / (sigma (t + t0)) is Figure 1: the
    "pgs" schedule is one step function of the same mirror descent."""
    X, y = _data()
    T, sigma, t0 = 60, 0.05, 3.0
    rows = _cyclic_rows(X.shape[0], T, 1)
    general = mirror_descent_reference(X, y, loss="hinge", p=p, sigma=sigma, T=T, k=1,
                                       rows=rows, icpt=1.0,
                                       step=lambda t: 1.0 / (sigma * (t + 1 + t0)))
    paper = pgs_reference(X, y, loss="hinge", p=p, sigma=sigma, T=T, k=1, rows=rows,
                          icpt=1.0, t_offset=t0)
    for (w, _), w_ref in zip(general, paper, strict=True):
        np.testing.assert_allclose(w, w_ref, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_asgd_renormalises_lam_when_its_weight_grows(p):
    """sigma eta0 = 1 - 1e-6: zs falls below 1e-30 at iteration 46,250, so lam is folded
    (`dual_renormalise`) once in the run; the iterates and the average do not notice it.
    (With sigma eta0 = 0.95 the first fold comes at iteration 96,017.)"""
    X, y = _data()
    T, sigma, eta0 = 47_000, 0.5, 0.999999 / 0.5
    ref = mirror_descent_reference(X, y, loss="logistic", p=p, sigma=sigma, T=T, k=1,
                                   rows=_cyclic_rows(X.shape[0], T, 1),
                                   step=asgd_step(eta0, sigma))
    kw = dict(loss="logistic", p=p, sigma=sigma, T=T, schedule="asgd", eta0=eta0,
              sampling="cyclic", fit_intercept=False, seed=0)
    last = pgs.train(X, y, iterate="last", **kw)
    np.testing.assert_allclose(last.coef, ref[-1][0][:-1], rtol=1e-9, atol=1e-12)
    avg = pgs.train(X, y, iterate="average", **kw)
    np.testing.assert_allclose(avg.coef, weighted_average(ref)[0][:-1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("iterate", ["last", "average", "random"])
@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_asgd_state_resumes_bit_for_bit(p, iterate):
    """T1 iterations, then a warm start of T2 more, equal T1 + T2 at once; so does a run
    in chunks between callback calls (the state: zs, the bias, the average's weights)."""
    X, y = _data(m=300, n=20)
    X = sp.csr_matrix(X)
    kw = dict(loss="logistic", p=p, sigma=1e-3, schedule="asgd", iterate=iterate, seed=4)
    whole = pgs.train(X, y, T=1000, **kw)
    first = pgs.train(X, y, T=400, keep_state=True, **kw)
    more = pgs.train(X, y, T=600, warm_start=first, **kw)
    chunked = pgs.train(X, y, T=1000, callback=lambda progress: None, callback_every=37, **kw)
    for model in (chunked,) + (() if iterate == "random" else (more,)):
        np.testing.assert_array_equal(model.coef, whole.coef)
        assert model.intercept == whole.intercept
    assert more.params["eta0"] == whole.params["eta0"]


@pytest.mark.parametrize("W, tau", [(2, 7), (3, 5)])
@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_asgd_rounds_match_the_reference(p, W, tau):
    """Threads under "asgd": each worker runs from the common dual point and bias, the
    merge moves it by the merge step times the workers' changes averaged with their
    shares; the average weighs every local iterate by its t."""
    X, y = _data(m=60, n=8)
    sigma, eta0, T = 0.05, 0.4, 101
    rate = 0.01 * np.mean(np.sum(X * X, axis=1))
    (w_ref, b_ref), its = asgd_rounds_reference(
        X, y, loss="logistic", p=p, sigma=sigma, T=T, bounds=P.partition_rows(60, W),
        tau=tau, eta0=eta0, bias_rate=rate, B=3.0)
    kw = dict(loss="logistic", p=p, sigma=sigma, T=T, schedule="asgd", eta0=eta0, B=3.0,
              n_jobs=W, merge_every=tau, sampling="cyclic", seed=0)
    last = pgs.train(X, y, iterate="last", **kw)
    np.testing.assert_allclose(np.r_[last.coef, last.intercept], np.r_[w_ref[:-1], b_ref],
                               rtol=1e-9, atol=1e-12)
    avg = pgs.train(X, y, iterate="average", **kw)
    wt = np.array([c for _, _, c in its], dtype=float)
    w_avg = sum(c * w for (w, _, _), c in zip(its, wt, strict=True)) / wt.sum()
    b_avg = sum(c * b for (_, b, _), c in zip(its, wt, strict=True)) / wt.sum()
    np.testing.assert_allclose(np.r_[avg.coef, avg.intercept], np.r_[w_avg[:-1], b_avg],
                               rtol=1e-9, atol=1e-12)


def test_asgd_merge_step_rule():
    """gamma = sqrt(workers that ran), at most 3/2 (1 for one worker)."""
    assert D.merge_step_for(0) == D.merge_step_for(1) == 1.0
    assert D.merge_step_for(2) == np.sqrt(2.0)
    assert D.merge_step_for(3) == D.merge_step_for(64) == D.MAX_MERGE_STEP == 1.5


@pytest.mark.parametrize("schedule, steps, gamma", [
    ("asgd", (3, 3), np.sqrt(2.0)),     # two workers ran: sqrt(2)
    ("asgd", (3, 3, 3), 1.5),           # sqrt(3) > 3/2: the cap
    ("asgd", (6, 0), 1.0),              # one worker ran: its state, unscaled
    ("pgs", (3, 3), 1.0),               # the paper's schedule: no step
])
def test_merge_moves_by_gamma_times_the_workers_changes(schedule, steps, gamma):
    """A hand-made round: lam <- lam0 + gamma sum_w dlam_w, b <- b0 + gamma sum_w db_w and
    the l1 term's U likewise (the dlam_w, db_w, dU_w already weighted by the shares), t <-
    t0 + sum_w steps_w."""
    W = len(steps)
    X, y = _data(m=6 * W, n=3)
    run = prepare(X, y, loss="logistic", sigma=0.1, T=6 * W, schedule=schedule, eta0=0.5,
                  iterate="last", seed=0)
    params, state = P.setup(run, [6] * W)
    lam0 = np.array([1.0, -2.0, 0.5, 0.0])
    state["kernel"].update(lam=lam0.copy(), b=0.25, U=0.5)
    dlam = [np.array([0.5, 0.5, 0.0, 0.0]), np.array([0.1, -0.1, 0.2, 0.0]),
            np.array([0.0, 0.0, 0.0, 1.0])]
    db, dU = [0.1, 0.3, -0.2], [0.01, 0.02, 0.04]
    deltas = [dict(worker=w, steps=steps[w], status=0, stopped=False, t=steps[w],
                   loss_sum=0.0, sampler=state["workers"][w],
                   dlam=dlam[w] if steps[w] else np.zeros(4), db=db[w] if steps[w] else 0.0,
                   dU=dU[w] if steps[w] else 0.0,
                   b_sum=0.0, rho_sum=0.0, b_pick=0.0, avg_sum=None, w_pick=None)
              for w in range(W)]
    nxt = P.merge(state, deltas, params)["kernel"]
    ran = [w for w in range(W) if steps[w]]
    np.testing.assert_allclose(nxt["lam"], lam0 + gamma * sum(dlam[w] for w in ran),
                               rtol=1e-15)
    assert nxt["b"] == pytest.approx(0.25 + gamma * sum(db[w] for w in ran), rel=1e-15)
    assert nxt["U"] == pytest.approx(0.5 + gamma * sum(dU[w] for w in ran), rel=1e-15)
    assert nxt["t"] == sum(steps)
    np.testing.assert_array_equal(state["kernel"]["lam"], lam0)    # (input untouched)


def test_asgd_one_worker_is_the_plain_run():
    X, y = _data(m=300, n=20)
    kw = dict(loss="hinge", sigma=1e-3, T=900, schedule="asgd", seed=2, iterate="average")
    plain = pgs.train(X, y, **kw)
    rounds = pgs.train(X, y, n_jobs=1, merge_every=50, **kw)
    np.testing.assert_array_equal(rounds.coef, plain.coef)
    assert rounds.intercept == plain.intercept


# ------------------------------------------------------------- the default policy


def _defaults_of(fn):
    return {name: par.default for name, par in inspect.signature(fn).parameters.items()
            if par.default is not inspect.Parameter.empty}


def test_defaults_are_one_policy_read_by_train_the_estimators_and_the_cli():
    """pgs.DEFAULTS is what pgs.train, both estimators and the CLI's help take (the
    estimators' losses aside), and the paper's set-up is a preset of train's arguments."""
    pytest.importorskip("sklearn")
    from pgs.estimators import PGSClassifier, PGSRegressor

    train = _defaults_of(pgs.train)
    for cls in (PGSClassifier, PGSRegressor):
        est = _defaults_of(cls.__init__)
        for name, value in pgs.DEFAULTS.items():
            if name == "loss":
                continue
            assert train[name] == value and est[name] == value, (cls.__name__, name)
    assert _defaults_of(PGSRegressor.__init__)["loss"] == "squared"
    assert _defaults_of(PGSClassifier.__init__)["loss"] == "auto"
    assert train["loss"] == pgs.DEFAULTS["loss"] == "hinge"
    assert set(pgs.PAPER) <= set(train)


def test_train_and_the_classifier_give_the_same_model_with_their_defaults():
    pytest.importorskip("sklearn")
    from pgs import PGSClassifier

    X, y = _data(m=400, n=10)
    model = pgs.train(X, y, seed=7)
    clf = PGSClassifier(random_state=7).fit(X, y)
    np.testing.assert_array_equal(clf.coef_[0], model.coef)
    assert clf.intercept_[0] == model.intercept
    assert clf.sigma_ == model.params["sigma"]
    assert model.params["schedule"] == "asgd" and model.params["intercept"] == "free"


def test_auto_eta0_and_the_bias_rate_closed_forms():
    """eta0 = 2 / (L R^2), R^2 the mean squared row norm plus the free bias's rate
    0.01 R^2 (or the column's s^2), at most 1 / (2 sigma); L = 1/4 for logistic, 1 for
    the hinge's kink, 2 for squared."""
    X, y = _data(m=200, n=10)
    r2 = np.mean(np.sum(X * X, axis=1))
    for loss, lip in (("logistic", 0.25), ("hinge", 1.0)):
        model = fit(X, y, loss=loss, sigma=1e-4, T=5, seed=0)
        assert model.params["eta0"] == pytest.approx(2.0 / (lip * 1.01 * r2), rel=1e-12)
        assert model.params["intercept_rate"] == pytest.approx(0.01 * r2, rel=1e-12)
        col = fit(X, y, loss=loss, sigma=1e-4, T=5, seed=0, intercept="column",
                   intercept_scaling=0.5)
        assert col.params["eta0"] == pytest.approx(2.0 / (lip * (r2 + 0.25)), rel=1e-12)
        assert col.params["intercept_rate"] == 0.0
    capped = fit(X, y, loss="logistic", sigma=10.0, T=5, seed=0)
    assert capped.params["eta0"] == 0.05
    reg = fit(X, y + 1.0, loss="squared", sigma=1e-4, T=5, seed=0, fit_intercept=False)
    assert reg.params["eta0"] == pytest.approx(2.0 / (2.0 * r2), rel=1e-12)
    # eta0 at or above 1 / sigma would make 1 - sigma eta0 <= 0
    with pytest.raises(ValueError, match="eta0 must be below 1 / sigma"):
        fit(X, y, sigma=0.5, eta0=2.0, T=5)
    with pytest.raises(ValueError, match="schedule must be one of pgs, asgd"):
        fit(X, y, sigma=0.5, schedule="adam", T=5)
    with pytest.raises(ValueError, match="intercept must be one of free, column"):
        fit(X, y, sigma=0.5, intercept="both", T=5)


def test_scaling_x_scales_eta0_and_keeps_the_decisions():
    """X * a with sigma * a^2 is the same problem in w / a: the "auto" eta0 and the free
    bias's rate follow a, so the decisions do not change (up to rounding)."""
    X, y = _data(m=300, n=10)
    a = fit(X, y, loss="logistic", sigma=1e-3, T=2000, seed=1)
    b = fit(4.0 * X, y, loss="logistic", sigma=1e-3 * 16.0, T=2000, seed=1)
    assert b.params["eta0"] == pytest.approx(a.params["eta0"] / 16.0, rel=1e-12)
    np.testing.assert_allclose(b.decision_function(4.0 * X), a.decision_function(X),
                               rtol=1e-8, atol=1e-10)


def test_a_warm_start_keeps_its_models_auto_values_and_scans_no_rows(monkeypatch):
    """The "auto" eta0 and the free bias's rate come from the first call's X (as
    partial_fit's first batch sets them); a warm start on other rows keeps both, and
    reads no row statistics (an O(nnz) scan a call)."""
    X, y = _data(m=200, n=10)
    first = fit(X, y, loss="logistic", sigma=1e-3, T=50, seed=0, keep_state=True)
    monkeypatch.setattr(D, "row_stats", None)       # (a call would fail)
    later = fit(3.0 * X, y, loss="logistic", sigma=1e-3, T=50, warm_start=first,
                keep_state=True)
    for key in ("eta0", "intercept_rate"):
        assert later.params[key] == first.params[key]


def test_objective_leaves_a_free_bias_out_of_the_regulariser():
    """F(w, b) = sigma ||w||_p^2 / (2 (p - 1)) + mean loss(<w, x> + b): with a free bias b
    is not in the norm; with the column, b / s is."""
    X, y = _data(m=200, n=10)
    for intercept in ("free", "column"):
        model = fit(X, y, loss="logistic", p=1.5, sigma=0.01, T=400, seed=0,
                     intercept=intercept, intercept_scaling=0.5)
        z = X @ model.coef + model.intercept
        w = model.coef if intercept == "free" else np.r_[model.coef, model.intercept / 0.5]
        reg = 0.01 * np.sum(np.abs(w) ** 1.5) ** (2 / 1.5) / (2 * 0.5)
        expected = reg + np.mean(np.log1p(np.exp(-y * z)))
        assert model.intercept != 0.0
        assert model.objective(X, y) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
def test_threads_warm_start_continues_every_workers_stream(schedule):
    """With n_jobs=2, T1 (whole rounds) then a warm start of T2 equals T1 + T2 at once:
    the model's state carries each worker's sampler (a warm start used to replay worker
    1's first permutation from the seed, so half its shard was never seen)."""
    X, y = _data(m=400, n=20)
    kw = dict(loss="logistic", sigma=1e-3, seed=3, n_jobs=2, merge_every=25,
              schedule=schedule, sampling="permutation", iterate="average")
    whole = pgs.train(X, y, T=1000, **kw)
    first = pgs.train(X, y, T=600, keep_state=True, **kw)
    assert len(first._state["workers"]) == 2
    more = pgs.train(X, y, T=400, warm_start=first, **kw)
    np.testing.assert_array_equal(more.coef, whole.coef)
    assert more.intercept == whole.intercept


@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
def test_the_average_folds_at_powers_of_two_from_n_over_8_on(schedule):
    """A fold sets the average's C to 0 before it takes w_t (C = rho_t c_t just after):
    at t = 2^j once 8 t >= n_cols (a fold costs n_cols), never before (C_RESTART far
    away at this t)."""
    n_features = 999                                   # n_cols = 1000: folds from t = 128
    rng = np.random.default_rng(0)
    X = sp.random(400, n_features, density=0.02, format="csr", random_state=1)
    y = np.where(rng.random(400) < 0.5, -1.0, 1.0)
    for t in (32, 64, 128, 256, 255):
        run = prepare(X, y, sigma=1e-4, T=t, seed=3, schedule=schedule, loss="logistic")
        run.solver.run(t, run.Xb.data, run.Xb.indices, run.Xb.indptr, run.y_kernel)
        s = run.solver._scalars()
        rho = float(t) if schedule == "asgd" else 1.0
        folded = s["C"] == rho * s["c"]
        assert folded == (t in (128, 256)), (t, s["C"], rho * s["c"])
