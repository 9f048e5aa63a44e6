"""sigma="auto": the held-out split, the grid's scores, the choice, and the final run.

Every recorded score is reproduced by hand (a plain fit on the training split, scored on
the validation split), and the final model is a plain fit at the chosen sigma on the
training split continued on every row but the held-out ones it stops on (a warm start),
bit for bit.
"""

import math

import numpy as np
import pytest

import pgs
from pgs.rules import defaults as D
from pgs.training import sigma_auto as SA


def _binary(m=400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=m) > 0, 1, -1)
    return X, y


def _halving_reference(fit_at, holdout_values, grid, per_pass, t_cap, se_of_difference,
                       final_at, check=None, extrapolate=False, stop=None, t_search=None):
    """Successive halving and the stopping rule by brute force: ``fit_at(sigma, T)`` is a
    plain fit of T iterations on the training split (`per_pass` rows), ``final_at(sigma,
    t_choice, T)`` that fit to t_choice continued on every row to T, ``holdout_values(fit)``
    a fit's per-row held-out scores. The halving spends at most `D.SEARCH_SHARE` of
    `t_search` (the search's t_cap), ranking by the scores (`extrapolate`: each row's 2 v - v
    at the rung before); the winner is then scored on the held-out rows `stop` (positions;
    None: all) every `check` iterations (None: it runs to t_cap).
    Returns (sigma, scores at each value's last rung, t_choice, final T)."""
    n = len(grid)
    scores, values, alive, pair_rungs = [np.nan] * n, [None] * n, list(range(n)), 0
    before = [None] * n
    t_search = max(1, int(D.SEARCH_SHARE * (t_cap if t_search is None else t_search)))
    rung = max(D.FIRST_RUNG_PASSES * per_pass, D.FIRST_RUNG_ROWS)
    while True:
        t = min(t_search, max(1, math.ceil(rung)))
        for g in alive:
            before[g], values[g] = values[g], holdout_values(fit_at(grid[g], t))
            scores[g] = float(np.mean(values[g]))
        judged = {g: 2 * values[g] - before[g] if extrapolate and before[g] is not None
                  else values[g] for g in alive}
        js = {g: float(np.mean(judged[g])) for g in alive}
        ranked = sorted(alive, key=lambda g: (js[g], g), reverse=True)
        band = [g for g in alive if js[g] >= js[ranked[0]]
                - se_of_difference(judged[ranked[0]], judged[g])]
        order = sorted(band, reverse=True) + [g for g in ranked if g not in band]
        pair_rungs += len(alive) == 2          # (the last two race on to 2 passes)
        if t >= t_search or len(alive) == 1 or (pair_rungs and t >= D.RACE_PASSES * per_pass):
            alive = order[:1]
            break
        alive = sorted(order[:max(math.ceil(len(alive) / 2), 2)])
        rung *= 2
    win, t_choice = alive[0], t
    stop = slice(None) if stop is None else stop
    best, stale = float(np.mean(values[win][stop])), 0
    if check is None:
        t = t_cap
    while check is not None and t < t_cap and stale < D.N_ITER_NO_CHANGE:
        t = min(t_cap, t + check)
        v = holdout_values(final_at(grid[win], t_choice, t))[stop]
        if np.mean(v) > best:
            best, stale = float(np.mean(v)), 0
        else:
            stale += 1
    return grid[win], np.array(scores), t_choice, t


def _continued(fit_on_split, fit_on_all):
    """`final_at` of a plain fit on the training split, ``fit_on_split(sigma, T)`` (with
    keep_state), warm-started on every row by ``fit_on_all(sigma, T, warm)``."""
    def final_at(sigma, t_choice, T):
        return fit_on_all(sigma, T - t_choice, fit_on_split(sigma, t_choice))
    return final_at


def _paired_se(n_val):
    return lambda a, b: float(np.std(a - b)) / math.sqrt(a.shape[0])


def _rows_of(m, seed, strata=None):
    """``sigma="auto"``'s rows: (training split, held-out rows, the positions among these
    of the ones it stops on, the rows trained on after the search in their order: the
    training split, then the other held-out rows)."""
    train, val = SA.validation_split(m, D.auto_validation_fraction(m), seed, strata)
    _, stop = SA.validation_split(val.shape[0], D.STOP_FRACTION, seed + 1,
                                  None if strata is None else strata[val])
    return train, val, stop, np.concatenate([train, np.delete(val, stop)])


def _hard_binary(m=16_000, d=12, seed=0):
    """Noisy labels and features of unequal scales: the grid's values score apart and
    passes matter, on enough rows for several halving rungs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) * np.logspace(0, 1.5, d)
    w = rng.normal(size=d) / np.logspace(0, 1.5, d)
    y = np.where(X @ w + 1.5 * rng.normal(size=m) > 0.3, 1, -1)
    return X, y


# ------------------------------------------------------------------------ pgs.train


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_train_halving_and_stopping_match_the_brute_force_reference(loss):
    """Every recorded score is a plain fit on the training split scored on the held-out
    rows; the halving keeps the better half (ties to the larger sigma), the last choice is
    the one-standard-error rule, the winner's run stops after N_ITER_NO_CHANGE passes
    without an improvement, and the model is that plain fit, bit for bit."""
    X, y = _hard_binary()
    model = pgs.train(X, y, sigma="auto", seed=5, loss=loss)
    grid = model.sigma_grid
    train, val, stop, trained = _rows_of(X.shape[0], 5, np.where(y > 0, 1.0, -1.0))
    # The default grid: the factors times mean ||x||^2 / m over the training rows.
    assert grid.shape == (len(pgs.rules.defaults.DEFAULT_GRID_FACTORS),)
    np.testing.assert_allclose(grid, np.array(pgs.rules.defaults.DEFAULT_GRID_FACTORS)
                               * np.sum(X[train]**2) / train.shape[0]**2, rtol=1e-12)

    def fit_at(s, T, keep_state=False):
        return pgs.train(X[train], y[train], sigma=s, seed=5, T=T, loss=loss,
                         keep_state=keep_state)

    def holdout_values(fit):
        return (fit.predict(X[val]) == y[val]).astype(float)

    final_at = _continued(lambda s, T: fit_at(s, T, keep_state=True),
                          lambda s, T, warm: pgs.train(X[trained], y[trained], sigma=s, seed=5,
                                                       T=T, loss=loss, warm_start=warm))
    m = trained.shape[0]            # (the rows trained on after the search)
    sigma, scores, t_choice, T = _halving_reference(
        fit_at, holdout_values, grid, train.shape[0], 10 * m, _paired_se(val.shape[0]),
        final_at, check=m, stop=stop, t_search=10 * X.shape[0])
    np.testing.assert_array_equal(model.sigma_scores, scores)
    assert model.params["sigma"] == sigma and model.T == T
    assert t_choice <= 5 * m and 3 * m <= T < 10 * m    # (it stopped early)
    assert model.params["passes"] == T / m
    plain = final_at(sigma, t_choice, T)
    np.testing.assert_array_equal(model.coef, plain.coef)
    assert model.intercept == plain.intercept
    assert plain.sigma_grid is None


def test_train_given_T_or_max_passes_runs_exactly_that_long():
    X, y = _hard_binary(6000)
    assert pgs.train(X, y, sigma="auto", seed=1, T=7777).T == 7777
    short = pgs.train(X, y, sigma="auto", seed=1, max_passes=0.5)
    # (passes of the rows trained on: all but the held-out ones the stop reads)
    assert short.T == math.ceil(0.5 * _rows_of(X.shape[0], 1, y)[3].shape[0])
    assert pgs.train(X, y, sigma=1e-3, seed=1, max_passes=2.5).T == math.ceil(2.5 * X.shape[0])
    assert pgs.train(X, y, sigma=1e-3, seed=1).T == 10 * X.shape[0]
    with pytest.raises(ValueError, match="max_passes"):
        pgs.train(X, y, max_passes=0)


def test_verbose_reports_rungs_and_passes_and_is_silent_by_default(capsys):
    X, y = _hard_binary(6000)
    pgs.train(X, y, seed=3)
    assert capsys.readouterr().out == ""
    model = pgs.train(X, y, seed=3, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    rungs = [line for line in lines if "sigma rung" in line]
    passes = [line for line in lines if line.startswith("-- pass")]
    assert len(rungs) == 3 and passes    # (7, 4, then the last two at 2 passes)
    assert passes[-1].startswith(f"-- pass {model.params['passes']:.3g} ")
    assert all(" s" in line and "left" in line for line in lines)
    with pytest.raises(ValueError, match="verbose"):
        pgs.train(X, y, verbose=-1)
    # a callable receives each line (with the bound on the time left) instead: no print,
    # the same model
    got = []
    again = pgs.train(X, y, seed=3, verbose=got.append)
    assert capsys.readouterr().out == "" and len(got) == len(lines)
    assert all(line.startswith("at most ") for line in got)
    np.testing.assert_array_equal(again.coef, model.coef)


def test_train_is_deterministic_for_a_seed_and_records_fresh_entropy():
    X, y = _binary()
    a = pgs.train(X, y, sigma="auto", seed=11, T=1000)
    b = pgs.train(X, y, sigma="auto", seed=11, T=1000)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.sigma_scores, b.sigma_scores)
    c = pgs.train(X, y, sigma="auto", T=1000)      # fresh entropy, recorded
    d = pgs.train(X, y, sigma="auto", seed=c.params["seed"], T=1000)
    np.testing.assert_array_equal(c.coef, d.coef)
    np.testing.assert_array_equal(c.sigma_scores, d.sigma_scores)


def test_train_regression_scores_are_r2_and_custom_grid_and_fraction():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 5))
    y = X @ rng.normal(size=5) + 2.0 * rng.normal(size=3000) + 2.0
    grid = [1e-3, 1e-2, 1e-1]
    model = pgs.train(X, y, loss="squared", sigma="auto", sigma_grid=grid[::-1],
                      validation_fraction=0.3, seed=2, T=9000)
    np.testing.assert_array_equal(model.sigma_grid, grid)
    train, val = SA.validation_split(3000, 0.3, 2)
    assert val.shape[0] == 900
    var = np.mean((y[val] - y[val].mean()) ** 2)

    def fit_at(s, T, keep_state=False):
        return pgs.train(X[train], y[train], loss="squared", sigma=s, seed=2, T=T,
                         keep_state=keep_state)

    def holdout_values(fit):
        return 1.0 - (y[val] - fit.decision_function(X[val])) ** 2 / var

    # (T given: no stop, every held-out row joins, after the training rows)
    order = np.concatenate([train, val])
    final_at = _continued(lambda s, T: fit_at(s, T, keep_state=True),
                          lambda s, T, warm: pgs.train(X[order], y[order], loss="squared",
                                                       sigma=s, T=T, warm_start=warm))
    sigma, scores, t_choice, T = _halving_reference(fit_at, holdout_values, grid,
                                                    train.shape[0], 9000, _paired_se(900),
                                                    final_at, extrapolate=True)
    np.testing.assert_allclose(model.sigma_scores, scores, rtol=1e-12, atol=1e-12)
    assert model.params["sigma"] == sigma and model.T == T == 9000
    np.testing.assert_array_equal(model.coef, final_at(sigma, t_choice, 9000).coef)


def test_train_warm_start_keeps_sigma():
    X, y = _binary()
    first = pgs.train(X, y, sigma="auto", seed=1, T=500, keep_state=True, iterate="last")
    more = pgs.train(X, y, sigma="auto", seed=1, T=500, warm_start=first, iterate="last")
    assert more.params["sigma"] == first.params["sigma"]
    assert more.T == 1000


def test_a_warm_start_keeps_sigma_by_its_own_value_not_by_auto():
    """Inside, "auto" means the search only; a warm start keeps its model's sigma by KEEP
    (which pgs.train passes for a user's "auto" with warm_start), and KEEP without one is
    an error."""
    from pgs.rules.params import KEEP
    from pgs.training.fit import fit
    X, y = _binary()
    first = pgs.train(X, y, sigma=0.01, seed=1, T=300, keep_state=True)
    assert fit(X, y, sigma=KEEP, warm_start=first, T=10).params["sigma"] == 0.01
    assert pgs.train(X, y, warm_start=first, T=10).params["sigma"] == 0.01
    for kwargs in (dict(sigma="auto", warm_start=first), dict(sigma=KEEP)):
        with pytest.raises(TypeError, match="sigma must be a number > 0"):
            fit(X, y, T=10, **kwargs)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(sigma="best"), TypeError, "sigma must be a float > 0 or 'auto'"),
    (dict(sigma="auto", sigma_grid=[]), ValueError, "at least one value"),
    (dict(sigma="auto", sigma_grid=[1e-3, -1.0]), ValueError, "sigma_grid entry"),
    (dict(sigma="auto", sigma_grid="1e-3"), TypeError, "sigma_grid must be None"),
    (dict(sigma="auto", validation_fraction=0.0), ValueError, "validation_fraction"),
    (dict(sigma="auto", validation_fraction=1.0), ValueError, "validation_fraction"),
    (dict(validation_fraction="half"), ValueError, "validation_fraction"),
    (dict(sigma=1e-3, sigma_grid=[0.0]), ValueError, "sigma_grid entry"),
])
def test_train_validates_the_new_arguments(kwargs, error, match):
    X, y = _binary(50)
    with pytest.raises(error, match=match):
        pgs.train(X, y, T=10, **kwargs)


# ------------------------------------------------------------------- the split


def test_validation_split_is_stratified_disjoint_and_seeded():
    y = np.array([0] * 50 + [1] * 9 + [2] * 2 + [3])
    train, val = SA.validation_split(y.shape[0], 0.2, 7, y)
    assert np.intersect1d(train, val).size == 0
    assert np.union1d(train, val).size == y.shape[0]
    assert [int(np.sum(y[val] == c)) for c in range(4)] == [10, 1, 1, 0]
    again = SA.validation_split(y.shape[0], 0.2, 7, y)
    np.testing.assert_array_equal(val, again[1])
    assert not np.array_equal(val, SA.validation_split(y.shape[0], 0.2, 8, y)[1])
    # Too few rows to hold one out: the grid is scored on the training rows.
    assert SA.validation_split(1, 0.2, 0)[1].size == 0
    model = pgs.train(np.array([[1.0], [2.0]]), [0, 1], sigma="auto", seed=0, T=5)
    assert model.sigma_scores.shape == model.sigma_grid.shape


# -------------------------------------------------------------------- estimators


sklearn = pytest.importorskip("sklearn")


def _multiclass(m=450, seed=0):
    from sklearn.datasets import make_classification
    return make_classification(m, 10, n_informative=6, n_classes=3, random_state=seed)


def test_classifier_shares_one_sigma_scored_on_the_multiclass_prediction():
    """One sigma for the one-vs-rest problems, scored on their argmax prediction; the
    fitted problems are a plain fit on the training split at it, bit for bit."""
    from pgs import PGSClassifier
    X, y = _multiclass(6000)
    clf = PGSClassifier(random_state=3).fit(X, y)
    assert clf.sigma == "auto"
    assert clf.params_["sigma"] == clf.sigma_ and clf.loss_ in ("hinge", "crammer_singer")
    train, val, stop, trained = _rows_of(X.shape[0], 3, y)

    def fit_at(s, T, warm_start=False):
        return PGSClassifier(sigma=s, random_state=3, T=T, loss=clf.loss_,
                             warm_start=warm_start).fit(X[train], y[train])

    def holdout_values(fit):
        return (fit.predict(X[val]) == y[val]).astype(float)

    final_at = _continued(lambda s, T: fit_at(s, T, warm_start=True),
                          lambda s, T, warm: warm.set_params(T=T).fit(X[trained], y[trained]))
    m = trained.shape[0]
    sigma, scores, t_choice, T = _halving_reference(
        fit_at, holdout_values, clf.sigma_grid_, train.shape[0], 10 * m,
        _paired_se(val.shape[0]), final_at, check=max(m, D.CHECK_ROWS), stop=stop,
        t_search=10 * X.shape[0])
    np.testing.assert_array_equal(clf.sigma_scores_, scores)
    assert clf.sigma_ == sigma and clf.t_ == T and clf.n_iter_ == T / m
    plain = final_at(sigma, t_choice, T)
    np.testing.assert_array_equal(clf.coef_, plain.coef_)
    np.testing.assert_array_equal(clf.intercept_, plain.intercept_)
    assert plain.sigma_grid_ is None and plain.sigma_ == clf.sigma_
    again = PGSClassifier(random_state=3).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, again.coef_)


def test_regressor_sigma_auto_is_a_plain_fit_on_the_split_continued_on_every_row():
    from pgs import PGSRegressor
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 6)) + 2.0
    y = X @ rng.normal(size=6) + 0.3 * rng.normal(size=3000)
    reg = PGSRegressor(random_state=0).fit(X, y)
    train, _, _, trained = _rows_of(3000, 0)
    assert reg.sigma_ in reg.sigma_grid_
    # 7 values, halved to 4 and 2, which race to 2 passes of the 2,400 training rows: a
    # rung of 2,500 rows (FIRST_RUNG_ROWS) doubled twice.
    t_choice = D.FIRST_RUNG_ROWS * 4
    assert t_choice >= D.RACE_PASSES * 2400 and reg.t_ > t_choice
    first = PGSRegressor(sigma=reg.sigma_, random_state=0, T=t_choice, warm_start=True)
    plain = first.fit(X[train], y[train]).set_params(T=reg.t_ - t_choice).fit(X[trained],
                                                                              y[trained])
    np.testing.assert_array_equal(reg.coef_, plain.coef_)
    assert reg.intercept_ == plain.intercept_
    assert reg.score(X, y) > 0.95


def test_estimators_validate_the_new_parameters_and_keep_sigma_when_continuing():
    from pgs import PGSClassifier, PGSRegressor
    X, y = _multiclass(150)
    for bad, error, match in ((dict(sigma="big"), TypeError, "sigma must be"),
                              (dict(validation_fraction=1.5), ValueError, "validation_fraction"),
                              (dict(sigma_grid=[0.1, 0.0]), ValueError, "sigma_grid entry")):
        with pytest.raises(error, match=match):
            PGSClassifier(**bad).fit(X, y)
        with pytest.raises(error, match=match):
            PGSRegressor(**bad).fit(X, y)
    clf = PGSClassifier(random_state=0, warm_start=True, T=300).fit(X, y)
    sigma, scores = clf.sigma_, clf.sigma_scores_
    clf.fit(X, y)
    clf.partial_fit(X, y)
    assert clf.sigma_ == sigma and clf.sigma_scores_ is scores
    assert clf.params_["sigma"] == sigma
    # partial_fit's first call chooses sigma on its batch.
    first = PGSClassifier(random_state=0).partial_fit(X, y, classes=np.unique(y))
    assert first.sigma_ in first.sigma_grid_


def test_weighted_search_scores_weighted_accuracy():
    from pgs import PGSClassifier
    X, y = _multiclass(200)
    w = np.random.default_rng(0).random(200) + 0.5
    clf = PGSClassifier(random_state=1, T=400, sigma_grid=[1e-3, 1e-1]).fit(X, y, sample_weight=w)
    train, val = SA.validation_split(200, 0.2, 1, y)
    # (both run to half of T, the search's share: one rung)
    ref = PGSClassifier(random_state=1, sigma=1e-3, T=int(D.SEARCH_SHARE * 400), loss=clf.loss_)
    ref.fit(X[train], y[train], sample_weight=w[train])
    assert clf.sigma_scores_[0] == pytest.approx(
        np.average(ref.predict(X[val]) == y[val], weights=w[val]), rel=1e-12)


def test_with_threads_each_candidate_is_split_by_rows_and_resumed_at_every_rung():
    """n_jobs=2, one problem: every candidate runs pgs.train(n_jobs=2)'s engine (rows split
    between the threads), advanced rung by rung, then the winner on every row; the model
    is the winner's chain of warm-started pgs.train(n_jobs=2) calls to the same
    boundaries (on the training split, then on X), bit for bit."""
    X, y = _hard_binary(8000)
    model = pgs.train(X, y, seed=6, n_jobs=2, loss="logistic")
    train, _, _, trained = _rows_of(X.shape[0], 6, np.where(y > 0, 1.0, -1.0))
    m, per_pass = trained.shape[0], train.shape[0]
    rung0 = math.ceil(max(D.FIRST_RUNG_PASSES * per_pass, D.FIRST_RUNG_ROWS))
    bounds = [math.ceil(rung0 * 2**r) for r in range(4)]       # the winner ran every rung
    assert bounds[-1] <= D.SEARCH_SHARE * 10 * m
    n_split = len(bounds)
    while bounds[-1] < model.T:
        bounds.append(min(model.T, bounds[-1] + max(m, D.CHECK_ROWS)))
    assert bounds[-1] == model.T and len(bounds) > n_split
    chain, t = None, 0
    for i, b in enumerate(bounds):
        rows = train if i < n_split else trained
        chain = pgs.train(X[rows], y[rows], sigma=model.params["sigma"], seed=6, n_jobs=2,
                          loss="logistic", T=b - t, warm_start=chain, keep_state=True)
        t = b
    np.testing.assert_array_equal(model.coef, chain.coef)
    assert model.intercept == chain.intercept


def test_a_callback_needs_a_fixed_sigma():
    """A callback follows one run: sigma="auto" (several candidates, then the winner)
    refuses it rather than never calling it; a fixed sigma calls it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = np.where(X[:, 0] > 0, 1, -1)
    seen = []
    with pytest.raises(ValueError, match="callback needs a fixed sigma"):
        pgs.train(X, y, callback=seen.append)
    pgs.train(X, y, sigma=0.1, T=600, callback=seen.append, callback_every=300)
    assert [r.t for r in seen] == [300, 600]


# -------------------------------------------------------------- every row counts


def test_the_final_model_learns_from_the_held_out_rows():
    """A feature that only held-out rows hold (and that decides their labels): a model
    trained on the other rows alone keeps its weight at exactly 0; the default fit,
    which goes on with every row once sigma is chosen, learns it."""
    X, y = _hard_binary(6000)
    y = np.where(y > 0, 1.0, -1.0)
    _, val = SA.validation_split(X.shape[0], 0.2, 4, y)
    only_held_out = np.zeros((X.shape[0], 1))
    only_held_out[val, 0] = 10.0 * y[val]
    X = np.hstack([X, only_held_out])
    train = np.setdiff1d(np.arange(X.shape[0]), val)
    alone = pgs.train(X[train], y[train], seed=4)
    assert alone.coef[-1] == 0.0
    for fit in (pgs.train(X, y, seed=4), pgs.train(X, y, seed=4, n_jobs=2)):
        assert fit.coef[-1] > 0.0
        assert np.mean(fit.predict(X[val]) == y[val]) \
            > np.mean(alone.predict(X[val]) == y[val]) + 0.05


class _Rows:
    """`_until_stale`'s rows: advancing sets the one run's t."""

    def __init__(self, run):
        self.run, self.ends = run, []

    def advance(self, groups, t_end):
        self.ends.append(t_end)
        self.run.solver.t = t_end


class _Holdout:
    def score(self, values):
        return float(np.mean(values))

    def se_of_difference(self, a, b):
        return 0.01


@pytest.mark.parametrize("scores, checks", [
    ([0.5, 0.5, 0.5], 3),                  # three stale scores: stop
    ([0.49, 0.5, 0.495], 3),               # none above the best (0.5): stale
    ([0.5, 0.5, 0.52, 0.5, 0.5, 0.5], 6),  # a gain resets the count of stale scores
    ([0.501, 0.5, 0.5, 0.502, 0.5, 0.5], 6),    # however small (the noise's 0.01 too)
    ([0.5, 0.52, 0.5, 0.5, 0.53, 0.5], 6),
    ([0.52, 0.54, 0.56, 0.58, 0.6, 0.62], 6),  # gains all the way: to t_cap
])
def test_the_stopping_rule_stops_after_three_stale_scores_in_a_row(scores, checks):
    import types
    assert D.N_ITER_NO_CHANGE == 3
    run = types.SimpleNamespace(solver=types.SimpleNamespace(t=100))
    rows, it = _Rows(run), iter(scores)
    SA._until_stale(rows, [run], _Holdout(), lambda: np.full(10, next(it)), np.full(10, 0.5),
                    t_cap=100 + 6 * D.CHECK_ROWS, k=1, per_pass=D.CHECK_ROWS,
                    max_passes=6, report=lambda *a, **kw: None, sigma=1.0)
    assert rows.ends == [100 + D.CHECK_ROWS * (i + 1) for i in range(checks)]


def test_held_out_rows_are_a_fifth_at_most_ten_thousand(monkeypatch):
    held_out = []

    class Recorded(SA.Holdout):
        def __init__(self, X_val, *args):
            held_out.append(X_val.shape[0])
            super().__init__(X_val, *args)

    monkeypatch.setattr(SA, "Holdout", Recorded)
    rng = np.random.default_rng(0)
    for m in (5_000, 60_000):
        X = rng.normal(size=(m, 2))
        pgs.train(X, np.where(X[:, 0] > 0, 1, -1), seed=0, T=50, sigma_grid=[1e-3])
    assert 998 <= held_out[0] <= 1_000 and held_out[1] == 10_000   # (floored per class)
    assert D.auto_validation_fraction(1_000) == 0.2
    assert D.auto_validation_fraction(50_000) == 0.2
    assert D.auto_validation_fraction(200_000) * 200_000 == pytest.approx(10_000)
    y = np.repeat([0, 1], 100_000)
    _, val = SA.validation_split(y.shape[0], D.auto_validation_fraction(y.shape[0]), 0, y)
    assert val.shape[0] == 10_000


def test_regression_ranks_the_candidates_where_their_curves_go(monkeypatch):
    """R^2 at short rungs under-rates the small sigmas (they start slowly): the halving
    ranks each candidate by its per-row scores extrapolated one rung on. Without that
    rule the search settles on a larger sigma, and a worse fit, on sparse rows."""
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    w = rng.normal(size=3000) * (rng.random(3000) < 0.3)
    X, Xt = (sp.random(m, 3000, density=0.01, format="csr", random_state=s)
             for m, s in ((6000, 0), (3000, 1)))
    y, yt = X @ w + 0.3 * rng.normal(size=6000) + 1.0, Xt @ w + 1.0
    assert SA.r2_per_row(y, None).extrapolate
    ruled = pgs.train(X, y, loss="squared", seed=0)
    plain = SA.r2_per_row

    def without_rule(*args):
        per_row = plain(*args)
        del per_row.extrapolate
        return per_row

    monkeypatch.setattr(SA, "r2_per_row", without_rule)
    unruled = pgs.train(X, y, loss="squared", seed=0)
    assert ruled.params["sigma"] < unruled.params["sigma"]

    def r2(model):
        return 1.0 - np.mean((yt - model.decision_function(Xt)) ** 2) / np.var(yt)

    assert r2(ruled) > r2(unruled) + 0.05


@pytest.mark.parametrize("iterate", ["average", "last"])
def test_current_iterates_are_each_problems_own(iterate, monkeypatch):
    """A candidate's iterates for scoring, one column a problem (one-vs-rest on a block,
    each with its own vectors, a K-output problem's classes, one binary problem), are each
    problem's own iterate and intercept (the constant column's weight, or the free bias),
    and the held-out margins their products."""
    from pgs.engine.solver import output_state
    from pgs.training.fit import intercepts, prepare_many, run_many_to

    X, labels = _multiclass()
    Y = np.stack([np.where(labels == c, 1.0, -1.0) for c in range(3)], axis=1)
    kw = dict(sigma=1e-3, T=600, seed=2, iterate=iterate)
    for block_min, loss, targets, intercept in (
            (2, "hinge", Y, "column"), (2, "hinge", Y, "free"), (100, "hinge", Y, "column"),
            (2, "multinomial", labels.astype(np.float64), "column"),
            (2, "logistic", Y[:, 0], "column")):
        monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", block_min)
        runs = prepare_many(X, targets, 1, loss=loss, intercept=intercept, **kw)
        run_many_to(runs, 600)
        W, icpts = SA._current(runs)
        which = "average" if iterate == "average" else "last"
        columns, expected = [], []
        for run in runs:           # (R problems on one solver: each output's own)
            w, bias = run.solver.iterate(which), run.solver._scalars()
            for r in range(len(run.each or [None])):
                one = (w, bias) if run.each is None else (w[r], output_state(bias, r))
                columns.extend(np.atleast_2d(one[0])[:, :run.n_features])
                expected.extend(intercepts(run, *one, which))
        np.testing.assert_array_equal(W, np.array(columns).T)
        assert icpts == expected
        holdout = SA.Holdout(X[:50], lambda Z: Z, None)
        np.testing.assert_allclose(holdout.values(W, icpts),
                                   X[:50] @ np.array(columns).T + np.array(expected),
                                   rtol=1e-12, atol=1e-12)


# ------------------------------------------------------- the stop's rows, never trained on


def test_the_rows_the_stop_reads_are_never_trained_on():
    """A feature that only the held-out rows the stop reads hold (and that decides their
    labels) keeps its weight at exactly 0, where the other held-out rows' own feature is
    learned; those rows are half the held-out ones, stratified by class."""
    X, y = _hard_binary(6000)
    y = np.where(y > 0, 1.0, -1.0)
    _, val, stop, trained = _rows_of(X.shape[0], 4, y)
    joined = np.setdiff1d(val, val[stop])
    assert abs(stop.shape[0] - D.STOP_FRACTION * val.shape[0]) <= 2
    assert trained.shape[0] == X.shape[0] - stop.shape[0]
    assert np.intersect1d(trained, val[stop]).shape[0] == 0
    for c in (-1.0, 1.0):           # (each class gives the stop half its held-out rows)
        assert abs(np.sum(y[val[stop]] == c) - np.sum(y[joined] == c)) <= 1
    extra = np.zeros((X.shape[0], 2))
    extra[val[stop], 0] = 10.0 * y[val[stop]]
    extra[joined, 1] = 10.0 * y[joined]
    fit = pgs.train(np.hstack([X, extra]), y, seed=4)
    assert fit.coef[-2] == 0.0 and fit.coef[-1] > 0.0
    assert fit.params["passes"] * trained.shape[0] == fit.T


# ------------------------------------------------------------ the loss for many classes


def _bands(m=6000, n_classes=5, seed=0):
    """Classes in bands along one feature: argmax over K linear scores separates them
    (Crammer-Singer learns it), one-vs-rest cannot (a middle band against the rest is no
    binary linear problem)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, n_classes, m)
    return np.column_stack([t, rng.normal(size=(m, 3))]), np.floor(t).astype(int)


def test_the_default_loss_is_crammer_singer_where_one_vs_rest_cannot_separate():
    from pgs import PGSClassifier
    X, y = _bands()
    Xt, yt = _bands(seed=1)
    clf = PGSClassifier(random_state=0).fit(X, y)
    ovr = PGSClassifier(random_state=0, loss="hinge").fit(X, y)
    assert clf.loss == "auto" and clf.loss_ == "crammer_singer"
    assert clf.score(Xt, yt) > 0.9 and clf.score(Xt, yt) > ovr.score(Xt, yt) + 0.1
    # Crammer-Singer's own search, bit for bit: the same sigma, scores and model
    cs = PGSClassifier(random_state=0, loss="crammer_singer").fit(X, y)
    assert cs.sigma_ == clf.sigma_ and cs.t_ == clf.t_
    np.testing.assert_array_equal(cs.sigma_scores_, clf.sigma_scores_)
    np.testing.assert_array_equal(cs.coef_, clf.coef_)


def test_verbose_reports_the_losses_compared_and_the_one_kept(capsys):
    from pgs import PGSClassifier
    X, y = _bands(3000)
    clf = PGSClassifier(random_state=0, verbose=1).fit(X, y)
    out = [line for line in capsys.readouterr().out.splitlines()
           if line.startswith(("-- loss:", "-- sigma rung"))]
    lines = [line for line in out if "-- loss:" in line]
    assert len(lines) == 1 and lines[0].startswith("-- loss: hinge 0.")
    assert ", crammer_singer 0." in lines[0] and f"; kept {clf.loss_};" in lines[0]
    # Crammer-Singer leads by more than the standard error at the first rung (each family's
    # best on the same rows): the loss is chosen there, and only it runs the later rungs
    rungs = [line.split(" passes")[0] for line in out if line.startswith("-- sigma")]
    assert out[2] == lines[0] and rungs[0] == rungs[1] and len(rungs) >= 4
    assert len(set(rungs[1:])) == len(rungs) - 1
    PGSClassifier(random_state=0, verbose=1, loss="hinge").fit(X, y)
    assert "-- loss:" not in capsys.readouterr().out
    # A tie (every held-out row right for both losses) goes on to the last rung: both
    # families run every rung, and the first (hinge) is kept
    X, y = _separable()
    PGSClassifier(random_state=0, verbose=1).fit(X, y)
    out = [line for line in capsys.readouterr().out.splitlines()
           if line.startswith(("-- loss:", "-- sigma rung"))]
    rungs = [line.split(" passes")[0] for line in out[:-1]]
    assert out[-1].startswith("-- loss: hinge 1.0000, crammer_singer 1.0000; kept hinge")
    assert len(rungs) >= 6 and rungs[0::2] == rungs[1::2] and len(set(rungs)) == len(rungs) // 2


def _separable(m=3000):
    """Three classes far apart: both losses get every held-out row right."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, m)
    return 20.0 * np.eye(3, 6)[y] + rng.normal(size=(m, 6)), y


def test_the_default_loss_is_hinge_for_two_classes_a_tie_a_fixed_sigma_and_streams():
    from pgs import PGSClassifier
    X, y = _separable()
    tie = PGSClassifier(random_state=0).fit(X, y)
    assert tie.loss_ == "hinge" and tie.score(X, y) == 1.0
    ovr = PGSClassifier(random_state=0, loss="hinge").fit(X, y)
    np.testing.assert_array_equal(tie.coef_, ovr.coef_)
    Xb, yb = _bands(3000)
    assert PGSClassifier(random_state=0).fit(Xb, yb > 2).loss_ == "hinge"
    assert PGSClassifier(random_state=0, sigma=1e-3).fit(Xb, yb).loss_ == "hinge"
    stream = PGSClassifier(random_state=0).partial_fit(Xb, yb, classes=np.arange(5))
    assert stream.loss_ == "hinge"
    warm = PGSClassifier(random_state=0, warm_start=True).fit(Xb, yb)
    assert warm.loss_ == "crammer_singer"
    assert warm.set_params(T=100).fit(Xb, yb).loss_ == "crammer_singer"
    assert warm.partial_fit(Xb, yb).loss_ == "crammer_singer"


class _Paired:
    def se_of_difference(self, a, b):
        return 0.02


@pytest.mark.parametrize("scores, chosen", [
    ([0.80, 0.81], 0),              # within the standard error: the first, preferred
    ([0.80, 0.82], 0),              # a lead of exactly the standard error is not enough
    ([0.80, 0.83], 1),              # beyond it: the other
    ([0.80, 0.75, 0.90], 2),        # the best of those beyond it
    ([np.nan, 0.5], 1),             # NaN never wins ...
    ([0.5, np.nan], 0),
    ([np.nan, np.nan], 0),          # ... but for all NaN: the first
])
def test_the_families_winners_prefer_the_first(scores, chosen):
    values = [np.zeros(3)] * len(scores)
    assert SA._prefer_first(list(range(len(scores))), np.array(scores), values,
                            _Paired()) == chosen


@pytest.mark.parametrize("scores, chosen", [
    ([0.80, 0.81], None),           # within the standard error either way: not yet
    ([0.82, 0.80], None),           # a lead of exactly the standard error is not enough
    ([0.80, 0.83], 1),              # the other beyond it
    ([0.83, 0.80], 0),              # the first beyond it
    ([0.83, 0.80, 0.82], None),     # the first beyond one of them only
    ([0.90, 0.80, 0.95], 2),
    ([0.5, np.nan], 0),             # NaN is beaten by any score
])
def test_the_families_part_where_one_leads_by_more_than_the_standard_error(scores, chosen):
    values = [np.zeros(3)] * len(scores)
    assert SA._parted(list(range(len(scores))), np.array(scores), values,
                      _Paired()) == chosen
