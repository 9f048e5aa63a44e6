"""The model `pgs.train` returns: the selected iterate and how it was trained."""

import numpy as np

from pgs._core import mean_loss
from pgs.models.base import LinearModel, saved_field
from pgs.rules import validation as V
from pgs.rules.data import two_class_signs
from pgs.rules.losses import LOSS_NAMES
from pgs.rules.parameters import INTERCEPTS, SCHEDULES
from pgs.rules.params import column_value


def check_saved_params(params):
    """The loss of a file's training arguments `params` (a `Model`'s, or a one-vs-rest
    model's problems'), each checked as `pgs.train` checks it (a ValueError or TypeError
    naming a bad or missing one); epsilon and l1 normalised in place."""
    loss = saved_field(params, "loss")
    V.check_loss(loss)
    V.check_p(saved_field(params, "p"))
    V.check_positive("sigma", saved_field(params, "sigma"))
    V.check_positive("intercept_scaling", saved_field(params, "intercept_scaling"))
    V.check_choice("intercept", saved_field(params, "intercept"), INTERCEPTS)
    V.check_choice("schedule", saved_field(params, "schedule"), SCHEDULES)
    V.check_bool("fit_intercept", saved_field(params, "fit_intercept"))
    params["epsilon"] = V.check_epsilon(loss, saved_field(params, "epsilon"))
    params["l1"] = V.check_positive("l1", params.get("l1", 0.0), zero=True)  # (0: older)
    return loss


class Model(LinearModel):
    """A linear model trained by the Primal Gradient Solver (a `LinearModel` with its objective).

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
        Weights of the returned iterate.
    intercept : float
        Bias term (0.0 without `fit_intercept`): the free bias, or the constant column's
        weight times `intercept_scaling`.
    iteration : int
        The 1-based index t of the returned iterate (T for "last" and "average").
    T : int
        Number of iterations run.
    classes : ndarray of shape (2,) or None
        The original labels mapped to -1 and +1 (classification losses only).
    params : dict
        Every training argument (`B` the radius used or None, `seed` the entropy used).
    sigma_grid, sigma_scores : ndarray or None
        With ``sigma="auto"``: the values tried and their scores (not saved by `save`).
    """

    _kind = "pgs"
    sigma_grid = None
    sigma_scores = None

    def _repr_fields(self):
        return [f"loss={self.params['loss']!r}", f"p={self.params['p']}",
                f"sigma={self.params['sigma']}", f"T={self.T}", f"iteration={self.iteration}"]

    @classmethod
    def _from_saved(cls, *, params, classes, **fields):
        loss = check_saved_params(params)
        if (loss in V.MULTICLASS_LOSSES) != (cls._coef_ndim == 2):
            raise ValueError(f"loss={loss!r} does not go with a model of kind {cls._kind!r}")
        if (classes is not None) != (loss in V.CLASSIFICATION_LOSSES):
            raise ValueError(f"loss={loss!r} and {'' if classes is not None else 'no '}"
                             f"classes do not go together")
        return super()._from_saved(params=params, classes=classes, **fields)

    def _column_weight(self):
        scaling = column_value(self.params)
        return (np.divide(self.intercept, scaling) if scaling
                else np.zeros_like(self.intercept, dtype=np.float64))

    def regulariser(self):
        """``sigma sum_c ||w_c||_p^2 / (2 (p - 1))`` over the rows of `full_weights` (one, or
        K), plus ``l1 sum_c ||coef_c||_1`` (the features'): the objective's terms but the
        loss (docs/design.md 1)."""
        p = self.params["p"]
        norms = np.sum(np.abs(np.atleast_2d(self.full_weights())) ** p, axis=1) ** (1.0 / p)
        l1 = self.params.get("l1", 0.0) * float(np.sum(np.abs(self.coef)))
        return self.params["sigma"] * float(np.sum(norms**2)) / (2.0 * (p - 1.0)) + l1

    def objective(self, X, y, sample_weight=None):
        """F(w) = sigma ||w||_p^2 / (2 (p - 1)) + l1 ||coef||_1 + (1/m) sum_i s_i loss_i
        (docs/design.md 1).

        With ``intercept="column"`` the intercept's weight is part of w (regularised, as
        in the paper's section VII); a free intercept is not regularised.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)
        y : array_like, shape (n_samples,)
            Labels from `classes` (classification) or real targets.
        sample_weight : array_like, shape (n_samples,), optional
            Weights s_i of the empirical risk (all ones by default).

        Returns
        -------
        float
        """
        z, y = self._outputs_and_targets(X, y)
        if self.classes is not None:
            y_num, n_other = two_class_signs(y, self.classes[0], self.classes[1])
            if n_other:
                raise ValueError(f"y holds labels other than the model's classes {self.classes}")
        else:
            y_num = np.asarray(y, dtype=np.float64)
        loss_id = LOSS_NAMES.index(self.params["loss"])
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
        return self.regulariser() + mean_loss(
            np.ascontiguousarray(z), np.ascontiguousarray(y_num), loss_id,
            self.params["epsilon"], sample_weight)
