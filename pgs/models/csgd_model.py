"""The least-squares models of Constrained SGD: `CSGDModel` (one output) and
`CAdalineModel` (one output per class, Mu et al.'s C-Adaline)."""

import numpy as np

from pgs._csgd import VARIANT_NAMES
from pgs.models.base import LinearModel, saved_field, weighted_mean
from pgs.rules import validation as V


def check_variant(variant):
    """The kernel's index of a CSGD variant name (a ValueError naming it otherwise)."""
    return VARIANT_NAMES.index(V.check_choice("variant", variant, VARIANT_NAMES))


class _LeastSquaresModel(LinearModel):
    """What the CSGD models share: the step size used (``eta0_``), saved with them."""

    _saved_attributes = ("eta0_",)

    def __init__(self, *, coef, intercept, T, eta0_, params, classes=None):
        super().__init__(coef=coef, intercept=intercept, iteration=T, T=T, classes=classes,
                         params=params)
        self.eta0_ = float(eta0_)

    @classmethod
    def _from_saved(cls, *, params, attributes, classes, iteration, **fields):
        check_variant(saved_field(params, "variant"))
        eta0_ = V.check_positive("eta0_", saved_field(attributes, "eta0_", "attributes"))
        if (classes is not None) != (cls._coef_ndim == 2):
            raise ValueError(f"a model of kind {cls._kind!r} "
                             f"{'needs classes' if cls._coef_ndim == 2 else 'has no classes'}")
        return cls(params=params, classes=classes, eta0_=eta0_, **fields)

    def objective(self, X, y, sample_weight=None):
        """The least-squares loss (1/m) sum_i s_i (y_i - <w, x_i> - b)^2 / 2 on (X, y); for
        C-Adaline, the mean over the classes of (indicator - output)^2 / 2.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)
        y : array_like, shape (n_samples,)
            Targets, or labels from `classes` (C-Adaline).
        sample_weight : array_like, shape (n_samples,), optional
            Weights s_i (all ones by default), as in `pgs.Model.objective`.

        Returns
        -------
        float
        """
        z, y = self._outputs_and_targets(X, y)
        if self.classes is not None:
            y = y[:, None] == self.classes[None, :]
        squares = (np.asarray(y, dtype=np.float64) - z) ** 2
        return weighted_mean(0.5 * (squares if squares.ndim == 1 else np.mean(squares, axis=1)),
                             sample_weight)


class CSGDModel(_LeastSquaresModel):
    """A least-squares linear model trained by CSGD, NCSGD or plain SGD.

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
    intercept : float
        Weight of the implicit constant column (0.0 without `fit_intercept`).
    iteration, T : int
        Steps run.
    classes : None
    eta0_ : float
        The base step size used (the one picked when ``eta0="auto"``).
    params : dict
        The training arguments (``switch`` as an int, ``seed`` the entropy used).
    """

    _kind = "csgd"

    def _repr_fields(self):
        return [f"variant={self.params['variant']!r}", f"T={self.T}", f"eta0_={self.eta0_:.4g}"]


class CAdalineModel(_LeastSquaresModel):
    """A multiclass linear classifier: one least-squares regressor per class, predicting the
    largest output (C-Adaline, the paper's Algorithm 2).

    Attributes
    ----------
    coef : ndarray of shape (n_classes, n_features)
    intercept : ndarray of shape (n_classes,)
    classes : ndarray of shape (n_classes,)
        The sorted labels; output k regresses the indicator of ``classes[k]``.
    iteration, T, eta0_, params
        As for `CSGDModel`.
    """

    _kind = "cadaline"
    _coef_ndim = 2

    def _repr_fields(self):
        return [f"variant={self.params['variant']!r}", f"T={self.T}",
                f"n_classes={self.classes.shape[0]}"]
