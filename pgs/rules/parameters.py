"""The one statement of every training parameter: its name, default, the values it takes
and one line of help (`PARAMETERS`). `pgs.train` and the estimators check their arguments
with `check` (`pgs.rules.params.check_args`), take their defaults from `DEFAULTS` (their
signatures) and the command line builds its options from the same entries (their types,
choices and help), as scikit-learn's estimators read their ``_parameter_constraints``."""

from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from pgs._core import SAMPLING_MODES
from pgs.rules import validation as V
from pgs.rules.losses import LOSS_NAMES, LOSSES, loss_names

#: Step schedules: the paper's 1 / (sigma (t + t0)), averaged SGD's (docs/design.md 6c).
SCHEDULES = ("pgs", "asgd")

#: How the bias is fitted: unregularised by SGD steps, or a constant column (docs/design.md 4).
INTERCEPTS = ("free", "column")


class Param(NamedTuple):
    """One training parameter: its keyword (the command line's ``--name``), default, the
    values it takes (`kind`, a key of `_RULES`; `special`, values taken as they are;
    `choices`), one line of help for the command line (None: not an option there) and
    its `group`: "run" (`RUN_ARGS`), "sigma" or "search" (`SEARCH_ARGS`)."""

    name: str
    default: object
    kind: str
    special: tuple = ()
    choices: tuple = ()
    help: object = None
    group: str = "run"


#: Every training parameter of `pgs.train` and the estimators, in `pgs.train`'s order.
PARAMETERS = (
    Param("loss", "hinge", "loss", choices=LOSS_NAMES + ("auto",), help=(
        f"classification: auto (the default: hinge, and for more than two classes "
        f"one-vs-rest hinge or crammer_singer, chosen on held-out rows), "
        f"{', '.join(loss_names('classification'))}; regression: "
        f"{', '.join(loss_names('regression'))}")),
    Param("p", 2.0, "p", help="norm of the regulariser, in (1, 2]"),
    Param("sigma", "auto", "positive", ("auto",), group="sigma",
          help="regularisation strength, or 'auto' to choose it on a held-out split"),
    Param("T", None, "count", (None,),
          help="iterations per problem, exactly (default: None, see --max-passes)"),
    Param("k", 1, "count", help="mini-batch size"),
    Param("B", None, "positive", (None, "auto"), help="radius of ||w||_p <= B, or 'auto'"),
    Param("schedule", "asgd", "choice", choices=SCHEDULES,
          help="step schedule: averaged SGD's or the paper's"),
    Param("eta0", "auto", "positive", ("auto",),
          help="first step of the asgd schedule, or 'auto'"),
    Param("iterate", "average", "choice", choices=V.ITERATES, help="the iterate returned"),
    Param("fit_intercept", True, "bool"),   # (the command line's --no-intercept)
    Param("intercept", "free", "choice", choices=INTERCEPTS,
          help="a free bias, or a regularised constant column"),
    Param("intercept_scaling", "auto", "positive", ("auto",),
          help="value of the constant column that carries the intercept, or 'auto'"),
    Param("epsilon", None, "epsilon", (None,), help="shape parameter of " + " / ".join(
        f"{spec.name} (default {spec.default_epsilon:g})" for spec in LOSSES
        if spec.has_epsilon)),
    Param("sampling", "auto", "choice", choices=SAMPLING_MODES + ("auto",),
          help="how rows are drawn"),
    Param("t_offset", "auto", "nonneg", ("auto",),
          help="offset t0 of the steps 1/(sigma (t + t0)), or 'auto'"),
    Param("sigma_grid", None, "grid", (None,), group="search"),
    Param("validation_fraction", "auto", "fraction", ("auto",), group="search"),
    Param("max_passes", 10.0, "positive",
          help="passes over the data when --T is not given: exactly this many for a fixed "
          "sigma, at most this many with sigma 'auto', which stops when the held-out "
          "accuracy (R^2) stops improving"),
    Param("l1", 0.0, "nonneg", help="weight of an l1 term: a sparse model"),
    Param("verbose", 0, "verbose", group="search"),
)

BY_NAME = MappingProxyType({param.name: param for param in PARAMETERS})

#: The training defaults of `pgs.train`, `PGSClassifier` and `PGSRegressor` (the
#: classifier's loss is "auto", the regressor's "squared") and the CLI.
DEFAULTS = MappingProxyType({param.name: param.default for param in PARAMETERS
                             if param.name != "verbose"})

#: The arguments of one run (`pgs.rules.params.check_args`), and the search's own.
RUN_ARGS = tuple(param.name for param in PARAMETERS if param.group == "run")
SEARCH_ARGS = tuple(param.name for param in PARAMETERS if param.group == "search")


def _fraction(param, value, loss):
    if isinstance(value, str) and value == "auto":
        return value
    if not V.is_real(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{param.name} must be 'auto' or a float in (0, 1), "
                         f"got {param.name}={value!r}")
    return float(value)


def _grid(param, grid, loss):
    """None, or an ascending float64 array of the values > 0, without duplicates."""
    if grid is None:
        return None
    if isinstance(grid, (str, bytes)) or not np.iterable(grid):
        raise TypeError(f"{param.name} must be None or a sequence of floats > 0, "
                        f"got {param.name}={grid!r}")
    values = [V.check_positive(f"{param.name} entry", s) for s in grid]
    if not values:
        raise ValueError(f"{param.name} must hold at least one value, got an empty sequence")
    return np.unique(np.asarray(values, dtype=np.float64))


def _loss(param, value, loss):
    V.check_loss(value)
    return value


#: What each kind accepts: ``rule(param, value, loss)``, the value normalised, or a
#: ValueError / TypeError naming the parameter and the value.
_RULES = {
    "loss": _loss,
    "p": lambda param, value, loss: V.check_p(value),
    "positive": lambda param, value, loss: V.check_positive(param.name, value,
                                                            allowed=param.special),
    "nonneg": lambda param, value, loss: V.check_positive(param.name, value,
                                                          allowed=param.special, zero=True),
    "count": lambda param, value, loss: V.check_count(param.name, value,
                                                      allow_none=None in param.special),
    "choice": lambda param, value, loss: V.check_choice(param.name, value, param.choices),
    "bool": lambda param, value, loss: V.check_bool(param.name, value),
    "epsilon": lambda param, value, loss: V.check_epsilon(loss, value),
    "fraction": _fraction,
    "grid": _grid,
    "verbose": lambda param, value, loss: V.check_verbose(value),
}


def check(name, value, loss=None):
    """`value` of the parameter `name` checked against its entry and normalised (numbers
    as float, a grid as an array); a ValueError or TypeError naming it. `loss` is the
    run's (epsilon's rule depends on it)."""
    param = BY_NAME[name]
    return _RULES[param.kind](param, value, loss)


_WHAT = {"p": "a number in (1, 2]", "positive": "a positive number",
         "nonneg": "a number >= 0", "count": "an integer >= 1", "epsilon": "a number >= 0"}


def describe(param):
    """What a number `param` takes, in words (the command line's message for a bad value)."""
    what = _WHAT[param.kind]
    return what + " or 'auto'" if "auto" in param.special else what
