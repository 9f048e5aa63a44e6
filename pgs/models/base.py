"""`LinearModel`, the base of every model pgs returns: weights, training arguments,
prediction and saving. A subclass adds its objective, its repr fields and the attributes its
file must keep; its `_kind` names it in the file, so that `pgs.load_model` returns its class.
"""

import numpy as np
import scipy.sparse as sp

from pgs.models import file_format
from pgs.rules.losses import LOSS_SPECS, ovr_probabilities


def saved_field(fields, key, where="params"):
    """fields[key], or a ValueError saying the file's `where` lacks it."""
    if key not in fields:
        raise ValueError(f"the header's {where} have no {key!r}")
    return fields[key]


def weighted_mean(values, sample_weight):
    """(1/m) sum_i s_i v_i of the rows' `values`, the plain mean without weights (the
    models' objectives)."""
    if sample_weight is None:
        return float(np.mean(values))
    s = np.asarray(sample_weight, dtype=np.float64)
    if s.shape != values.shape:
        raise ValueError(f"sample_weight has shape {s.shape}, expected {values.shape}")
    return float(np.sum(s * values) / values.shape[0])


class LinearModel:
    """A linear model: one output ``<coef, x> + intercept``, or one per row of `coef`.

    Attributes
    ----------
    coef : ndarray of shape (n_features,) or (n_outputs, n_features)
        Weights of the returned iterate.
    intercept : float or ndarray of shape (n_outputs,)
        Bias term(s), 0.0 without `fit_intercept`.
    iteration : int
        The 1-based index t of the returned iterate.
    T : int
        Number of iterations run.
    classes : ndarray or None
        The original labels (classifiers only); None for regression.
    params : dict
        Every training argument.
    """

    #: The name of the model's kind in the file header (None: cannot be saved).
    _kind = None
    #: Dimensions of `coef`: 1 for one output, 2 for one row of weights per output.
    _coef_ndim = 1
    #: The attributes beyond the base's that the file keeps (JSON-able values).
    _saved_attributes = ()

    def __init__(self, *, coef, intercept, iteration, T, classes, params):
        self.coef = coef
        self.intercept = (float(intercept) if np.ndim(coef) == 1
                          else np.asarray(intercept, dtype=np.float64))
        self.iteration = int(iteration)
        self.T = int(T)
        self.classes = classes
        self.params = dict(params)

    @property
    def n_features(self):
        """Number of features the model was trained on."""
        return self.coef.shape[-1]

    @property
    def is_classifier(self):
        """True when the model predicts class labels."""
        return self.classes is not None

    def _repr_fields(self):
        """The ``name=value`` strings `repr` shows before ``n_features``."""
        return [f"T={self.T}", f"iteration={self.iteration}"]

    def __repr__(self):
        fields = [*self._repr_fields(), f"n_features={self.n_features}"]
        return f"{type(self).__name__}({', '.join(fields)})"

    def decision_function(self, X):
        """Outputs ``<coef, x> + intercept`` for the rows of `X`.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for one output, else (n_samples, n_outputs)
        """
        if not sp.issparse(X):
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model was trained on "
                             f"{self.n_features}")
        if self.coef.ndim == 1:
            return np.asarray(X @ self.coef, dtype=np.float64).reshape(-1) + self.intercept
        return np.asarray(X @ self.coef.T, dtype=np.float64) + self.intercept

    def predict(self, X):
        """Predicted values (regression) or class labels (classification).

        A single output picks ``classes[1]`` where it is positive and ``classes[0]``
        elsewhere; several outputs pick the class whose output is largest.

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
        if z.ndim == 1:
            return self.classes[(z > 0).astype(np.intp)]
        return self.classes[np.argmax(z, axis=1)]

    def full_weights(self):
        """The weights the solver trained: coef with the constant column's weight appended
        (the intercept; for a `pgs.Model`, the intercept over its scaling, and 0 for a free
        intercept, which is not regularised).

        Returns
        -------
        ndarray of shape (n_features + 1,), or (n_outputs, n_features + 1)
        """
        icpt = np.reshape(self._column_weight(), self.coef.shape[:-1] + (1,))
        return np.append(self.coef, icpt, axis=-1)

    def _column_weight(self):
        return self.intercept

    def objective(self, X, y, sample_weight=None):
        """The training objective on (X, y); each kind of model defines its own.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)
        y : array_like, shape (n_samples,)
        sample_weight : array_like, shape (n_samples,), optional

        Returns
        -------
        float
        """
        raise NotImplementedError(f"{type(self).__name__} defines no objective")

    def _outputs_and_targets(self, X, y):
        """The objectives' inputs: ``decision_function(X)``, and `y` as an array of one
        target per row (a ValueError otherwise)."""
        z = self.decision_function(X)
        y = np.asarray(y)
        if y.shape != z.shape[:1]:
            raise ValueError(f"y has shape {y.shape}, expected {z.shape[:1]}")
        return z, y

    def predict_proba(self, X):
        """Class probabilities of a classifier trained with a probabilistic loss, as the
        estimators' ``predict_proba`` gives them.

        Parameters
        ----------
        X : array_like or sparse matrix, shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in the order of `classes`
        """
        if self.classes is None:
            raise ValueError("probabilities need a classifier; this model is a regressor")
        loss = self.params.get("loss")
        spec = LOSS_SPECS.get(loss)
        if spec is None or not spec.probabilistic:
            names = ", ".join(name for name, s in LOSS_SPECS.items() if s.probabilistic)
            raise ValueError(f"probabilities need a probabilistic loss ({names}); the model "
                             f"was trained with loss={loss!r}")
        return ovr_probabilities(spec.proba(self.decision_function(X)))

    def save(self, path):
        """Write the model to `path` as a portable, pickle-free ``.npz``
        (`pgs.models.file_format`); `pgs.load_model` reads it back as a model of this class.

        Parameters
        ----------
        path : str, path-like or binary file object
        """
        file_format.save_model(self, path)

    @classmethod
    def _from_saved(cls, *, params, attributes, **fields):
        """The model `pgs.load_model` rebuilds from a file's fields, once a subclass has
        checked those it needs (a ValueError or TypeError naming a bad or missing one)."""
        return cls(params=params, **fields)
