"""`pgs.dask.train`: parallel PGS by merging dual states (`pgs._parallel`), one shard per
row-chunk of a dask array, each kept on the worker that holds it.

A round: the common lam goes to every worker once (a broadcast scatter); each shard's
task runs `pgs._parallel.run_shard` where the shard lies and returns its delta; the
client merges the deltas in shard order with `pgs._parallel.merge`, the same code as the
threads engine (`pgs.train(n_jobs=W)`), so that both give the same bits. A shard's
sampler state (PRNG, position, permutation) stays on its worker between rounds.
"""

import time
import types

import dask.array as da
import numpy as np
import scipy.sparse as sp

from pgs import _parallel as P
from pgs import _validation as V
from pgs._dask_client import get_client
from pgs._data import as_csr_buffers
from pgs._defaults import DEFAULTS, auto_intercept_scaling, row_sq_norms, row_stats
from pgs._threads import RoundReports
from pgs._train import _finish, _max_row_norm, _prepare, _raise_status


class _Shard:
    """A shard on its worker: the CSR buffers of its rows, its targets and weights, and
    its sampler state between rounds (updated in place by each round's task, which is
    pinned to this worker)."""

    def __init__(self, Xb, y, weights, sampler, index, first_row):
        self.Xb, self.y, self.weights, self.sampler = Xb, y, weights, sampler
        self.index, self.first_row = index, first_row


def _make_shard(X, y, weights, sampler, index, first_row):
    """A `_Shard` from a chunk of X (CSR read in place; NumPy converted and checked).

    As in `pgs.train`, the entries of a CSR chunk are checked by the kernel as it reads
    each row (a scan up front would cost as much as a cyclic pass over the shard)."""
    try:
        Xb = as_csr_buffers(X, name=f"X's partition {index} (rows {first_row}.."
                                   f"{first_row + X.shape[0] - 1})", check_entries=False)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    return _Shard(Xb, y, weights, sampler, index, first_row)


def _row_norm(X, q, icpt):
    """max_i ||(x_i, icpt)||_q over a chunk (for t_offset="auto")."""
    return _max_row_norm(as_csr_buffers(X, check_entries=False), q, icpt)


def _row_sq_norms(X, q):
    """A chunk's `pgs._defaults.row_sq_norms` and its number of stored entries."""
    Xb = as_csr_buffers(X, check_entries=False)
    return (*row_sq_norms(Xb, q), Xb.nnz)


def _run_round(shard, task, lam, params):
    """One shard's part of a round, on its worker: `run_shard` from the common `lam`
    (None with one shard, whose task carries the whole state) and the shard's sampler;
    the delta without the sampler's arrays (they stay here)."""
    remote = lam is not None
    if remote:
        task = dict(task, sampler=shard.sampler, kernel=dict(task["kernel"], lam=lam))
    Xb = shard.Xb
    delta = P.run_shard(task, params, Xb.data, Xb.indices, Xb.indptr, shard.y,
                        shard.weights)
    if delta["status"] != 0:
        try:
            _raise_status(delta["status"], types.SimpleNamespace(t=delta["t"] - 1), Xb,
                          dict(sigma=params["sigma"], intercept_scaling=params["icpt"]))
        except (ValueError, FloatingPointError) as exc:
            raise type(exc)(f"X's partition {shard.index} (rows {shard.first_row}.."
                            f"{shard.first_row + Xb.shape[0] - 1}): "
                            f"{str(exc).removeprefix('X: ')}") from None
    if remote:
        shard.sampler = delta["sampler"]
        if task["last"]:          # (the client's final state keeps the samplers)
            delta["full_sampler"] = delta["sampler"]
        delta["sampler"] = dict(rng=None, pos=0, perm=None,
                                consumed=delta["sampler"]["consumed"])
    return delta


def _identity(x):
    return x


def _sampler(shard):
    return shard.sampler


def _partition(X, y, n_jobs, client):
    """X with one column chunk and the row chunks that are the shards (`n_jobs` near-equal
    contiguous ones as `pgs.train(n_jobs=...)` makes, if given), and y as an array."""
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask array (dask.array.from_array(X, chunks=...) "
                        f"splits one in memory; pgs.train trains on it directly), got "
                        f"{type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    m = X.shape[0]
    if n_jobs is not None:
        n_jobs = V.check_count("n_jobs", n_jobs)
        if n_jobs > m:
            raise ValueError(f"n_jobs={n_jobs} exceeds the number of samples ({m}): every "
                             f"shard needs at least one row")
        sizes = tuple(hi - lo for lo, hi in P.partition_rows(m, n_jobs))
        if X.chunks[0] != sizes:
            X = X.rechunk({0: sizes})
    if isinstance(y, da.Array):
        y = client.compute(y).result()
    return X, y


def train(X, y, *, client=None, n_jobs=None, merge_every=None, sample_weight=None,
          callback=None, callback_every=None, keep_state=False, **kwargs):
    """Train a PGS model on a Dask cluster: parallel PGS by merging dual states.

    Each shard of rows (a row-chunk of X) stays on the worker that holds it. A round
    sends the common state (the dual accumulator lam, n_features + 1 doubles) to every
    worker once; each shard runs its share of ``W * merge_every`` PGS iterations from it
    with its own random stream, where it lies, and sends back its change of lam (and
    its sum of iterates, for ``iterate="average"``); the client adds them in shard
    order (see ``docs/parallel.md``). The model equals ``pgs.train(X, y,
    n_jobs=W, merge_every=merge_every, ...)`` on the same rows, bit for bit, when the
    shards are that call's (``n_jobs=W`` here makes them so): it is a function of the
    seed, the shards and `merge_every` only, never of the scheduling.

    Parameters
    ----------
    X : dask.array.Array, shape (n_samples, n_features)
        Rows, chunked by rows; chunks are scipy.sparse matrices (CSR is used in place)
        or NumPy arrays (converted once, on their worker). Column chunks are joined.
    y : dask.array.Array or array_like, shape (n_samples,)
        Targets, as for `pgs.train` (gathered to the client once: O(n_samples)).
    client : distributed.Client, optional
        See `pgs.dask.get_client`: by default the current client, else a
        `LocalCluster` of the machine's cores.
    n_jobs : int >= 1, optional
        Number of shards W: X is re-chunked into W contiguous near-equal row ranges,
        those of ``pgs.train(n_jobs=W)``. By default each row-chunk of X is a shard.
    merge_every : int >= 1, optional
        Iterations per shard per round (for equal shards; a round runs ``W *
        merge_every`` iterations split in proportion to the shards' sizes); default
        that of `pgs.train`, ``max(1, m // (4 W k))``: a round covers a quarter of a
        pass.
    sample_weight : dask.array.Array or array_like, optional
        As for `pgs.train` (gathered to the client once, then sent to the shards).
    callback, callback_every, keep_state
        As for `pgs.train` (the callback is called on the client between rounds).
    **kwargs
        Every other argument of `pgs.train` (loss, p, sigma, T, k, B, iterate, seed,
        t_offset, warm_start, ...), with the same meaning and defaults.

    Returns
    -------
    pgs.Model

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, as `pgs.train`; a bad entry of X (NaN, an
        index out of range) names its partition and row. The cluster is left usable.
    """
    for name in ("n_threads", "fixed_rows", "known_classes", "max_row_norm"):
        if name in kwargs:
            raise TypeError(f"pgs.dask.train() got an unexpected keyword argument {name!r}")
    return _train(X, y, client=client, n_jobs=n_jobs, merge_every=merge_every,
                  sample_weight=sample_weight, callback=callback,
                  callback_every=callback_every, keep_state=keep_state, **kwargs)


def _train(X, y, *, client=None, n_jobs=None, merge_every=None, sample_weight=None,
           callback=None, callback_every=None, keep_state=False, max_row_norm=None,
           **kwargs):
    """`train`, with `pgs._train._prepare`'s `known_classes` and `max_row_norm` (the
    estimators' one-vs-rest problems)."""
    start = time.perf_counter()
    sigma = kwargs.get("sigma", DEFAULTS["sigma"])
    if isinstance(sigma, str) and sigma == "auto":
        # (the held-out grid runs in memory only: pgs._sigma_auto)
        raise ValueError("pgs.dask.train needs a number for sigma: sigma='auto' is not "
                         "supported on dask arrays (pass e.g. the sigma_ of an in-memory "
                         "fit on a sample)")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {callback!r}")
    callback_every = V.check_count("callback_every", callback_every, allow_none=True)
    merge_every = V.check_count("merge_every", merge_every, allow_none=True)
    client = get_client(client)
    X, y = _partition(X, y, n_jobs, client)
    if isinstance(sample_weight, da.Array):
        sample_weight = client.compute(sample_weight).result()
    m, n_features = X.shape
    sizes = [int(c) for c in X.chunks[0]]

    X = client.persist(X)
    parts = client.compute(list(X.to_delayed().ravel()))
    homes = _homes(client, parts)

    # The run's constants and the solver state, as pgs.train makes them: _prepare gets
    # an X with the right shape and no entries (the rows are on the workers).
    # The "auto" rules' sums over X's rows (pgs/_defaults.py), added up over the chunks.
    p = V.check_p(kwargs.get("p", DEFAULTS["p"]))
    norms = client.gather([client.submit(_row_sq_norms, f, p / (p - 1.0), workers=[h])
                           for f, h in zip(parts, homes, strict=True)])
    shape_only = sp.csr_matrix((np.empty(0), np.empty(0, np.int32),
                                np.zeros(m + 1, np.int32)), shape=(m, n_features))
    stats = dict(row_stats(as_csr_buffers(shape_only), p / (p - 1.0),
                           norms=[np.concatenate([n[i] for n in norms]) for i in (0, 1)]),
                 nnz=sum(nnz for _, _, nnz in norms))
    if max_row_norm is None and kwargs.get("warm_start") is None \
            and kwargs.get("t_offset", DEFAULTS["t_offset"]) == "auto" \
            and kwargs.get("schedule", DEFAULTS["schedule"]) == "pgs":
        icpt = kwargs.get("intercept_scaling", DEFAULTS["intercept_scaling"])
        icpt = auto_intercept_scaling(stats) if icpt == "auto" else icpt
        column = kwargs.get("intercept", DEFAULTS["intercept"]) == "column"
        icpt = V.check_positive("intercept_scaling", icpt) \
            if column and kwargs.get("fit_intercept", True) else 0.0
        norms = client.gather([client.submit(_row_norm, f, p / (p - 1.0), icpt, workers=[h])
                               for f, h in zip(parts, homes, strict=True)])
        max_row_norm = max(norms)
    run = _prepare(shape_only, y, sample_weight=sample_weight,
                   track_loss=callback is not None, max_row_norm=max_row_norm,
                   row_stats=stats, **kwargs)
    if merge_every is None:
        merge_every = P.default_merge_every(m, len(sizes), run.solver.k)
    params, state = P.setup(run, sizes, track_loss=callback is not None)
    remote = len(sizes) > 1

    # Each shard is built where its chunk lies; its targets (and weights) go with the
    # task (O(rows) once), its sampler state stays there between rounds.
    bounds = np.cumsum([0] + sizes)
    shards = []
    for w, (part, home) in enumerate(zip(parts, homes, strict=True)):
        lo, hi = int(bounds[w]), int(bounds[w + 1])
        weights = None if run.weights is None else run.weights[lo:hi]
        sampler = state["workers"][w] if remote else None
        shards.append(client.submit(_make_shard, part, run.y_kernel[lo:hi], weights,
                                    sampler, w, lo, workers=[home],
                                    allow_other_workers=False, pure=False))
    del parts, X
    state, stopped, samplers = _rounds(client, shards, homes, state, params, run,
                                       merge_every, callback, callback_every, start)
    if remote:
        # The samplers in the common state, as the threads engine's merge keeps them
        # (the last round brings them back; a run stopped earlier fetches them).
        if samplers is None:
            samplers = client.gather([client.submit(_sampler, s, workers=[h], pure=False)
                                      for s, h in zip(shards, homes, strict=True)])
        state["workers"] = samplers
        state["kernel"] = dict(state["kernel"], rng=samplers[0]["rng"],
                               pos=samplers[0]["pos"], perm=samplers[0]["perm"])
    del shards
    run.solver.set_state(P.final_solver_state(state))
    return _finish(run, stopped, keep_state)


def _homes(client, futures):
    """The address of a worker holding each future's result (waiting for them)."""
    from pgs._dask_client import wait_all

    wait_all(client, futures)
    who = client.who_has(futures)
    return [sorted(who[f.key])[0] for f in futures]


def _rounds(client, shards, homes, state, params, run, merge_every, callback, every,
            start):
    """The rounds of `pgs._parallel.run_rounds`, each shard's task on its worker;
    returns (state, stopped by the callback, the samplers if the last round ran)."""
    t_total = run.t_total
    remote = len(shards) > 1
    reports = RoundReports(run, state, callback, every, start)
    samplers = None
    while int(state["kernel"]["t"]) < t_total:
        tasks = P.plan_round(state, t_total, merge_every)
        lam = None
        if remote:
            # lam leaves the client once; the workers fetch it from the one that holds
            # it (a scatter would wait for a round trip).
            lam = client.submit(_identity, tasks[0]["kernel"]["lam"], pure=False)
            last = int(state["kernel"]["t"]) + tasks[0]["round_steps"] >= t_total
            tasks = [dict(t, sampler=None, last=last,
                          kernel={k: v for k, v in t["kernel"].items() if k != "lam"})
                     for t in tasks]
        futures = [client.submit(_run_round, s, task, lam, params, workers=[h],
                                 allow_other_workers=False, pure=False)
                   for s, task, h in zip(shards, tasks, homes, strict=True)]
        try:
            deltas = client.gather(futures)
        except BaseException:
            client.cancel(futures)
            raise
        del futures, lam
        if remote and tasks[0]["last"]:
            samplers = [d.pop("full_sampler") for d in deltas]
        state = P.merge(state, deltas, params)
        if not reports.after_round(state, deltas):
            return state, reports.stopped, samplers
    return state, False, samplers
