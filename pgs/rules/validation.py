"""Argument checks for `pgs.train`: clear errors that name the argument and its value."""

import math
import numbers

import numpy as np

from pgs.rules.losses import LOSS_SPECS, LOSSES, loss_names, loss_spec

#: Losses whose targets are two classes, mapped to -1 / +1.
CLASSIFICATION_LOSSES = frozenset(loss_names("classification"))
#: Classification losses with one output per class (y: any number of classes).
MULTICLASS_LOSSES = frozenset(spec.name for spec in LOSSES if spec.multiclass)
#: Losses whose targets are real numbers.
REGRESSION_LOSSES = frozenset(loss_names("regression"))
#: Losses for which B=None means "auto" (docs/design.md 2): those whose derivative is
#: unbounded, and modified_huber (see its row in the table).
UNBOUNDED_GRADIENT_LOSSES = frozenset(spec.name for spec in LOSSES if spec.auto_radius)
#: Default shape parameter of the losses that have one.
DEFAULT_EPSILON = {spec.name: spec.default_epsilon for spec in LOSSES if spec.has_epsilon}

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


def check_positive(name, value):
    """A finite real number > 0."""
    if not is_real(value):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {name}={value!r}")
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


def check_B(B):
    """None, "auto", or a finite number > 0."""
    if B is None or (isinstance(B, str) and B == "auto"):
        return B
    if isinstance(B, str):
        raise ValueError(f"B must be None, 'auto' or a number > 0, got B={B!r}")
    return check_positive("B", B)


def check_epsilon(loss, epsilon):
    """The loss's shape parameter: its default, or a finite number > 0."""
    # An unknown loss is reported by check_loss; here it is a loss without epsilon.
    spec = LOSS_SPECS.get(loss)
    if epsilon is None:
        return spec.default_epsilon if spec is not None and spec.has_epsilon else 0.0
    if not is_real(epsilon):
        raise TypeError(f"epsilon must be a real number, got {epsilon!r}")
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon < 0.0:
        raise ValueError(f"epsilon must be a finite number >= 0, got epsilon={epsilon!r}")
    if spec is not None and spec.epsilon_positive and epsilon == 0.0:
        raise ValueError(f"epsilon must be > 0 for loss={loss!r} (it is {spec.epsilon_name})")
    return epsilon


def check_k_rows(k, m):
    """k at most the m rows: more would draw every batch's rows more than once, almost
    surely a mistake (`partial_fit`'s small batches are let through)."""
    if k > m:
        raise ValueError(f"k must be at most the number of rows of X, got k={k} for "
                         f"{m} rows")


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


def check_seed(seed):
    """None, an int >= 0, or a numpy SeedSequence."""
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed must be None or an integer >= 0, got seed={seed!r}")
    return int(seed)


def check_t_offset(t_offset):
    """The iteration offset: a finite real number >= 0 (as a float), or "auto"."""
    if isinstance(t_offset, str) and t_offset == "auto":
        return t_offset
    if not is_real(t_offset):
        raise TypeError(f"t_offset must be 'auto' or a real number >= 0, got {t_offset!r}")
    t_offset = float(t_offset)
    if not math.isfinite(t_offset) or t_offset < 0.0:
        raise ValueError(f"t_offset must be a finite number >= 0, got t_offset={t_offset!r}")
    return t_offset


def check_bool(name, value):
    """A Python or numpy bool, as a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_verbose(verbose):
    """`verbose`: a bool or an int >= 0, as an int."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    if not is_int(verbose) or verbose < 0:
        raise ValueError(f"verbose must be an int >= 0, got verbose={verbose!r}")
    return int(verbose)


def check_choice(name, value, choices):
    """One of the strings `choices`."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {name}={value!r}")
    return value


def check_auto_or_positive(name, value):
    """"auto", or a finite number > 0 (as a float)."""
    if isinstance(value, str):
        if value == "auto":
            return value
        raise ValueError(f"{name} must be 'auto' or a number > 0, got {name}={value!r}")
    return check_positive(name, value)
