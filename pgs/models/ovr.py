"""One-vs-rest models (kind "ovr", saved without pickle): `pgs.train`'s for labels of more
than two classes with a binary loss, and fitted estimators as plain pgs models (no
scikit-learn import here): a regressor or a binary classifier of a PGS loss is a
`pgs.Model`; a one-vs-rest or "squared" (C-Adaline) classifier a `OneVsRestModel`.
"""

import numpy as np

from pgs.models.base import LinearModel
from pgs.models.pgs_model import Model, check_saved_params


class OneVsRestModel(LinearModel):
    """A one-vs-rest linear classifier: `pgs.train`'s for labels of more than two classes
    with a binary loss, or a fitted one-vs-rest `PGSClassifier`'s. One row of weights per
    binary problem (one row: ``classes[1]`` where the output is positive; else the class
    of the largest output).

    Attributes
    ----------
    coef : ndarray of shape (n_problems, n_features)
    intercept : ndarray of shape (n_problems,)
    iteration, T : int
        The returned iterate and the iterations run, per problem.
    classes : ndarray of shape (n_classes,)
    params : dict
        The first problem's training arguments (as resolved; each problem resolves B and
        t_offset from its own targets) and an estimator's ``class_weight``.
    problems : list of pgs.Model or None
        From `pgs.train`: each class's binary problem (with ``keep_state=True`` their
        states, which ``warm_start=`` continues; not saved by `save`).
    sigma_grid, sigma_scores : ndarray or None
        With ``sigma="auto"``: the values tried and their scores (not saved by `save`).
    """

    _kind = "ovr"
    _coef_ndim = 2
    problems = None
    sigma_grid = None
    sigma_scores = None

    @classmethod
    def _from_saved(cls, *, params, classes, **fields):
        check_saved_params(params)
        if classes is None:
            raise ValueError("a model of kind 'ovr' needs classes")
        return super()._from_saved(params=params, classes=classes, **fields)

    def _repr_fields(self):
        return [f"loss={self.params.get('loss')!r}", f"n_classes={len(self.classes)}",
                f"sigma={self.params.get('sigma')}", f"T={self.T}"]

    def decision_function(self, X):
        # (LinearModel's docstring: one problem gives 1-D outputs, as a binary pgs.Model)
        z = super().decision_function(X)
        return z[:, 0] if z.shape[1] == 1 else z

    def objective(self, X, y, sample_weight=None):
        """The sum over the classes of their problems' objectives: `pgs.Model.objective` of
        row c on the targets +1 where y is ``classes[c]`` and -1 elsewhere (1 and 0 for
        "squared"), what each problem minimises on its own.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)
        y : array_like, shape (n_samples,)
            Labels from `classes`.
        sample_weight : array_like, shape (n_samples,), optional
            Weights s_i of the empirical risk (all ones by default).

        Returns
        -------
        float
        """
        y = np.asarray(y)
        if self.coef.shape[0] != len(self.classes):
            raise ValueError("a one-vs-rest model of one row (two classes, 'squared') has no "
                             "objective of its own")
        if not np.all(np.isin(y, self.classes)):
            raise ValueError(f"y holds labels other than the model's classes {self.classes}")
        rest = 0.0 if self.params.get("loss") == "squared" else -1.0
        return sum(Model(coef=self.coef[c], intercept=float(self.intercept[c]),
                         iteration=self.iteration, T=self.T, classes=None,
                         params=self.params).objective(X, np.where(y == label, 1.0, rest),
                                                       sample_weight)
                   for c, label in enumerate(self.classes))


def model_from_estimator(estimator):
    """A fitted `PGSClassifier` or `PGSRegressor` as a `pgs.Model`, `MulticlassModel` or
    `OneVsRestModel` that predicts as it does (bit for bit): the model `pgs.train` returned
    to it, its weights shared, with a classifier's ``class_weight`` in its params."""
    model = getattr(estimator, "_model", None)
    if model is None:
        raise ValueError(f"{type(estimator).__name__} is not fitted: call fit first")
    # (a classifier's class_weight: its objective is not the model's unweighted one)
    params = dict(model.params) if not hasattr(estimator, "classes_") else \
        dict(model.params, class_weight=estimator.class_weight)
    return type(model)(coef=model.coef, intercept=model.intercept, iteration=model.iteration,
                       T=model.T, classes=model.classes, params=params)
