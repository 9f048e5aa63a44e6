"""One validated training run: its arguments checked, its "auto" rules applied, its
solver built (`prepare`), run in chunks or in rounds of threads (`fit`, `fit_many`) and
turned into a `Model` (`finish`)."""

import inspect
import math
import time
import warnings
from typing import NamedTuple

import numpy as np

from pgs._core import SAMPLING_MODES, mean_loss
from pgs.engine import threads
from pgs.engine.chunks import run_chunked, run_threads
from pgs.engine.solver import MultiSolver, Solver, progress, raise_status, run_lockstep
from pgs.models.multiclass import MulticlassModel
from pgs.models.pgs_model import Model
from pgs.rules import defaults as D
from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers, check_targets, class_indices
from pgs.rules.losses import loss_spec

#: Arguments a warm start must share with the run it continues.
_WARM_START_KEYS = ("loss", "p", "sigma", "k", "B", "schedule", "eta0", "fit_intercept",
                    "intercept", "intercept_scaling", "epsilon", "sampling", "t_offset")


def default_T(n_samples, k, passes=D.DEFAULTS["max_passes"]):
    """The iterations of `passes` passes: ``ceil(passes m / k)`` (at least 1)."""
    return max(1, math.ceil(passes * n_samples / k))


def loss_at_zero(y_kernel, loss, epsilon, sample_weight=None, n_outputs=1):
    """F(0), the mean (weighted) loss at w = 0; a K-output loss's is the same for every row:
    log K for "multinomial", 1 for "crammer_singer"."""
    spec = loss_spec(loss)
    if not spec.multiclass:
        return mean_loss(np.zeros_like(y_kernel), y_kernel, spec.id, epsilon, sample_weight)
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
    if not isinstance(warm_start, (Model, MulticlassModel)):
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
    kept = {"average": "wsum", "random": "w_pick"}.get(iterate)    # (what the iterate needs)
    if kept is not None and state[kept] is None:
        raise ValueError(f"iterate={iterate!r} needs a warm_start model trained with "
                         f"iterate={iterate!r}")
    return state


class Run(NamedTuple):
    """One validated `train` call, ready to run: its solver and what `finish` needs."""

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


def fit(X, y, *, callback=None, callback_every=None, keep_state=False, n_jobs=1,
         merge_every=None, **kwargs):
    """`train`, plus `prepare`'s `fixed_rows` (a test hook replacing the sampler's draws)
    and `known_classes` (two labels of which y may hold one, as a stream's batch can)."""
    start = time.perf_counter()
    callback_every, merge_every = check_reports(callback, callback_every, merge_every)
    V.check_bool("keep_state", keep_state)
    n_jobs = V.check_count("n_jobs", n_jobs)
    if n_jobs > 1 and kwargs.get("fixed_rows") is not None:
        raise ValueError("fixed_rows is not supported with n_jobs > 1")
    run = prepare(X, y, track_loss=callback is not None, **kwargs)
    if n_jobs > 1:
        stopped = threads.run_threads(run, n_jobs, merge_every, callback, callback_every, start)
    else:
        stopped = _run_chunks(run, callback, callback_every, start)
    return finish(run, stopped, keep_state)


def check_reports(callback, callback_every, merge_every):
    """The checks of the callback and merge arguments (`fit`'s and `pgs.dask.train`'s):
    (callback_every, merge_every)."""
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}")
    return (V.check_count("callback_every", callback_every, allow_none=True),
            V.check_count("merge_every", merge_every, allow_none=True))


#: Rows a solver takes per turn in `fit_many`'s lock-step: about 230 KB of RCV1-like
#: rows, so that a turn's rows are still in L2 when the next problem takes them.
LOCKSTEP_ROWS = 256
#: ... while the vectors the problems' updates touch (`_vector_bytes`) total at most this.
#: Past it they do not stay in cache between turns, and a solver would fetch its
#: coordinates again every 256 rows: a turn is then a whole chunk (`pgs.engine.chunks`)
#: of LOCKSTEP_LONG times the usual work. Lock-step / one problem after another
#: (bench/results/lockstep.md), short turns against long: 20 classes x 130k features
#: (21-63 MB), 1.6-2.9x against 0.9-1.2x; 10 x 47k at p = 1.8 with the average (11 MB),
#: 0.62-0.68x against 0.47-0.53x; below it (10 x 47k at p = 2, 3.8-7.6 MB; 10 x 22k;
#: MNIST) 0.26-0.63x against 0.36-0.71x.
LOCKSTEP_CACHE = 8 << 20
LOCKSTEP_LONG = 4


def _vector_bytes(solver):
    """Bytes of the vectors every update of `solver` touches (lam, u, the average's)."""
    arrays = {id(a): a for s in getattr(solver, "solvers", [solver])
              for a in (s.lam, s.u, s.wsum, s.clast) if a is not None}
    return sum(a.nbytes for a in arrays.values())


def fit_many(X, ys, *, n_jobs=1, keep_state=False, warm_starts=None, seed=None,
              per_problem=None, **kwargs):
    """`fit` for several target vectors over the same X (one-vs-rest problems, a sigma
    grid): problem i is ``fit(X, ys[i], seed=seed, warm_start=warm_starts[i],
    **per_problem[i], ...)`` bit for bit, run in lock-step (`run_lockstep`) with the others
    of its group of `n_jobs` threads; a single problem is split by rows between them."""
    if V.check_seed(seed) is None:
        # One fresh seed for all (not one each: they would draw different rows).
        seed = int(np.random.SeedSequence().entropy)
    if kwargs.get("fixed_rows") is not None:
        raise ValueError("fixed_rows is not supported for several problems")
    warm_starts = [None] * len(ys) if warm_starts is None else warm_starts
    per_problem = [{}] * len(ys) if per_problem is None else per_problem
    X = as_csr_buffers(X, check_entries=False)        # converted once, for all
    runs = [prepare(X, y, seed=seed, warm_start=warm, **{**kwargs, **extra})
            for y, warm, extra in zip(ys, warm_starts, per_problem, strict=True)]
    if not runs:
        return []
    if len(runs) == 1 and n_jobs > 1 and runs[0].Xb.shape[0] > 1:
        # One problem (binary, regression): its rows are split between the threads,
        # which merge their dual states (pgs/engine/threads.py, default merge_every).
        stopped = threads.run_threads(runs[0], min(n_jobs, runs[0].Xb.shape[0]), None,
                                       None, None, 0.0)
        return [finish(runs[0], stopped, keep_state)]
    if len({run.t_total for run in runs}) > 1:     # (cannot share turns; each runs alone)
        for run in runs:
            _run_chunks(run, None, None, 0.0)
    else:
        advance(runs, runs[0].t_total, n_jobs)
    return [finish(run, False, keep_state) for run in runs]


def advance(runs, t_end, n_jobs=1):
    """Run `prepare`'s runs over the same rows (seeded alike: they draw the same rows) to
    iteration `t_end` in lock-step, in contiguous groups on `n_jobs` threads, in chunks
    (Ctrl-C); each run's bits are those of its own `_run_chunks`."""
    Xb = runs[0].Xb
    n_groups = max(1, min(n_jobs, len(runs)))
    bounds = [g * len(runs) // n_groups for g in range(n_groups + 1)]
    block, long = max(1, LOCKSTEP_ROWS // runs[0].solver.k), 1
    if sum(_vector_bytes(run.solver) for run in runs) > LOCKSTEP_CACHE:
        block, long = t_end, LOCKSTEP_LONG      # (cut at chunks)

    def run_group(g, stop=None):
        group = runs[bounds[g]:bounds[g + 1]]
        solvers = [run.solver for run in group]

        def step(t):
            # (a solver's bits do not depend on the schedule: chunks change nothing)
            failed, status = run_lockstep(solvers, t, block, Xb.data, Xb.indices,
                                          Xb.indptr, [run.y_kernel for run in group],
                                          group[0].weights)
            if failed >= 0:
                raise_status(status, group[failed].solver, Xb, group[failed].params)

        run_chunked(step, min(s.t for s in solvers), t_end,
                    len(group) * _work_per_iteration(group[0]) / long, stop)

    if n_groups == 1:
        run_group(0)
    else:
        # (the main thread waits so that Ctrl-C reaches it; the workers then stop)
        run_threads(run_group, n_groups)


def check_args(loss, p, T, k, B, schedule, eta0, iterate, fit_intercept, intercept,
               intercept_scaling, epsilon, sampling, t_offset):
    """The checks of the training arguments but sigma (`prepare`'s and the estimators'
    `_check_params`: one set of messages); the arguments, normalised, in order."""
    return (V.check_p(p), V.check_count("T", T, allow_none=True), V.check_count("k", k),
            V.check_B(B), V.check_choice("schedule", schedule, D.SCHEDULES),
            V.check_auto_or_positive("eta0", eta0), V.check_iterate(iterate),
            V.check_bool("fit_intercept", fit_intercept),
            V.check_choice("intercept", intercept, D.INTERCEPTS),
            V.check_auto_or_positive("intercept_scaling", intercept_scaling),
            V.check_epsilon(loss, epsilon),
            V.check_choice("sampling", sampling, SAMPLING_MODES + ("auto",)),
            V.check_t_offset(t_offset))


#: The arguments `check_args` checks.
CHECKED_ARGS = tuple(inspect.signature(check_args).parameters)


def prepare(X, y, *, loss=D.DEFAULTS["loss"], p=D.DEFAULTS["p"], sigma, T=None, k=1,
             B=None, schedule=D.DEFAULTS["schedule"], eta0=D.DEFAULTS["eta0"],
             iterate=D.DEFAULTS["iterate"], fit_intercept=True,
             intercept=D.DEFAULTS["intercept"],
             intercept_scaling=D.DEFAULTS["intercept_scaling"], seed=None, epsilon=None,
             sample_weight=None, sampling=D.DEFAULTS["sampling"], track_loss=False,
             warm_start=None, n_threads=None, t_offset=D.DEFAULTS["t_offset"],
             fixed_rows=None, known_classes=None, row_stats=None, k_above_rows=False,
             max_passes=D.DEFAULTS["max_passes"]):
    """Validate one `train` call and build its solver; `k_above_rows` lets a mini-batch
    hold more rows than X (partial_fit); `row_stats(full)` gives X's when the "auto"
    rules need them (`pgs.dask`; `pgs.rules.defaults.row_stats`)."""
    loss_id = V.check_loss(loss)
    sigma = V.check_positive("sigma", sigma)
    seed = V.check_seed(seed)
    (p, T, k, B, schedule, eta0, iterate, fit_intercept, intercept, intercept_scaling,
     epsilon, sampling, t_offset) = check_args(
        loss, p, T, k, B, schedule, eta0, iterate, fit_intercept, intercept,
        intercept_scaling, epsilon, sampling, t_offset)
    if n_threads is not None:
        V.check_count("n_threads", n_threads)
        warnings.warn("n_threads has no effect (the mini-batch threads were removed) and "
                      "will be removed", DeprecationWarning, stacklevel=3)

    # Entries are checked by the kernel as it reads each row (see _margin).
    Xb = as_csr_buffers(X, check_entries=False)
    m, n_features = Xb.shape
    classification = loss in V.CLASSIFICATION_LOSSES
    if known_classes is None:
        known_classes = getattr(warm_start, "classes", None)
    if loss in V.MULTICLASS_LOSSES:         # (one output per class: y the class index)
        y_kernel, classes = class_indices(y, m, known_classes)
    else:
        y_kernel, classes = check_targets(y, m, classification=classification,
                                          classes=known_classes)
    n_out = classes.shape[0] if loss in V.MULTICLASS_LOSSES else 1
    weights = check_sample_weight(sample_weight, m)
    if k > m and not k_above_rows:
        # (the kernel would draw every batch's rows more than once: almost surely a
        # mistake; partial_fit's small batches pass k_above_rows)
        raise ValueError(f"k must be at most the number of rows of X, got k={k} for "
                         f"{m} rows")
    if T is None:
        T = default_T(m, k, V.check_positive("max_passes", max_passes))

    if B == "auto" or (B is None and loss in V.UNBOUNDED_GRADIENT_LOSSES):
        B = (auto_B(y_kernel, loss, p, sigma, epsilon, weights, n_out) if warm_start is None
             else warm_start.params["B"])

    # The "auto" rules (pgs/rules/defaults.py); a warm start keeps its model's values.
    if warm_start is not None:
        saved = warm_start.params
        sampling = saved["sampling"] if sampling == "auto" else sampling
        intercept_scaling = (saved["intercept_scaling"] if intercept_scaling == "auto"
                             else intercept_scaling)
        eta0 = saved.get("eta0") if eta0 == "auto" else eta0
        t_offset = saved.get("t_offset", 0.0) if t_offset == "auto" else t_offset
        icpt_rate = saved.get("intercept_rate")     # (None in models of older versions)
    else:
        icpt_rate = None
    # The rules read a sample of the rows, but for t_offset's maximum, which needs every
    # row: then one scan of them all serves every rule.
    full = schedule == "pgs" and t_offset == "auto"

    def stats():            # (an O(nnz) scan: only for the rules that read it)
        q = p / (p - 1.0)
        return D.row_stats(Xb, q, full=full) if row_stats is None else row_stats(full)

    if sampling == "auto":
        sampling = D.auto_sampling(weights)
    if intercept_scaling == "auto":
        intercept_scaling = D.auto_intercept_scaling(stats())
    column = fit_intercept and intercept == "column"
    icpt = intercept_scaling if column else 0.0
    if not fit_intercept or column:
        icpt_rate = 0.0
    elif icpt_rate is None:
        icpt_rate = D.intercept_rate(stats())
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
            t_offset = auto_t_offset(stats(), y_kernel, loss=loss, p=p, sigma=sigma,
                                     B=B, icpt=icpt, epsilon=epsilon, weights=weights,
                                     sampling=sampling, n_outputs=n_out)
    params = dict(loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, schedule=schedule, eta0=eta0,
                  iterate=iterate, fit_intercept=fit_intercept, intercept=intercept,
                  intercept_scaling=intercept_scaling, seed=None, epsilon=epsilon,
                  sampling=sampling, t_offset=t_offset, intercept_rate=icpt_rate)
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

    solvers = [Solver(n_features, loss_id, p, sigma, B if B is not None else 0.0, icpt,
                      epsilon, k, max(t_pick, 0), iterate == "average", rng_state,
                      SAMPLING_MODES.index(sampling), track_loss, t_offset,
                      D.SCHEDULES.index(schedule), eta0 or 0.0, icpt_rate)
               for _ in range(n_out)]
    solver = MultiSolver(solvers) if loss in V.MULTICLASS_LOSSES else solvers[0]
    if state is not None:
        solver.set_state(state)
        if t_pick != -1:
            solver.set_t_pick(t_pick)
    if fixed_rows is not None:
        fixed_rows = np.ascontiguousarray(fixed_rows, dtype=np.int64)
        if fixed_rows.ndim != 1 or fixed_rows.shape[0] < T * k:
            raise ValueError(f"fixed_rows is shorter than t_end * k = {T * k}")

    return Run(solver, Xb, y_kernel, weights, fixed_rows, t_total, t_pick, state, params,
                classes, n_features)


def finish(run, stopped, keep_state):
    """The `Model` of a run that `_run_chunks` (or `run_lockstep`) has done."""
    solver, params, n = run.solver, run.params, run.n_features
    t_done = solver.t
    which, iteration = params["iterate"], t_done
    if which == "random":
        t_pick = int(run.state["t_pick"]) if run.t_pick == -1 else run.t_pick
        which, iteration = ("pick", t_pick) if t_pick <= t_done else ("last", t_done)
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
    params["passes"] = t_done * solver.k / run.Xb.shape[0]   # (of this call's rows)
    if w.ndim == 2:                                          # (K outputs: a MultiSolver)
        model = MulticlassModel(
            coef=w[:, :n], intercept=[_intercept(params, wc[n], b, which)
                                      for wc, b in zip(w, bias, strict=True)],
            iteration=iteration, T=t_done, classes=run.classes, params=params)
    else:
        model = Model(coef=w[:n], intercept=_intercept(params, w[n], bias, which),
                      iteration=iteration, T=t_done, classes=run.classes, params=params)
    if stopped:
        model.params["stopped_early"] = True
    if keep_state:
        model._state = state
    return model


def _intercept(params, w_column, bias, which):
    """The model's bias: the constant column's weight times its value, or the free bias
    of the iterate `which` (from the solver's scalars `bias`)."""
    if not params["fit_intercept"]:
        return 0.0
    if params["intercept"] == "column":
        return w_column * params["intercept_scaling"]
    if which == "average":
        return bias["b_sum"] / bias["rho_sum"] if bias["rho_sum"] > 0.0 else 0.0
    return bias["b_pick"] if which == "pick" else bias["b"]


def _work_per_iteration(run):
    """Non-zeros an iteration of `run` reads: k rows of the mean row's non-zeros (K times
    for K outputs)."""
    Xb = run.Xb
    n_out = len(getattr(run.solver, "solvers", [None]))
    return n_out * run.solver.k * max(1.0, Xb.indptr[-1] / max(1, Xb.shape[0]))



def _run_chunks(run, callback, every, start, stop=None):
    """Run the kernel to `run.t_total`, in chunks between callback calls; True if stopped.
    `stop` (a threading.Event, for worker threads) ends the run at its next chunk."""
    solver, Xb = run.solver, run.Xb
    sigma, p, t_total = run.params["sigma"], run.params["p"], run.t_total

    def advance(t_end):
        status = solver.run(t_end, Xb.data, Xb.indices, Xb.indptr, run.y_kernel,
                            run.fixed_rows, run.weights)
        if status != 0:
            raise_status(status, solver, Xb, run.params)

    def run_to(t_end):
        # The kernel returns to Python every chunk (`pgs.engine.chunks`), so that Ctrl-C
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
        report = progress(solver.t, t_total, start, solver.loss_sum - loss_before,
                          solver.consumed - rows_before, sigma, p, solver.norm_w)
        if callback(report) is False:
            return solver.t < t_total
    return False
