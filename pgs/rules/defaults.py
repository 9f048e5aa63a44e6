"""The default policy: every training default and every "auto" rule, in one place.

`pgs.train`, the scikit-learn estimators and the command line read their defaults from
`DEFAULTS` (the estimators' signatures and the CLI's help are built from it: tests check
that they agree), and `pgs.train` resolves every "auto" value with the functions below,
so ``pgs.train(X, y, seed=s)`` and ``PGSClassifier(random_state=s).fit(X, y)`` give the
same model for the same binary data.

The defaults are the fastest accurate set-up measured in bench/ (bench/results/passes.md):
the averaged-SGD schedule with eta0 from the data, the iterates averaged
with weights proportional to t, a free intercept, a permutation per pass and sigma chosen
on held-out rows. The PGS paper's set-up (Zhu et al. 2009, Figure 1 and section VII) is
the preset `PAPER`: ``pgs.train(X, y, sigma=1e-4, **pgs.PAPER)``.
"""

import math
from types import MappingProxyType

import numpy as np

from pgs import _core

#: Step schedules (docs/design.md 6c): "pgs", the paper's eta_t = 1 / (sigma (t + t0)), with
#: the uniform average; "asgd", eta_t = eta0 (1 + sigma eta0 t)^(-3/4) (Xu 2011, Bottou's
#: svmasgd), with the average weighted by t (Lacoste-Julien, Schmidt & Bach 2012).
SCHEDULES = ("pgs", "asgd")

#: How the bias is fitted: "free", unregularised, by plain SGD steps of `intercept_rate`
#: times the schedule's eta_t (as scikit-learn's SGD and svmasgd); "column", a constant
#: column of value intercept_scaling, regularised like the weights (the paper's VII).
INTERCEPTS = ("free", "column")

#: The training defaults of `pgs.train`, `PGSClassifier` and `PGSRegressor` (the
#: regressor's loss is "squared") and the CLI.
DEFAULTS = MappingProxyType(dict(
    loss="hinge", p=2.0, sigma="auto", T=None, k=1, B=None, schedule="asgd", eta0="auto",
    iterate="average", fit_intercept=True, intercept="free", intercept_scaling="auto",
    epsilon=None, sampling="auto", t_offset="auto", sigma_grid=None,
    validation_fraction="auto", max_passes=10.0,
))

#: The PGS paper's set-up (Figure 1: i.i.d. rows, steps 1 / (sigma t), a random iterate;
#: section VII: a regularised constant column of value 1), as arguments of `pgs.train`.
PAPER = MappingProxyType(dict(
    schedule="pgs", sampling="iid", iterate="random", t_offset=0, intercept="column",
    intercept_scaling=1.0,
))

#: What a model saved before the schedules and the free intercept was trained with.
LEGACY_PARAMS = MappingProxyType(dict(schedule="pgs", eta0=None, intercept="column"))

#: "auto" intercept_scaling as a fraction of the root-mean-square row norm (measured on
#: L2-normalised sparse text: bench/experiments/exp_ovr_gap.py).
AUTO_INTERCEPT_FRACTION = 0.3

#: The free bias moves as a free column of value s would, s^2 = this times the mean
#: squared row norm: a bias step as large as the weights' makes it the noisiest
#: coordinate, as every row carries it (scikit-learn's SGD and svmasgd take 0.01 eta_t on
#: sparse data; on bench.harness.data.dense_hard too, logistic, one seed, 0.01 gave 1.1-2.3
#: points more test accuracy than 1 in the first two passes).
INTERCEPT_RATE = 0.01

#: The "auto" eta0 is this over the smoothness bound L R^2 (factors 1, 2, 4, medians of 4
#: seeds: from 1 to 2 the dense hard set gained 0.7 (logistic) and 1.1 (hinge) points at
#: one pass; the hard RCV1-like set lost 0.0-0.2 (logistic) and gained 0.3-0.6 (hinge)
#: over passes 1-3; 4 gained little more on the first and lost on the second).
ETA0_FACTOR = 2.0


#: sigma="auto" holds out this share of the rows ...
VALIDATION_FRACTION = 0.2
#: ... but no more than this many: 10,000 rows measure an accuracy to 0.5 points (the
#: paired differences the search compares, far better), and a training split short of
#: 20% lost 1.1 points of test accuracy on 200k rows of the hard RCV1-like set (10
#: passes, 0.8337 against 0.8452 on all the rows; 0.8424 with 10,000 held out).
VALIDATION_ROWS = 10_000


def auto_validation_fraction(n_rows):
    """The "auto" `validation_fraction`: `VALIDATION_FRACTION`, at most `VALIDATION_ROWS`
    rows."""
    return min(VALIDATION_FRACTION, VALIDATION_ROWS / max(n_rows, 1))


def auto_sampling(sample_weight):
    """"auto" sampling: "iid" with weights (drawn by weight, each gradient scaled by the
    mean weight; a permutation would scale each by its own, whose spread can be huge),
    else a fresh permutation every pass."""
    return "iid" if sample_weight is not None else "permutation"


#: The "auto" rules read the mean ||x_i||_2^2 and ||x_i||_q^2 of about this many rows (one
#: in `q_stride`, chosen by a hash of the row's index: every 6th row of MNIST was 5-6% off
#: the mean, its rows' order having a period). A full scan cost 19% (p = 2, bound by
#: reading X) to 45% (other p: the q-th power) of a one-pass call on 200k RCV1-like rows;
#: a mean of 10,000 rows drawn at random is within a few tenths of a percent, far finer
#: than a step size needs.
Q_SAMPLE_ROWS = 10_000


def q_stride(n_rows):
    """One row in how many is read: all of them up to 2 `Q_SAMPLE_ROWS` rows."""
    return max(1, n_rows // Q_SAMPLE_ROWS)


def row_sq_norms(Xb, q=2.0, stride=1, first=0):
    """``||x_i||_2^2`` and ``||x_i||_q^2`` of every row, or of about one row in `stride`.

    Parameters
    ----------
    Xb : pgs.rules.data.CSRBuffers
        The rows.
    q : float, default 2.0
        The dual norm's exponent, ``p / (p - 1)``.
    stride, first : int, default 1 and 0
        The rows read: those whose index in the whole X (`first`: that of `Xb`'s first
        row) hashes to a multiple of `stride` (`pgs._core.row_norms`).

    Returns
    -------
    sq, sq_q : ndarray of float64
        One value a row read (the same array for q = 2), compiled (`pgs._core.row_norms`,
        the GIL released): a row's values depend on its entries alone, so they have the
        same bits however X is split.
    """
    return _core.row_norms(Xb.data, Xb.indptr, float(q), int(stride), int(first))


def row_stats(Xb, q=2.0, norms=None, full=False):
    """What the "auto" rules read of X: ``{"rows", "read", "sq", "sq_q", "max_q"}``: the
    number of rows, the number read (one in `q_stride`; all if `full`), the sums of their
    ``||x_i||_2^2`` and ``||x_i||_q^2`` and ``max ||x_i||_q`` (NaN if X holds a NaN).
    Sums are rounded once (math.fsum: the same however X is split; `pgs.dask` passes its
    shards' `row_sq_norms` as `norms`). Cached on `Xb`, made once per call or fit: one
    scan for all its rules and fits. Not across calls: a cache keyed on the caller's X
    would be stale once X is changed in place (bench/results/pcost.md: the scan's share of
    a call)."""
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
