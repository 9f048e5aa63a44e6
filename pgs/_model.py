"""The model `pgs.train` returns: the selected iterate and how it was trained."""

import numpy as np
import scipy.sparse as sp

from pgs._core import mean_loss
from pgs._loss_table import LOSS_NAMES


def check_predict_X(X, n_features):
    """X as a 2-D array or sparse matrix with `n_features` columns, for prediction."""
    if not sp.issparse(X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but the model was trained on {n_features}")
    return X


class Model:
    """A linear model trained by the Primal Gradient Solver.

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
        Weights of the returned iterate.
    intercept : float
        Bias term (0.0 without `fit_intercept`); equals the weight of the implicit
        constant column times `intercept_scaling`.
    iteration : int
        The 1-based index t of the returned iterate (T for "last" and "average").
    T : int
        Number of iterations run.
    classes : ndarray of shape (2,) or None
        The original labels mapped to -1 and +1 (classification losses only).
    params : dict
        Every training argument (with `B` the radius actually used, None if unbounded,
        and `seed` the entropy that reproduces the run).
    """

    def __init__(self, *, coef, intercept, iteration, T, classes, params):
        self.coef = coef
        self.intercept = float(intercept)
        self.iteration = int(iteration)
        self.T = int(T)
        self.classes = classes
        self.params = dict(params)

    @property
    def n_features(self):
        """Number of features the model was trained on."""
        return self.coef.shape[0]

    @property
    def is_classifier(self):
        """True when the model was trained with a classification loss."""
        return self.classes is not None

    def __repr__(self):
        return (
            f"Model(loss={self.params['loss']!r}, p={self.params['p']}, "
            f"sigma={self.params['sigma']}, T={self.T}, iteration={self.iteration}, "
            f"n_features={self.n_features})"
        )

    def save(self, path):
        """Write the model to `path` as a portable, pickle-free ``.npz``.

        The format (arrays plus a JSON header with every training argument, the
        pgs version and a format version) is documented in `pgs._model_io`; read
        it back with `pgs.load_model`.

        Parameters
        ----------
        path : str, path-like or binary file object
        """
        from pgs._model_io import save_model

        save_model(self, path)

    def decision_function(self, X):
        """Margins ``<coef, x> + intercept`` for the rows of `X`.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = check_predict_X(X, self.n_features)
        return np.asarray(X @ self.coef, dtype=np.float64).reshape(-1) + self.intercept

    def predict(self, X):
        """Class labels (classification) or predicted values (regression).

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        z = self.decision_function(X)
        if self.classes is None:
            return z
        return self.classes[(z > 0).astype(np.intp)]

    def full_weights(self):
        """The weight vector the solver optimises: coef and the constant column's weight."""
        scaling = self.params["intercept_scaling"]
        w_icpt = self.intercept / scaling if self.params["fit_intercept"] else 0.0
        return np.append(self.coef, w_icpt)

    def objective(self, X, y, sample_weight=None):
        """F(w) = sigma ||w||_p^2 / (2 (p - 1)) + (1/m) sum_i s_i loss_i on (X, y) (DESIGN.md 1).

        The intercept's weight is part of w (it is regularised, as in the paper's
        section VII).

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
        p, sigma = self.params["p"], self.params["sigma"]
        z = self.decision_function(X)
        y = np.asarray(y)
        if y.shape != z.shape:
            raise ValueError(f"y has shape {y.shape}, expected {z.shape}")
        if self.classes is not None:
            pos = y == self.classes[1]
            neg = y == self.classes[0]
            if not np.all(pos | neg):
                raise ValueError(f"y holds labels other than the model's classes {self.classes}")
            y_num = np.where(pos, 1.0, -1.0)
        else:
            y_num = np.asarray(y, dtype=np.float64)
        w = self.full_weights()
        norm_p = np.sum(np.abs(w) ** p) ** (1.0 / p)
        reg = sigma * norm_p**2 / (2.0 * (p - 1.0))
        loss_id = LOSS_NAMES.index(self.params["loss"])
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
        return reg + mean_loss(
            np.ascontiguousarray(z), np.ascontiguousarray(y_num), loss_id,
            self.params["epsilon"], sample_weight,
        )
