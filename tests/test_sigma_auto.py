"""sigma="auto": the held-out split, the grid's scores, the choice, and the refit.

Every recorded score is reproduced by hand (a plain fit on the training split, scored on
the validation split), and the final model is a plain fit at the chosen sigma, bit for bit.
"""

import math

import numpy as np
import pytest

import pgs
from pgs.training import sigma_auto as SA


def _binary(m=400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=m) > 0, 1, -1)
    return X, y


def _grid_T(T, m_train, m):
    return max(1, math.ceil(SA.GRID_T_FRACTION * T * m_train / m))


# ------------------------------------------------------------------------ pgs.train


def test_train_scores_are_plain_fits_on_the_split_and_the_model_a_plain_fit():
    X, y = _binary()
    model = pgs.train(X, y, sigma="auto", seed=5, iterate="average", T=2000)
    grid, scores = model.sigma_grid, model.sigma_scores
    assert grid.shape == scores.shape == (len(SA.DEFAULT_GRID_FACTORS),)
    assert np.all(np.diff(grid) > 0)
    # The default grid: the factors times mean ||x||^2 / m.
    np.testing.assert_allclose(grid, np.array(SA.DEFAULT_GRID_FACTORS)
                               * np.sum(X**2) / X.shape[0] / X.shape[0], rtol=1e-12)
    y_pm = np.where(y > 0, 1.0, -1.0)
    train, val = SA.validation_split(X.shape[0], 0.2, 5, y_pm)
    for s, score in zip(grid, scores, strict=True):
        ref = pgs.train(X[train], y[train], sigma=s, seed=5, iterate="average",
                        T=_grid_T(2000, train.shape[0], X.shape[0]))
        assert score == np.mean(ref.predict(X[val]) == y[val])
    # The choice: the largest sigma among the best scores.
    best = np.flatnonzero(scores == scores.max())
    assert model.params["sigma"] == grid[best[-1]]
    plain = pgs.train(X, y, sigma=model.params["sigma"], seed=5, iterate="average", T=2000)
    np.testing.assert_array_equal(model.coef, plain.coef)
    assert model.intercept == plain.intercept
    assert plain.sigma_grid is None


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
    X = rng.normal(size=(300, 5))
    y = X @ rng.normal(size=5) + 0.1 * rng.normal(size=300) + 2.0
    grid = [1e-3, 1e-2, 1e-1]
    model = pgs.train(X, y, loss="squared", sigma="auto", sigma_grid=grid[::-1],
                      validation_fraction=0.3, seed=2, T=3000, iterate="average")
    np.testing.assert_array_equal(model.sigma_grid, grid)
    train, val = SA.validation_split(300, 0.3, 2)
    assert val.shape[0] == 90
    for s, score in zip(grid, model.sigma_scores, strict=True):
        ref = pgs.train(X[train], y[train], loss="squared", sigma=s, seed=2,
                        iterate="average", T=_grid_T(3000, 210, 300))
        z = ref.decision_function(X[val])
        r2 = 1 - np.mean((y[val] - z) ** 2) / np.mean((y[val] - y[val].mean()) ** 2)
        assert score == pytest.approx(r2, rel=1e-12, abs=1e-12)
    assert model.params["sigma"] == grid[int(np.argmax(model.sigma_scores))]


def test_train_warm_start_keeps_sigma():
    X, y = _binary()
    first = pgs.train(X, y, sigma="auto", seed=1, T=500, keep_state=True, iterate="last")
    more = pgs.train(X, y, sigma="auto", seed=1, T=500, warm_start=first, iterate="last")
    assert more.params["sigma"] == first.params["sigma"]
    assert more.T == 1000


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
    from pgs import PGSClassifier
    X, y = _multiclass()
    clf = PGSClassifier(random_state=3, T=1500).fit(X, y)
    assert clf.sigma == "auto"
    assert {model.params["sigma"] for model in clf._models} == {clf.sigma_}
    scores = clf.sigma_scores_
    # Each score: a plain multiclass fit on the training split, scored on the rest; the
    # choice: the largest sigma within one standard error of the best accuracy.
    train, val = SA.validation_split(X.shape[0], 0.2, 3, y)
    assert clf.sigma_ == SA.choose(clf.sigma_grid_, scores, SA.accuracy_standard_error(
        scores.max(), val.shape[0]))
    for s, score in zip(clf.sigma_grid_, scores, strict=True):
        ref = PGSClassifier(sigma=s, random_state=3, intercept_scaling=clf.intercept_scaling_,
                            T=_grid_T(1500, train.shape[0], X.shape[0])).fit(X[train], y[train])
        assert score == np.mean(ref.predict(X[val]) == y[val])
    plain = PGSClassifier(sigma=clf.sigma_, random_state=3, T=1500).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, plain.coef_)
    np.testing.assert_array_equal(clf.intercept_, plain.intercept_)
    assert plain.sigma_grid_ is None and plain.sigma_ == clf.sigma_
    again = PGSClassifier(random_state=3, T=1500).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, again.coef_)


def test_regressor_sigma_auto_is_chosen_by_r2_and_a_plain_fit():
    from pgs import PGSRegressor
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 6)) + 2.0
    y = X @ rng.normal(size=6) + 0.3 * rng.normal(size=300)
    reg = PGSRegressor(random_state=0).fit(X, y)
    scores = reg.sigma_scores_
    train, val = SA.validation_split(300, 0.2, 0)
    assert reg.sigma_ == SA.choose(reg.sigma_grid_, scores, SA.r2_standard_error(
        scores.max(), val.shape[0]))
    ref = PGSRegressor(sigma=reg.sigma_, random_state=0, intercept_scaling=reg.intercept_scaling_,
                       T=_grid_T(3000, train.shape[0], 300)).fit(X[train], y[train])
    chosen = np.flatnonzero(reg.sigma_grid_ == reg.sigma_)[0]
    assert scores[chosen] == pytest.approx(ref.score(X[val], y[val]), rel=1e-12)
    plain = PGSRegressor(sigma=reg.sigma_, random_state=0).fit(X, y)
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
    assert {model.params["sigma"] for model in clf._models} == {sigma}
    # partial_fit's first call chooses sigma on its batch.
    first = PGSClassifier(random_state=0).partial_fit(X, y, classes=np.unique(y))
    assert first.sigma_ in first.sigma_grid_


def test_weighted_search_scores_weighted_accuracy():
    from pgs import PGSClassifier
    X, y = _multiclass(200)
    w = np.random.default_rng(0).random(200) + 0.5
    clf = PGSClassifier(random_state=1, T=400, sigma_grid=[1e-3, 1e-1]).fit(X, y, sample_weight=w)
    train, val = SA.validation_split(200, 0.2, 1, y)
    ref = PGSClassifier(random_state=1, sigma=1e-3, intercept_scaling=clf.intercept_scaling_,
                        sampling="iid", T=_grid_T(400, train.shape[0], 200))
    ref.fit(X[train], y[train], sample_weight=w[train])
    assert clf.sigma_scores_[0] == pytest.approx(
        np.average(ref.predict(X[val]) == y[val], weights=w[val]), rel=1e-12)
