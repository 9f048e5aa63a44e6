"""Tests of the scikit-learn estimators `pgs.PGSClassifier` and `pgs.PGSRegressor`."""

import inspect
import pickle
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp

sklearn = pytest.importorskip("sklearn")

from scipy.optimize import minimize  # noqa: E402
from sklearn.datasets import load_digits, make_classification  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    cross_val_score,
    train_test_split,
)
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import pgs  # noqa: E402
from pgs.estimators import PGSClassifier, PGSRegressor, expected_failed_checks  # noqa: E402

_TRAIN_ARGS = inspect.signature(pgs.train).parameters
needs_sample_weight = pytest.mark.skipif(
    "sample_weight" not in _TRAIN_ARGS, reason="needs pgs.train(sample_weight=...)"
)
needs_warm_start = pytest.mark.skipif(
    "warm_start" not in _TRAIN_ARGS or "keep_state" not in _TRAIN_ARGS,
    reason="needs pgs.train(keep_state=..., warm_start=...)",
)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, test_size=0.3, random_state=0)


# --------------------------------------------------------------- scikit-learn's checks

# Both estimators pass with their defaults (sigma="auto" included). The checks' data sets
# have 20-300 rows, so ten passes are only a few thousand iterations: PGS needs sigma * T
# well above the loss's smoothness to converge, hence the larger fixed sigma of the
# other least-squares and Huber estimators checked (sklearn's own check likewise sets
# alpha=0.01 on linear regressors).
_CHECKED = [
    PGSClassifier(),
    PGSRegressor(),
    PGSClassifier(loss="logistic"),
    PGSClassifier(loss="modified_huber", p=1.5),
    PGSClassifier(loss="squared", sigma=1e-2),
    PGSRegressor(loss="huber", sigma=0.1, p=1.8, iterate="average"),
    PGSClassifier(loss="multinomial"),
    PGSClassifier(loss="crammer_singer", p=1.5),
]


@parametrize_with_checks(_CHECKED, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ------------------------------------------------------------------------ multiclass


@pytest.mark.parametrize("loss", ["hinge", "squared"])
@pytest.mark.parametrize("sparse", [False, True])
def test_ovr_threads_bit_identical_to_sequential(digits, loss, sparse):
    Xtr, _, ytr, _ = digits
    if sparse:
        Xtr = sp.csr_matrix(Xtr)
    one = PGSClassifier(loss=loss, random_state=3, n_jobs=1).fit(Xtr, ytr)
    two = PGSClassifier(loss=loss, random_state=3, n_jobs=2).fit(Xtr, ytr)
    four = PGSClassifier(loss=loss, random_state=3, n_jobs=4).fit(Xtr, ytr)
    for other in (two, four):
        np.testing.assert_array_equal(one.coef_, other.coef_)
        np.testing.assert_array_equal(one.intercept_, other.intercept_)
    assert one.coef_.shape == (10, 64)
    assert one.intercept_.shape == (10,)
    np.testing.assert_array_equal(one.classes_, np.arange(10))


def _as_fitted(est):
    """`pgs.train` arguments for the estimators' defaults (unweighted: a permutation per
    pass, the "auto" intercept_scaling the estimator resolved, the "auto" t_offset, the
    average iterate)."""
    return dict(sampling="permutation", intercept_scaling=est.intercept_scaling_,
                t_offset="auto", iterate="average")


def test_ovr_problem_is_pgs_train_with_the_same_seed(digits):
    Xtr, _, ytr, _ = digits
    clf = PGSClassifier(loss="logistic", sigma=1e-3, random_state=7).fit(Xtr, ytr)
    for c in (0, 4, 9):
        model = pgs.train(Xtr, np.where(ytr == c, 1, -1), loss="logistic", sigma=1e-3,
                          seed=7,
                          **_as_fitted(clf))
        np.testing.assert_array_equal(clf.coef_[c], model.coef)
        assert clf.intercept_[c] == model.intercept
    assert clf.t_ == model.T and clf.n_iter_ == model.T / Xtr.shape[0]


def test_binary_equals_pgs_train():
    X, y = make_classification(n_samples=200, n_features=8, random_state=0)
    labels = np.array(["no", "yes"])[y]
    clf = PGSClassifier(loss="hinge", sigma=1e-3, random_state=5).fit(X, labels)
    model = pgs.train(X, labels, loss="hinge", sigma=1e-3, seed=5,
                      **_as_fitted(clf))
    assert clf.coef_.shape == (1, 8)
    np.testing.assert_array_equal(clf.coef_[0], model.coef)
    np.testing.assert_array_equal(clf.predict(X), model.predict(X))
    np.testing.assert_array_equal(clf.decision_function(X), model.decision_function(X))


def test_regressor_equals_pgs_train():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    y = X @ rng.normal(size=5) + 0.1 * rng.normal(size=150)
    reg = PGSRegressor(sigma=1e-2, random_state=2).fit(X, y)
    model = pgs.train(X, y, loss="squared", sigma=1e-2, seed=2, **_as_fitted(reg))
    np.testing.assert_array_equal(reg.coef_, model.coef)
    np.testing.assert_array_equal(reg.predict(X), model.decision_function(X))


def test_squared_loss_classifier_is_one_hot_least_squares(digits):
    """C-Adaline: each column is least squares on the 0/1 indicator; argmax predicts."""
    Xtr, Xte, ytr, _ = digits
    clf = PGSClassifier(loss="squared", sigma=1e-2, random_state=1).fit(Xtr, ytr)
    model = pgs.train(Xtr, (ytr == 3).astype(float), loss="squared", sigma=1e-2,
                      seed=1,
                      **_as_fitted(clf))
    np.testing.assert_array_equal(clf.coef_[3], model.coef)
    scores = clf.decision_function(Xte)
    np.testing.assert_array_equal(clf.predict(Xte), clf.classes_[np.argmax(scores, axis=1)])
    assert clf.score(Xtr, ytr) > 0.9


def test_squared_loss_binary_threshold_is_one_half():
    X, y = make_classification(n_samples=300, n_features=6, random_state=1)
    clf = PGSClassifier(loss="squared", sigma=1e-2, random_state=0).fit(X, y)
    model = pgs.train(X, y.astype(float), loss="squared", sigma=1e-2, seed=0,
                      **_as_fitted(clf))
    np.testing.assert_allclose(clf.decision_function(X), model.decision_function(X) - 0.5)
    np.testing.assert_array_equal(clf.predict(X), (model.decision_function(X) > 0.5) * 1)


@pytest.mark.parametrize("loss,sgd_loss", [("hinge", "hinge"), ("logistic", "log_loss")])
def test_digits_accuracy_at_least_sgdclassifier(digits, loss, sgd_loss):
    """Same loss, alpha = sigma, ten epochs each (T=None is ten passes), mean of 5 seeds."""
    Xtr, Xte, ytr, yte = digits
    sigma = 1e-3
    ours = [PGSClassifier(loss=loss, sigma=sigma, random_state=s).fit(Xtr, ytr).score(Xte, yte)
            for s in range(5)]
    theirs = [SGDClassifier(loss=sgd_loss, alpha=sigma, max_iter=10, tol=None,
                            random_state=s).fit(Xtr, ytr).score(Xte, yte) for s in range(5)]
    assert np.mean(ours) >= np.mean(theirs)
    assert np.mean(ours) > 0.9


# --------------------------------------------------------------------- probabilities


@pytest.mark.parametrize("loss", ["logistic", "modified_huber"])
def test_predict_proba(digits, loss):
    Xtr, Xte, ytr, _ = digits
    clf = PGSClassifier(loss=loss, sigma=1e-3, random_state=0).fit(Xtr, ytr)
    proba = clf.predict_proba(Xte)
    assert proba.shape == (Xte.shape[0], 10)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba >= 0)
    if loss == "logistic":  # modified Huber's clipped values tie, so argmax may differ
        np.testing.assert_array_equal(clf.classes_[np.argmax(proba, axis=1)], clf.predict(Xte))
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(clf.predict_log_proba(Xte), np.log(proba))
    # One-vs-rest values normalised per row, as scikit-learn's SGDClassifier does.
    scores = clf.decision_function(Xte)
    if loss == "logistic":
        ovr = 1.0 / (1.0 + np.exp(-scores))
    else:
        ovr = (np.clip(scores, -1, 1) + 1) / 2
    expected = np.where(ovr.sum(axis=1, keepdims=True) == 0, 1.0 / 10,
                        ovr / np.maximum(ovr.sum(axis=1, keepdims=True), 1e-300))
    np.testing.assert_allclose(proba, expected, rtol=1e-12, atol=1e-15)


def test_multinomial_predict_proba_is_the_softmax_of_the_margins(digits):
    """Multinomial probabilities are the softmax of decision_function (not one-vs-rest
    sigmoids normalised per row, which also sum to 1 and share the argmax)."""
    Xtr, Xte, ytr, _ = digits
    clf = PGSClassifier(loss="multinomial", sigma=1e-3, random_state=0).fit(Xtr, ytr)
    z = clf.decision_function(Xte)
    soft = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(clf.predict_proba(Xte), soft / soft.sum(axis=1, keepdims=True),
                               rtol=1e-12, atol=1e-15)
    ovr = 1.0 / (1.0 + np.exp(-z))
    assert np.max(np.abs(clf.predict_proba(Xte) - ovr / ovr.sum(axis=1, keepdims=True))) > 0.05


def test_predict_proba_binary_logistic_is_sigmoid():
    X, y = make_classification(n_samples=200, n_features=5, random_state=3)
    clf = PGSClassifier(loss="logistic", sigma=1e-2, random_state=0).fit(X, y)
    z = clf.decision_function(X)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], 1 / (1 + np.exp(-z)), rtol=1e-12)


def test_no_predict_proba_for_hinge():
    clf = PGSClassifier(loss="hinge")
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba'"):
        clf.predict_proba  # noqa: B018


# ----------------------------------------------------------------------------- weights


def _weighted_logistic_optimum(X, y_pm, s, sigma):
    """argmin sigma/2 ||w||^2 + (1/m) sum s_i log(1 + exp(-y_i <w, x_i>)), w with a bias column."""
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    m = X.shape[0]

    def f(w):
        z = y_pm * (Xa @ w)
        loss = np.logaddexp(0.0, -z)
        grad_z = -y_pm / (1.0 + np.exp(z))
        return (0.5 * sigma * w @ w + (s @ loss) / m, sigma * w + Xa.T @ (s * grad_z) / m)

    res = minimize(f, np.zeros(Xa.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000))
    return res.x, res.fun, f


@needs_sample_weight
def test_sample_weight_reaches_weighted_optimum():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    s = np.random.default_rng(1).uniform(0.1, 3.0, size=300)
    sigma = 1e-2
    _, f_star, f = _weighted_logistic_optimum(X, 2.0 * y - 1.0, s, sigma)
    clf = PGSClassifier(loss="logistic", sigma=sigma, T=100_000, iterate="average",
                        random_state=0).fit(X, y, sample_weight=s)
    w = np.append(clf.coef_[0], clf.intercept_[0])
    gap = f(w)[0] - f_star
    assert 0 <= gap < 2e-3 * f_star
    # The unweighted fit solves a different problem: its gap is much larger.
    plain = PGSClassifier(loss="logistic", sigma=sigma, T=100_000, iterate="average",
                          random_state=0).fit(X, y)
    assert f(np.append(plain.coef_[0], plain.intercept_[0]))[0] - f_star > 5 * gap


@needs_sample_weight
def test_integer_weights_match_duplicated_rows():
    """Weights summing to m (mean 1) define the same objective as repeating the rows."""
    X, y = make_classification(n_samples=200, n_features=4, random_state=2)
    counts = np.tile([2, 0, 1, 1], 50)  # sum 200 = m: same (1/m) normalisation
    sigma = 1e-2
    w_weighted, _, _ = _weighted_logistic_optimum(X, 2.0 * y - 1.0, counts.astype(float), sigma)
    Xd, yd = np.repeat(X, counts, axis=0), np.repeat(y, counts)
    w_dup, _, _ = _weighted_logistic_optimum(Xd, 2.0 * yd - 1.0, np.ones(len(yd)), sigma)
    np.testing.assert_allclose(w_weighted, w_dup, rtol=1e-6, atol=1e-8)
    kw = dict(loss="logistic", sigma=sigma, T=100_000, iterate="average")
    by_weight = np.mean([PGSClassifier(**kw, random_state=r).fit(X, y, sample_weight=counts)
                         .coef_[0] for r in range(4)], axis=0)
    by_rows = np.mean([PGSClassifier(**kw, random_state=r).fit(Xd, yd).coef_[0]
                       for r in range(4)], axis=0)
    np.testing.assert_allclose(by_weight, w_weighted[:-1], atol=0.05 * np.abs(w_dup).max())
    np.testing.assert_allclose(by_rows, w_dup[:-1], atol=0.05 * np.abs(w_dup).max())


@needs_sample_weight
def test_class_weight_is_folded_into_sample_weight():
    X, y = make_classification(n_samples=200, n_features=4, weights=[0.8], random_state=4)
    kw = dict(loss="logistic", sigma=1e-2, random_state=0)
    balanced = PGSClassifier(class_weight="balanced", **kw).fit(X, y)
    cw = len(y) / (2 * np.bincount(y))
    explicit = PGSClassifier(**kw).fit(X, y, sample_weight=cw[y])
    np.testing.assert_array_equal(balanced.coef_, explicit.coef_)
    as_dict = PGSClassifier(class_weight={0: cw[0], 1: cw[1]}, **kw).fit(X, y)
    np.testing.assert_array_equal(as_dict.coef_, explicit.coef_)
    # Up-weighting the rare class moves predictions towards it.
    plain = PGSClassifier(**kw).fit(X, y)
    assert (balanced.predict(X) == 1).sum() > (plain.predict(X) == 1).sum()


def test_unit_weights_are_the_unweighted_problem():
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    a = PGSClassifier(random_state=0).fit(X, y)
    b = PGSClassifier(random_state=0).fit(X, y, sample_weight=np.ones(100))
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("est_cls", [PGSClassifier, PGSRegressor])
def test_a_number_as_sample_weight_is_every_rows(est_cls):
    """scikit-learn's convention: sample_weight=2.5 weighs every row by 2.5."""
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    kw = dict(sigma=1e-2, T=300, random_state=0)
    a = est_cls(**kw).fit(X, y, sample_weight=2.5)
    np.testing.assert_array_equal(a.coef_, est_cls(**kw).fit(X, y, np.full(100, 2.5)).coef_)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        est_cls(**kw).fit(X, y, sample_weight=-1.0)


# ------------------------------------------------------------- warm start, partial_fit


@needs_warm_start
@pytest.mark.parametrize("iterate", ["last", "average"])
@pytest.mark.parametrize("est_cls", [PGSClassifier, PGSRegressor])
def test_warm_start_equals_one_run(digits, iterate, est_cls):
    Xtr, _, ytr, _ = digits
    # (n_jobs=2 splits a single problem's rows and merges by rounds, which a warm start
    # restarts: the regressor's split run is not the whole one, so it runs on one thread)
    kw = dict(sigma=1e-2, iterate=iterate, random_state=11,
              n_jobs=2 if est_cls is PGSClassifier else 1)
    one = est_cls(T=3000, **kw).fit(Xtr, ytr)
    warm = est_cls(T=1000, warm_start=True, **kw).fit(Xtr, ytr)
    warm.set_params(T=2000)
    warm.fit(Xtr, ytr)
    assert warm.t_ == one.t_ == 3000 and warm.n_iter_ == one.n_iter_
    np.testing.assert_array_equal(warm.coef_, one.coef_)
    np.testing.assert_array_equal(warm.intercept_, one.intercept_)


@needs_warm_start
def test_without_warm_start_fit_restarts(digits):
    Xtr, _, ytr, _ = digits
    clf = PGSClassifier(T=500, random_state=0).fit(Xtr, ytr)
    first = clf.coef_.copy()
    clf.fit(Xtr, ytr)
    np.testing.assert_array_equal(clf.coef_, first)
    assert clf.t_ == 500


@needs_warm_start
def test_partial_fit_continues_the_stream(digits):
    Xtr, Xte, ytr, yte = digits
    clf = PGSClassifier(loss="logistic", sigma=1e-3, random_state=0)
    batches = np.array_split(np.arange(len(ytr)), 5)
    for _ in range(5):
        for b in batches:
            clf.partial_fit(Xtr[b], ytr[b], classes=np.arange(10))
    assert clf.t_ == 5 * len(ytr)   # one pass per call, k=1
    assert clf.n_iter_ == clf.t_ / len(batches[-1])   # (passes over the last batch)
    assert clf.score(Xte, yte) > 0.9
    # The first call equals a fit with T = len(batch) on that batch.
    first = PGSClassifier(loss="logistic", sigma=1e-3, random_state=0)
    first.partial_fit(Xtr[batches[0]], ytr[batches[0]], classes=np.arange(10))
    ref = PGSClassifier(loss="logistic", sigma=1e-3, random_state=0,
                        T=len(batches[0])).fit(Xtr[batches[0]], ytr[batches[0]])
    np.testing.assert_array_equal(first.coef_, ref.coef_)


@needs_warm_start
def test_partial_fit_batch_missing_a_class(digits):
    Xtr, _, ytr, _ = digits
    clf = PGSClassifier(random_state=0)
    clf.partial_fit(Xtr[ytr < 5], ytr[ytr < 5], classes=np.arange(10))
    clf.partial_fit(Xtr[ytr >= 5], ytr[ytr >= 5])
    assert clf.coef_.shape == (10, 64)


def test_partial_fit_requires_classes_first():
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        PGSClassifier().partial_fit(np.zeros((4, 2)), [0, 1, 0, 1])


# ------------------------------------------------------------- pickling and composition


def test_pickle_round_trip(digits):
    Xtr, Xte, ytr, _ = digits
    for est in (PGSClassifier(loss="logistic", random_state=0),
                PGSRegressor(sigma=0.1, random_state=0)):
        est.fit(Xtr, ytr)
        clone = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(clone.predict(Xte), est.predict(Xte))
        assert clone.get_params() == est.get_params()


def test_pipeline_grid_search_cross_val(digits):
    Xtr, Xte, ytr, yte = digits
    pipe = make_pipeline(StandardScaler(), PGSClassifier(random_state=0))
    scores = cross_val_score(pipe, Xtr, ytr, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.85)
    grid = GridSearchCV(pipe, {"pgsclassifier__sigma": [1e-4, 1e-2],
                               "pgsclassifier__loss": ["hinge", "logistic"]}, cv=3, n_jobs=1)
    grid.fit(Xtr, ytr)
    assert set(grid.best_params_) == {"pgsclassifier__sigma", "pgsclassifier__loss"}
    assert grid.score(Xte, yte) > 0.85


# ------------------------------------------------------------------ input validation


@pytest.mark.parametrize(
    "est,match",
    [
        (PGSClassifier(loss="huber"), "loss='huber' is not supported by PGSClassifier"),
        (PGSClassifier(loss="log_loss"), "loss='log_loss' is not supported"),
        (PGSRegressor(loss="hinge"), "loss='hinge' is not supported by PGSRegressor"),
        (PGSClassifier(p=2.5), r"p must be in \(1, 2\]"),
        (PGSClassifier(sigma=0.0), "sigma must be a finite number > 0"),
        (PGSClassifier(T=0), "T must be >= 1"),
        (PGSClassifier(k=0), "k must be >= 1"),
        (PGSClassifier(iterate="best"), "iterate must be one of"),
        (PGSClassifier(B="big"), "B must be None, 'auto' or a number"),
        (PGSClassifier(sampling="shuffle"), "sampling must be one of iid, permutation"),
        (PGSClassifier(n_jobs=0), "n_jobs must be None or a non-zero integer"),
        (PGSClassifier(class_weight="auto"), "class_weight must be None, 'balanced' or a dict"),
        (PGSClassifier(class_weight={1: np.nan}), r"class_weight\[1\] must be.*=nan"),
        (PGSClassifier(class_weight={1: -1.0}), r"class_weight\[1\] must be.*=-1\.0"),
        (PGSClassifier(class_weight={0: 0, 1: 0}),
         "sample_weight times class_weight: sample_weight is zero everywhere"),
        (PGSClassifier(random_state=-1), "random_state must be None, an int >= 0"),
    ],
)
def test_bad_parameters_name_the_argument(est, match):
    X, y = make_classification(n_samples=20, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_class_weight_of_another_type_names_it():
    X, y = make_classification(n_samples=20, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.raises(TypeError, match=r"class_weight\[0\] must be a number >= 0, got 'x'"):
        PGSClassifier(class_weight={0: "x"}).fit(X, y)


def test_negative_n_jobs_counts_the_cpus_this_process_may_use(monkeypatch):
    """n_jobs=-1 is every CPU of the process's affinity (as the svmlight reader counts
    them), -2 all but one, and never fewer than one."""
    import pgs.io.svmlight
    from pgs.estimators import _effective_n_jobs
    monkeypatch.setattr(pgs.io.svmlight.os, "sched_getaffinity", lambda pid: {0, 2, 5},
                        raising=False)
    monkeypatch.setattr(pgs.io.svmlight.os, "cpu_count", lambda: 64)
    assert [_effective_n_jobs(n) for n in (None, 1, 3, -1, -2, -3, -9)] == \
        [1, 1, 3, 3, 2, 1, 1]


def test_bad_types_name_the_argument():
    X, y = make_classification(n_samples=20, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.raises(TypeError, match="fit_intercept must be a bool"):
        PGSClassifier(fit_intercept="yes").fit(X, y)
    with pytest.raises(TypeError, match="warm_start must be a bool"):
        PGSClassifier(warm_start=1).fit(X, y)


def test_data_errors():
    X, y = make_classification(n_samples=20, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    clf = PGSClassifier()
    with pytest.raises(NotFittedError):
        clf.predict(X)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.zeros(20))
    clf.fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features, but PGSClassifier is expecting 3"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="Unknown label type"):
        PGSClassifier().fit(X, np.linspace(0, 1, 20))
    with pytest.raises(ValueError, match="NaN"):
        PGSRegressor().fit(X, np.full(20, np.nan))


def test_callers_arrays_untouched():
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    Xs, ys = sp.csr_matrix(X), y.copy()
    before = (Xs.data.copy(), Xs.indices.copy(), Xs.indptr.copy())
    PGSClassifier(random_state=0).fit(Xs, ys)
    for a, b in zip(before, (Xs.data, Xs.indices, Xs.indptr), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ys, y)


# ---------------------------------------------------------------------- lazy import


def test_estimators_without_sklearn_raise_importerror_naming_the_extra(monkeypatch):
    for name in [n for n in sys.modules if n == "sklearn" or n.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules blocks the import
    monkeypatch.delitem(sys.modules, "pgs.estimators")
    monkeypatch.delattr(pgs, "estimators", raising=False)
    with pytest.raises(ImportError, match=r"pip install pgs\[sklearn\]"):
        pgs.PGSClassifier  # noqa: B018
    with pytest.raises(AttributeError):
        pgs.NoSuchThing  # noqa: B018


def test_pgs_train_does_not_import_sklearn():
    code = (
        "import sys; sys.modules['sklearn'] = None\n"
        "import numpy as np, pgs\n"
        "m = pgs.train(np.eye(4), [0, 1, 0, 1], seed=0)\n"
        "print(m.T)\n"
    )
    # (sigma="auto" holds out one row of each class, too few to share with the training:
    # both stay out for the stop; 10 passes of the other two)
    # Started outside the checkout, so that `import pgs` finds the installed package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tempfile.gettempdir())
    assert out.stdout.strip() == "20"
