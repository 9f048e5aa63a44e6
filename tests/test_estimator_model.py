"""Fitted estimators saved in the pickle-free model format predict as they did."""

import numpy as np
import pytest

import pgs
from pgs.cli.demo import make_sparse_classification
from pgs.models.ovr import OneVsRestModel, model_from_estimator

pytest.importorskip("sklearn")
from pgs.estimators import PGSClassifier, PGSRegressor  # noqa: E402


@pytest.fixture(scope="module")
def problem():
    X, y = make_sparse_classification(n_samples=1500, n_features=200, nnz_per_row=12, seed=4)
    groups = np.column_stack([np.asarray(X[:, g::4].sum(axis=1)).ravel() for g in range(4)])
    labels = np.array(["ant", "bee", "cat", "dog"])[np.argmax(groups, axis=1)]
    return X, y, labels


@pytest.mark.parametrize("loss,kind", [
    ("hinge", "binary"), ("logistic", "binary"), ("squared", "binary"),
    ("hinge", "multi"), ("modified_huber", "multi"), ("squared", "multi"),
])
def test_classifier_round_trip(problem, tmp_path, loss, kind):
    X, y, labels = problem
    target = np.where(y > 0, "yes", "no") if kind == "binary" else labels
    est = PGSClassifier(loss=loss, T=3000, random_state=0).fit(X, target)
    model_from_estimator(est).save(tmp_path / "m.npz")
    model = pgs.load_model(tmp_path / "m.npz")
    expected = pgs.Model if kind == "binary" and loss != "squared" else OneVsRestModel
    assert type(model) is expected
    np.testing.assert_array_equal(model.predict(X), est.predict(X))
    np.testing.assert_array_equal(model.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(model.classes, est.classes_)
    if loss in ("logistic", "modified_huber"):
        np.testing.assert_array_equal(model.predict_proba(X), est.predict_proba(X))
    else:
        with pytest.raises(ValueError, match="probabilistic loss"):
            model.predict_proba(X)


def test_regressor_round_trip(problem, tmp_path):
    X, y, _ = problem
    target = np.asarray(X @ np.arange(200.0) / 100.0).ravel()
    est = PGSRegressor(loss="huber", T=3000, random_state=0).fit(X, target)
    model_from_estimator(est).save(tmp_path / "r.npz")
    model = pgs.load_model(tmp_path / "r.npz")
    assert type(model) is pgs.Model and model.classes is None
    np.testing.assert_array_equal(model.predict(X), est.predict(X))
    assert model.objective(X, target) == pytest.approx(
        model_from_estimator(est).objective(X, target), rel=0, abs=0)
    with pytest.raises(ValueError, match="regressor"):
        model.predict_proba(X)


def test_unfitted_estimator_is_refused():
    with pytest.raises(ValueError, match="not fitted"):
        model_from_estimator(PGSClassifier())
