"""Argument checks for `pgs.train`: clear errors that name the argument and its value."""

import math
import numbers
import warnings

import numpy as np

from pgs.rules.losses import LOSS_SPECS, LOSSES, loss_names, loss_spec

#: Losses whose targets are two classes, mapped to -1 / +1.
CLASSIFICATION_LOSSES = frozenset(loss_names("classification"))
#: Classification losses with one output per class (y: any number of classes).
MULTICLASS_LOSSES = frozenset(spec.name for spec in LOSSES if spec.multiclass)

ITERATES = ("random", "last", "average")


def is_real(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def check_loss(loss):
    """Return the loss id of `loss` (a name in ``LOSS_NAMES``)."""
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, got {loss!r} of type {type(loss).__name__}")
    return loss_spec(loss).id


def check_p(p):
    """p must be a real number in (1, 2]."""
    if not is_real(p):
        raise TypeError(f"p must be a real number in (1, 2], got {p!r}")
    p = float(p)
    if not (1.0 < p <= 2.0):
        raise ValueError(f"p must be in (1, 2], got p={p!r}")
    return p


def check_positive(name, value, *, allowed=(), zero=False):
    """`value` if it is one of `allowed` (None, "auto"), else a finite real number > 0 (>= 0
    with `zero`), as a float."""
    if any(value is a or (isinstance(value, str) and value == a) for a in allowed):
        return value
    bound = ">= 0" if zero else "> 0"
    what = f"a number {bound}"
    if allowed:
        what = f"{', '.join(map(repr, allowed))} or {what}"
    if isinstance(value, str) and allowed:
        raise ValueError(f"{name} must be {what}, got {name}={value!r}")
    if not is_real(value):
        raise TypeError(f"{name} must be {what}, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0.0 or (value == 0.0 and not zero):
        raise ValueError(f"{name} must be a finite number {bound}, got {name}={value!r}")
    return value


#: The largest count (T, k, ...) accepted.
MAX_COUNT = 2**62


def check_count(name, value, *, allow_none=False):
    """An integer >= 1 (or None when allowed)."""
    if value is None and allow_none:
        return None
    if not is_int(value):
        raise TypeError(f"{name} must be an integer >= 1, got {value!r}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {name}={value!r}")
    if value > MAX_COUNT:
        # (the kernel counts iterations and rows in signed 64-bit integers)
        raise ValueError(f"{name} must be at most 2**62, got {name}={value!r}")
    return value


def check_epsilon(loss, epsilon):
    """The loss's shape parameter: its default, or a finite number > 0."""
    # An unknown loss is reported by check_loss; here it is a loss without epsilon.
    spec = LOSS_SPECS.get(loss)
    if epsilon is None:
        return spec.default_epsilon if spec is not None and spec.has_epsilon else 0.0
    epsilon = check_positive("epsilon", epsilon, zero=True)
    if spec is not None and spec.epsilon_positive and epsilon == 0.0:
        raise ValueError(f"epsilon must be > 0 for loss={loss!r} (it is {spec.epsilon_name})")
    return epsilon


def check_k_rows(k, m, T=None):
    """k at most the m rows: more would draw every batch's rows more than once, almost
    surely a mistake, unless T says how many iterations (a stream's small batch: a
    warning)."""
    if k > m and T is None:
        raise ValueError(f"k must be at most the number of rows of X, got k={k} for "
                         f"{m} rows (with T given, a batch may be smaller than k)")
    if k > m:
        warnings.warn(f"the batch has {m} rows, fewer than k={k}: each of its {T} "
                      f"iteration(s) draws {k} rows from them (rows repeat)", UserWarning,
                      stacklevel=5)


def check_sample_weight(sample_weight, m):
    """Validate weights (`pgs.train`'s and the estimators'): a new float64 array, or None
    when they are all ones."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    if w.ndim != 1 or w.shape[0] != m:
        raise ValueError(f"sample_weight must have shape ({m},), got {w.shape}")
    if w.dtype.kind not in "biuf":
        raise TypeError(f"sample_weight must be numeric, got dtype {w.dtype}")
    w = np.array(w, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinity")
    if np.any(w < 0):
        raise ValueError(f"sample_weight must be >= 0, got a minimum of {w.min()!r}")
    if not np.any(w > 0):
        raise ValueError("sample_weight is zero everywhere")
    return None if np.all(w == 1.0) else w      # (all ones: the unweighted problem's bits)


def check_bool(name, value):
    """A Python or numpy bool, as a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_verbose(verbose):
    """`verbose`: a bool or an int >= 0, as an int, or a callable (it receives each line)."""
    if callable(verbose):
        return verbose
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    if not is_int(verbose) or verbose < 0:
        raise ValueError(f"verbose must be an int >= 0 or a callable, got verbose={verbose!r}")
    return int(verbose)


def check_choice(name, value, choices):
    """One of the strings `choices`."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {name}={value!r}")
    return value
