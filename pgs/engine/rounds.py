"""Parallel PGS by merging states (docs/parallel.md): the round, the merge and the driver
`run_rounds`, shared by the threads engine and `pgs.dask`. `plan_round` gives each worker
its task, the engine runs `run_shard` on each, `merge` sums the deltas in worker order;
tasks and deltas are plain picklable dicts, so the results never depend on scheduling.
"""

from typing import NamedTuple

import numpy as np

from pgs.engine import chunks
from pgs.engine.solver import solver_of
from pgs.rules import defaults as D
from pgs.rules.defaults import THREADS_ROUND_PASSES, default_merge_every, merge_step_for
from pgs.rules.params import Params


def partition_rows(n_rows, n_parts):
    """Rows 0 .. n_rows - 1 as `n_parts` contiguous ``(lo, hi)`` ranges whose sizes
    differ by at most one."""
    if n_rows < n_parts:
        raise ValueError(f"n_jobs={n_parts} exceeds the number of samples ({n_rows}): "
                         f"they cannot be split into {n_parts} non-empty shards")
    bounds = [n_rows * i // n_parts for i in range(n_parts + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(n_parts)]


def shard_steps(total, sizes):
    """`total` iterations split between shards in proportion to their sizes (largest
    remainders, ties to the lower index): every row keeps probability 1/m per iteration
    up to one iteration's rounding."""
    sizes = np.asarray(sizes, dtype=np.int64)
    m = int(sizes.sum())
    exact = [total * int(s) for s in sizes]            # (exact integers, no overflow)
    steps = np.array([e // m for e in exact], dtype=np.int64)
    rest = total - int(steps.sum())
    if rest:
        order = sorted(range(len(sizes)), key=lambda w: (-(exact[w] % m), w))
        steps[order[:rest]] += 1
    return steps


class RoundParams(NamedTuple):
    """A run's constants for its rounds, shared by all the workers (picklable)."""

    resolved: Params
    n_features: int
    merge_every: int = 1
    track_loss: bool = False
    block: bool = False
    B: object = None

    def solver(self, t_pick, rng, t_offset=None, n_out=1):
        """A `Solver` of the run's constants (the PRNG and t_pick of a worker or probe) and
        `n_out` outputs, feature-major if `block` (its lam set and its change taken in one
        pass over the block: `run_shard`), each output's radius `B` (None: the resolved
        one; one-vs-rest problems may each have their own)."""
        solver = solver_of(self.resolved, self.n_features, rng, t_pick, self.track_loss,
                           t_offset, n_out, block=self.block)
        if self.B is not None:
            solver.set_B(self.B)
        return solver


def setup(run, sizes, merge_every=None, passes=THREADS_ROUND_PASSES, track_loss=False):
    """(params, common state) for a prepared run (`pgs.training.fit.prepare`) whose rows
    are split into shards of `sizes` rows, in worker order (`merge_every` None:
    `default_merge_every` of rounds of `passes` passes); R one-vs-rest problems' run keeps
    each output's radius."""
    merge_every = merge_every or default_merge_every(sum(sizes), len(sizes), run.params.k,
                                                     passes)
    block = run.solver.n_out >= D.BLOCK_MIN_OUTPUTS    # (K outputs)
    B = None if run.each is None else [0.0 if e.B is None else e.B for e in run.each]
    params = RoundParams(run.params, run.n_features, merge_every, bool(track_loss), block, B)
    return params, start_state(run.solver.get_state(), sizes, run.params.seed, params)


def _worker_rng(seed_entropy, w):
    """Worker w >= 1's initial PRNG state, from the seed and w alone (worker 0 takes the
    seed's own stream, so that W = 1 is the plain run)."""
    seq = np.random.SeedSequence(seed_entropy, spawn_key=(0x5047, w))
    return seq.generate_state(4, dtype=np.uint64)


def start_state(solver_state, sizes, seed_entropy, params):
    """The common state before the first round, from the run's ``Solver.get_state()``
    (fresh or warm-started) and the shards' sizes: ``{"kernel", "workers" (a sampler
    state ``{"rng", "pos", "perm", "consumed"}`` each), "sizes", "t_pick"}``.
    Worker w >= 1's stream derives from `seed_entropy` and w. For W > 1 the average is
    brought to the form the merge keeps (C = 0).
    """
    sizes = tuple(int(s) for s in sizes)
    if not sizes or min(sizes) < 1:
        raise ValueError(f"every shard needs at least one row, got sizes {sizes}")
    kernel = dict(solver_state)
    saved = kernel.pop("workers", None)
    if saved is not None and len(saved) == len(sizes) > 1:
        # (a warm start with the same W: each worker continues its own stream)
        workers = [dict(s, perm=None if s["perm"] is None else s["perm"].copy())
                   for s in saved]
    else:
        workers = [dict(rng=np.array(kernel["rng"], dtype=np.uint64),
                        pos=int(kernel["pos"]), perm=kernel["perm"],
                        consumed=int(kernel["consumed"]))]
        for w in range(1, len(sizes)):
            workers.append(dict(rng=_worker_rng(seed_entropy, w), pos=0, perm=None,
                                consumed=0))
    if len(sizes) > 1 and kernel["wsum"] is not None and (np.any(kernel["C"]) or (
            kernel["clast"] is not None and np.any(kernel["clast"]))):
        kernel = _canonical_average(kernel, params)
    return dict(kernel=kernel, workers=workers, sizes=sizes, t_pick=int(kernel["t_pick"]))


def _n_out(kernel):
    """The outputs of a kernel state: its lam is (n_features + 1,), or (n_features + 1, R)."""
    return 1 if np.ndim(kernel["lam"]) == 1 else kernel["lam"].shape[1]


def _columns(w):
    """An iterate (n_features + 1,), or (R, n_features + 1), in the state's form of vectors:
    (n_features + 1,), or (n_features + 1, R)."""
    return w if w.ndim == 1 else w.T


def _canonical_average(kernel, params):
    """A kernel state whose average is kept with C = 0 (and clast = 0)."""
    solver = params.solver(0, np.ones(4, dtype=np.uint64), n_out=_n_out(kernel))
    solver.set_state(kernel)        # (only to read the sum of its iterates)
    total = _columns(solver.average()) * kernel["rho_sum"]
    kernel = dict(kernel, C=0.0)
    if kernel["clast"] is None:
        kernel["wsum"] = -total
    else:
        kernel["wsum"] = total
        kernel["clast"] = np.zeros_like(total)
    return kernel


def plan_round(state, t_end, merge_every):
    """The next round's tasks, in worker order: ``min(W * merge_every, t_end - t)``
    iterations split by `shard_steps`; the worker holding the drawn random iterate gets
    its local ``t_pick``. With W = 1 the task's kernel is the whole solver state."""
    kernel, sizes = state["kernel"], state["sizes"]
    n_workers = len(sizes)
    t0 = int(kernel["t"])
    total = min(n_workers * int(merge_every), int(t_end) - t0)
    steps = shard_steps(max(total, 0), sizes)
    g_pick = int(state["t_pick"])
    tasks, off = [], 0
    for w in range(n_workers):
        local_pick = 0
        if t0 + off < g_pick <= t0 + off + int(steps[w]):
            local_pick = g_pick - t0 - off     # w's local iterations are 1 .. steps_w
        if n_workers == 1:
            start = kernel
            local_pick = g_pick                # (as the plain run keeps it)
        else:
            start = dict(lam=kernel["lam"], t=t0, zs=kernel["zs"], b=kernel["b"],
                         U=kernel.get("U", 0.0))
        tasks.append(dict(worker=w, n_workers=n_workers, steps=int(steps[w]),
                          round_steps=int(total), t_pick=local_pick,
                          sampler=state["workers"][w], kernel=start))
        off += int(steps[w])
    return tasks


def run_shard(task, params, data, indices, indptr, y, sample_weight=None, stop=None):
    """Run task ``plan_round(...)[w]`` on worker w's shard (its CSR buffers, `indptr`
    possibly a slice of a larger matrix's, targets and weights); return its delta:
    ``status`` (0: ok), ``stopped`` (`stop`, a threading.Event checked every
    ``chunks.CHUNK_WORK // 4`` non-zeros, was set), ``sampler``, ``loss_sum``, and with
    W > 1 its changes from the rho lam it started from (`_worker_delta`), with W = 1 its
    whole ``kernel`` state."""
    single = task["n_workers"] == 1
    smp = task["sampler"]
    start = task["kernel"]
    steps = int(task["steps"])
    t_offset, t_first = params.resolved.t_offset, int(start["t"])
    rho = steps / task["round_steps"] if steps else 1.0     # the worker's share
    scale = 1.0
    if not single and params.resolved.schedule == "pgs":
        # The paper's schedule: the worker's iterations count 1 .. steps, its iterate is
        # grad r*((lam0 rho + dlam) / ((s + (t0 + t_offset) rho) sigma)): as if the
        # others' gradients were its own (docs/design.md 6b, docs/parallel.md).
        scale = rho
        t_offset, t_first = (t_first + t_offset) * rho, 0
    solver = params.solver(task["t_pick"], smp["rng"], t_offset, _n_out(start))
    sampler = dict(rng=smp["rng"], pos=smp["pos"], perm=smp["perm"], consumed=smp["consumed"],
                   t_pick=task["t_pick"])
    if single:
        solver.set_state(dict(start, **sampler))
    else:
        lam0 = start["lam"] * scale if scale != 1.0 else start["lam"]
        solver.restart(lam0, dict(sampler, t=t_first, C=0.0, loss_sum=0.0, b_sum=0.0,
                                  b_pick=0.0, rho_sum=0.0, zs=start["zs"], b=start["b"],
                                  U=np.multiply(start["U"], scale)))
    loss_before = solver.loss_sum

    nnz_per_row = max(1.0, (indptr[-1] - indptr[0]) / max(1, indptr.shape[0] - 1))
    # Iterations between two checks of `stop`: a quarter of `chunks.CHUNK_WORK` non-zeros
    # read (a millisecond or two: Ctrl-C waits for the slowest worker to see it, on a loaded
    # machine too); unlike `run_chunked`'s callers, not times the K outputs they update.
    chunk = max(1, int((chunks.CHUNK_WORK // 4) / (params.resolved.k * nnz_per_row)))
    status, stopped = 0, False
    while solver.t < t_first + steps and status == 0:
        if stop is not None and stop.is_set():
            stopped = True
            break
        status = solver.run(min(solver.t + chunk, t_first + steps), data, indices, indptr,
                            y, sample_weight)

    delta = dict(worker=task["worker"], steps=steps, status=int(status), stopped=stopped,
                 t=int(solver.t), loss_sum=solver.loss_sum - loss_before,
                 sampler=_sampler_of(solver))
    if status != 0 or stopped:
        return delta
    if single:
        delta["kernel"] = solver.get_state()
        return delta
    delta.update(_worker_delta(solver, lam0, start, rho, params, task["t_pick"]))
    return delta


def _worker_delta(solver, lam0, start, rho, params, t_pick):
    """A worker's change (W > 1) from the rho lam0 it started from: the dual's, its free
    bias's, the sums of its iterates and bias, its random iterate's snapshot; for R
    outputs vectors of shape (n_features + 1, R) and R of each output's scalar. The
    solver is spent: the delta's vectors are computed in its buffers (a new array of a
    block's size costs more in page faults than in arithmetic)."""
    scalars = solver._scalars()
    avg_sum = None
    if params.resolved.iterate == "average":     # (first: u may be lam)
        avg_sum = _averages(solver)
        avg_sum *= scalars["rho_sum"]
    # (p < 2 with l1: its debts paid; p = 2 keeps every gradient, and U merges as lam does)
    lam = solver.sparse_lam() if solver.paid is not None else solver.lam
    zero = None if solver.paid is None else lam == 0.0
    U, U0 = scalars["U"], np.multiply(start["U"], rho if params.resolved.schedule == "pgs"
                                      else 1.0)
    if params.resolved.schedule == "pgs":
        dlam, dU = np.subtract(lam, lam0, out=lam), U - U0
    else:
        # "asgd": the dual point zs lam, in the common zs0, weighted by the worker's share
        f = rho * scalars["zs"] / start["zs"]
        dlam, dU = np.multiply(lam, f, out=lam), U * f - U0 * rho
        dlam -= lam0 * rho
    return dict(dlam=dlam, dU=dU, zero=zero, db=rho * (scalars["b"] - start["b"]),
                b_sum=scalars["b_sum"], rho_sum=scalars["rho_sum"], b_pick=scalars["b_pick"],
                avg_sum=avg_sum, w_pick=solver.w_pick.copy() if t_pick > 0 else None)


def _averages(solver):
    """The average of a spent solver's outputs in the state's form of vectors: in its
    average's buffer (element by element: it may receive it, wsum or clast), or with
    l1 > 0 a new array (`Solver.average` zeroing it where the last iterate is)."""
    if solver.l1 > 0.0:
        return _columns(solver.average())
    w = solver.wsum
    solver._iterate_to(w if w.ndim == 2 else w[:, None], True)
    return w


def _sampler_of(solver):
    """A solver's sampler state: its PRNG, position and permutation, rows consumed."""
    scalars = solver._scalars()
    return dict(rng=scalars["rng"], pos=int(scalars["pos"]),
                perm=None if solver.perm is None else solver.perm.copy(),
                consumed=int(scalars["consumed"]))


def merge(state, deltas, params):
    """The next common state (a new dict) from the round's `deltas`, in worker order:
    ``lam <- lam + gamma sum_w dlam_w`` (gamma: 1, or `merge_step_for` the workers that
    ran under "asgd"; docs/parallel.md), t, the iterates' sum and the bias likewise; one
    worker's state is adopted as it is (W = 1 is the plain run, bit for bit)."""
    if len(deltas) != len(state["sizes"]):
        raise ValueError(f"{len(state['sizes'])} workers but {len(deltas)} deltas")
    for w, d in enumerate(deltas):
        if d["worker"] != w:
            raise ValueError(f"deltas must be in worker order: got worker {d['worker']} "
                             f"at position {w}")
        if d["status"] != 0 or d["stopped"]:
            raise ValueError(f"worker {w}'s delta is not complete (status {d['status']})")
    workers = [d["sampler"] for d in deltas]
    nxt = dict(state, workers=workers)
    if len(deltas) == 1:
        nxt["kernel"] = deltas[0]["kernel"]
        return nxt
    old = state["kernel"]
    lam = np.array(old["lam"], dtype=np.float64)
    steps = 0
    loss_sum = float(old["loss_sum"])
    gamma = 1.0 if params.resolved.schedule == "pgs" else \
        merge_step_for(sum(1 for d in deltas if d["steps"] > 0))
    for d in deltas:
        lam += d["dlam"] if gamma == 1.0 else gamma * d["dlam"]
        steps += d["steps"]
        loss_sum += d["loss_sum"]
    if deltas[0].get("zero") is not None:
        # l1: a coordinate every worker truncated to 0 stays 0 ("asgd"'s step gamma != 1
        # would move it off: docs/sparse.md)
        lam[np.logical_and.reduce([d["zero"] for d in deltas])] = 0.0
    t = int(old["t"]) + steps
    U = old.get("U", 0.0) + gamma * sum(d["dU"] for d in deltas)
    # lam alone: u, S, Q and c are rebuilt from it where it is set (`Solver.set_state`)
    kernel = {key: value for key, value in old.items()
              if key not in ("u", "S", "Q", "Q_comp", "Q_abs", "c", "n_updates", "paid")}
    kernel.update(lam=lam, t=t, U=U, C=0.0, loss_sum=loss_sum, t_pick=state["t_pick"],
                  consumed=sum(s["consumed"] for s in workers), rng=workers[0]["rng"],
                  pos=workers[0]["pos"], perm=workers[0]["perm"],
                  b=old["b"] + gamma * sum(d["db"] for d in deltas),
                  b_sum=old["b_sum"] + sum(d["b_sum"] for d in deltas),
                  rho_sum=old["rho_sum"] + sum(d["rho_sum"] for d in deltas))
    if old["wsum"] is not None:
        total = np.zeros_like(lam)
        for d in deltas:
            total += d["avg_sum"]
        # canonical form: the sum of the iterates is -wsum (or wsum with spans)
        kernel["wsum"] = old["wsum"] - total if old["clast"] is None else old["wsum"] + total
    for d in deltas:
        if d.get("w_pick") is not None:
            kernel.update(w_pick=d["w_pick"], b_pick=d["b_pick"])
    nxt["kernel"] = kernel
    return nxt


def run_rounds(runs, map_fn, t_end, merge_every, on_round=None):
    """Run rounds until the t of every run of ``runs = {key: [state, params]}`` (several
    share the shards: the candidates of ``sigma="auto"``) reaches `t_end`, replacing its
    states. ``map_fn({key: tasks})`` runs `run_shard` for each task (on worker
    ``task["worker"]``'s shard) and returns ``{key: deltas}`` in the tasks' order (raising
    if a worker failed); each run merges its own, as alone. ``on_round({key: deltas})``
    after each round; returning False stops."""
    while True:
        plans = {key: plan_round(state, t_end, merge_every)
                 for key, (state, _) in runs.items() if int(state["kernel"]["t"]) < t_end}
        if not plans:
            return
        deltas = map_fn(plans)
        for key in plans:
            runs[key][0] = merge(runs[key][0], deltas[key], runs[key][1])
        if on_round is not None and on_round(deltas) is False:
            return


def final_solver_state(state):
    """The common state's kernel state, for ``Solver.set_state`` (the model's iterates;
    its random iterate's snapshot is there once the drawn iteration is done), with every
    worker's sampler state (W > 1), so that a warm start with the same W continues each
    worker's stream and permutation instead of replaying them."""
    if len(state["sizes"]) == 1:
        return state["kernel"]
    return dict(state["kernel"], workers=state["workers"])
