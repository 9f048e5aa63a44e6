"""`pgs.train`: validate, hand the CSR buffers to the compiled solver, return the iterate."""

import math
import time
import warnings
from typing import NamedTuple

import numpy as np

from pgs import _defaults as D
from pgs import _threads
from pgs import _validation as V
from pgs._chunks import run_chunked, run_threads
from pgs._core import SAMPLING_MODES, mean_loss
from pgs._data import as_csr_buffers, check_targets, entry_problem
from pgs._loss_table import loss_spec
from pgs._model import Model
from pgs._solver import Solver, run_lockstep

_STATUS_MESSAGES = {
    1: "a margin or the iterate became infinite or NaN at iteration {t}: X's values, "
    "sample_weight, intercept_scaling={intercept_scaling!r} and 1/sigma (sigma={sigma!r}) "
    "set its scale; rescale X or bound the domain with B",
    2: "fixed_rows holds a row index outside [0, n_samples)",
    3: "the sampler is missing a buffer (internal error)",
    4: "out of memory for the scratch buffers of a mini-batch at iteration {t}",
}

#: Arguments a warm start must share with the run it continues.
_WARM_START_KEYS = ("loss", "p", "sigma", "k", "B", "schedule", "eta0", "fit_intercept",
                    "intercept", "intercept_scaling", "epsilon", "sampling", "t_offset")


class Progress(NamedTuple):
    """What a `train` callback receives, every `callback_every` iterations.

    Attributes
    ----------
    t : int
        Iterations done (counting those of a warm start's earlier runs).
    T : int
        Iterations the run will do in all.
    seconds : float
        Wall-clock seconds since this call of `train` started.
    loss_estimate : float
        Mean (weighted) loss of the rows sampled since the previous report, each at
        the iterate before its update (a progressive-validation estimate).
    objective_estimate : float
        ``sigma * ||w_t||_p^2 / (2 (p - 1)) + loss_estimate``.
    """

    t: int
    T: int
    seconds: float
    loss_estimate: float
    objective_estimate: float


def default_T(n_samples, k):
    """The default number of iterations: 10 passes' worth of samples, ceil(10 m / k)."""
    return max(1, math.ceil(10 * n_samples / k))


def auto_B(y_kernel, loss, p, sigma, epsilon, sample_weight=None):
    """The radius sqrt(2 (p-1) F(0) / sigma) that always contains the optimum (DESIGN.md 2)."""
    zeros = np.zeros_like(y_kernel)
    f0 = mean_loss(zeros, y_kernel, loss_spec(loss).id, epsilon, sample_weight)
    if f0 <= 0.0:
        # w = 0 is optimal; any positive radius keeps it inside.
        return 1.0
    return math.sqrt(2.0 * (p - 1.0) * f0 / sigma)


def auto_t_offset(stats, y_kernel, *, loss, p, sigma, B, icpt, epsilon, weights, sampling):
    r"""The "auto" iteration offset: ``min(G^2 / (2 sigma F(0)), m)``.

    ``G^2 / (2 sigma F(0))`` minimises the bound ``t0 F(0) + G^2 ln((T + t0) / t0) /
    (2 sigma)`` stated for `t_offset` in `train` as T grows (it does not depend on T, so
    that warm starts and `partial_fit` continue exactly). G bounds the dual norm of every
    sampled gradient: max_i ||(x_i, icpt)||_q times the loss's bound on :math:`|\ell'|`
    (pgs/_loss_table.py; for an unbounded derivative, on the domain of radius B) times the
    sampler's weight factor. The cap m (the number of rows) keeps the extra regulariser
    :math:`t_0 \sigma r(w)` below one pass's worth of data. 0 when w = 0 is optimal.
    `stats` is X's `pgs._defaults.row_stats` (its ``max_q``).
    """
    q = p / (p - 1.0)
    m = y_kernel.shape[0]
    spec = loss_spec(loss)
    f0 = mean_loss(np.zeros_like(y_kernel), y_kernel, spec.id, epsilon, weights)
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


def train(X, y, *, loss=D.DEFAULTS["loss"], p=D.DEFAULTS["p"], sigma=D.DEFAULTS["sigma"],
          T=D.DEFAULTS["T"], k=D.DEFAULTS["k"], B=D.DEFAULTS["B"],
          schedule=D.DEFAULTS["schedule"], eta0=D.DEFAULTS["eta0"],
          iterate=D.DEFAULTS["iterate"], fit_intercept=D.DEFAULTS["fit_intercept"],
          intercept=D.DEFAULTS["intercept"], intercept_scaling=D.DEFAULTS["intercept_scaling"],
          seed=None, epsilon=D.DEFAULTS["epsilon"], sample_weight=None,
          sampling=D.DEFAULTS["sampling"], callback=None, callback_every=None,
          keep_state=False, warm_start=None, n_threads=None, t_offset=D.DEFAULTS["t_offset"],
          sigma_grid=D.DEFAULTS["sigma_grid"],
          validation_fraction=D.DEFAULTS["validation_fraction"], n_jobs=1, merge_every=None):
    r"""Train a linear model with the Primal Gradient Solver.

    Minimises :math:`F(w, b) = \sigma \|w\|_p^2 / (2(p-1)) + \frac1m \sum_i s_i
    \ell(\langle w, x_i\rangle + b, y_i)` (weights :math:`s_i = 1` by default; the bias
    b is free, or with ``intercept="column"`` the weight of a constant column, inside w
    and its norm) by stochastic mirror descent on the dual of the :math:`\ell_p`
    regulariser (Zhu et al. 2009, Figure 1; DESIGN.md 6c). Each iteration costs
    O(non-zeros of the batch), for every p.

    The defaults (`pgs.DEFAULTS`, shared with `PGSClassifier` and `PGSRegressor`) are the
    fastest accurate set-up measured in bench/: the averaged-SGD schedule, the average
    weighted by t, a free bias, a permutation per pass and sigma chosen on held-out
    rows. The paper's set-up is the preset `pgs.PAPER`:
    ``pgs.train(X, y, sigma=1e-4, **pgs.PAPER)``.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix/array, shape (m, n_features)
        Training rows. CSR with float32/float64 data and int32/int64 indices is
        read in place (no copy); anything else is converted once to CSR.
    y : array_like, shape (m,)
        For classification losses any two distinct labels (the smaller one is
        mapped to -1, the larger to +1); for regression losses real targets.
    loss : str, default "hinge"
        Classification: "hinge", "logistic", "squared_hinge", "smooth_hinge",
        "modified_huber". Regression: "squared", "huber", "epsilon_insensitive",
        "absolute".
    p : float in (1, 2], default 2.0
        Norm of the regulariser. p = 2 is Pegasos; p = 1.5 has a pow-free fast path.
    sigma : float > 0 or "auto", default "auto"
        Regularisation strength (Pegasos' lambda). "auto" holds out
        `validation_fraction` of the rows (stratified for classification), trains every
        value of `sigma_grid` on the rest, takes the largest sigma whose held-out accuracy
        (R^2 for regression) is within one standard error of the best, and returns the
        plain fit at that sigma on all the rows (``model.params["sigma"]``; the grid and
        its scores are ``model.sigma_grid`` and ``model.sigma_scores``). The grid runs
        take `GRID_T_FRACTION` of the final fit's passes (pgs/_sigma_auto.py), one
        value per thread at a time (no more state than the fit's), deterministic for a
        seed; `callback` sees the final fit only. A warm start keeps its model's sigma.
    T : int >= 1, optional
        Number of iterations; default ``ceil(10 m / k)`` (ten passes' worth of
        samples). With `warm_start`, the number of further iterations.
    k : int >= 1, default 1
        Mini-batch size; all k margins are taken at the previous iterate. At most
        the number of rows of X (larger is a ValueError).
    B : None, "auto" or float > 0, default None
        Radius of the domain :math:`\|w\|_p \le B` (projection by rescaling).
        "auto" uses :math:`\sqrt{2(p-1)F(0)/\sigma}`, which always contains the
        optimum. None leaves Lipschitz losses unbounded; for the losses whose
        gradient is unbounded ("squared", "squared_hinge", "modified_huber") None
        means "auto", which the convergence theory requires and which keeps the
        iterates finite.
    schedule : {"asgd", "pgs"}, default "asgd"
        The step size :math:`\eta_t` of the mirror descent :math:`z_t = (1 - \sigma
        \eta_t) z_{t-1} - \eta_t g_t`, :math:`w_t = \nabla r^*(z_t)` (DESIGN.md 6c).
        "pgs" is the paper's, :math:`\eta_t = 1 / (\sigma (t + t_0))` (Figure 1: the
        dual average of the subgradients), whose first passes at small sigma are spent
        getting out of its start. "asgd" is averaged SGD's, :math:`\eta_t = \eta_0 (1 +
        \sigma \eta_0 t)^{-3/4}` (Xu 2011; Bottou's svmasgd): a nearly constant step
        for the first :math:`1/(\sigma \eta_0)` iterations, whose noise the average
        removes. On the hard RCV1-like and dense sets it needs 0.14-0.33x the passes of
        scikit-learn's averaged SGD (bench/results/passes.md).
    eta0 : float > 0 or "auto", default "auto"
        The "asgd" schedule's first step (below 1 / sigma). "auto" is
        ``2 / (L R^2)``: L the Lipschitz constant of the loss's derivative (1 for
        the losses with a kink), R^2 the mean squared dual norm of the rows, the bias
        included (`pgs._defaults.auto_eta0`; O(nnz) once). Ignored by "pgs".
    iterate : {"average", "last", "random"}, default "average"
        Which iterate to return: the average of the iterates, weighted by t under
        "asgd" (Lacoste-Julien, Schmidt & Bach 2012: it forgets the start, as the
        uniform average does not) and uniform under "pgs"; the last one; or the
        paper's, drawn uniformly from 1..T by the seed. The paper's guarantee holds in
        expectation over that draw, which is a lottery for one model (a9a, 40 seeds:
        test accuracy 72.1-84.6%, objective up to 4.5x the median's). The last iterate
        keeps a guarantee without it: for p = 2, k = 1 (SGD with steps
        :math:`1/(\sigma t)`) :math:`E F(w_T) - F^* = O(\log T / (\sigma T))` (Shamir &
        Zhang, ICML 2013).
    fit_intercept : bool, default True
        Fit a bias b (`intercept`).
    intercept : {"free", "column"}, default "free"
        "free": b is not regularised and moves by plain SGD steps,
        :math:`b \leftarrow b - 0.01 \bar R^2 \eta_t \ell'` (:math:`\bar R^2` the mean
        squared row norm: as a free column of value :math:`0.1 \bar R` would; scikit-
        learn's SGD and svmasgd take 0.01 eta_t on sparse data). "column": the paper's
        section VII (and LIBLINEAR's): a constant column of value `intercept_scaling`,
        regularised like the rest, :math:`b = s w_b`. X is not copied for either.
    intercept_scaling : float > 0 or "auto", default "auto"
        Value s of the constant column (``intercept="column"``). "auto" is 0.3 times
        the root-mean-square row norm. The bias is penalised by
        :math:`\sigma b^2 / (2 s^2)` and moves by :math:`s^2 |\ell'| \eta_t` per
        sampled row, while the convergence bound grows with
        :math:`G^2 = \max_i \|x_i\|^2 + s^2`. So s much larger than the rows' norm
        makes the bias far noisier than the optimum's scale (hinge under "pgs": b lies
        on a grid of step :math:`s^2 / (\sigma (t + t_0))`, 5 at s = 10, sigma = 1e-4,
        t = 2e5) and the model can collapse until T is well beyond
        :math:`s^2 / (\sigma |b^*|)`.
    seed : None or int >= 0, default None
        Seeds row sampling and the random iterate. The same seed gives a
        bit-identical model. None draws fresh entropy, recorded in
        ``model.params["seed"]``.
    epsilon : float, optional
        Shape parameter of "huber" (delta, default 1.0), "epsilon_insensitive"
        (tube width, default 0.1) and "smooth_hinge" (smoothing width, default 1.0).
    sample_weight : array_like of shape (m,), optional
        Non-negative weights s_i of the empirical risk. With ``sampling="iid"``
        rows are drawn with probability proportional to weight (Vose's alias
        table, built once) and the gradient is scaled by the mean weight, so an
        iteration stays O(k d); with the other modes each row's gradient is
        scaled by its weight.
    sampling : {"auto", "iid", "permutation", "cyclic"}, default "auto"
        How rows are drawn: i.i.d. uniformly with replacement (the paper's, what
        its guarantees assume); a fresh random order every pass (without
        replacement: usually as good in practice, and faster); or the rows in
        the given order (fastest, for data that is already shuffled; the i.i.d.
        analysis does not cover it, and sorted data makes it fail). "auto" is
        "permutation", or "iid" with weights (a permutation would scale each row's
        gradient by its own weight, whose spread can be huge).
    callback : callable, optional
        Called as ``callback(progress)`` with a `Progress` every `callback_every`
        iterations (the kernel runs in chunks between calls and resumes exactly:
        the model is bit-identical to an unsplit run). Returning ``False`` stops
        training; the model then holds the iterations done (`T` is that count,
        and a random iterate not yet reached falls back to the last one).
        A KeyboardInterrupt raised between chunks propagates.
    callback_every : int >= 1, optional
        Iterations between callback calls; default ``min(max(T // 100, 1), 10**6)``.
    keep_state : bool, default False
        Keep the solver's state on the model (1-4 arrays of n_features floats:
        the finished solver's own, not copies) so that it can be continued with
        `warm_start`.
    warm_start : Model, optional
        A model trained with ``keep_state=True`` on data with the same number of
        features and the same loss, p, sigma, k, B, schedule, eta0, fit_intercept,
        intercept, intercept_scaling, epsilon and sampling: runs `T` more iterations,
        continuing its dual accumulator and its PRNG stream. For iterate "last"
        and "average", T1 iterations then T2 more equal T1 + T2 at once, bit for
        bit. For "random", the returned iterate is uniform over all iterations
        (kept from the earlier run with probability T1 / (T1 + T2)).
    n_threads : None
        Deprecated, no effect: the mini-batch threads were removed (on two cores they
        never beat one thread, as every batch's update shares cache lines between
        them). Passing it warns; it will be removed.
    t_offset : float >= 0 or "auto", default "auto"
        The "pgs" schedule's iteration offset t0 (ignored by "asgd"): the iterate is
        :math:`w_t = \nabla r^*(\lambda_t / ((t + t_0)\sigma))`, i.e. the first steps are
        :math:`1/(\sigma(t + t_0))` instead of Pegasos' :math:`1/(\sigma t)`, which at
        small sigma throw the
        first iterates far outside the ball that holds the optimum. This is dual
        averaging with the extra proximal term :math:`t_0 \sigma r(w)` (Xiao 2010;
        for p = 2 and k = 1 it is SGD with step :math:`1/(\sigma(t + t_0))`, scikit-
        learn's "optimal" schedule). Its regret bound gains :math:`t_0 \sigma r(w^*)
        \le t_0 F(0)` and its sum of steps shrinks to :math:`\ln((T + t_0)/t_0)`, so
        the :math:`O(\log T / (\sigma T))` rate of the random and average iterates
        holds, plus :math:`t_0 F(0) / T`: with G a bound on the sampled gradients'
        dual norm, the random or average iterate has
        :math:`E F(\bar w) - F^* \le (t_0 F(0) + G^2 \ln((T + t_0)/t_0) / (2\sigma)) / T`
        (for t0 > 0; t0 = 0 gives Pegasos' :math:`G^2 (1 + \ln T) / (2 \sigma T)`).
        0 is the paper's Figure 1. "auto" takes :math:`t_0 = G^2 / (2\sigma F(0))`,
        which minimises this bound for large T, capped at m (one pass's worth of
        data), with G from the largest row norm (intercept column included), the
        loss's derivative bound and the weights (`auto_t_offset`; O(nnz) once). A warm
        start keeps its model's t0. The value used is ``model.params["t_offset"]``.
    sigma_grid : sequence of float > 0, optional
        The values ``sigma="auto"`` tries; default 7 values, ``10**[-2, -1.5, ..., 1]``
        times ``mean_i ||x_i||^2 / m`` (the best sigma scales as the squared row norm
        and, for a fixed task, shrinks as 1/m).
    validation_fraction : float in (0, 1), default 0.2
        Share of the rows ``sigma="auto"`` holds out to score the grid.
    n_jobs : int >= 1, default 1
        Threads. 1 is the plain run above. W > 1 splits the rows into W contiguous
        shards, one per thread, and runs rounds: each thread runs its share of
        ``W * merge_every`` iterations of PGS on its shard from the common state (its
        own random stream), then the states are merged by adding the dual
        accumulators (docs/parallel.md). The model is a function of (seed, W,
        merge_every) only: bit-identical run to run, whatever the thread scheduling,
        but not equal to the run with another W.
    merge_every : int >= 1, optional
        Iterations per thread per round (with ``n_jobs > 1``); default
        ``max(1, m // (4 W k))``: a round covers a quarter of a pass.

    Returns
    -------
    Model
        With ``coef``, ``intercept``, ``iteration``, ``T``, ``classes`` and
        ``decision_function``, ``predict``, ``objective``.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, naming the argument and the value. A CSR
        ``X`` (used in place) has its index pointer checked up front and its
        entries (column indices in range, finite values) checked by the solver
        as it reads each row: a bad row stops training before it changes the
        model, and rows that are never drawn are not inspected. A full scan up
        front would cost as much as a pass with ``sampling="cyclic"``. Other
        input is converted and then checked in full.
    DivergedError
        If the iterate overflows (huge feature values, intercept_scaling or 1/sigma): a
        `FloatingPointError` and a `ValueError` naming what sets the scale.
    KeyboardInterrupt
        On Ctrl-C, within milliseconds: the kernel runs in chunks (`pgs._chunks`), and
        nothing the caller holds is changed.

    References
    ----------
    Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex
    Regularized Learning", ICDM 2009, Figure 1 and section VII.
    """
    from pgs import _sigma_auto  # (it imports this module)
    _sigma_auto.check_sigma_grid(sigma_grid)
    _sigma_auto.check_validation_fraction(validation_fraction)
    if _sigma_auto.is_auto(sigma):
        return _sigma_auto.train_auto(
            X, y, sigma_grid=sigma_grid, validation_fraction=validation_fraction, seed=seed,
            warm_start=warm_start, loss=loss, p=p, T=T, k=k, B=B, schedule=schedule,
            eta0=eta0, iterate=iterate, fit_intercept=fit_intercept, intercept=intercept,
            intercept_scaling=intercept_scaling,
            epsilon=epsilon, sample_weight=sample_weight, sampling=sampling,
            callback=callback, callback_every=callback_every, keep_state=keep_state,
            n_threads=n_threads, t_offset=t_offset, n_jobs=n_jobs, merge_every=merge_every)
    return _fit(X, y, loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, schedule=schedule,
                eta0=eta0, iterate=iterate, fit_intercept=fit_intercept, intercept=intercept,
                intercept_scaling=intercept_scaling, seed=seed,
                epsilon=epsilon, sample_weight=sample_weight, sampling=sampling,
                callback=callback, callback_every=callback_every, keep_state=keep_state,
                warm_start=warm_start, n_threads=n_threads, t_offset=t_offset, n_jobs=n_jobs,
                merge_every=merge_every)


def check_sample_weight(sample_weight, m):
    """Validate weights: a new float64 array, or None when they are all ones."""
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
    if np.all(w == 1.0):
        return None
    return w


def _check_warm_start(warm_start, params, n_features, iterate):
    """The state to resume from, after checking it fits this call."""
    if warm_start is None:
        return None
    if not isinstance(warm_start, Model):
        raise TypeError(f"warm_start must be a pgs.Model, got {type(warm_start).__name__}")
    state = getattr(warm_start, "_state", None)
    if state is None:
        raise ValueError("warm_start model has no solver state: train it with keep_state=True")
    if warm_start.n_features != n_features:
        raise ValueError(f"warm_start model has {warm_start.n_features} features, "
                         f"X has {n_features}")
    for key in _WARM_START_KEYS:
        saved = warm_start.params.get(key, D.LEGACY_PARAMS.get(key))
        if saved != params[key]:
            raise ValueError(f"warm_start model was trained with {key}="
                             f"{saved!r}, this call has {key}={params[key]!r}")
    if iterate == "average" and state["wsum"] is None:
        raise ValueError("iterate='average' needs a warm_start model trained with "
                         "iterate='average'")
    if iterate == "random" and state["w_pick"] is None:
        raise ValueError("iterate='random' needs a warm_start model trained with "
                         "iterate='random'")
    return state


class _Run(NamedTuple):
    """One validated `train` call, ready to run: its solver and what `_finish` needs."""

    solver: Solver
    Xb: object
    y_kernel: np.ndarray
    weights: object
    fixed_rows: object
    t_total: int
    t_pick: int
    state: object
    params: dict
    classes: object
    n_features: int


def _fit(X, y, *, callback=None, callback_every=None, keep_state=False, n_jobs=1,
         merge_every=None, **kwargs):
    """`train` with a test hook: `fixed_rows` replaces the sampler's row draws (every
    internal path of the kernel is reached through the public parameters).

    `known_classes` (two labels, for the estimators' one-vs-rest problems) lets y hold
    only one of them, as a batch of a stream can; a warm start implies its model's.
    """
    start = time.perf_counter()
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}")
    callback_every = V.check_count("callback_every", callback_every, allow_none=True)
    if not isinstance(keep_state, (bool, np.bool_)):
        raise TypeError(f"keep_state must be a bool, got {keep_state!r}")
    n_jobs = V.check_count("n_jobs", n_jobs)
    merge_every = V.check_count("merge_every", merge_every, allow_none=True)
    if n_jobs > 1 and kwargs.get("fixed_rows") is not None:
        raise ValueError("fixed_rows is not supported with n_jobs > 1")
    run = _prepare(X, y, track_loss=callback is not None, **kwargs)
    if n_jobs > 1:
        stopped = _threads.run_threads(run, n_jobs, merge_every, callback, callback_every, start)
    else:
        stopped = _run_chunks(run, callback, callback_every, start)
    return _finish(run, stopped, keep_state)


#: Rows a solver takes per turn in `_fit_many`'s lock-step: about 230 KB of RCV1-like
#: rows, so that a turn's rows are still in L2 when the next problem takes them.
LOCKSTEP_ROWS = 256


def _fit_many(X, ys, *, n_jobs=1, keep_state=False, warm_starts=None, seed=None,
              per_problem=None, **kwargs):
    """`_fit` for several target vectors over the same X, e.g. one-vs-rest problems.

    Problem ``i`` is ``_fit(X, ys[i], seed=seed, warm_start=warm_starts[i],
    **per_problem[i], ...)`` and gives exactly its model, bit for bit (`per_problem`:
    optional dicts of the arguments that differ, e.g. `pgs._sigma_auto`'s sigma grid).
    The problems share the seed, so they draw the same rows, and running them in
    lock-step (`pgs._solver.run_lockstep`: each in turn takes the next `LOCKSTEP_ROWS`
    rows) fetches each row from memory once for them all.
    `n_jobs` threads take contiguous groups of problems (the kernel drops the GIL); a
    single problem is instead split by rows between them (`pgs.train`'s ``n_jobs``).
    """
    if V.check_seed(seed) is None:
        # One fresh seed for all (not one each: they would draw different rows).
        seed = int(np.random.SeedSequence().entropy)
    if kwargs.get("fixed_rows") is not None:
        raise ValueError("fixed_rows is not supported for several problems")
    if warm_starts is None:
        warm_starts = [None] * len(ys)
    if per_problem is None:
        per_problem = [{}] * len(ys)
    X = as_csr_buffers(X, check_entries=False)        # converted once, for all
    runs = [_prepare(X, y, seed=seed, warm_start=warm, **{**kwargs, **extra})
            for y, warm, extra in zip(ys, warm_starts, per_problem, strict=True)]
    if not runs:
        return []
    if len(runs) == 1 and n_jobs > 1 and runs[0].Xb.shape[0] > 1:
        # One problem (binary, regression): its rows are split between the threads,
        # which merge their dual states (pgs/_threads.py, default merge_every).
        stopped = _threads.run_threads(runs[0], min(n_jobs, runs[0].Xb.shape[0]), None,
                                       None, None, 0.0)
        return [_finish(runs[0], stopped, keep_state)]
    Xb = runs[0].Xb
    n_groups = max(1, min(n_jobs, len(runs)))
    bounds = [g * len(runs) // n_groups for g in range(n_groups + 1)]
    block = max(1, LOCKSTEP_ROWS // runs[0].solver.k)

    def run_group(g, stop=None):
        group = runs[bounds[g]:bounds[g + 1]]
        t_ends = {run.t_total for run in group}
        if len(t_ends) > 1:               # (cannot share turns; each runs alone)
            for run in group:
                _run_chunks(run, None, None, 0.0, stop)
            return
        solvers = [run.solver for run in group]

        def advance(t_end):
            # (a solver's bits do not depend on the schedule: chunks change nothing)
            failed, status = run_lockstep(solvers, t_end, block, Xb.data, Xb.indices,
                                          Xb.indptr, [run.y_kernel for run in group],
                                          group[0].weights)
            if failed >= 0:
                _raise_status(status, group[failed].solver, Xb, group[failed].params)

        run_chunked(advance, min(s.t for s in solvers), t_ends.pop(),
                    len(group) * _work_per_iteration(group[0]), stop)

    if n_groups == 1:
        run_group(0)
    else:
        # (the main thread waits so that Ctrl-C reaches it; the workers then stop)
        run_threads(run_group, n_groups)
    return [_finish(run, False, keep_state) for run in runs]


def _prepare(X, y, *, loss=D.DEFAULTS["loss"], p=D.DEFAULTS["p"], sigma, T=None, k=1,
             B=None, schedule=D.DEFAULTS["schedule"], eta0=D.DEFAULTS["eta0"],
             iterate=D.DEFAULTS["iterate"], fit_intercept=True,
             intercept=D.DEFAULTS["intercept"],
             intercept_scaling=D.DEFAULTS["intercept_scaling"], seed=None, epsilon=None,
             sample_weight=None, sampling=D.DEFAULTS["sampling"], track_loss=False,
             warm_start=None, n_threads=None, t_offset=D.DEFAULTS["t_offset"],
             fixed_rows=None, known_classes=None, row_stats=None, k_above_rows=False):
    """Validate one `train` call and build its solver (see `_fit`); `k_above_rows` lets
    a mini-batch hold more rows than X has (the estimators' partial_fit); `row_stats`
    (`pgs._defaults.row_stats`) stands for X's when X is not here (`pgs.dask`)."""
    loss_id = V.check_loss(loss)
    p = V.check_p(p)
    sigma = V.check_positive("sigma", sigma)
    T = V.check_count("T", T, allow_none=True)
    k = V.check_count("k", k)
    B = V.check_B(B)
    schedule = V.check_choice("schedule", schedule, D.SCHEDULES)
    eta0 = V.check_auto_or_positive("eta0", eta0)
    iterate = V.check_iterate(iterate)
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise TypeError(f"fit_intercept must be a bool, got {fit_intercept!r}")
    intercept = V.check_choice("intercept", intercept, D.INTERCEPTS)
    intercept_scaling = V.check_auto_or_positive("intercept_scaling", intercept_scaling)
    seed = V.check_seed(seed)
    epsilon = V.check_epsilon(loss, epsilon)
    sampling = V.check_choice("sampling", sampling, SAMPLING_MODES + ("auto",))
    if n_threads is not None:
        V.check_count("n_threads", n_threads)
        warnings.warn("n_threads has no effect (the mini-batch threads were removed) and "
                      "will be removed", DeprecationWarning, stacklevel=3)
    t_offset = V.check_t_offset(t_offset, allow_auto=True)

    # Entries are checked by the kernel as it reads each row (see _margin).
    Xb = as_csr_buffers(X, check_entries=False)
    m, n_features = Xb.shape
    classification = loss in V.CLASSIFICATION_LOSSES
    if known_classes is None:
        known_classes = getattr(warm_start, "classes", None)
    y_kernel, classes = check_targets(y, m, classification=classification,
                                      classes=known_classes)
    weights = check_sample_weight(sample_weight, m)
    if k > m and not k_above_rows:
        # (the kernel would draw every batch's rows more than once: almost surely a
        # mistake; partial_fit's small batches pass k_above_rows)
        raise ValueError(f"k must be at most the number of rows of X, got k={k} for "
                         f"{m} rows")
    if T is None:
        T = default_T(m, k)

    if B == "auto" or (B is None and loss in V.UNBOUNDED_GRADIENT_LOSSES):
        if warm_start is None:
            B = auto_B(y_kernel, loss, p, sigma, epsilon, weights)
        else:
            B = warm_start.params["B"]

    # The "auto" rules (pgs/_defaults.py); a warm start keeps its model's values.
    if warm_start is not None:
        saved = warm_start.params
        sampling = saved["sampling"] if sampling == "auto" else sampling
        intercept_scaling = (saved["intercept_scaling"] if intercept_scaling == "auto"
                             else intercept_scaling)
        eta0 = saved.get("eta0") if eta0 == "auto" else eta0
        t_offset = saved.get("t_offset", 0.0) if t_offset == "auto" else t_offset
    def stats():            # (an O(nnz) scan: only for the rules that read it)
        return D.row_stats(Xb, p / (p - 1.0)) if row_stats is None else row_stats

    if sampling == "auto":
        sampling = D.auto_sampling(weights)
    if intercept_scaling == "auto":
        intercept_scaling = D.auto_intercept_scaling(stats())
    column = fit_intercept and intercept == "column"
    icpt = intercept_scaling if column else 0.0
    icpt_rate = D.intercept_rate(stats()) if fit_intercept and not column else 0.0
    if schedule == "asgd":
        t_offset = 0.0          # (the paper schedule's; "asgd" has eta0)
        if eta0 == "auto":
            eta0 = D.auto_eta0(loss_spec(loss), epsilon, sigma, stats(),
                               icpt * icpt + icpt_rate)
        elif not sigma * eta0 < 1.0:
            raise ValueError(f"eta0 must be below 1 / sigma = {1.0 / sigma!r} (the "
                             f"schedule's first factor 1 - sigma eta0 > 0), got eta0={eta0!r}")
    else:
        eta0 = None
        if t_offset == "auto":
            t_offset = auto_t_offset(stats(), y_kernel, loss=loss, p=p, sigma=sigma, B=B,
                                     icpt=icpt, epsilon=epsilon, weights=weights,
                                     sampling=sampling)
    params = dict(loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, schedule=schedule, eta0=eta0,
                  iterate=iterate, fit_intercept=bool(fit_intercept), intercept=intercept,
                  intercept_scaling=intercept_scaling, seed=None, epsilon=epsilon,
                  sampling=sampling, t_offset=t_offset)
    state = _check_warm_start(warm_start, params, n_features, iterate)
    if state is not None and classes is not None and warm_start.classes is not None \
            and not np.array_equal(classes, warm_start.classes):
        raise ValueError(f"y's classes {classes} differ from the warm_start model's "
                         f"{warm_start.classes}")

    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    params["seed"] = seq.entropy
    rng_state = seq.generate_state(4, dtype=np.uint64)
    pick_rng = np.random.default_rng(seq.spawn(1)[0])
    t0 = 0 if state is None else int(state["t"])
    t_total = t0 + T
    t_pick = 0
    if iterate == "random":
        # Uniform over 1..t_total; with a warm start, the earlier pick is kept
        # with probability t0 / t_total (then no new iterate needs keeping).
        if state is None or pick_rng.random() < T / t_total:
            t_pick = int(pick_rng.integers(t0 + 1, t_total + 1))
        else:
            t_pick = -1

    solver = Solver(n_features, loss_id, p, sigma, B if B is not None else 0.0, icpt, epsilon,
                    k, max(t_pick, 0), iterate == "average", rng_state,
                    SAMPLING_MODES.index(sampling), track_loss, t_offset,
                    D.SCHEDULES.index(schedule), eta0 or 0.0, icpt_rate)
    if state is not None:
        solver.set_state(state)
        if t_pick != -1:
            solver.set_t_pick(t_pick)
    if fixed_rows is not None:
        fixed_rows = np.ascontiguousarray(fixed_rows, dtype=np.int64)
        if fixed_rows.ndim != 1 or fixed_rows.shape[0] < T * k:
            raise ValueError(f"fixed_rows is shorter than t_end * k = {T * k}")

    return _Run(solver, Xb, y_kernel, weights, fixed_rows, t_total, t_pick, state, params,
                classes, n_features)


def _finish(run, stopped, keep_state):
    """The `Model` of a run that `_run_chunks` (or `run_lockstep`) has done."""
    solver, params, iterate = run.solver, run.params, run.params["iterate"]
    t_done = solver.t
    n_features = run.n_features
    t_pick = run.t_pick
    if iterate == "random":
        if t_pick == -1:
            t_pick = int(run.state["t_pick"])
        which, iteration = ("pick", t_pick) if t_pick <= t_done else ("last", t_done)
    else:
        which, iteration = iterate, t_done
    # The solver is done: without keep_state the iterate is computed in one of its
    # buffers, with keep_state the model keeps its buffers as the state and the iterate
    # is the one new vector. Either way no copy of the state (the memory budget).
    bias = solver._scalars()
    if keep_state:
        solver.finish()
        w = solver.iterate(which)
        state = solver.get_state(copy=False)
    else:
        w, state = solver.take(which), None

    params["T"] = t_done
    model = Model(coef=w[:n_features], intercept=_intercept(params, w[n_features], bias,
                                                             which),
                  iteration=iteration, T=t_done, classes=run.classes, params=params)
    if stopped:
        model.params["stopped_early"] = True
    if keep_state:
        model._state = state
    return model


def _intercept(params, w_column, bias, which):
    """The model's bias: the constant column's weight times its value, or the free bias
    of the iterate `which` (`bias`: the solver's scalars b, b_sum, rho_sum and b_pick)."""
    if not params["fit_intercept"]:
        return 0.0
    if params["intercept"] == "column":
        return w_column * params["intercept_scaling"]
    if which == "average":
        return bias["b_sum"] / bias["rho_sum"] if bias["rho_sum"] > 0.0 else 0.0
    return bias["b_pick"] if which == "pick" else bias["b"]


class DivergedError(FloatingPointError, ValueError):
    """The iterate overflowed: a FloatingPointError (as before) that is also a ValueError,
    as the error contract promises for arguments that set too large a scale."""


def _raise_status(status, solver, Xb, params):
    """Raise the error a non-zero kernel status stands for (naming a bad entry of X)."""
    if status == 1:
        problem = entry_problem(Xb)
        if problem is not None:
            raise ValueError(problem)
    msg = _STATUS_MESSAGES.get(status, "solver failed with status {status}")
    error = {1: DivergedError, 4: MemoryError}.get(status, ValueError)
    raise error(msg.format(t=solver.t + 1, status=status, sigma=params["sigma"],
                           intercept_scaling=params["intercept_scaling"]))


def _work_per_iteration(run):
    """Non-zeros an iteration of `run` reads: k rows of the mean row's non-zeros."""
    Xb = run.Xb
    return run.solver.k * max(1.0, Xb.indptr[-1] / max(1, Xb.shape[0]))


def _run_chunks(run, callback, every, start, stop=None):
    """Run the kernel to `run.t_total`, in chunks between callback calls; True if stopped.

    `stop` (a threading.Event, for worker threads) ends the run at its next chunk."""
    solver, Xb = run.solver, run.Xb
    sigma, p, t_total = run.params["sigma"], run.params["p"], run.t_total

    def advance(t_end):
        status = solver.run(t_end, Xb.data, Xb.indices, Xb.indptr, run.y_kernel,
                            run.fixed_rows, run.weights)
        if status != 0:
            _raise_status(status, solver, Xb, run.params)

    def run_to(t_end):
        # The kernel returns to Python every chunk (`pgs._chunks`), so that Ctrl-C
        # interrupts a long run promptly: chunked runs are bit-identical to an unsplit one.
        run_chunked(advance, solver.t, t_end, _work_per_iteration(run), stop)

    if callback is None:
        run_to(t_total)
        return False
    if every is None:
        every = min(max((t_total - solver.t) // 100, 1), 10**6)
    while solver.t < t_total:
        loss_before, rows_before = solver.loss_sum, solver.consumed
        run_to(min(solver.t + every, t_total))
        rows = solver.consumed - rows_before
        loss_est = (solver.loss_sum - loss_before) / rows if rows else float("nan")
        reg = sigma * solver.norm_w**2 / (2.0 * (p - 1.0))
        progress = Progress(t=solver.t, T=t_total, seconds=time.perf_counter() - start,
                            loss_estimate=loss_est, objective_estimate=reg + loss_est)
        if callback(progress) is False:
            return solver.t < t_total
    return False
