"""The default policy: every "auto" rule, in one place.

`pgs.train`, the estimators (their signatures) and the command line (its help) read their
defaults from `DEFAULTS` (`pgs.rules.parameters`, beside the values each parameter takes),
and `pgs.train` resolves every "auto" value with the functions below: ``pgs.train(X, y,
seed=s)`` and ``PGSClassifier(random_state=s).fit(X, y)`` give the same model on binary
data. They are the fastest accurate set-up measured (bench/results/passes.md,
docs/defaults.md); the PGS paper's (Zhu et al. 2009) is `PAPER`.
"""

import math
from types import MappingProxyType

import numpy as np

from pgs import _core
from pgs.rules import validation as V
from pgs.rules.losses import loss_spec
from pgs.rules.parameters import DEFAULTS

#: The PGS paper's set-up (Figure 1: i.i.d. rows, steps 1 / (sigma t), a random iterate;
#: section VII: a regularised constant column of value 1), as arguments of `pgs.train`.
PAPER = MappingProxyType(dict(
    schedule="pgs", sampling="iid", iterate="random", t_offset=0, intercept="column",
    intercept_scaling=1.0,
))

#: "auto" intercept_scaling as a fraction of the root-mean-square row norm (measured on
#: L2-normalised sparse text: bench/results/ovr_gap_quick.md).
AUTO_INTERCEPT_FRACTION = 0.3

#: The free bias moves as a free column of value s would, s^2 = this times the mean
#: squared row norm (a smaller step: every row carries it; docs/defaults.md 8).
INTERCEPT_RATE = 0.01

#: The "auto" eta0 is this over the smoothness bound L R^2 (docs/defaults.md 8).
ETA0_FACTOR = 2.0


def default_T(n_samples, k, passes=DEFAULTS["max_passes"]):
    """The iterations of `passes` passes: ``ceil(passes m / k)`` (at least 1); a ValueError
    naming max_passes past the 2**62 iterations a run counts."""
    T = passes * n_samples / k
    if not T <= V.MAX_COUNT:            # (NaN too)
        raise ValueError(f"max_passes={passes!r} makes {T:.3g} iterations (max_passes m / k, "
                         f"m={n_samples}, k={k}), more than the 2**62 a run can count")
    return max(1, math.ceil(T))


def default_callback_every(t_left):
    """Iterations between a callback's reports: about 100 reports, at most 10**6 apart."""
    return min(max(t_left // 100, 1), 10**6)


#: sigma="auto"'s default grid: these factors times ``mean_i ||x_i||^2 / m`` (scale-free,
#: and moving as 1/m as the best sigma does; bench/experiments/exp_defaults.py measured
#: best factors of 0.03-3).
DEFAULT_GRID_FACTORS = tuple(float(c) for c in 10.0 ** np.arange(-2.0, 1.01, 0.5))


def default_sigma_grid(mean_sq, n_rows):
    """`DEFAULT_GRID_FACTORS` times ``mean_i ||x_i||^2 / m`` over the `n_rows` rows trained
    on (``mean_i ||x_i||^2``: `mean_sq`, 1 if X is 0)."""
    return np.asarray(DEFAULT_GRID_FACTORS) * (mean_sq / max(n_rows, 1))


#: sigma="auto" holds out this share of the rows, at most `VALIDATION_ROWS` (docs/defaults.md 2).
VALIDATION_FRACTION = 0.2
VALIDATION_ROWS = 10_000


def auto_validation_fraction(n_rows):
    """The "auto" `validation_fraction`: `VALIDATION_FRACTION`, at most `VALIDATION_ROWS`
    rows."""
    return min(VALIDATION_FRACTION, VALIDATION_ROWS / max(n_rows, 1))


#: sigma="auto"'s successive halving (docs/defaults.md 3): every candidate runs this many
#: passes of the training split before the first cut, each later rung doubling them for
#: the better half ...
FIRST_RUNG_PASSES = 0.25
#: ... and at least this many rows (a quarter pass of a small set ranks them by noise);
#: the last two race on to this many passes ...
FIRST_RUNG_ROWS, RACE_PASSES = 2_500, 2.0
#: ... within this share of the run's iterations (T, or max_passes): the winner goes on
#: with every row, the held-out ones too, for the rest (docs/defaults.md 4).
SEARCH_SHARE = 0.5

#: The winner's held-out score is taken every pass, or every this many rows if a pass is
#: shorter (small sets: as many passes as before the rule, at little cost) ...
CHECK_ROWS = 10_000
#: ... and the run stops after this many scores in a row no better than the best so far
#: (measured: docs/defaults.md 4).
N_ITER_NO_CHANGE = 3
#: The share of the held-out rows that stay out after the search (the rest join the
#: training): the rows the stop is read on, never trained on (docs/defaults.md 4).
STOP_FRACTION = 0.5


def auto_sampling(sample_weight):
    """"auto" sampling: "iid" with weights (drawn by weight, each gradient scaled by the
    mean weight; a permutation would scale each by its own, whose spread can be huge),
    else a fresh permutation every pass."""
    return "iid" if sample_weight is not None else "permutation"


#: The "auto" rules read the mean ||x_i||_2^2 and ||x_i||_q^2 of about this many rows (one
#: in `q_stride`, chosen by a hash of the row's index; docs/defaults.md 6).
Q_SAMPLE_ROWS = 10_000


def q_stride(n_rows):
    """One row in how many is read: all of them up to 2 `Q_SAMPLE_ROWS` rows."""
    return max(1, n_rows // Q_SAMPLE_ROWS)


def row_sq_norms(Xb, q=2.0, stride=1, first=0):
    """``||x_i||_2^2`` and ``||x_i||_q^2`` of the rows of `Xb` (`pgs.rules.data.CSRBuffers`),
    or of about one in `stride` (`first`: the index of its first row in the whole X): the
    compiled `pgs._core.row_norms`, the same bits however X is split."""
    return _core.row_norms(Xb.data, Xb.indptr, float(q), int(stride), int(first))


def row_stats(Xb, q=2.0, norms=None, full=False):
    """What the "auto" rules read of X: ``{"rows", "read", "sq", "sq_q", "max_q"}``: the
    number of rows, the number read (one in `q_stride`; all if `full`), the sums of their
    ``||x_i||_2^2`` and ``||x_i||_q^2`` and ``max ||x_i||_q`` (NaN if X holds a NaN).
    Sums are rounded once (math.fsum: the same however X is split; `pgs.dask` passes its
    shards' `row_sq_norms` as `norms`). Cached on `Xb`, made once per call or fit (not
    across calls: docs/defaults.md 6)."""
    cache = Xb.__dict__.setdefault("_row_stats", {})
    key = (q, 1 if full else q_stride(Xb.shape[0]))
    if key not in cache:
        sq, sq_q = row_sq_norms(Xb, q, key[1]) if norms is None else norms
        total = _fsum(sq)
        cache[key] = dict(rows=Xb.shape[0], read=sq.shape[0], sq=total,
                          sq_q=total if sq_q is sq else _fsum(sq_q),
                          max_q=math.sqrt(float(np.max(sq_q))) if sq_q.shape[0] else 0.0)
    return cache[key]


def _fsum(values):
    """math.fsum of a float64 array (iterated as a memoryview: Python floats, half the time
    of iterating the array's NumPy scalars)."""
    return math.fsum(memoryview(np.ascontiguousarray(values, dtype=np.float64)))


def _mean(total, rows):
    """total / rows, or 1.0 where that is 0 or not finite (X is 0, or holds NaN: the
    kernel reports the entry when it reads it)."""
    mean = total / max(rows, 1)
    return mean if 0.0 < mean < math.inf else 1.0


def mean_sq(stats):
    """``mean_i ||x_i||^2`` over the rows `row_stats` read."""
    return _mean(stats["sq"], stats["read"])


def auto_intercept_scaling(stats):
    """``AUTO_INTERCEPT_FRACTION * sqrt(mean_i ||x_i||^2)`` (`row_stats`): the constant
    column's value, in proportion to the rows' scale (scaling X by a, and sigma by a^2,
    leaves the decisions unchanged)."""
    return AUTO_INTERCEPT_FRACTION * math.sqrt(mean_sq(stats))


def intercept_rate(stats):
    """The free bias's step, a factor of the schedule's eta_t: `INTERCEPT_RATE` times the
    mean squared row norm, so that scaling X by a (and sigma by a^2) leaves the decisions
    unchanged."""
    return INTERCEPT_RATE * mean_sq(stats)


def auto_eta0(spec, epsilon, sigma, stats, extra):
    r"""The "asgd" schedule's "auto" eta0: ``ETA0_FACTOR / (L R^2)``, below ``1 / (2 sigma)``.

    L is the Lipschitz constant of the loss's derivative (1 for a kink, as for its
    unit-width smoothing), R^2 the rows' mean squared dual norm plus `extra` (the constant
    column's square, or the free bias's rate). ``1 / (L R^2)`` is where a smooth loss's
    SGD is stable; averaging tolerates a larger step (Bach & Moulines 2013), kept for about
    :math:`1 / (\sigma \eta_0)` iterations. The cap keeps :math:`1 - \sigma \eta_t > 0`.
    """
    lip = spec.lipschitz(epsilon)
    if lip is None or not lip > 0.0:
        lip = 1.0
    r2 = _mean(stats["sq_q"], stats["read"]) + extra
    return min(ETA0_FACTOR / (lip * r2), 0.5 / sigma)


def loss_at_zero(y_kernel, loss, epsilon, sample_weight=None, n_outputs=1):
    """F(0), the mean (weighted) loss at w = 0; a K-output loss's is the same for every row:
    log K for "multinomial", 1 for "crammer_singer"."""
    spec = loss_spec(loss)
    if not spec.multiclass:
        return _core.mean_loss(np.zeros_like(y_kernel), y_kernel, spec.id, epsilon,
                               sample_weight)
    f0 = math.log(n_outputs) if loss == "multinomial" else 1.0
    return f0 * (1.0 if sample_weight is None else float(np.mean(sample_weight)))


def auto_B(y_kernel, loss, p, sigma, epsilon, sample_weight=None, n_outputs=1):
    """The radius sqrt(2 (p-1) F(0) / sigma) that always contains the optimum (docs/design.md 2;
    for K outputs every class's ||w_c||_p, as sigma sum_c r(w_c) <= F(0))."""
    f0 = loss_at_zero(y_kernel, loss, epsilon, sample_weight, n_outputs)
    if f0 <= 0.0:
        # w = 0 is optimal; any positive radius keeps it inside.
        return 1.0
    return math.sqrt(2.0 * (p - 1.0) * f0 / sigma)


def auto_t_offset(stats, y_kernel, *, loss, p, sigma, B, icpt, epsilon, weights, sampling,
                  n_outputs=1):
    r"""The "auto" iteration offset: ``min(G^2 / (2 sigma F(0)), m)``, 0 if w = 0 is optimal.

    It minimises `train`'s bound ``t0 F(0) + G^2 ln((T + t0) / t0) / (2 sigma)`` as T grows
    (so warm starts continue exactly), G bounding the sampled gradients' dual norms; the
    cap m keeps the extra regulariser :math:`t_0 \sigma r(w)` below one pass."""
    q = p / (p - 1.0)
    m = y_kernel.shape[0]
    spec = loss_spec(loss)
    f0 = loss_at_zero(y_kernel, loss, epsilon, weights, n_outputs)
    if not f0 > 0.0:
        return 0.0
    gx = (stats["max_q"] ** q + abs(icpt) ** q) ** (1.0 / q)    # max_i ||(x_i, icpt)||_q
    lip = spec.max_dloss(epsilon)
    if lip is None:
        # An unbounded derivative is bounded on the domain, where |z| <= B gx.
        lip = spec.dloss_bound_on(B * gx, float(np.max(np.abs(y_kernel))), epsilon)
    if weights is not None:
        # iid draws rows by weight and scales every gradient by the mean weight; the
        # other modes scale each row's gradient by its own weight.
        lip *= float(np.mean(weights)) if sampling == "iid" else float(np.max(weights))
    g = lip * gx
    t0 = min(g * g / (2.0 * sigma * f0), float(m))    # (g * g: inf, where ** 2 raises)
    # Non-finite entries of X are reported by the kernel (with the entry) when it reads
    # them; they must not turn into a misleading error about t_offset first.
    return t0 if math.isfinite(t0) else 0.0


#: Outputs from which a block pays (a K-output loss's classes, one-vs-rest problems; on
#: one thread, or a worker's): below, its loops over a feature's few coordinates cost more
#: than the lines they save (docs/multiclass.md, bench/results/block_outputs.md).
BLOCK_MIN_OUTPUTS = 8


#: The threads engine's default round: a quarter pass (docs/parallel.md 2).
THREADS_ROUND_PASSES = 0.25
#: `pgs.dask`'s default round: half a pass, the threads engine's doubled, as a round's
#: hand-offs cost milliseconds (docs/parallel.md 4, bench/results/dask_rounds.md).
DASK_ROUND_PASSES = 0.5


def default_merge_every(n_samples, n_workers, k, passes=THREADS_ROUND_PASSES):
    """The default iterations per worker per round, tau: a round of W tau iterations
    covers `passes` of a pass over the data, at least 1."""
    return max(1, int(passes * n_samples) // (n_workers * k))


#: The largest merge step: the merge multiplies a converged direction's error by
#: (1 - gamma) each round, so gamma < 2 is needed (docs/parallel.md 2).
MAX_MERGE_STEP = 1.5


def merge_step_for(n_active):
    """The "asgd" merge's default step for a round run by `n_active` workers:
    ``min(sqrt(n_active), MAX_MERGE_STEP)`` (1 for one worker: its state is taken).
    sqrt(W) times the workers' mean change has one worker's noise and W times its drift
    (docs/parallel.md 2; bench/results/parallel_start.md: 5-28% fewer passes than the mean).
    """
    return 1.0 if n_active <= 1 else min(float(np.sqrt(n_active)), MAX_MERGE_STEP)
