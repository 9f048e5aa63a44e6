"""The model of a K-output loss ("multinomial", "crammer_singer"; docs/design.md 6d): one row of
weights per class, trained as one problem."""

import numpy as np

from pgs.models.base import saved_field, weighted_mean
from pgs.models.pgs_model import Model, check_saved_training
from pgs.rules import validation as V
from pgs.rules.losses import loss_spec, softmax


class MulticlassModel(Model):
    """A linear classifier of K classes trained as one problem by the Primal Gradient Solver
    (a K-output loss): predicts the class of the largest output.

    Attributes
    ----------
    coef : ndarray of shape (n_classes, n_features)
    intercept : ndarray of shape (n_classes,)
    classes : ndarray of shape (n_classes,)
        The labels, in the order of the rows of `coef`.
    iteration, T, params
        As for `pgs.Model`.
    """

    _kind = "multiclass"
    _coef_ndim = 2

    def _repr_fields(self):
        return [f"loss={self.params['loss']!r}", f"n_classes={len(self.classes)}",
                f"p={self.params['p']}", f"sigma={self.params['sigma']}", f"T={self.T}"]

    @classmethod
    def _check_saved(cls, params, attributes, classes):
        loss = saved_field(params, "loss")
        if loss not in V.MULTICLASS_LOSSES:
            raise ValueError(f"loss={loss!r} is not a K-output loss "
                             f"({', '.join(sorted(V.MULTICLASS_LOSSES))})")
        if classes is None:
            raise ValueError(f"loss={loss!r} needs classes; the file has none")
        check_saved_training(params)

    def predict_proba(self, X):
        """Class probabilities, the softmax of the outputs (loss "multinomial" only).

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if self.params["loss"] != "multinomial":
            raise ValueError(f"probabilities need loss='multinomial'; the model was trained "
                             f"with loss={self.params['loss']!r}")
        return softmax(self.decision_function(X))

    def objective(self, X, y, sample_weight=None):
        """F(W) = sigma sum_c ||w_c||_p^2 / (2 (p - 1)) + (1/m) sum_i s_i loss(z_i, y_i).

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
        Z, y = self._outputs_and_targets(X, y)
        idx = np.searchsorted(self.classes, y)
        if np.any(idx >= len(self.classes)) or np.any(self.classes[np.minimum(
                idx, len(self.classes) - 1)] != y):
            raise ValueError(f"y holds labels other than the model's classes {self.classes}")
        losses = multiclass_loss(self.params["loss"], Z, idx)
        return self.regulariser() + weighted_mean(losses, sample_weight)


def multiclass_loss(loss, Z, y_index):
    """Each row's loss at its K margins `Z` (rows x K) and class index `y_index`."""
    loss_spec(loss)
    rows = np.arange(Z.shape[0])
    zy = Z[rows, y_index]
    if loss == "multinomial":
        zmax = np.max(Z, axis=1)
        return zmax + np.log(np.sum(np.exp(Z - zmax[:, None]), axis=1)) - zy
    other = Z.copy()
    other[rows, y_index] = -np.inf
    return np.maximum(0.0, 1.0 + np.max(other, axis=1) - zy)
