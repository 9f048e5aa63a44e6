"""The loss table: every built-in loss declared once (a `LossSpec` row of `LOSSES`), read by
validation, `pgs.train`, the estimators and the command line. Adding a loss is its compiled
``loss`` / ``dloss`` pair (with their tag lines) in pgs/_losses.pxd, one line in the
`_dispatch` of pgs/_core.pyx, and one row below; tests/test_losses.py checks every row
against the kernel. Pure Python: the kernel imports `LOSS_NAMES` from here, not the reverse.
"""

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

__all__ = ["LOSSES", "LOSS_NAMES", "LOSS_SPECS", "LossSpec", "loss_names", "loss_spec"]

#: A constant of a loss: a number, or a function of the loss's shape parameter epsilon.
Constant = float | Callable[[float], float]


def _sigmoid(scores):
    # 1 / (1 + exp(-s)) as a tanh, which never overflows.
    return 0.5 * (1.0 + np.tanh(0.5 * scores))


def softmax(scores):
    """Rows of class probabilities from rows of K margins (the max subtracted: no overflow);
    from 1-D margins z_1 - z_0 (two classes), P(class 1)."""
    if np.ndim(scores) == 1:
        return _sigmoid(scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _clipped_linear(scores):
    # Zhang (2004) / SGDClassifier: modified Huber's margins clipped to [-1, 1].
    return 0.5 * (np.clip(scores, -1.0, 1.0) + 1.0)


@dataclass(frozen=True)
class LossSpec:
    r"""One loss: what every Python layer needs to know about it.

    Attributes
    ----------
    name : str
        The name users pass as ``loss=``.
    id : int
        Its ``LossId`` in pgs/_losses.pxd, also its index in `LOSS_NAMES`.
    task : {"classification", "regression"}
        Two classes mapped to -1 / +1 (the loss a function of ``y z``), or real targets.
    dloss_bound : float, callable or None
        :math:`\sup_{z, y} |\ell'(z, y)|` (or a function of epsilon); None when unbounded,
        and the loss must then be smooth with :math:`\ell'(y, y) = 0` (`dloss_bound_on`).
    dloss_lipschitz : float, callable or None
        Lipschitz constant L of :math:`z \mapsto \ell'(z, y)` (or a function of epsilon);
        None when the loss has a kink.
    auto_radius : bool
        ``B=None`` means ``B="auto"`` (docs/design.md 2), as every unbounded derivative needs.
    proba : callable or None
        Maps margins to P(y = +1); None: no ``predict_proba``.
    default_epsilon : float or None
        Default of the shape parameter ``epsilon``; None: the loss has none (and ignores it).
    epsilon_name : str
        What epsilon is for this loss, for messages and help.
    epsilon_positive : bool
        Epsilon must be > 0, not merely >= 0 (it divides: a smoothing width).
    multiclass : bool
        One output per class (docs/design.md 6d: the loss of the K margins, y the class index);
        its bounds are per output: :math:`|\partial \ell / \partial z_c|` and the largest
        eigenvalue of the Hessian in z.
    """

    name: str
    id: int
    task: str
    dloss_bound: Constant | None
    dloss_lipschitz: Constant | None
    auto_radius: bool = False
    proba: Callable | None = None
    default_epsilon: float | None = None
    epsilon_name: str = ""
    epsilon_positive: bool = False
    multiclass: bool = False

    @property
    def is_classification(self):
        """True for a classification loss (targets -1 / +1)."""
        return self.task == "classification"

    @property
    def probabilistic(self):
        """True when the margins map to probabilities (``predict_proba``)."""
        return self.proba is not None

    @property
    def has_epsilon(self):
        """True when the loss has a shape parameter epsilon."""
        return self.default_epsilon is not None

    def max_dloss(self, epsilon):
        r"""The bound on :math:`|\ell'|` over all z and y for this `epsilon` (None: unbounded)."""
        return _evaluate(self.dloss_bound, epsilon)

    def lipschitz(self, epsilon):
        r"""The Lipschitz constant of :math:`\ell'` for this `epsilon` (None: not smooth)."""
        return _evaluate(self.dloss_lipschitz, epsilon)

    def dloss_bound_on(self, radius, y_max, epsilon):
        r"""A bound on :math:`|\ell'(z, y)|` over :math:`|z| \le` `radius`, :math:`|y| \le` `y_max`:
        the global one, else (smooth, :math:`\ell'(y, y) = 0`) :math:`L (\text{radius} +
        \text{y\_max})`."""
        bound = self.max_dloss(epsilon)
        if bound is not None:
            return bound
        return self.lipschitz(epsilon) * (radius + y_max)


def _evaluate(constant, epsilon):
    return constant(epsilon) if callable(constant) else constant


#: Every loss, in id order (tests/test_losses.py checks every row: the ids, the task, the
#: constants against pgs/_losses.pxd's formulas, classification with y = +-1).
LOSSES = (
    LossSpec("hinge", 0, "classification", dloss_bound=1.0, dloss_lipschitz=None),
    LossSpec("logistic", 1, "classification", dloss_bound=1.0, dloss_lipschitz=0.25,
             proba=_sigmoid),
    LossSpec("squared", 2, "regression", dloss_bound=None, dloss_lipschitz=2.0,
             auto_radius=True),
    LossSpec("squared_hinge", 3, "classification", dloss_bound=None, dloss_lipschitz=2.0,
             auto_radius=True),
    LossSpec("smooth_hinge", 4, "classification", dloss_bound=1.0,
             dloss_lipschitz=lambda eps: 1.0 / eps, default_epsilon=1.0,
             epsilon_name="the smoothing width", epsilon_positive=True),
    # |modified_huber'| <= 4, but B=None has always meant "auto" for it (README's "B"):
    # auto_radius keeps that behaviour, while t_offset="auto" uses the bound 4.
    LossSpec("modified_huber", 5, "classification", dloss_bound=4.0, dloss_lipschitz=2.0,
             auto_radius=True, proba=_clipped_linear),
    LossSpec("huber", 6, "regression", dloss_bound=lambda eps: eps, dloss_lipschitz=1.0,
             default_epsilon=1.0, epsilon_name="the quadratic zone's half-width (delta)"),
    LossSpec("epsilon_insensitive", 7, "regression", dloss_bound=1.0, dloss_lipschitz=None,
             default_epsilon=0.1, epsilon_name="the insensitive tube's half-width"),
    LossSpec("absolute", 8, "regression", dloss_bound=1.0, dloss_lipschitz=None),
    # The Hessian of log-sum-exp, diag(pi) - pi pi^T, has largest eigenvalue <= 1/2.
    LossSpec("multinomial", 9, "classification", dloss_bound=1.0, dloss_lipschitz=0.5,
             proba=softmax, multiclass=True),
    LossSpec("crammer_singer", 10, "classification", dloss_bound=1.0, dloss_lipschitz=None,
             multiclass=True),
)

#: The loss names in id order (the ``LossId`` enum of pgs/_losses.pxd).
LOSS_NAMES = tuple(spec.name for spec in LOSSES)

#: name -> LossSpec (read-only).
LOSS_SPECS = MappingProxyType({spec.name: spec for spec in LOSSES})


def loss_spec(name):
    """The `LossSpec` of the loss called `name` (a ValueError if there is none)."""
    try:
        return LOSS_SPECS[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss={name!r} is not one of {', '.join(LOSS_NAMES)}") from None


def loss_names(task=None):
    """The loss names, in id order, of one task ("classification", "regression") or all."""
    return tuple(spec.name for spec in LOSSES if task is None or spec.task == task)


def ovr_probabilities(prob):
    """Rows of class probabilities from P(+1) of each one-vs-rest problem: ``1 - P, P`` for
    one (`prob` 1-D); else each row normalised to sum to 1 (uniform where all are 0; a
    softmax's rows are left alone)."""
    if prob.ndim == 1:
        return np.column_stack([1.0 - prob, prob])
    total = prob.sum(axis=1, keepdims=True)
    zero = total[:, 0] == 0.0
    prob[zero] = 1.0
    total[zero] = prob.shape[1]
    return prob / total
