"""One training run's parameters, resolved: `resolve` checks `pgs.train`'s arguments and
applies every "auto" rule (`pgs.rules.defaults`) to a frozen `Params`, the one object the
solver (`pgs.engine.solver.solver_of`), the rounds and `pgs.dask` read."""

import dataclasses
import types
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pgs.rules import defaults as D
from pgs.rules import parameters as P
from pgs.rules import validation as V
from pgs.rules.losses import loss_spec
from pgs.rules.parameters import RUN_ARGS


@dataclasses.dataclass(frozen=True)
class Params:
    """A run's resolved training values: no "auto" left (``dataclasses.asdict`` of it is
    ``model.params``, in the fields' order; `seed` is the entropy drawn, `B` None: unbounded,
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
    l1: float = 0.0

    @property
    def icpt(self):
        """The constant column's value (0: no column)."""
        return column_value(vars(self))


def column_value(params):
    """The constant column's value in a run's `params` (a mapping: ``model.params``):
    intercept_scaling with ``intercept="column"``, 0 without (none, or a free bias)."""
    column = params["fit_intercept"] and params["intercept"] == "column"
    return params["intercept_scaling"] if column else 0.0


class Data(NamedTuple):
    """What the "auto" rules read of a call's data: its `m` rows' kernel targets `y`, weights
    (None: unweighted), outputs (K for a K-output loss) and ``stats(q, full)`` (`row_stats`)."""

    m: int
    y: np.ndarray
    weights: object
    n_outputs: int
    stats: Callable


def seed_sequence(seed):
    """The random streams' root: `seed` if a SeedSequence, else one of the int >= 0, or of
    fresh entropy for None."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None and (not V.is_int(seed) or seed < 0):
        raise ValueError(f"seed must be None or an integer >= 0, got seed={seed!r}")
    return np.random.SeedSequence(None if seed is None else int(seed))


def seed_entropy(seed):
    """The int >= 0 a seed stands for (fresh entropy for None: one draw, for every run)."""
    return int(seed_sequence(seed).entropy)


def check_args(**args):
    """The checks of one run's arguments (`pgs.rules.parameters.RUN_ARGS`, each by its
    entry of the table; `resolve`'s and the estimators' `_check_params`: one set of
    messages), the arguments normalised."""
    if set(args) != set(RUN_ARGS):
        raise TypeError(f"check_args: unexpected or missing {sorted(set(args) ^ set(RUN_ARGS))}")
    checked = {name: P.check(name, args[name], args["loss"]) for name in RUN_ARGS}
    if checked["l1"] > 0.0 and checked["iterate"] == "random":
        raise ValueError("iterate='random' is not offered with l1 > 0: use 'average' or "
                         "'last' (docs/sparse.md)")
    return checked


#: sigma for a warm start that keeps its model's (what a user's "auto" means with one).
KEEP = "keep"


def resolve(data, *, sigma, seed, saved=None, k_above_rows=False, **args):
    """The `Params` of one run: `check_args` of `args` (`pgs.DEFAULTS` for those not
    given), sigma (a number, or `KEEP` with a warm start) and the seed checked, then
    ``data()``'s `Data` read (after: the arguments' errors come first) and every "auto"
    rule applied, a warm start's ``model.params`` (`saved`) standing for "auto".
    `k_above_rows` lets k exceed the rows silently (the sigma search's splits)."""
    def kept(name, value, default=None):     # (a warm start keeps its model's values)
        return saved.get(name, default) if saved is not None and value == "auto" else value

    r = types.SimpleNamespace(**check_args(**{**{name: D.DEFAULTS[name]
                                                  for name in RUN_ARGS}, **args}))
    r.sigma = V.check_positive("sigma", saved["sigma"] if sigma is KEEP and saved else sigma)
    r.seed = seed_entropy(seed)
    d = data()
    if not k_above_rows:
        V.check_k_rows(r.k, d.m, r.T)
    if r.T is None:
        r.T = D.default_T(d.m, r.k, r.max_passes)
    if r.B == "auto" or (r.B is None and loss_spec(r.loss).auto_radius):
        r.B = saved["B"] if saved is not None else D.auto_B(
            d.y, r.loss, r.p, r.sigma, r.epsilon, d.weights, d.n_outputs)
    r.sampling, r.eta0 = kept("sampling", r.sampling), kept("eta0", r.eta0)
    r.intercept_scaling = kept("intercept_scaling", r.intercept_scaling)
    r.t_offset = kept("t_offset", r.t_offset, 0.0)
    r.intercept_rate = None if saved is None else saved.get("intercept_rate")  # (None: older)
    # The rules read a sample of the rows, but for t_offset's maximum, which needs every
    # row: then one scan of them all serves every rule.
    full = r.schedule == "pgs" and r.t_offset == "auto"

    def stats():            # (an O(nnz) scan: only for the rules that read it)
        return d.stats(r.p / (r.p - 1.0), full)

    if r.l1 > 0.0 and r.p == 2.0:
        # dual averaging's own iterate is the sparse model (docs/sparse.md): the average of
        # the iterates has no zeros
        r.iterate = "last"
    if r.sampling == "auto":
        r.sampling = D.auto_sampling(d.weights)
    if r.intercept_scaling == "auto":
        r.intercept_scaling = D.auto_intercept_scaling(stats())
    icpt = column_value(vars(r))
    if not r.fit_intercept or icpt:
        r.intercept_rate = 0.0
    elif r.intercept_rate is None:
        r.intercept_rate = D.intercept_rate(stats())
    if r.schedule == "asgd":
        r.t_offset = 0.0          # (the paper schedule's; "asgd" has eta0)
        if r.eta0 == "auto":
            r.eta0 = D.auto_eta0(loss_spec(r.loss), r.epsilon, r.sigma, stats(),
                                 icpt * icpt + r.intercept_rate)
        elif not r.sigma * r.eta0 < 1.0:
            raise ValueError(f"eta0 must be below 1 / sigma = {1.0 / r.sigma!r} (the schedule's "
                             f"first factor 1 - sigma eta0 > 0), got eta0={r.eta0!r}")
    else:
        r.eta0 = None
        if r.t_offset == "auto":
            r.t_offset = D.auto_t_offset(stats(), d.y, loss=r.loss, p=r.p, sigma=r.sigma,
                                         B=r.B, icpt=icpt, epsilon=r.epsilon, weights=d.weights,
                                         sampling=r.sampling, n_outputs=d.n_outputs)
    return Params(**{name: getattr(r, name) for name in Params.__dataclass_fields__})
