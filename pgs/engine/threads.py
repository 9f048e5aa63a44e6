"""The threads engine of parallel PGS (`pgs.train(..., n_jobs=W)`): W threads, one
contiguous shard of rows each, run the rounds of `pgs.engine.rounds` (the kernel releases the
GIL); the main thread merges. Results depend on (seed, W, merge_every) only."""

import threading
import types
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pgs.engine import rounds as P
from pgs.engine.chunks import Stopped, interrupts_to, wait_or_stop
from pgs.engine.solver import Reports, raise_status


def run_split(run, n_jobs, merge_every, callback, every, start):
    """Run a prepared run (`pgs.training.fit.prepare`) to its end split by rows between
    `n_jobs` threads, merged in rounds; True if the callback stopped it. The solver of `run`
    receives the final state."""
    Xb = run.Xb
    bounds = P.partition_rows(Xb.shape[0], n_jobs)
    params, state = P.setup(run, [hi - lo for lo, hi in bounds], merge_every,
                            track_loss=callback is not None)
    # (views, no copy: the index pointer's slice keeps indexing the whole data and indices)
    shards = [(Xb.data, Xb.indices, Xb.indptr[lo:hi + 1], run.y_kernel[lo:hi],
               None if run.weights is None else run.weights[lo:hi]) for lo, hi in bounds]
    stop = threading.Event()
    runs = {0: [state, params]}
    reports = Reports(run, int(state["kernel"]["t"]), callback, every, start)

    def map_fn(plans):
        # (waited for as every long call is, `wait_or_stop`: Ctrl-C sets `stop`, the workers
        # return within one chunk)
        deltas = wait_or_stop([pool.submit(P.run_shard, task, params, *shards[task["worker"]],
                                           stop=stop) for task in plans[0]], stop)
        if stop.is_set():           # (Ctrl-C: the workers returned early)
            raise Stopped
        for d in deltas:
            if d["status"] != 0:      # (named at the round's first iteration)
                raise_status(d["status"], types.SimpleNamespace(t=plans[0][0]["kernel"]["t"]),
                             Xb, run.params)
        return {0: deltas}

    with interrupts_to(stop), ThreadPoolExecutor(max_workers=n_jobs,
                                                 thread_name_prefix="pgs") as pool:
        P.run_rounds(runs, map_fn, run.t_total, params.merge_every,
                     lambda deltas: after_round(reports, runs[0][0], deltas[0]))
    run.solver.set_state(P.final_solver_state(runs[0][0]))
    return reports.stopped


def after_round(reports, state, deltas):
    """`Reports.add` for a merged round (its common `state`, its `deltas`), for both engines."""
    kernel = state["kernel"]
    return reports.add(int(kernel["t"]), sum(d["loss_sum"] for d in deltas),
                       sum(d["steps"] for d in deltas) * reports.run.solver.k,
                       lambda: _norm_w(kernel, reports.run.params))


def _norm_w(kernel, params):
    """||w_t||_p of a merged state: (p - 1) ||z||_q for the dual point z (docs/design.md 2),
    at most B (O(n): once per callback); K outputs: (sum_c ||w_c||_p^2)^(1/2)."""
    p, lam = params.p, kernel["lam"]
    if params.schedule == "asgd":
        z_scale = kernel["zs"]
    else:
        z_scale = 1.0 / ((kernel["t"] + params.t_offset) * params.sigma)
    # (K outputs: lam of shape (n_features + 1, K))
    lams = [lam] if lam.ndim == 1 else list(lam.T)
    norms = [(p - 1.0) * z * float(np.linalg.norm(one, ord=p / (p - 1.0)))
             for z, one in zip(np.broadcast_to(z_scale, len(lams)), lams, strict=True)]
    norms = [min(norm, params.B) if params.B else norm for norm in norms]
    return float(norms[0]) if lam.ndim == 1 else float(np.sqrt(sum(norm ** 2 for norm in norms)))
