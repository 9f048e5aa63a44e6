"""The model of a K-output loss ("multinomial", "crammer_singer"; docs/design.md 6d): one row of
weights per class, trained as one problem."""

import numpy as np

from pgs.models.base import weighted_mean
from pgs.models.pgs_model import Model


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
        if not np.all(np.isin(y, self.classes)):
            raise ValueError(f"y holds labels other than the model's classes {self.classes}")
        rows, idx = np.arange(Z.shape[0]), np.searchsorted(self.classes, y)
        zy = Z[rows, idx]
        if self.params["loss"] == "multinomial":
            zmax = np.max(Z, axis=1)
            losses = zmax + np.log(np.sum(np.exp(Z - zmax[:, None]), axis=1)) - zy
        else:                                           # crammer_singer
            other = Z.copy()
            other[rows, idx] = -np.inf
            losses = np.maximum(0.0, 1.0 + np.max(other, axis=1) - zy)
        return self.regulariser() + weighted_mean(losses, sample_weight)
