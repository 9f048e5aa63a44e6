"""One training run's parameters, resolved: `resolve` checks `pgs.train`'s arguments and
applies every "auto" rule (`pgs.rules.defaults`) to a frozen `Params`, the one object the
solver (`pgs.engine.solver.solver_of`), the rounds and `pgs.dask` read."""

import dataclasses
import inspect
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pgs._core import SAMPLING_MODES
from pgs.rules import defaults as D
from pgs.rules import validation as V
from pgs.rules.losses import loss_spec


@dataclasses.dataclass(frozen=True)
class Params:
    """A run's resolved training values: no "auto" left (the fields, and their order, are
    the keys of ``model.params``; `seed` is the entropy drawn, `B` None: unbounded,
    `eta0` None under "pgs", `intercept_rate` 0 without a free bias)."""

    loss: str
    p: float
    sigma: float
    T: int
    k: int
    B: object
    schedule: str
    eta0: object
    iterate: str
    fit_intercept: bool
    intercept: str
    intercept_scaling: float
    seed: int
    epsilon: float
    sampling: str
    t_offset: float
    intercept_rate: float

    @property
    def icpt(self):
        """The constant column's value (0: no column)."""
        return self.intercept_scaling if self.fit_intercept and self.intercept == "column" else 0.0

    def asdict(self):
        """The values as ``model.params`` keeps them (a new dict)."""
        return dataclasses.asdict(self)


class Data(NamedTuple):
    """What the "auto" rules read of a call's data: its rows' number `m`, the kernel's
    targets `y`, the weights (None: unweighted), the outputs (K for a K-output loss) and
    ``stats(q, full)``, `pgs.rules.defaults.row_stats` of X's rows."""

    m: int
    y: np.ndarray
    weights: object
    n_outputs: int
    stats: Callable


def seed_sequence(seed):
    """The random streams' root: `seed` if a SeedSequence, else one of the int, or of fresh
    entropy for None (`pgs.rules.validation.check_seed`)."""
    seed = V.check_seed(seed)
    return seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)


def seed_entropy(seed):
    """The int >= 0 a seed stands for (fresh entropy for None): one draw, shared by every
    run seeded with it."""
    return int(seed_sequence(seed).entropy)


def check_args(*, loss, p, T, k, B, schedule, eta0, iterate, fit_intercept, intercept,
               intercept_scaling, epsilon, sampling, t_offset, max_passes):
    """The checks of the training arguments but sigma and the seed (`resolve`'s and the
    estimators' `_check_params`: one set of messages); the arguments, normalised."""
    V.check_loss(loss)
    return dict(
        loss=loss, p=V.check_p(p), T=V.check_count("T", T, allow_none=True),
        k=V.check_count("k", k), B=V.check_B(B),
        schedule=V.check_choice("schedule", schedule, D.SCHEDULES),
        eta0=V.check_auto_or_positive("eta0", eta0), iterate=V.check_iterate(iterate),
        fit_intercept=V.check_bool("fit_intercept", fit_intercept),
        intercept=V.check_choice("intercept", intercept, D.INTERCEPTS),
        intercept_scaling=V.check_auto_or_positive("intercept_scaling", intercept_scaling),
        epsilon=V.check_epsilon(loss, epsilon),
        sampling=V.check_choice("sampling", sampling, SAMPLING_MODES + ("auto",)),
        t_offset=V.check_t_offset(t_offset),
        max_passes=V.check_positive("max_passes", max_passes))


#: The arguments `check_args` checks.
CHECKED_ARGS = tuple(inspect.signature(check_args).parameters)


def resolve(data, *, sigma, seed, saved=None, k_above_rows=False, **args):
    """Check one run's arguments and apply every "auto" rule: its `Params`.

    Parameters
    ----------
    data : callable
        ``data()`` gives the call's `Data`, once the arguments are valid (their errors
        come first).
    sigma : float or "auto"
        The regularisation strength ("auto": a warm start's; else the search's).
    seed : None, int or numpy.random.SeedSequence
        Recorded as its entropy (`seed_entropy`).
    saved : dict, optional
        A warm start's ``model.params``: its resolved values stand for "auto".
    k_above_rows : bool, default False
        Lets k exceed the rows (`partial_fit`'s small batches).
    **args
        `check_args`' arguments (`pgs.DEFAULTS` for those not given).

    Returns
    -------
    Params
    """
    def kept(name, value, default=None):     # (a warm start keeps its model's values)
        return saved.get(name, default) if saved is not None and value == "auto" else value

    a = check_args(**{**{name: D.DEFAULTS[name] for name in CHECKED_ARGS}, **args})
    sigma = V.check_positive("sigma", kept("sigma", sigma))
    seed = seed_entropy(seed)
    loss, p, k, B, eta0, t_offset = a["loss"], a["p"], a["k"], a["B"], a["eta0"], a["t_offset"]
    d = data()
    if not k_above_rows:
        V.check_k_rows(k, d.m)
    T = a["T"] if a["T"] is not None else D.default_T(d.m, k, a["max_passes"])
    if B == "auto" or (B is None and loss in V.UNBOUNDED_GRADIENT_LOSSES):
        B = saved["B"] if saved is not None else D.auto_B(
            d.y, loss, p, sigma, a["epsilon"], d.weights, d.n_outputs)

    sampling = kept("sampling", a["sampling"])
    scaling = kept("intercept_scaling", a["intercept_scaling"])
    eta0, t_offset = kept("eta0", eta0), kept("t_offset", t_offset, 0.0)
    icpt_rate = None if saved is None else saved.get("intercept_rate")  # (None: older)
    # The rules read a sample of the rows, but for t_offset's maximum, which needs every
    # row: then one scan of them all serves every rule.
    full = a["schedule"] == "pgs" and t_offset == "auto"

    def stats():            # (an O(nnz) scan: only for the rules that read it)
        return d.stats(p / (p - 1.0), full)

    if sampling == "auto":
        sampling = D.auto_sampling(d.weights)
    if scaling == "auto":
        scaling = D.auto_intercept_scaling(stats())
    column = a["fit_intercept"] and a["intercept"] == "column"
    icpt = scaling if column else 0.0
    if not a["fit_intercept"] or column:
        icpt_rate = 0.0
    elif icpt_rate is None:
        icpt_rate = D.intercept_rate(stats())
    if a["schedule"] == "asgd":
        t_offset = 0.0          # (the paper schedule's; "asgd" has eta0)
        if eta0 == "auto":
            eta0 = D.auto_eta0(loss_spec(loss), a["epsilon"], sigma, stats(),
                               icpt * icpt + icpt_rate)
        else:
            V.check_eta0(eta0, sigma)
    else:
        eta0 = None
        if t_offset == "auto":
            t_offset = D.auto_t_offset(stats(), d.y, loss=loss, p=p, sigma=sigma, B=B,
                                       icpt=icpt, epsilon=a["epsilon"], weights=d.weights,
                                       sampling=sampling, n_outputs=d.n_outputs)
    return Params(loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, schedule=a["schedule"],
                  eta0=eta0, iterate=a["iterate"], fit_intercept=a["fit_intercept"],
                  intercept=a["intercept"], intercept_scaling=scaling, seed=seed,
                  epsilon=a["epsilon"], sampling=sampling, t_offset=t_offset,
                  intercept_rate=icpt_rate)
