"""scikit-learn estimators around `pgs.train`: `PGSClassifier` (one-vs-rest, or one K-output
problem) and `PGSRegressor`.

`pgs/__init__.py` loads this module lazily, so that `pgs.train` never needs scikit-learn.
"""

import inspect
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from pgs.io.svmlight import usable_cpus
from pgs.models.multiclass import MulticlassModel
from pgs.models.ovr import OneVsRestModel
from pgs.rules import defaults as D
from pgs.rules import validation as V
from pgs.rules.docstrings import fill_doc
from pgs.rules.losses import LOSS_SPECS, LOSSES, loss_names, ovr_probabilities
from pgs.rules.parameters import RUN_ARGS
from pgs.rules.params import Params, check_args, seed_entropy
from pgs.training import sigma_auto
from pgs.training.train import train

__all__ = ["PGSClassifier", "PGSRegressor"]

#: Losses PGSClassifier accepts: `pgs.train`'s classification losses, plus "squared" (C-Adaline:
#: least squares on one-hot 0/1 targets, `pgs.train`'s with `classes`) and "auto".
CLASSIFIER_LOSSES = loss_names("classification") + ("squared", "auto")
#: Losses PGSRegressor accepts.
REGRESSOR_LOSSES = loss_names("regression")
#: Losses whose margins map to probabilities (as in scikit-learn's SGDClassifier).
PROBABILISTIC_LOSSES = tuple(spec.name for spec in LOSSES if spec.probabilistic)

#: Why every PGS estimator fails scikit-learn's sample weight equivalence checks.
_RANDOM_ROWS = ("PGS samples rows at random: integer weights equal row repetition in "
                "expectation (same sampling distribution, same objective and optimum), not "
                "bit for bit")

#: The checks PGSClassifier fails with a given loss, {loss: {check name: reason}}.
_CLASSIFIER_FAILED_CHECKS = {
    "modified_huber": {"check_classifiers_train": (
        "modified Huber probabilities clip the one-vs-rest margins to [-1, 1], so several "
        "classes can tie at the top (as in SGDClassifier); argmax(predict_proba) then "
        "picks the first of them while predict uses the unclipped margins")},
    "squared": {"check_class_weight_classifiers": (
        "class weights 1000 / 1e-4 divide the effective sigma by the mean weight (~333): "
        "with the check's unscaled features (|x| ~ 40) least squares is then so "
        "ill-conditioned that even 200,000 iterations do not converge")},
}


def expected_failed_checks(estimator):
    """The scikit-learn checks `estimator` is known to fail, as {check name: reason}: pass
    it as ``expected_failed_checks`` to `check_estimator` or `parametrize_with_checks`."""
    failed = {f"check_sample_weight_equivalence_on_{kind}_data": _RANDOM_ROWS
              for kind in ("dense", "sparse")}
    if isinstance(estimator, PGSClassifier):
        failed.update(_CLASSIFIER_FAILED_CHECKS.get(estimator.loss, {}))
    return failed


def _effective_n_jobs(n_jobs):
    """Threads to use: None -> 1, -1 -> all cores, -2 -> all but one, ..."""
    if n_jobs is None:
        return 1
    if not V.is_int(n_jobs) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer, got n_jobs={n_jobs!r}")
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, usable_cpus() + 1 + n_jobs)   # (the CPUs this process may use)
    return n_jobs


def _base_entropy(random_state):
    """The int >= 0 every binary problem is seeded with: an int as is (a problem reproduces
    ``pgs.train(seed=random_state)``), fresh entropy for None, a RandomState's next draw."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if random_state is not None and (not V.is_int(random_state) or random_state < 0):
        raise ValueError(f"random_state must be None, an int >= 0 or a RandomState, "
                         f"got {random_state!r}")
    return seed_entropy(random_state)


def _check_weights(sample_weight, m):
    """`pgs.train`'s check of `sample_weight`; a number stands for every row's weight, as
    in scikit-learn's estimators."""
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(m, sample_weight)
    return V.check_sample_weight(sample_weight, m)


def _init_with(params):
    """An ``__init__`` that keeps its arguments as given (scikit-learn's convention), its
    signature `params`' names and defaults: the first positional, the others keyword-only."""
    P = inspect.Parameter
    first, *rest = params
    sig = inspect.Signature([P("self", P.POSITIONAL_OR_KEYWORD),
                             P(first, P.POSITIONAL_OR_KEYWORD, default=params[first]),
                             *(P(name, P.KEYWORD_ONLY, default=params[name]) for name in rest)])

    def __init__(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = sig
    return __init__


#: The estimators' parameters and defaults, `pgs.train`'s and their own.
_PARAMS = {**D.DEFAULTS, "random_state": None, "n_jobs": None, "warm_start": False, "verbose": 0}


class _PGSBase(BaseEstimator):
    """Parameters, validation and the fit loop shared by the two estimators."""

    _allowed_losses = ()

    def _check_params(self):
        """Validate every hyper-parameter once, before any thread starts."""
        if not isinstance(self.loss, str) or self.loss not in self._allowed_losses:
            raise ValueError(f"loss={self.loss!r} is not supported by {type(self).__name__}; "
                             f"use one of {', '.join(self._allowed_losses)}")
        # ("auto" chooses among losses that take the same arguments: hinge's checks)
        check_args(**{name: getattr(self, name) for name in RUN_ARGS
                      if name != "loss"}, loss="hinge" if self.loss == "auto" else self.loss)
        if not sigma_auto.is_auto(self.sigma):
            V.check_positive("sigma", self.sigma)
        sigma_auto.check_search(self.sigma_grid, self.validation_fraction, self.verbose)
        V.check_bool("warm_start", self.warm_start)
        _effective_n_jobs(self.n_jobs)

    def _validate(self, X, *y, reset, **kwargs):
        return validate_data(self, X, *y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             reset=reset, **kwargs)

    def _train(self, X, y, weights, loss, classes=None, *, warm, partial):
        """The model `pgs.train` makes of this fit (`_train_function`'s: `pgs.dask.train` on
        a dask X), with the estimator's parameters: `fit` (T iterations; T None:
        ``sigma="auto"``'s stopping rule, or `max_passes` passes) or `partial_fit` (one pass
        of the batch, which may have fewer rows than k: a warning); `warm` continues the
        fitted model, keeping its sigma and random stream; `classes` every label y may
        hold (a classifier's)."""
        kw = {name: getattr(self, name) for name in RUN_ARGS}
        kw.update(loss=loss, T=D.default_T(X.shape[0], self.k, 1.0) if partial else self.T)
        return self._train_function(X)(
            X, y, sigma=self.sigma, seed=None if warm else _base_entropy(self.random_state),
            sample_weight=weights, keep_state=True, warm_start=self._model if warm else None,
            classes=classes, n_jobs=_effective_n_jobs(self.n_jobs), sigma_grid=self.sigma_grid,
            validation_fraction=self.validation_fraction, verbose=self.verbose, **kw)

    def _train_function(self, X):
        """What trains on `X`: `pgs.train`."""
        return train

    def _set_fitted(self, model, warm):
        """Copy the trained model (`pgs.train`'s) into scikit-learn's fitted attributes."""
        self._model = model
        self._models = models = model.problems if isinstance(model, OneVsRestModel) \
            else [model]
        self.params_ = _shared(models)
        self.n_iter_ = float(models[0].params["passes"])
        self.t_ = int(models[0].T)
        self.sigma_ = float(models[0].params["sigma"])
        self.intercept_scaling_ = float(models[0].params["intercept_scaling"])
        if not warm:
            self.sigma_grid_, self.sigma_scores_ = model.sigma_grid, model.sigma_scores

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _shared(models):
    """The resolved training values of the problems (`pgs.rules.params.Params`' fields, as
    in ``model.params``): each one's value, or the list of every problem's where they
    differ (one-vs-rest problems resolve t_offset and B from their own targets)."""
    each = {name: [model.params[name] for model in models] for name in Params.__dataclass_fields__}
    return {name: v[0] if v.count(v[0]) == len(v) else v for name, v in each.items()}


@fill_doc("classifier", "estimator")
class PGSClassifier(ClassifierMixin, _PGSBase):
    r"""Linear classifier trained by the Primal Gradient Solver (one-vs-rest for multiclass,
    or one problem with a K-output loss).

    Minimises, for each binary problem, :math:`\sigma \|w\|_p^2 / (2(p-1)) + \frac1m
    \sum_i s_i \ell(\langle w, x_i\rangle, y_i)` with :func:`pgs.train`, where the
    :math:`s_i` are the sample weights times the class weights (1 by default); with
    "multinomial" or "crammer_singer", :math:`\sigma \sum_c \|w_c\|_p^2 / (2(p-1)) +
    \frac1m \sum_i s_i \ell(W x_i + b, y_i)` over all the classes at once.

    Parameters
    ----------
    {parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) for two classes, else (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    n_iter_ : float
        Passes over the rows of the last `fit` (or `partial_fit` batch) that the solver's
        iterations since its state was created amount to (warm starts included).
    t_ : int
        Those iterations.
    intercept_scaling_, sigma_ : float
        The values used (resolving "auto"; kept by warm starts and `partial_fit`).
    loss_ : str
        The loss trained (`loss`, or the one "auto" chose).
    params_ : dict
        Every resolved training value (`pgs.rules.params.Params`, as ``model.params``
        holds them); one the one-vs-rest problems do not share is the list of each one's.
    sigma_grid_, sigma_scores_ : ndarray or None
        With ``sigma="auto"``: the values tried (ascending) and each one's held-out
        accuracy (R^2 for `PGSRegressor`) at the last halving rung it ran; None for a
        fixed sigma.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when `X` had string column names.

    Notes
    -----
    **partial_fit.** Each call runs one pass's worth of iterations on the new batch, as one long
    run over the stream. It and `warm_start` keep every problem's solver state, pickled too.

    **Weights** (sample times class weights) are sampled as `pgs.train` samples them;
    weights that are all 1 are no weights.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from pgs import PGSClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = PGSClassifier(loss="logistic", sigma=1e-3, random_state=0).fit(X, y)
    >>> clf.coef_.shape
    (3, 4)
    """

    _allowed_losses = CLASSIFIER_LOSSES
    __init__ = _init_with({**_PARAMS, "loss": "auto", "class_weight": None})

    def _check_params(self):
        super()._check_params()
        cw = self.class_weight
        if not (cw is None or isinstance(cw, dict) or (isinstance(cw, str) and cw == "balanced")):
            raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {cw!r}")
        for label, weight in (cw.items() if isinstance(cw, dict) else ()):
            V.check_positive(f"class_weight[{label!r}]", weight, zero=True)

    def _weights(self, sample_weight, X, y, classes):
        """sample_weight times class_weight, or None for the unweighted problem."""
        sample_weight = _check_weights(sample_weight, X.shape[0])
        if self.class_weight is None:
            return sample_weight
        # ("balanced": from this fit's y, as scikit-learn does for fit)
        cw = compute_class_weight(self.class_weight, classes=classes, y=y)
        per_row = cw[np.searchsorted(classes, y)]
        weights = per_row if sample_weight is None else per_row * sample_weight
        try:
            return V.check_sample_weight(weights, X.shape[0])
        except ValueError as exc:       # (zero everywhere, or a product past the float range)
            raise ValueError(f"sample_weight times class_weight: {exc}") from None

    def fit(self, X, y, sample_weight=None):
        """Fit one-vs-rest binary problems with the Primal Gradient Solver.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            CSR float32/float64 is read in place.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights of the rows.

        Returns
        -------
        self : PGSClassifier
        """
        self._check_params()
        warm = bool(self.warm_start) and hasattr(self, "_models")
        X, y = self._validate(X, y, reset=not warm)
        check_classification_targets(y)
        classes = np.unique(y)      # (not return_inverse: 30x slower in numpy 2.4)
        if classes.shape[0] < 2:
            raise ValueError("PGSClassifier needs samples of at least 2 classes in the data, but "
                             f"the data contains only one class: {classes[0]!r}")
        if warm and not np.array_equal(classes, self.classes_):
            warm = False  # new classes: the old problems do not apply, start afresh
        return self._fit_classes(X, y, classes, sample_weight, warm=warm, partial=False)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue training on one batch: ``ceil(n_batch / k)`` more iterations.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_batch, n_features)
        y : array-like of shape (n_batch,)
        classes : array-like of shape (n_classes,), optional
            All the classes; required on the first call, and if given later it must
            equal ``classes_``.
        sample_weight : array-like of shape (n_batch,), optional

        Returns
        -------
        self : PGSClassifier
        """
        first = not hasattr(self, "_models")
        if first:
            self._check_params()
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            all_classes = np.unique(np.asarray(classes))
            if all_classes.shape[0] < 2:
                raise ValueError(f"classes must hold at least 2 classes, got {all_classes!r}")
            if isinstance(self.class_weight, str):
                raise ValueError("class_weight='balanced' is not supported by partial_fit: the "
                                 "class frequencies of the whole stream are unknown; pass a dict")
        else:
            all_classes = self.classes_
            if classes is not None and not np.array_equal(np.unique(classes), all_classes):
                raise ValueError(f"classes={classes!r} differs from the classes of the first "
                                 f"call {all_classes!r}")
        X, y = self._validate(X, y, reset=first)
        check_classification_targets(y)
        return self._fit_classes(X, y, all_classes, sample_weight, warm=not first, partial=True)

    def _fit_classes(self, X, y, classes, sample_weight, *, warm, partial):
        """Train the problems of `classes` on y's labels (`_train`); returns self."""
        weights = self._weights(sample_weight, X, y, classes)
        # A fit needs two classes that carry weight (a partial_fit batch may hold one).
        weighted = None if partial or weights is None else np.unique(y[weights > 0])
        if weighted is not None and weighted.shape[0] < 2:
            raise ValueError("PGSClassifier needs at least 2 classes with positive weight, but "
                             f"only class {weighted!r} has non-zero sample_weight * class_weight")
        # ("auto": the fitted loss for a warm start, hinge for a stream's batch: no search)
        loss = self.loss if self.loss != "auto" else self.loss_ if warm else \
            "hinge" if partial else "auto"
        model = self._train(X, y, weights, loss, classes, warm=warm, partial=partial)
        self.loss_ = model.params["loss"]
        self._set_fitted(model, warm, classes)
        return self

    def _set_fitted(self, model, warm, classes):
        self.classes_ = classes
        super()._set_fitted(model, warm)
        if isinstance(model, MulticlassModel):
            coef, intercept = model.coef, model.intercept
            if len(classes) == 2:       # (one output, as scikit-learn's binary classifiers)
                coef, intercept = coef[1:] - coef[:1], intercept[1:] - intercept[:1]
            self.coef_, self.intercept_ = coef, intercept
        elif isinstance(model, OneVsRestModel):
            self.coef_, self.intercept_ = model.coef, model.intercept
        else:                           # (one binary problem: a view, as the others)
            self.coef_, self.intercept_ = model.coef[np.newaxis, :], np.array([model.intercept])

    def decision_function(self, X):
        """Margins of the rows: shape (n_samples,) for two classes, else (n_samples, n_classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray
            Positive values favour ``classes_[1]`` (binary); the largest column is the
            predicted class (multiclass).
        """
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        scores = np.asarray(X @ self.coef_.T, dtype=np.float64) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _has_proba(self):
        if self.loss not in PROBABILISTIC_LOSSES:
            raise AttributeError(f"probability estimates are only available for loss in "
                                 f"{PROBABILISTIC_LOSSES}, got loss={self.loss!r}")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (loss "logistic", "modified_huber" or "multinomial").

        Logistic: the sigmoid of each one-vs-rest margin; modified Huber:
        ``(clip(margin, -1, 1) + 1) / 2``; multinomial: the softmax of the outputs. With
        more than two one-vs-rest problems they are normalised to sum to 1 per row
        (uniform where all are 0), as scikit-learn's SGDClassifier does.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return ovr_probabilities(LOSS_SPECS[self.loss].proba(self.decision_function(X)))

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


@fill_doc("regressor", "estimator")
class PGSRegressor(RegressorMixin, _PGSBase):
    r"""Linear regressor trained by the Primal Gradient Solver.

    Minimises :math:`\sigma \|w\|_p^2 / (2(p-1)) + \frac1m \sum_i s_i
    \ell(\langle w, x_i\rangle, y_i)` with :func:`pgs.train`.

    Parameters
    ----------
    {parameters}

    Attributes
    ----------
    sigma_, sigma_grid_, sigma_scores_, intercept_scaling_, params_, n_iter_, t_
        As in `PGSClassifier`.
    coef_ : ndarray of shape (n_features,)
    intercept_ : ndarray of shape (1,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    Warm start, `partial_fit` and weights behave as described in `PGSClassifier`.
    """

    _allowed_losses = REGRESSOR_LOSSES
    __init__ = _init_with({**_PARAMS, "loss": "squared"})

    def fit(self, X, y, sample_weight=None):
        """Fit the linear model with the Primal Gradient Solver.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self : PGSRegressor
        """
        return self._fit(X, y, sample_weight, partial=False)

    def partial_fit(self, X, y, sample_weight=None):
        """Continue training on one batch: ``ceil(n_batch / k)`` more iterations.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_batch, n_features)
        y : array-like of shape (n_batch,)
        sample_weight : array-like of shape (n_batch,), optional

        Returns
        -------
        self : PGSRegressor
        """
        return self._fit(X, y, sample_weight, partial=True)

    def _fit(self, X, y, sample_weight, *, partial):
        warm = hasattr(self, "_models") and (partial or bool(self.warm_start))
        if not (partial and warm):
            self._check_params()
        X, y = self._validate(X, y, reset=not warm, y_numeric=True)
        weights = _check_weights(sample_weight, X.shape[0])
        model = self._train(X, np.asarray(y, dtype=np.float64), weights, self.loss, warm=warm,
                            partial=partial)
        self.loss_ = self.loss
        self._set_fitted(model, warm)
        self.coef_, self.intercept_ = model.coef, np.array([model.intercept])
        return self

    def predict(self, X):
        """Predicted values.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        return np.asarray(X @ self.coef_, dtype=np.float64).reshape(-1) + self.intercept_[0]
