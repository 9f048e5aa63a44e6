"""One validated training run: its arguments checked, its "auto" rules applied, its
solver built (`prepare`), run in chunks or in rounds of threads (`fit`, `fit_many`) and
turned into a `Model` (`finish`)."""

import dataclasses
import functools
import time
from typing import NamedTuple

import numpy as np

from pgs.engine import threads
from pgs.engine.chunks import run_chunked, run_on_threads
from pgs.engine.solver import (
    Reports,
    Solver,
    output_state,
    raise_status,
    solver_of,
    stacked,
)
from pgs.models.multiclass import MulticlassModel
from pgs.models.pgs_model import Model
from pgs.rules import defaults as D
from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers, kernel_targets
from pgs.rules.params import Data, Params, resolve, seed_entropy, seed_sequence
from pgs.training.screening import screen

#: Arguments a warm start must share with the run it continues (and the loss, which
#: `prepare` checks first: it decides how y is read).
_WARM_START_KEYS = ("p", "sigma", "k", "B", "schedule", "eta0", "fit_intercept",
                    "intercept", "intercept_scaling", "epsilon", "sampling", "t_offset")


def _check_same(warm_start, key, now):
    saved = warm_start.params.get(key)
    if saved != now:
        raise ValueError(f"warm_start model was trained with {key}={saved!r}, this call "
                         f"has {key}={now!r}")


def _check_warm_start(warm_start, params, n_features):
    """The state to resume from, after checking it fits this call."""
    state = getattr(warm_start, "_state", None)
    if state is None:
        raise ValueError("warm_start model has no solver state: train it with keep_state=True")
    if warm_start.n_features != n_features:
        raise ValueError(f"warm_start model has {warm_start.n_features} features, "
                         f"X has {n_features}")
    for key in _WARM_START_KEYS:
        _check_same(warm_start, key, getattr(params, key))
    kept = {"average": "wsum", "random": "w_pick"}.get(params.iterate)  # (what it needs)
    if kept is not None and state[kept] is None:
        was = warm_start.params.get("l1", 0.0)
        if was != params.l1:    # (at p = 2 a fit with l1 > 0 keeps no average)
            raise ValueError(f"warm_start model was trained with l1={was!r}, which kept no "
                             f"{params.iterate!r} iterate (docs/sparse.md): continuing it with "
                             f"l1={params.l1!r} needs iterate='last'")
        raise ValueError(f"iterate={params.iterate!r} needs a warm_start model trained with "
                         f"iterate={params.iterate!r}")
    if params.iterate != "average" and state["wsum"] is not None:
        state = dict(state, wsum=None, clast=None)      # (an average this run does not keep)
    return state


class Run(NamedTuple):
    """One validated `train` call, ready to run: its solver and what `finish` needs; for R
    binary problems on one solver (`prepare_many`), `each`: each one's `Params` (they agree
    but for B; `params` is the first's) and `y_kernel` their (m, R) targets; `columns`: its
    column (or slice of them) of `prepare_many`'s targets; `rng`: the PRNG state its solver
    starts from."""

    solver: Solver
    Xb: object
    y_kernel: np.ndarray
    weights: object
    t_total: int
    t_pick: int
    state: object
    params: Params
    classes: object
    n_features: int
    each: object = None
    columns: object = None
    rng: object = None


def fit(X, y, *, callback=None, callback_every=None, keep_state=False, n_jobs=1,
         merge_every=None, **kwargs):
    """`train`, plus `prepare`'s `known_classes` (two labels of which y may hold one, as a
    stream's batch can)."""
    start = time.perf_counter()
    callback_every, merge_every = check_reports(callback, callback_every, merge_every)
    V.check_bool("keep_state", keep_state)
    n_jobs = V.check_count("n_jobs", n_jobs)
    # (with threads the workers run their own blocks, pgs.engine.rounds: the run's solver
    # holds the state, each class's vectors contiguous)
    run = prepare(X, y, track_loss=callback is not None, block=n_jobs == 1, **kwargs)
    if n_jobs > 1:
        stopped = threads.run_split(run, n_jobs, merge_every, callback, callback_every, start)
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


def fit_many(X, Y, *, n_jobs=1, keep_state=False, warm_starts=None, seed=None, **kwargs):
    """`fit` for each column of the targets `Y` (m, R) over the same X (one-vs-rest
    problems; 1-D: one problem): problem r is ``fit(X, Y[:, r], seed=seed,
    warm_start=warm_starts[r], ...)`` bit for bit, run as the outputs of one solver
    (`prepare_many`) for each of `n_jobs` threads; a single problem is split by rows
    between them. A model for each problem."""
    seed = seed_entropy(seed)   # (one draw for all: else they would draw different rows)
    X = as_csr_buffers(X, check_entries=False)        # converted once, for all
    runs = prepare_many(X, Y, n_jobs, seed=seed, warm_starts=warm_starts, **kwargs)
    # (one problem, binary, regression or K-output: its rows split between the threads)
    run_many_to(runs, None, n_jobs, split=len(runs) == 1 and runs[0].each is None)
    return finish_all(runs, keep_state)


def prepare_many(X, Y, n_blocks=1, *, warm_starts=None, **kwargs):
    """`prepare` for each column of the targets `Y` (m, R) over the same X with the same
    seed (they draw the same rows), each problem's bits those of `prepare` alone: binary
    problems in `n_blocks` contiguous slices of columns (one per thread), those of a slice
    the outputs of one solver where they agree but on B (a block, feature-major, from
    `D.BLOCK_MIN_OUTPUTS` outputs: docs/multiclass.md). A 1-D `Y` (or one column) is one
    problem, a K-output loss's K outputs on a block if `n_blocks` is 1."""
    Y = np.asarray(Y)
    if Y.ndim == 1 or Y.shape[1] == 1:
        # (a K-output loss's classes: on a block on one thread, apart on threads)
        run = prepare(X, Y if Y.ndim == 1 else Y[:, 0], warm_start=(warm_starts or [None])[0],
                      block=(n_blocks or 1) == 1, **kwargs)
        return [run if Y.ndim == 1 else run._replace(columns=0)]
    if kwargs.get("loss", D.DEFAULTS["loss"]) in V.MULTICLASS_LOSSES:
        raise ValueError(f"a K-output loss trains one problem of class indices (m,), got "
                         f"targets of shape {Y.shape}")
    R = Y.shape[1]
    warm_starts = warm_starts or [None] * R
    n_blocks = min(n_blocks or 1, R)
    bounds = [b * R // n_blocks for b in range(n_blocks + 1)]
    runs = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        columns = [Y[:, r] for r in range(lo, hi)]
        got = [prepare(X, y, warm_start=warm_starts[lo + i], solver=hi - lo == 1, **kwargs)
               ._replace(columns=lo + i) for i, y in enumerate(columns)]
        runs.extend(got if hi - lo == 1 else
                    _on_one_solver(got, Y, columns, slice(lo, hi),
                                   kwargs.get("track_loss", False)))
    return runs


def _on_one_solver(runs, Y, columns, part, track_loss):
    """Binary problems' `runs` (`prepare`'s, without their solvers, of the `columns` of `Y`
    in the slice `part`) as the outputs of one solver where they agree but on B (each
    output keeps its own: squared loss's 0/1 targets give each its own "auto" B), else
    each with its own solver. The solver's targets are `Y`'s columns where they lie (the
    kernel reads a row's R targets in place) if the runs took them as they are. (One
    solver of R outputs against R solvers in lock-step: 0.72-0.98x the time a pass below
    `D.BLOCK_MIN_OUTPUTS`, bench/results/ovr_one_solver.md.)"""
    first = runs[0]
    key = [(dataclasses.replace(run.params, B=None), run.t_pick, run.state is None,
            run.state is None or int(run.state["t"])) for run in runs]
    if any(k != key[0] for k in key):
        return [run._replace(solver=_solver_for(run, track_loss, 1, False, run.state))
                for run in runs]
    solver = _solver_for(first, track_loss, len(runs), len(runs) >= D.BLOCK_MIN_OUTPUTS,
                         None if first.state is None
                         else stacked([run.state for run in runs]))
    solver.set_B([run.params.B if run.params.B is not None else 0.0 for run in runs])
    in_place = Y.dtype == np.float64 and Y.strides[1] == 8 and all(
        run.y_kernel is y for run, y in zip(runs, columns, strict=True))
    return [first._replace(solver=solver, each=tuple(run.params for run in runs),
                           columns=part, y_kernel=Y[:, part] if in_place else
                           np.column_stack([run.y_kernel for run in runs]))]


def run_many_to(runs, t_end, n_jobs=1, split=False, merge_every=None):
    """Run `prepare`'s runs over the same rows to iteration `t_end` (None: each to its own
    `t_total`), one after another, in contiguous groups on `n_jobs` threads, in chunks
    (Ctrl-C); each run's bits those of its own `_run_chunks`. With `split`, each run alone,
    its rows split between the threads, which merge their dual states
    (`pgs.engine.threads.run_split`; `merge_every` None: the default). (The sigma
    candidates in lock-step, a turn each, took 0.98-1.28x the time of one after another:
    bench/results/candidates_apart.md.)"""
    Xb = runs[0].Xb
    if split and n_jobs > 1 and Xb.shape[0] > 1:
        for run in runs:
            run = run if t_end is None else run._replace(t_total=t_end)
            threads.run_split(run, min(n_jobs, Xb.shape[0]), merge_every, None, None, 0.0)
        return
    n_groups = max(1, min(n_jobs, len(runs)))
    bounds = [g * len(runs) // n_groups for g in range(n_groups + 1)]

    def run_group(g, stop=None):
        for run in runs[bounds[g]:bounds[g + 1]]:
            run = run if t_end is None else run._replace(t_total=t_end)
            _run_chunks(run, None, None, 0.0, stop)

    if n_groups == 1:
        run_group(0)
    else:
        # (the main thread waits so that Ctrl-C reaches it; the workers then stop)
        run_on_threads(run_group, n_groups)


def prepare(X, y, *, sigma=D.DEFAULTS["sigma"], seed=None, sample_weight=None,
            track_loss=False, warm_start=None, known_classes=None, row_stats=None,
            k_above_rows=False, block=True, solver=True, **args):
    """Validate one `train` call and build its solver: its `Params` (`pgs.rules.params.resolve`
    of `args`, `pgs.train`'s training arguments, `pgs.DEFAULTS` for those not given) and
    `solver_of` them (K outputs on a block if `block` and K >= `D.BLOCK_MIN_OUTPUTS`; none
    without `solver`: `prepare_many` builds one for several runs). `k_above_rows` lets a
    mini-batch hold more rows than X (partial_fit); ``row_stats(q, full)`` gives X's when
    the "auto" rules need them (`pgs.dask`; `pgs.rules.defaults.row_stats`)."""
    if warm_start is not None and not isinstance(warm_start, Model):
        raise TypeError(f"warm_start must be a pgs.Model, got {type(warm_start).__name__}")
    if warm_start is not None:      # (the loss decides how y is read: checked first)
        _check_same(warm_start, "loss", args.get("loss", D.DEFAULTS["loss"]))
    seq = seed_sequence(seed)
    if known_classes is None:
        known_classes = getattr(warm_start, "classes", None)

    @functools.cache
    def read():             # (after the arguments' checks: their errors come first)
        # Entries are checked by the kernel as it reads each row (`dual_dot` in
        # pgs/_dual.pxd; `_pgs_loop` in pgs/_core.pyx stops at the non-finite margin).
        Xb = as_csr_buffers(X, check_entries=False)
        m, loss = Xb.shape[0], args.get("loss", D.DEFAULTS["loss"])
        y_kernel, classes = kernel_targets(y, m, loss, known_classes)
        stats = row_stats or (lambda q, full: D.row_stats(Xb, q, full=full))
        n_out = classes.shape[0] if loss in V.MULTICLASS_LOSSES else 1
        return Xb, classes, Data(m, y_kernel, V.check_sample_weight(sample_weight, m),
                                 n_out, stats)

    params = resolve(lambda: read()[2], sigma=sigma, seed=seq, k_above_rows=k_above_rows,
                     saved=None if warm_start is None else warm_start.params, **args)
    Xb, classes, data = read()
    n_features = Xb.shape[1]
    state = None if warm_start is None else _check_warm_start(warm_start, params, n_features)
    if state is not None and classes is not None and warm_start.classes is not None \
            and not np.array_equal(classes, warm_start.classes):
        raise ValueError(f"y's classes {classes} differ from the warm_start model's "
                         f"{warm_start.classes}")

    rng_state = seq.generate_state(4, dtype=np.uint64)
    pick_rng = np.random.default_rng(seq.spawn(1)[0])
    t0 = 0 if state is None else int(state["t"])
    T, t_total = params.T, t0 + params.T
    t_pick = 0
    if params.iterate == "random":
        # Uniform over 1..t_total; with a warm start, the earlier pick is kept
        # with probability t0 / t_total (then no new iterate needs keeping).
        if state is None or pick_rng.random() < T / t_total:
            t_pick = int(pick_rng.integers(t0 + 1, t_total + 1))
        else:
            t_pick = -1

    run = Run(None, Xb, data.y, data.weights, t_total, t_pick, state, params, classes,
              n_features, rng=rng_state)
    if not solver:
        return run
    return run._replace(solver=_solver_for(
        run, track_loss, data.n_outputs, block and data.n_outputs >= D.BLOCK_MIN_OUTPUTS,
        state))


def _solver_for(run, track_loss, n_out, block, state):
    """The solver of a prepared run: `n_out` outputs (feature-major if `block`), resuming
    `state` (a warm start's) and keeping the run's t_pick."""
    solver = solver_of(run.params, run.n_features, run.rng, max(run.t_pick, 0), track_loss,
                       n_out=n_out, block=block)
    if state is not None:
        solver.set_state(state)
        if run.t_pick != -1:
            solver.set_t_pick(run.t_pick)
    return solver


def finish_all(runs, keep_state, xt=None):
    """The `Model` of each problem of `runs`: `finish` of each run, R problems on one
    solver (`prepare_many`) from its iterate taken once (rows of one matrix); separate
    binary problems' new iterates (with `keep_state`) go into the rows of one matrix as
    each is taken: the estimators' coef_, without a copy."""
    rows = None
    if len(runs) > 1 and all(run.solver.n_out == 1 for run in runs) and keep_state:
        rows = np.empty((len(runs), runs[0].n_features + 1))
    models = []
    for run in runs:
        if run.each is None:
            models.append(finish(run, False, keep_state,
                                 None if rows is None else rows[len(models)], xt))
            continue
        which, iteration = _which(run)
        W, state, bias = _taken(run.solver, which, keep_state)
        models += [_model(run._replace(params=params, y_kernel=run.y_kernel[:, r]), W[r],
                          output_state(bias, r), which, iteration,
                          None if state is None else output_state(state, r), False, xt)
                   for r, params in enumerate(run.each)]
    return models


def _which(run):
    """(The iterate a finished run returns, its iteration)."""
    t_done = run.solver.t
    if run.params.iterate != "random":
        return run.params.iterate, t_done
    t_pick = int(run.state["t_pick"]) if run.t_pick == -1 else run.t_pick
    return ("pick", t_pick) if t_pick <= t_done else ("last", t_done)


def _taken(solver, which, keep_state):
    """A done solver's iterate `which`, its state (`keep_state`: the solver's buffers, no
    copy) and its scalars. Without keep_state the iterate is computed in one of its
    buffers, with it the iterate is the one new vector: either way no copy of the state
    (the memory budget)."""
    bias = solver._scalars()
    if not keep_state:
        return solver.take(which), None, bias
    solver.finish()
    return solver.iterate(which), solver.get_state(copy=False), bias


def finish(run, stopped, keep_state, out=None, xt=None):
    """The `Model` of a run that `_run_chunks` has done (its iterate
    written into `out`, if given; `xt(v)`: X^T v where run.Xb has no rows, `screen`)."""
    which, iteration = _which(run)
    w, state, bias = _taken(run.solver, which, keep_state)
    if out is not None:
        out[:] = w
        w = out
    return _model(run, w, bias, which, iteration, state, stopped, xt)


def _model(run, w, bias, which, iteration, state, stopped, xt):
    """The `Model` (a `MulticlassModel` for K outputs) of iterate `w` of `run`."""
    t_done = run.solver.t
    params = dict(dataclasses.asdict(run.params), T=t_done,
                  passes=t_done * run.solver.k / run.Xb.shape[0])   # (of this call's rows)
    icpts = intercepts(run, w, bias, which)
    model = (MulticlassModel if w.ndim == 2 else Model)(
        coef=w[..., :run.n_features], intercept=icpts if w.ndim == 2 else icpts[0],
        iteration=iteration, T=t_done, classes=run.classes, params=params)
    if run.params.l1 > 0.0:     # (w = 0 where the null model's certificate holds)
        screen(model, run.Xb, run.y_kernel, run.weights, xt)
    if stopped:
        model.params["stopped_early"] = True
    if state is not None:
        model._state = state
    return model


def intercepts(run, w, bias, which):
    """The bias of each output of `run`'s iterate `which`, `w` (one row, or R), from the
    solver's scalars `bias` (`Solver._scalars`: each output's an array of R for R > 1):
    the constant column's weight times its value, or the free bias."""
    prm, W = run.params, np.atleast_2d(w)
    b = {key: np.broadcast_to(bias[key], (W.shape[0],)) for key in ("b", "b_sum", "b_pick")}

    def one(r):
        if not prm.fit_intercept:
            return 0.0
        if prm.icpt:
            return W[r, run.n_features] * prm.icpt
        if which == "average":
            return b["b_sum"][r] / bias["rho_sum"] if bias["rho_sum"] > 0.0 else 0.0
        return b["b_pick"][r] if which == "pick" else b["b"][r]

    return [float(one(r)) for r in range(W.shape[0])]


def _work_per_iteration(run):
    """Non-zeros an iteration of `run`'s solver reads: k rows of the mean row's non-zeros
    (R times for R outputs)."""
    Xb = run.Xb
    return run.solver.n_out * run.solver.k * max(1.0, Xb.indptr[-1] / max(1, Xb.shape[0]))


def _run_chunks(run, callback, every, start, stop=None):
    """Run the kernel to `run.t_total`, in chunks (`pgs.engine.chunks`: Ctrl-C interrupts
    a long run promptly, `stop` a worker thread's, and chunked runs are bit-identical to
    an unsplit one) between callback reports; True if the callback stopped it."""
    solver, Xb = run.solver, run.Xb
    reports = Reports(run, solver.t, callback, every, start)

    def step_to(t_end):
        status = solver.run(t_end, Xb.data, Xb.indices, Xb.indptr, run.y_kernel,
                            sample_weight=run.weights)
        if status != 0:
            raise_status(status, solver, Xb, run.params)

    while solver.t < run.t_total:
        loss_before, rows_before = solver.loss_sum, solver.consumed
        run_chunked(step_to, solver.t, min(reports.next, run.t_total),
                    _work_per_iteration(run), stop)
        if not reports.add(solver.t, solver.loss_sum - loss_before,
                           solver.consumed - rows_before, lambda: solver.norm_w):
            break
    return reports.stopped
