"""PGSClassifier's "auto" defaults: intercept_scaling, sampling and t_offset resolved per fit.

Each is resolved from the training data once, recorded, kept by warm starts and
partial_fit, and reproduced by `pgs.train` with the resolved values.
"""

import math

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.datasets import load_digits  # noqa: E402

import pgs  # noqa: E402
from pgs.estimators import PGSClassifier  # noqa: E402
from pgs.rules.data import as_csr_buffers  # noqa: E402
from pgs.rules.defaults import (  # noqa: E402
    auto_intercept_scaling,
    auto_t_offset,  # noqa: E402
    row_stats,
)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:600] / 16.0, y[:600]


def test_auto_intercept_scaling_is_a_fraction_of_the_rms_row_norm(digits):
    X, y = digits
    clf = PGSClassifier(T=200, random_state=0, sigma=1e-3).fit(X, y)
    rms = math.sqrt(np.mean(np.sum(X**2, axis=1)))
    assert clf.intercept_scaling_ == pytest.approx(0.3 * rms, rel=1e-12)
    assert clf.params_["intercept_scaling"] == clf.intercept_scaling_
    assert clf.params_["sampling"] == "permutation"
    assert auto_intercept_scaling(row_stats(as_csr_buffers(np.zeros((3, 2))))) == 0.3
    fixed = PGSClassifier(T=200, random_state=0, intercept_scaling=2.0).fit(X, y)
    assert fixed.intercept_scaling_ == 2.0


def test_auto_t_offset_formula_and_cap(digits):
    """t0 = min(G^2 / (2 sigma F(0)), m), G = max row norm with the bias column (hinge)."""
    X, y = digits
    yb = np.where(y == 3, 1.0, -1.0)
    Xb = as_csr_buffers(X)
    G2 = np.max(np.sum(X**2, axis=1)) + 0.5**2
    for sigma in (1e-1, 1e-4):
        t0 = auto_t_offset(row_stats(Xb), yb, loss="hinge", p=2.0, sigma=sigma, B=None, icpt=0.5,
                           epsilon=0.0, weights=None, sampling="iid")
        assert t0 == pytest.approx(min(G2 / (2 * sigma), X.shape[0]), rel=1e-12)
        model = pgs.train(X, yb, sigma=sigma, T=50, seed=0, intercept_scaling=0.5,
                          t_offset="auto", schedule="pgs", intercept="column")
        assert model.params["t_offset"] == pytest.approx(t0, rel=1e-15)
    # modified Huber's derivative is bounded by 4; F(0) = 1 for both.
    t_mh = auto_t_offset(row_stats(Xb), yb, loss="modified_huber", p=2.0, sigma=10.0,
                         B=None, icpt=0.5,
                         epsilon=0.0, weights=None, sampling="iid")
    assert t_mh == pytest.approx(16 * G2 / 20.0, rel=1e-12)
    # y all +1 and a loss that is 0 at w = 0 would give F(0) = 0: no offset.
    assert auto_t_offset(row_stats(Xb), np.ones(len(y)), loss="epsilon_insensitive", p=2.0,
                         sigma=1.0,
                         B=None, icpt=0.0, epsilon=2.0, weights=None, sampling="iid") == 0.0


def test_auto_sampling_is_iid_with_weights(digits):
    X, y = digits
    w = np.linspace(0.5, 2.0, len(y))
    weighted = PGSClassifier(T=200, random_state=0).fit(X, y, sample_weight=w)
    assert weighted.params_["sampling"] == "iid"
    balanced = PGSClassifier(T=200, random_state=0, class_weight="balanced").fit(X, y)
    assert balanced.params_["sampling"] == "iid"
    with pytest.raises(ValueError, match="sampling"):
        PGSClassifier(sampling="shuffled").fit(X, y)


def test_defaults_are_scale_equivariant(digits):
    """X * 2 with sigma * 4: the "auto" bias column and t0 follow, the decisions are equal."""
    X, y = digits
    a = PGSClassifier(loss="logistic", sigma=1e-3, T=3000, random_state=1).fit(X, y)
    b = PGSClassifier(loss="logistic", sigma=4e-3, T=3000, random_state=1).fit(2.0 * X, y)
    assert b.intercept_scaling_ == 2.0 * a.intercept_scaling_
    assert b.params_["t_offset"] == a.params_["t_offset"]
    np.testing.assert_allclose(b.decision_function(2.0 * X), a.decision_function(X),
                               rtol=1e-10, atol=1e-12)


def test_partial_fit_and_warm_start_keep_the_resolved_values(digits):
    X, y = digits
    clf = PGSClassifier(random_state=0)
    clf.partial_fit(X[:300], y[:300], classes=np.arange(10))
    first = (clf.intercept_scaling_, clf.params_["t_offset"])
    clf.partial_fit(3.0 * X[300:], y[300:])          # other scale: values are kept
    assert (clf.intercept_scaling_, clf.params_["t_offset"]) == first
    # (A fixed sigma: "auto" would search with T=900 here and T=400 there.)
    one = PGSClassifier(T=900, sigma=1e-3, random_state=2).fit(X, y)
    warm = PGSClassifier(T=400, sigma=1e-3, random_state=2, warm_start=True).fit(X, y)
    warm.set_params(T=500)
    warm.fit(X, y)
    np.testing.assert_array_equal(warm.coef_, one.coef_)


def test_defaults_expect_only_the_sample_weight_equivalence_checks():
    """check_estimator passes with both estimators' defaults but for the two checks that
    scikit-learn expects its own SGD estimators to fail (tests/test_estimators.py runs
    them)."""
    from pgs.estimators import PGSRegressor, expected_failed_checks
    for est in (PGSClassifier(), PGSRegressor()):
        assert set(expected_failed_checks(est)) == {
            "check_sample_weight_equivalence_on_dense_data",
            "check_sample_weight_equivalence_on_sparse_data"}
        assert est.sigma == "auto" and est.iterate == "average"


def test_params_are_the_resolved_values_of_pgs_train(digits):
    """params_ holds the values pgs.train resolves (no "auto" left); a value the
    one-vs-rest problems do not share is the list of each problem's."""
    X, y = digits
    clf = PGSClassifier(sigma=1e-3, T=100, random_state=2).fit(X, y == 3)
    model = pgs.train(X, y == 3, sigma=1e-3, T=100, seed=2)
    assert clf.params_ == {key: model.params[key] for key in clf.params_}
    assert "auto" not in clf.params_.values()
    ovr = PGSClassifier(loss="squared", sigma=1e-3, T=100, random_state=2).fit(X, y)
    assert len(ovr.params_["B"]) == 10 and ovr.params_["sigma"] == 1e-3
