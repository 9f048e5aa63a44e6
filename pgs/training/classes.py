"""Many classes from labels: the one-vs-rest problems of a binary loss, and ``loss="auto"``'s
losses (docs/defaults.md 9). `pgs.train`, `pgs.dask.train` and the estimators read them."""

import numpy as np

from pgs.models.ovr import OneVsRestModel
from pgs.rules import validation as V
from pgs.rules.data import class_indices, kernel_classes
from pgs.rules.losses import loss_spec


def check_classes(classes, loss):
    """`pgs.train`'s `classes`: None, or the sorted distinct labels of an array-like of two or
    more, for a classification loss, "auto" or "squared" (least-squares classification)."""
    if classes is None:
        return None
    if loss != "auto":
        V.check_loss(loss)           # (a misspelt loss is named as such first)
    if not (loss in ("auto", "squared") or loss in V.CLASSIFICATION_LOSSES):
        raise ValueError(f"classes is for a classification loss (or 'squared'), got "
                         f"loss={loss!r}")
    found = np.unique(np.asarray(classes))
    if found.ndim != 1 or found.shape[0] < 2:
        raise ValueError(f"classes must hold at least two labels, got classes={classes!r}")
    return found


def one_vs_rest(loss, y, classes=None):
    """True where `loss` ("auto" or a binary classification loss) meets labels `y` (or the
    known `classes`) of more than two classes: one binary problem a class. Two O(m)
    comparisons, no sort (the labels' own check sorts them once, later); real numbers of
    more than two values are a ValueError (targets of a regression); a y this cannot read
    is left to the checks of the one-problem path. "squared" with `classes`: least-squares
    classification, one problem a class (two classes: one, of the second)."""
    if loss == "squared":
        return classes is not None
    if loss != "auto" and not (isinstance(loss, str) and loss in V.CLASSIFICATION_LOSSES
                               and not loss_spec(loss).multiclass):
        return False
    if classes is not None:
        return len(classes) > 2
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] == 0:
        return False
    other = y[y != y[0]]           # (a NaN differs from everything: its check follows)
    many = other.shape[0] > 0 and bool(np.any(other != other[0]))
    if many and y.dtype.kind == "f" and np.any(np.isfinite(y) & (y != np.round(y))):
        # (as scikit-learn's "continuous" targets: not thousands of classes)
        raise ValueError(f"y holds non-integer numbers of more than two values: labels "
                         f"of a classification loss (loss={loss!r}) are integers or "
                         f"strings; real targets need a regression loss")
    return many


def route(loss, y, classes, warm_start, callback):
    """(one-vs-rest?, the loss) of a `pgs.train` call at a fixed sigma: one-vs-rest for a
    `OneVsRestModel` warm start, or labels of more than two classes with a binary loss
    (`one_vs_rest`; a callback follows one problem's run: refused); "auto" resolved to
    hinge, or the warm start's loss."""
    ovr = isinstance(warm_start, OneVsRestModel) or (
        warm_start is None and one_vs_rest(loss, y, classes))
    if ovr and callback is not None:
        raise ValueError("callback follows one problem's run: y has more than two classes, "
                         "one problem each (train them one by one to follow each)")
    if loss == "auto":
        loss = "hinge" if warm_start is None else warm_start.params["loss"]
    return ovr, loss


def auto_losses(n_classes, search):
    """The losses ``loss="auto"`` trains, the preferred first: hinge, and for more than two
    classes with a sigma search also Crammer-Singer, compared on the held-out rows."""
    return ("hinge", "crammer_singer") if n_classes > 2 and search else ("hinge",)


def class_targets(y_index, n_classes, loss):
    """`loss`'s targets of labels with class indices `y_index`: (m, R) +-1 (0/1 for
    "squared") for each class against the rest (R = 1 for two classes: the second class
    positive), in one array row by row (the solver reads a row's R targets in place); a
    K-output loss's one problem: the class indices (m,)."""
    if loss in V.MULTICLASS_LOSSES:
        return np.asarray(y_index, dtype=np.float64)
    positives = np.array([1] if n_classes == 2 else range(n_classes))
    rest = 0.0 if loss == "squared" else -1.0
    return np.where(np.asarray(y_index)[:, None] == positives, 1.0, rest)


def stacked_coef(models):
    """The problems' weights as the rows of one (R, n_features) array: one model's as a
    view, the matrix whose rows they already are (`pgs.training.fit.finish_all` with
    keep_state), else a new one that each model's coef then views (one copy of the
    weights either way)."""
    if len(models) == 1:
        return models[0].coef[np.newaxis, :]
    base = models[0].coef.base
    if base is not None and base.ndim == 2 and \
            base.shape[0] == len(models) and all(m.coef.base is base for m in models):
        return base[:, :models[0].coef.shape[0]]
    coef = np.empty((len(models), models[0].coef.shape[0]))
    for i, model in enumerate(models):
        coef[i] = model.coef
        model.coef = coef[i]
    return coef


def ovr_model(models, classes):
    """The `OneVsRestModel` of one binary problem a class (`models`, in the order of
    `classes`; "squared" of two classes: one, on the second's 0/1 indicator, its bias less
    1/2 so that it predicts the second class above 1/2): their weights' rows, biases, the
    first's iteration, T and training values; the problems themselves (their states, for a
    warm start) as ``problems``."""
    first = models[0]
    half = 0.5 if len(models) == 1 and first.params["loss"] == "squared" else 0.0
    model = OneVsRestModel(coef=stacked_coef(models),
                           intercept=np.array([m.intercept for m in models]) - half,
                           iteration=first.iteration, T=first.T, classes=classes,
                           params=dict(first.params))
    model.problems = models
    return model


def train_one_vs_rest(fit_many, n_rows, y, *, loss, warm_start=None, classes=None, **kwargs):
    """The `OneVsRestModel` of labels `y` (`n_rows` of them; of `classes`, or the warm
    start's, if given) at a fixed sigma: one binary problem of `loss` (`route`'s) a class,
    trained by ``fit_many(Y, loss=, warm_starts=, known_classes=, **kwargs)`` (`pgs.train`'s,
    or `pgs.dask.train`'s); `warm_start`, a `OneVsRestModel` that kept its problems'
    states, continues each problem."""
    if warm_start is not None and warm_start.problems is None:
        raise ValueError("warm_start model has no solver state: train it with keep_state=True")
    if warm_start is not None and classes is not None and \
            not np.array_equal(classes, warm_start.classes):
        raise ValueError(f"classes {classes} differ from the warm_start model's "
                         f"{warm_start.classes}")
    y_index, classes = class_indices(y, n_rows, getattr(warm_start, "classes", classes))
    models = fit_many(class_targets(y_index, len(classes), loss), loss=loss,
                      warm_starts=None if warm_start is None else warm_start.problems,
                      known_classes=kernel_classes(loss), **kwargs)
    return ovr_model(models, classes)
