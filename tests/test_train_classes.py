"""`pgs.train` on labels of more than two classes: one binary problem a class (a
`OneVsRestModel`), and ``loss="auto"``'s choice of hinge or Crammer-Singer, as the
estimators train them."""

import numpy as np
import pytest

import pgs
from pgs.training.classes import auto_losses, class_targets, one_vs_rest

M, N = 300, 12


def _labels(k_classes=4, m=M, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, N)) * (rng.random((m, N)) < 0.7)
    W = rng.normal(size=(k_classes, N))
    y = np.argmax(X @ W.T + 0.3 * rng.normal(size=(m, k_classes)), axis=1)
    return X, np.array(["ant", "bee", "cat", "dog", "eel"])[y]


@pytest.mark.parametrize("loss", ["hinge", "logistic", "modified_huber"])
def test_each_class_is_pgs_train_of_its_class_against_the_rest(loss, tmp_path):
    """Problem c is ``pgs.train(X, +1 where y is classes[c] else -1)`` bit for bit (the same
    seed: the same rows drawn), the labels sorted as `classes`; predict takes the class of
    the largest output; a saved model predicts the same."""
    X, y = _labels()
    kw = dict(loss=loss, sigma=1e-3, T=900, seed=5)
    model = pgs.train(X, y, **kw)
    assert isinstance(model, pgs.OneVsRestModel)
    np.testing.assert_array_equal(model.classes, ["ant", "bee", "cat", "dog"])
    assert model.coef.shape == (4, N) and model.T == 900
    for c, label in enumerate(model.classes):
        alone = pgs.train(X, np.where(y == label, 1.0, -1.0), **kw)
        np.testing.assert_array_equal(model.coef[c], alone.coef)
        assert model.intercept[c] == alone.intercept
        np.testing.assert_array_equal(model.problems[c].coef, alone.coef)
    # (the objective: the sum of the problems', each on its +-1 targets)
    want = sum(problem.objective(X, np.where(y == label, 1, -1))
               for problem, label in zip(model.problems, model.classes, strict=True))
    assert model.objective(X, y) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="other than the model's classes"):
        model.objective(X, np.where(y == "ant", "fox", y))
    z = X @ model.coef.T + model.intercept
    np.testing.assert_array_equal(model.predict(X), model.classes[np.argmax(z, axis=1)])
    assert np.mean(model.predict(X) == y) > 0.8
    if loss == "hinge":         # (a file keeps the weights and the classes, not the problems)
        model.save(tmp_path / "ovr.npz")
        saved = pgs.load_model(tmp_path / "ovr.npz")
        np.testing.assert_array_equal(saved.predict(X), model.predict(X))
        assert isinstance(saved, pgs.OneVsRestModel) and saved.problems is None


@pytest.mark.parametrize("sigma", [1e-3, "auto"])
@pytest.mark.parametrize("loss, extra", [("hinge", {}), ("auto", {}), ("logistic", {}),
                                         ("hinge", dict(n_jobs=2, p=1.5, k=3)),
                                         ("hinge", dict(l1=1e-3, intercept="column"))])
def test_the_estimator_trains_what_pgs_train_trains(loss, extra, sigma):
    """`PGSClassifier` and `pgs.train` with the same arguments: the same weights, the same
    loss chosen (sigma="auto": one sigma for the classes, scored on their prediction),
    with sample weights, threads, p < 2, mini-batches, l1 and a constant column too."""
    pytest.importorskip("sklearn")
    from pgs.estimators import _base_entropy

    X, y = _labels(k_classes=5, m=600, seed=1)
    w = np.random.default_rng(0).random(600) + 0.1 if extra else None
    est = pgs.PGSClassifier(loss=loss, sigma=sigma, random_state=2, **extra).fit(
        X, y, sample_weight=w)
    model = pgs.train(X, y, loss=loss, sigma=sigma, seed=_base_entropy(2), sample_weight=w,
                      **extra)
    np.testing.assert_array_equal(est.coef_, model.coef)
    np.testing.assert_array_equal(est.intercept_, model.intercept)
    assert est.loss_ == model.params["loss"]
    if sigma == "auto":
        assert est.sigma_ == model.params["sigma"]
        np.testing.assert_array_equal(est.sigma_grid_, model.sigma_grid)


def test_auto_loss_is_hinge_for_two_classes_and_the_better_of_two_for_more():
    """``loss="auto"``: two classes train one hinge problem (a `pgs.Model`); more classes at
    a fixed sigma one-vs-rest hinge; with sigma="auto" Crammer-Singer where it scores
    better on the held-out rows (bands of classes along one direction: one-vs-rest cannot
    separate a middle band from the rest)."""
    X, y = _labels()
    two = pgs.train(X, np.where(y == "ant", "ant", "rest"), loss="auto", sigma=1e-3, T=300,
                    seed=0)
    assert type(two) is pgs.Model and two.params["loss"] == "hinge"
    np.testing.assert_array_equal(two.classes, ["ant", "rest"])
    fixed = pgs.train(X, y, loss="auto", sigma=1e-3, T=300, seed=0)
    assert isinstance(fixed, pgs.OneVsRestModel) and fixed.params["loss"] == "hinge"
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 5, 3000)
    bands = np.column_stack([t, rng.normal(size=3000)])
    labels = np.floor(t).astype(int)
    chosen = pgs.train(bands, labels, loss="auto", seed=0)
    assert isinstance(chosen, pgs.MulticlassModel)
    assert chosen.params["loss"] == "crammer_singer"
    assert chosen.sigma_scores.shape == chosen.sigma_grid.shape
    hinge = pgs.train(bands, labels, loss="hinge", seed=0)     # (87.6% against 75.2%)
    assert np.mean(chosen.predict(bands) == labels) > np.mean(hinge.predict(bands) == labels) + 0.1


def test_a_warm_start_continues_every_problem():
    """``keep_state=True`` keeps each problem's state; ``warm_start=`` continues each as
    its own warm start would, new labels being an error."""
    X, y = _labels()
    kw = dict(sigma=1e-3, seed=4)
    first = pgs.train(X, y, T=200, keep_state=True, **kw)
    more = pgs.train(X, y, T=300, warm_start=first, keep_state=True, **kw)
    assert more.T == 500
    for c, label in enumerate(first.classes):
        t = np.where(y == label, 1.0, -1.0)
        alone = pgs.train(X, t, T=300, warm_start=pgs.train(X, t, T=200, keep_state=True, **kw),
                          **kw)
        np.testing.assert_array_equal(more.coef[c], alone.coef)
    # (a batch may hold some of the classes only)
    pgs.train(X[y != "ant"], y[y != "ant"], T=10, warm_start=more, **kw)
    with pytest.raises(ValueError, match="other than the known classes"):
        pgs.train(X, np.where(y == "ant", "fox", y), T=10, warm_start=more, **kw)
    with pytest.raises(ValueError, match="no solver state"):
        pgs.train(X, y, T=10, warm_start=pgs.train(X, y, T=10, **kw), **kw)


def test_what_one_vs_rest_does_not_take():
    X, y = _labels()
    with pytest.raises(ValueError, match="callback follows one problem's run"):
        pgs.train(X, y, sigma=1e-3, T=10, callback=lambda progress: None)
    with pytest.raises(ValueError, match="p must be"):
        pgs.train(X, y, sigma=1e-3, T=10, p=3.0)
    with pytest.raises(ValueError, match="X has 10 rows but y has 300 entries"):
        pgs.train(X[:10], y, sigma=1e-3, T=10)
    with pytest.raises(ValueError, match="'hinge2' is not one of"):    # (not "classes is for")
        pgs.train(X, y, classes=["ant", "bee", "cat"], loss="hinge2", sigma=1e-3, T=10)


def test_the_rules_of_many_classes():
    """`one_vs_rest`: a binary classification loss or "auto" meeting more than two labels,
    of any dtype (the first label, another, and a third), or `classes` of more than two
    ("squared" only with them); `class_targets`: +-1 (0/1
    for squared) a class, the second class positive for two, class indices for a K-output
    loss; `auto_losses`: Crammer-Singer only for more than two classes and a search."""
    assert one_vs_rest("hinge", [0, 1, 2]) and one_vs_rest("auto", ["a", "b", "c"])
    assert not one_vs_rest("hinge", [0, 5, 5, 0]) and not one_vs_rest("auto", [1.5, -2.0])
    assert not one_vs_rest("multinomial", [0, 1, 2]) and not one_vs_rest("squared", [0, 1, 2])
    assert one_vs_rest("logistic", [0.0, np.nan, 1.0])     # (NaN: the labels' check names it)
    assert not one_vs_rest("hinge", np.array(["b", "a", "b"], dtype=object))
    assert one_vs_rest("hinge", np.array(["b", "a", "b", "c"], dtype=object))
    assert one_vs_rest("hinge", [0, 1], classes=[0, 1, 2]) and one_vs_rest("squared", [0], [0, 1])
    assert not one_vs_rest("auto", [0, 1, 2], classes=[0, 1])
    assert one_vs_rest("hinge", [0.0, 1.0, 7.0]) and not one_vs_rest("hinge", [0.5, 1.5])
    with pytest.raises(ValueError, match="non-integer numbers of more than two values"):
        one_vs_rest("auto", [0.5, 1.0, 2.0])
    idx = np.array([2, 0, 1])
    np.testing.assert_array_equal(class_targets(idx, 3, "hinge"),
                                  [[-1, -1, 1], [1, -1, -1], [-1, 1, -1]])
    np.testing.assert_array_equal(class_targets(idx, 3, "squared"),
                                  [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(class_targets(np.array([1, 0]), 2, "hinge"), [[1], [-1]])
    np.testing.assert_array_equal(class_targets(idx, 3, "crammer_singer"), [2.0, 0.0, 1.0])
    assert auto_losses(2, True) == ("hinge",) and auto_losses(3, False) == ("hinge",)
    assert auto_losses(3, True) == ("hinge", "crammer_singer")


@pytest.mark.parametrize("loss", ["hinge", "crammer_singer"])
def test_classes_lets_a_batch_hold_some_of_them(loss):
    """``classes=`` names every label a stream's batch may hold: a batch of some of them
    trains the problems of all (a class absent: its problem's targets all -1), as
    `PGSClassifier.partial_fit` trains them with the same arguments, bit for bit; a warm
    start then takes batches of the others. Two classes (a binary loss): a batch of one."""
    pytest.importorskip("sklearn")
    from pgs.estimators import _base_entropy

    X, y = _labels()
    labels = np.array(["ant", "bee", "cat", "dog"])
    cases = [(labels, y != "dog")]                  # three of four classes
    if loss == "hinge":
        cases.append((labels[:2], y == "bee"))      # one of two
    for known, rows in cases:
        Xb, yb = X[rows], y[rows]
        model = pgs.train(Xb, yb, classes=known, loss=loss, sigma=1e-3, T=len(yb),
                          seed=_base_entropy(2), keep_state=True)
        np.testing.assert_array_equal(model.classes, known)
        est = pgs.PGSClassifier(loss=loss, sigma=1e-3, random_state=2).partial_fit(
            Xb, yb, classes=known)
        np.testing.assert_array_equal(np.atleast_2d(model.coef), est.coef_)
        if len(known) == 4:
            # ... and a batch of the class it lacked continues every problem, as the
            # estimator's next partial_fit does
            last = y == "dog"
            more = pgs.train(X[last], y[last], warm_start=model, loss=loss, sigma=1e-3,
                             T=int(last.sum()))
            est.partial_fit(X[last], y[last])
            np.testing.assert_array_equal(more.classes, labels)
            np.testing.assert_array_equal(more.coef, est.coef_)
            assert not np.array_equal(more.coef, model.coef)
    with pytest.raises(ValueError, match="at least two labels"):
        pgs.train(X, y, classes=["ant"], sigma=1e-3, T=5)
    with pytest.raises(ValueError, match="for a classification loss"):
        pgs.train(X, np.ones(len(y)), classes=[0, 1], loss="huber", sigma=1e-3, T=5)
    with pytest.raises(ValueError, match="other than the known classes"):
        pgs.train(X, y, classes=labels[:3], sigma=1e-3, T=5)


def test_squared_with_classes_is_least_squares_classification():
    """``loss="squared"`` with ``classes=``: each class's problem is the regression of its
    0/1 indicator (`pgs.train` of it, bit for bit); two classes one problem, of the second
    class, its bias less 1/2 so that the second class is predicted above 1/2."""
    X, y = _labels()
    kw = dict(loss="squared", sigma=1e-3, T=600, seed=3)
    model = pgs.train(X, y, classes=np.unique(y), **kw)
    assert isinstance(model, pgs.OneVsRestModel) and model.coef.shape == (4, N)
    for c, label in enumerate(model.classes):
        alone = pgs.train(X, np.where(y == label, 1.0, 0.0), **kw)
        np.testing.assert_array_equal(model.coef[c], alone.coef)
        assert model.intercept[c] == alone.intercept
    two = np.where(y == "ant", "ant", "rest")
    model = pgs.train(X, two, classes=["ant", "rest"], **kw)
    alone = pgs.train(X, np.where(two == "rest", 1.0, 0.0), **kw)
    np.testing.assert_array_equal(model.coef[0], alone.coef)
    assert model.intercept[0] == alone.intercept - 0.5
    np.testing.assert_array_equal(model.predict(X), np.where(
        X @ alone.coef + alone.intercept > 0.5, "rest", "ant"))
    assert isinstance(pgs.train(X, np.ones(len(y)), loss="squared", sigma=1e-3, T=5),
                      pgs.Model)              # (without classes: a regression)
