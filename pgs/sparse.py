"""Sparse models: the largest useful l1 (`l1_max`) and a warm-started path of decreasing l1
(`l1_path`), each point's score against its number of non-zero weights (docs/sparse.md)."""

from typing import NamedTuple

import numpy as np

from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers
from pgs.training.screening import null_point
from pgs.training.train import train


def l1_max(X, y, loss="hinge", sample_weight=None, fit_intercept=True):
    r"""The smallest `l1` for which w = 0 minimises `pgs.train`'s objective:
    :math:`\|\frac1m \sum_i s_i \ell'(b_0, y_i) x_i\|_\infty` (the l1 term's subgradient
    must cover the loss's gradient at w = 0; the l_p term's is 0 there), b_0 the bias that is
    optimal with w = 0: 0 without one, the classes' log shares (multinomial), the bisected
    best bias of a binary loss (at a kink, the mix of its one-sided derivatives whose mean
    is 0: then a bound, which another mix may undercut). A fit whose l1 reaches it returns
    w = 0 (at p < 2 with b_0 exactly; docs/sparse.md). A regression with a bias takes
    b_0 = 0 here (an approximation; such fits are not set to 0).

    Parameters
    ----------
    X : array_like or sparse matrix, shape (m, n_features)
    y : array_like, shape (m,)
        Two labels (a binary loss), class labels ("multinomial") or real targets.
    loss : str, default "hinge"
        One of `pgs.train`'s losses but "crammer_singer" (whose gradient at 0 is a tie).
    sample_weight : array_like, shape (m,), optional
    fit_intercept : bool, default True
        As `pgs.train`'s: a free bias at its best value, or none.

    Returns
    -------
    float
    """
    if loss == "crammer_singer":
        raise ValueError("l1_max has no closed form for loss='crammer_singer' (every margin "
                         "ties at w = 0): give l1_path its l1s")
    grad, _ = null_point(X, y, loss, sample_weight, bool(fit_intercept))
    return float(np.max(np.abs(grad))) if grad.size else 0.0


class PathPoint(NamedTuple):
    """One fit of `l1_path`: its `l1`, `model`, non-zero weights and validation score."""

    l1: float
    model: object
    n_nonzero: int
    score: float


def l1_path(X, y, l1s=None, *, n_l1=10, ratio=1e-3, validation=None, sigma, **kwargs):
    """Fit decreasing values of `l1`, each warm-started from the previous model (its solver
    state goes on), and score each on `validation`.

    Parameters
    ----------
    X, y : the training rows and targets, as `pgs.train` takes them.
    l1s : sequence of float > 0, optional
        The values, fitted in decreasing order; default `n_l1` values from ``l1_max(X, y)``
        down to ``ratio`` times it, evenly spaced in log.
    n_l1 : int >= 2, default 10
    ratio : float in (0, 1), default 1e-3
    validation : (X_val, y_val), optional
        Rows to score each model on: accuracy for classification, R^2 for regression (of a
        constant y: 1.0 if exact, else 0.0, as scikit-learn's ``r2_score``); the training
        rows by default. Checked before the first fit.
    sigma : float > 0
        The l_p term's strength, one for the whole path (a number: each point continues the
        previous one's run).
    **kwargs
        `pgs.train`'s other arguments (loss, p, max_passes: each point's passes, default 2;
        ...), the same at every point.

    Returns
    -------
    list of PathPoint
        In decreasing l1.
    """
    if not V.is_real(sigma):
        raise ValueError(f"l1_path needs a number for sigma (one for the whole path), got "
                         f"sigma={sigma!r}")
    X = as_csr_buffers(X)       # (once: l1_max and every fit read these buffers)
    X_val, y_val = _check_validation(validation, X, y)
    if l1s is None:
        n_l1, ratio = V.check_count("n_l1", n_l1), V.check_positive("ratio", ratio)
        if n_l1 < 2 or ratio >= 1.0:
            raise ValueError(f"need n_l1 >= 2 and 0 < ratio < 1, got n_l1={n_l1}, ratio={ratio}")
        top = l1_max(X, y, kwargs.get("loss", "hinge"), kwargs.get("sample_weight"),
                     kwargs.get("fit_intercept", True))
        if top == 0.0:
            raise ValueError("l1_max(X, y) is 0 (the loss's gradient at w = 0 is 0 on every "
                             "feature: no l1 > 0 leaves a weight): give l1s")
        l1s = top * np.logspace(0.0, np.log10(ratio), n_l1)
    elif isinstance(l1s, (str, bytes)) or np.ndim(l1s) != 1 or len(l1s) == 0:
        raise TypeError(f"l1s must be a non-empty sequence of numbers > 0, got l1s={l1s!r}")
    l1s = sorted((V.check_positive("l1s", v) for v in l1s), reverse=True)
    kwargs.setdefault("max_passes", 2.0)
    points, model = [], None
    for l1 in l1s:
        model = train(X, y, sigma=sigma, l1=l1, warm_start=model, keep_state=True, **kwargs)
        points.append(PathPoint(l1, model, int(np.count_nonzero(model.coef)),
                                _score(model, X_val, y_val)))
    return points


def _check_validation(validation, X, y):
    """`l1_path`'s scoring rows: (X_val as a CSR matrix, y_val), checked before any fit."""
    if validation is None:
        return X.matrix(), np.asarray(y)
    if not isinstance(validation, (tuple, list)) or len(validation) != 2:
        raise TypeError(f"validation must be a pair (X_val, y_val), got {validation!r}")
    X_val = as_csr_buffers(validation[0], name="validation's X_val")
    if X_val.shape[1] != X.shape[1]:
        raise ValueError(f"validation's X_val has {X_val.shape[1]} features, X has "
                         f"{X.shape[1]}")
    y_val = np.asarray(validation[1])
    if y_val.shape != (X_val.shape[0],):
        raise ValueError(f"validation's y_val must have shape ({X_val.shape[0]},), one entry "
                         f"per row of X_val, got shape {y_val.shape}")
    return X_val.matrix(), y_val


def _score(model, X, y):
    """Accuracy (classification) or R^2 (regression) of `model` on (X, y); R^2 of a constant
    y is 1.0 for exact predictions and 0.0 otherwise (scikit-learn's ``r2_score``)."""
    pred = model.predict(X)
    if model.classes is not None:
        return float(np.mean(pred == y))
    y = y.astype(np.float64)
    sse, sst = float(np.sum((y - pred) ** 2)), float(np.sum((y - y.mean()) ** 2))
    return 1.0 - sse / sst if sst > 0.0 else float(sse == 0.0)
