"""`pgs.dask.train`: the rounds of `pgs.engine.rounds` with one Dask actor (`_ShardActor`)
per row-chunk of X, on the worker that holds it, called once a round straight from the
client, which merges the deltas as the threads engine does (the same bits). An actor lost
with its worker is made again from its chunk and called again (docs/parallel.md 4).
"""

import functools
import time
import types
from concurrent.futures import CancelledError

import dask.array as da
import distributed
import numpy as np
import scipy.sparse as sp
from distributed.scheduler import KilledWorker

from pgs.dask.client import DEFAULT_TIMEOUT, check_timeout, gather, get_client, wait_for
from pgs.engine import rounds as P
from pgs.engine.solver import Reports, raise_status
from pgs.engine.threads import after_round
from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers
from pgs.rules.defaults import DASK_ROUND_PASSES, DEFAULTS, q_stride, row_sq_norms, row_stats
from pgs.rules.docstrings import fill_doc
from pgs.rules.params import KEEP, seed_entropy
from pgs.training import sigma_auto
from pgs.training.classes import check_classes, route, train_one_vs_rest
from pgs.training.fit import check_reports, finish, finish_all, prepare, prepare_many
from pgs.training.train import train as _pgs_train

#: Times an actor lost with its worker is made again for the same call.
RETRIES = 3


def _name(index, first_row, rows):
    return f"X's partition {index} (rows {first_row}..{first_row + rows - 1})"


class _ShardActor:
    """A shard on its worker, as a Dask actor: built once per fit from X's chunk, asked
    for its rows' norms if the "auto" rules need them, given each run's targets, weights
    and constants (`setup`, or at once when made again after a fault), then called once a
    round (`run_rounds`: every run's share of the round, the runs in turn), straight from
    the client."""

    def __init__(self, X, index, first_row, setups=None):
        # As in pgs.train, the entries of a CSR chunk are checked by the kernel as it
        # reads each row (a scan up front would cost as much as a cyclic pass).
        self.name = _name(index, first_row, X.shape[0])
        self.Xb = as_csr_buffers(X, name=self.name, check_entries=False)
        self.runs = {}            # run key: (targets, weights, constants)
        for key, args in (setups or {}).items():
            self.setup(key, *args)

    def row_sq_norms(self, q, stride, first):
        """The shard's `pgs.rules.defaults.row_sq_norms` (one array for q = 2)."""
        sq, sq_q = row_sq_norms(self.Xb, q, stride, first)
        return (sq,) if sq_q is sq else (sq, sq_q)

    def xt_dot(self, v):
        """X^T v over this shard's rows (the null model's check, `pgs.training.screening`)."""
        return self.Xb.matrix().T @ v

    def setup(self, key, y, weights, params):
        """Run `key`'s targets and weights on this shard, and its constants."""
        self.runs[key] = (y, weights, params)

    def run_rounds(self, tasks):
        """`pgs.engine.rounds.run_shard` on this shard for each task (a run's share of the
        round, ``task["run"]`` its key), in turn, in the worker's actor thread (the kernel
        releases the GIL: the worker keeps answering). Pure: called again on the same
        tasks (after a fault), the same bits."""
        return [self._run(task) for task in tasks]

    def _run(self, task):
        (y, weights, params), Xb = self.runs[task["run"]], self.Xb
        delta = P.run_shard(task, params, Xb.data, Xb.indices, Xb.indptr, y, weights)
        if delta["status"] != 0:
            try:
                raise_status(delta["status"], types.SimpleNamespace(t=delta["t"] - 1), Xb,
                             params.resolved)
            except (ValueError, FloatingPointError) as exc:
                raise type(exc)(f"{self.name}: {str(exc).removeprefix('X: ')}") from None
        return delta


def shape_only_csr(shape):
    """A CSR matrix of `shape` with no entries: what the client-side steps read of X
    (its shape) when the rows are on the workers."""
    return sp.csr_matrix((np.empty(0), np.empty(0, np.int32), np.zeros(shape[0] + 1, np.int32)),
                         shape=shape)


def _partition(X, n_jobs=None):
    """X with one column chunk and the row chunks that are the shards (`n_jobs` near-equal
    contiguous ones as `pgs.train(n_jobs=...)` makes, if given)."""
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
        sizes = tuple(hi - lo for lo, hi in P.partition_rows(m, V.check_count("n_jobs", n_jobs)))
        if X.chunks[0] != sizes:
            X = X.rechunk({0: sizes})
    return X


def _fetch(client, array, timeout, what):
    """A dask array computed to the client, within `timeout` seconds."""
    return gather(client, [client.compute(array)], timeout, what)[0]


@fill_doc("dask", kwargs_of=_pgs_train)
def train(X, y, *, client=None, n_jobs=None, merge_every=None, sample_weight=None,
          callback=None, callback_every=None, keep_state=False, timeout=None, **kwargs):
    """Train a PGS model on a Dask cluster: parallel PGS by merging dual states.

    Each shard of rows (a row-chunk of X) is kept on a worker. A round sends the common
    state (the dual accumulator lam, n_features + 1 doubles) to every shard, which runs its
    share of ``W * merge_every`` iterations with its own random stream and sends back its
    change; the client adds them in shard order (docs/parallel.md 4). The model equals
    ``pgs.train(X, y, n_jobs=W, merge_every=merge_every, ...)`` bit for bit when the shards
    are that call's (``n_jobs=W`` here makes them so), and ``sigma="auto"`` runs its search
    on the shards of the training rows as that call does: a function of the seed, the
    shards and `merge_every` only, never of the scheduling.

    Parameters
    ----------
    {parameters}

    Returns
    -------
    pgs.Model, pgs.MulticlassModel or pgs.OneVsRestModel
        As `pgs.train` returns (more than two classes with a binary loss: one problem a
        class, the outputs of one solver on the shards).

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, as `pgs.train`; a bad entry of X (NaN, an
        index out of range) names its partition and row. The cluster is left usable.
    RuntimeError, OSError
        When a worker is lost with a partition of X that cannot be rebuilt: data that
        no graph made (``client.scatter``) is a RuntimeError, a file that cannot be read
        again an OSError; both name the partition and the worker. A lost worker whose
        partitions the scheduler can rebuild from their graph (X from files, from
        `dask.array.from_array`, ...) costs the round again, and the model is the same.
    TimeoutError
        When a wait passes `timeout` (no workers left, a task that never finishes).
    KeyboardInterrupt
        Ctrl-C: the fit's tasks are cancelled on the cluster first.
    """
    for name in ("known_classes", "row_stats"):
        if name in kwargs:
            raise TypeError(f"pgs.dask.train() got an unexpected keyword argument {name!r}")
    start = time.perf_counter()
    callback_every, merge_every = check_reports(callback, callback_every, merge_every)
    timeout = check_timeout(timeout)
    client = get_client(client)
    if isinstance(y, da.Array):
        y = _fetch(client, y, timeout, "y")
    if isinstance(sample_weight, da.Array):
        sample_weight = _fetch(client, sample_weight, timeout, "sample_weight")
    sigma = kwargs.pop("sigma", DEFAULTS["sigma"])
    auto = sigma_auto.is_auto(sigma)
    kwargs.setdefault("loss", DEFAULTS["loss"])
    kwargs["classes"] = check_classes(kwargs.get("classes"), kwargs["loss"])
    warm = kwargs.pop("warm_start", None)
    if auto and warm is None:
        return sigma_auto.train_on_rows(
            functools.partial(DaskRows, X, client, n_jobs=n_jobs, merge_every=merge_every,
                              timeout=timeout),
            y, sample_weight=sample_weight, keep_state=keep_state, start=start,
            callback=callback, **kwargs)
    for key in ("sigma_grid", "validation_fraction", "verbose"):
        kwargs.pop(key, None)
    ovr, kwargs["loss"] = route(kwargs["loss"], y, kwargs["classes"], warm, callback)
    if ovr:
        X = _partition(X, n_jobs)
        return train_one_vs_rest(functools.partial(
            fit_many, X, client=client, merge_every=merge_every, keep_state=keep_state,
            sample_weight=sample_weight, sigma=KEEP if auto else sigma), X.shape[0], y,
            warm_start=warm, **kwargs)
    kwargs["known_classes"] = kwargs.pop("classes")
    # Each shard is built by its actor from its chunk (where the chunk lies, as the
    # scheduler prefers); its targets (and weights) go to it once prepared (O(rows) once).
    actors = _Actors(client, _partition(X, n_jobs), timeout)
    try:
        actors.wait()
        # The run's constants and the solver state, as pgs.train makes them: prepare gets
        # an X with the right shape and no entries (the rows are on the workers); the
        # "auto" rules' sums over X's rows (pgs/rules/defaults.py) come from the shards.
        run = prepare(shape_only_csr(actors.shape), y, sample_weight=sample_weight,
                      track_loss=callback is not None, row_stats=actors.stats,
                      sigma=KEEP if auto else sigma, warm_start=warm, **kwargs)
        params, state = P.setup(run, actors.sizes, merge_every, DASK_ROUND_PASSES,
                                track_loss=callback is not None)
        actors.setup(run, params)
        # (the threads engine's loop, each shard's part of a round a call of its actor)
        reports = Reports(run, int(state["kernel"]["t"]), callback, callback_every, start)
        runs = {0: [state, params]}
        P.run_rounds(runs, _map_runs(actors, "round"), run.t_total, params.merge_every,
                     lambda deltas: after_round(reports, runs[0][0], deltas[0]))
        run.solver.set_state(P.final_solver_state(runs[0][0]))
        return finish(run, reports.stopped, keep_state, xt=actors.xt_dot)
    finally:
        actors.close()               # (the fit's own: X's chunks may be the user's)
        del actors


def fit_many(X, Y, *, client, merge_every=None, warm_starts=None, keep_state=False,
             seed=None, **kwargs):
    """`pgs.training.fit.fit_many` on a dask X: the problems of the targets `Y` (m, R) the
    outputs of one solver (`prepare_many`), run by `train`'s rounds on X's shards
    (`DaskRows.as_chunked`) in one call per shard and round; each problem's bits those
    of `train` alone."""
    rows = DaskRows(X, client, merge_every=merge_every)
    try:
        runs = prepare_many(rows.as_chunked(), Y, 1, warm_starts=warm_starts,
                            row_stats=rows.stats, seed=seed_entropy(seed), **kwargs)
        rows.advance([runs], runs[0].t_total)    # (the estimators' problems share their t)
        return finish_all(runs, keep_state, rows.xt_dot)
    finally:
        rows.close()


class DaskRows:
    """`pgs.training.sigma_auto.fit_auto`'s rows on a Dask cluster (``sigma="auto"``).

    The training rows of each row-chunk of X (or of `n_jobs` near-equal shards, as
    ``pgs.train(n_jobs=n_jobs)`` makes) are a shard, kept in actors for the whole search;
    every run advances by `train`'s rounds, all of them in one call per shard and round.
    The held-out rows come to the client, which scores the candidates.

    Parameters
    ----------
    X : dask.array.Array
        All the rows.
    client : distributed.Client
    n_jobs, merge_every, timeout
        As for `train`.
    """

    def __init__(self, X, client, *, n_jobs=None, merge_every=None, timeout=DEFAULT_TIMEOUT):
        self.X = _partition(X)
        self.client, self.n_jobs, self.timeout = client, n_jobs, timeout
        self.merge_every = merge_every
        self.n_rows = self.X.shape[0]
        self.actors = None
        self._sent = set()        # the runs whose set-up the shards hold

    def split(self, train, val, joined):
        """Build the shards of the training rows `train` (`joined` follows them later:
        `every_row`); fetch the held-out rows `val`."""
        self._later = (train, joined)
        self.actors = _Actors(self.client, _partition(
            da.concatenate(self._rows_of_chunks(train), axis=0), self.n_jobs), self.timeout)
        self.sizes, self.stats = self.actors.sizes, self.actors.stats
        self.X_train = shape_only_csr(self.actors.shape)   # (what prepare reads: the shape)
        self.actors.wait()
        # (chunk by chunk: a row index across chunks of sparse matrices is not joined by
        # every dask release)
        futures = self.client.compute(self._rows_of_chunks(val))
        wait_for(self.client, futures, self.timeout, "the held-out rows")
        return sp.vstack([sp.csr_matrix(f.result()) for f in futures], format="csr")

    def every_row(self):
        """From now on the training rows, then the held-out ones that join them, are the
        training rows: the shards are them (`n_jobs` near-equal ones of them all, as the
        threads engine's; else each chunk's, which for one chunk is the in-memory order);
        (the runs' X, its shape only; the rows' indices in X, in that order)."""
        self.actors.close()
        train, joined = self._later
        taken = []      # (near-equal shards of them all, as the threads', or each chunk's)
        blocks = self._rows_of_chunks(train, taken=taken) + self._rows_of_chunks(
            joined, taken=taken) if self.n_jobs is not None else \
            self._rows_of_chunks(train, joined, taken=taken)
        order = np.concatenate(taken)
        X = da.concatenate(blocks, axis=0)
        self.actors = _Actors(self.client, _partition(X, self.n_jobs), self.timeout)
        self.sizes, self._sent = self.actors.sizes, set()
        self.actors.wait()
        return shape_only_csr(self.actors.shape), order

    def as_chunked(self):
        """For runs at a fixed sigma: every row, the shards X's row chunks (or `n_jobs`
        near-equal ones), as `train`'s; (the runs' X, its shape only)."""
        self.actors = _Actors(self.client, _partition(self.X, self.n_jobs), self.timeout)
        self.sizes, self.stats, self._sent = self.actors.sizes, self.actors.stats, set()
        self.actors.wait()
        return shape_only_csr(self.actors.shape)

    def _rows_of_chunks(self, *row_sets, taken=None):
        """The sorted global rows of each of `row_sets` as one dask array a chunk that
        holds some: a chunk's rows of the first set, then of the next, ... (their global
        indices appended to `taken`, in that order)."""
        bounds = np.cumsum([0] + [int(c) for c in self.X.chunks[0]])
        blocks = []
        for w in range(len(bounds) - 1):
            local = np.concatenate([rows[(rows >= bounds[w]) & (rows < bounds[w + 1])]
                                    for rows in row_sets]) - bounds[w]
            if local.size:
                blocks.append(self.X.blocks[w][local])
                if taken is not None:
                    taken.append(local + bounds[w])
        return blocks

    def advance(self, groups, t_end):
        """Every run of `groups` to iteration `t_end` by rounds, together: one call per
        shard and round for all of them (`pgs.engine.rounds.run_rounds`)."""
        # (a run's key on the shards: its candidate's loss and sigma, its place)
        runs = {(run.params.loss, run.params.sigma, c): run for group in groups
                for c, run in enumerate(group) if run.solver.t < t_end}
        if not runs:
            return
        states = {}
        for key, run in runs.items():
            params, state = P.setup(run, self.sizes, self.merge_every, DASK_ROUND_PASSES)
            if key not in self._sent:          # (targets, weights, constants: once)
                self.actors.setup(run, params, key)
                self._sent.add(key)
            states[key] = [state, params]
        P.run_rounds(states, _map_runs(self.actors, "sigma search round"), t_end,
                     params.merge_every)
        for key, run in runs.items():
            run.solver.set_state(P.final_solver_state(states[key][0]))

    def xt_dot(self, v):
        """X^T v over the shards' rows (the null model's check, `pgs.training.screening`)."""
        return self.actors.xt_dot(v)

    def close(self):
        """Release the shards' actors."""
        if self.actors is not None:
            self.actors.close()


class _DirectActor(distributed.Actor):
    """An actor handle whose calls go straight to its worker even where the client's own
    messages go through the scheduler (``direct_to_workers=False``, a Client's default):
    one hop less a call (through the scheduler, a 4-pass fit took 1.10x as long on the 200k
    hard RCV1-like set, 1.20x on MNIST parity, 1.41x on a9a). `_Actors`
    falls back to Dask's own handles where the client cannot reach the workers."""

    @property
    def _worker_rpc(self):
        return self._client.rpc(self._address)


class _Actors:
    """The fit's `_ShardActor` s, one per partition of X: X's chunks as futures the client
    keeps for the whole fit (the scheduler can rebuild a lost one from the graph that made
    it: none is pinned to a worker), the actors' futures, the handles they are called by,
    and their making again after a worker is lost. Every wait lasts `timeout` seconds at
    most. ``stats(q, full)`` is `row_stats`, each asked once (the "auto" rules may ask up
    to three times: one scan)."""

    def __init__(self, client, X, timeout):
        self.client, self.timeout, self.shape = client, timeout, X.shape
        X = client.persist(X)      # (held until the parts are computed from it)
        self.parts = parts = client.compute(list(X.to_delayed().ravel()))
        wait_for(client, parts, timeout, "X's partitions")
        who = client.who_has(parts)
        self.homes = [min(who.get(f.key, ()), default="(none)") for f in parts]
        self.sizes = [int(c) for c in X.chunks[0]]
        self.bounds = np.cumsum([0] + self.sizes)
        self.stats = functools.cache(self.row_stats)
        self.futures = [None] * len(parts)
        self.handles = [None] * len(parts)
        self.setups = [{} for _ in parts]  # each actor's `setup` arguments, by run
        self.direct = not client.direct_to_workers  # (_DirectActor handles; else Dask's)
        self.reached = False                        # a direct call has succeeded
        for w in range(len(parts)):
            self._submit(w, [self.homes[w]])

    def name(self, w):
        """Partition w's name and its worker's address, for the error messages."""
        return f"{_name(w, int(self.bounds[w]), self.sizes[w])}, last on worker {self.homes[w]}"

    def wait(self):
        """Wait for every actor to be built (see `_bind`)."""
        self._bind(range(len(self.futures)))

    def _submit(self, w, workers=None):
        self.futures[w] = self.client.submit(
            _ShardActor, self.parts[w], w, int(self.bounds[w]), self.setups[w], actor=True,
            pure=False, workers=workers, allow_other_workers=workers is not None)

    def _bind(self, which):
        """Wait for actors `which` to be built (`_built`) and make their handles, bound to
        the fit's client (the handle a future's result gives is bound to the default
        client, or to a worker)."""
        which = list(which)
        for w in which:
            self._built(w)
        who = self.client.who_has([self.futures[w] for w in which])
        for w in which:
            self.homes[w] = min(who.get(self.futures[w].key, ()), default=self.homes[w])
            self._handle(w)

    def _handle(self, w):
        """Make actor w's handle: a `_DirectActor` unless `direct` is off."""
        with self.client.as_current():
            handle = _DirectActor if self.direct else distributed.Actor
            self.handles[w] = handle(_ShardActor, self.homes[w], self.futures[w].key)

    def _built(self, w):
        """Wait for actor w. Its future cancelled (its partition's data gone for good:
        scattered data on a lost worker) is a RuntimeError naming the partitions lost and
        their workers; a file that cannot be read again is an OSError naming them."""
        f = self.futures[w]
        try:
            f.result(timeout=self.timeout)
        except TimeoutError:
            raise self._timeout("the shard", w) from None
        except CancelledError:
            gone = [v for v, g in enumerate(self.parts) if g.cancelled()] or [w]
            raise RuntimeError(
                f"pgs.dask.train: {'; '.join(self.name(v) for v in gone)} "
                f"{'was lost with its worker' if len(gone) == 1 else 'were lost'} and "
                f"cannot be rebuilt: no graph made it (scattered data?). Make X from a "
                f"graph (dask.array.from_array, pgs.dask.read_svmlight) to survive the "
                f"loss of a worker") from None
        except KilledWorker as exc:
            raise RuntimeError(f"pgs.dask.train: the shard of {self.name(w)} was running "
                               f"on workers that died: {exc}") from None
        except OSError as exc:
            if f.status != "error":      # (not the task's own error: the connection's)
                raise
            raise type(exc)(f"{self.name(w)}, could not be rebuilt: {exc}") from exc

    def _timeout(self, what, w):
        return TimeoutError(
            f"pgs.dask.train: {what} of {self.name(w)} did not finish within "
            f"timeout={self.timeout:g} s (are there workers left? raise timeout= for "
            f"longer rounds)")

    def row_stats(self, q, full):
        """`pgs.rules.defaults.row_stats` of the shards' rows, from every shard's
        `_ShardActor.row_sq_norms`, in shard order: the sums of the same rows' norms as in
        memory, rounded once."""
        stride = 1 if full else q_stride(self.shape[0])
        norms = self.map("row_sq_norms", [(q, stride, int(self.bounds[w]))
                                          for w in range(len(self.futures))], "the rows' norms")
        sq = np.concatenate([n[0] for n in norms])     # (q = 2: one array, one sum)
        sq_q = sq if len(norms[0]) == 1 else np.concatenate([n[1] for n in norms])
        return row_stats(as_csr_buffers(shape_only_csr(self.shape)), q, norms=(sq, sq_q),
                         full=full)

    def xt_dot(self, v):
        """X^T v, v a value a row: the shards' products added in shard order."""
        b = self.bounds
        parts = self.map("xt_dot", [(v[b[w]:b[w + 1]],) for w in range(len(self.futures))],
                         "X^T v")
        return functools.reduce(np.add, parts)

    def setup(self, run, params, key=0):
        """Give every shard run `key`'s targets, weights and constants."""
        weights, b = run.weights, self.bounds
        for w in range(len(self.futures)):
            self.setups[w][key] = (run.y_kernel[b[w]:b[w + 1]],
                                   None if weights is None else weights[b[w]:b[w + 1]],
                                   params)
        self.map("setup", [(key,) + self.setups[w][key] for w in range(len(self.futures))],
                 "the shards' set-up")

    def map(self, method, args, what):
        """``actor_w.method(*args[w])`` for every actor, called together; the results in
        shard order (`_result`: an actor lost is made again and called again)."""
        calls = [self.call(w, method, a) for w, a in enumerate(args)]
        return [self._result(w, c, method, a, what)
                for w, (c, a) in enumerate(zip(calls, args, strict=True))]

    def call(self, w, method, args, renew=False):
        """Actor w's `method` (an ActorFuture), the actor made again first if `renew` or
        if the scheduler knows it is lost: from X's chunk (which the scheduler rebuilds
        from its graph), wherever it can run."""
        for attempt in range(2):
            if renew or self.futures[w].status != "finished":
                self.client.cancel([self.futures[w]])
                self._submit(w)
                self._bind([w])
            elif isinstance(self.handles[w], _DirectActor) != self.direct:
                self._handle(w)
            try:
                return getattr(self.handles[w], method)(*args)
            except RuntimeError:     # (the scheduler has just found the actor lost)
                if attempt:
                    raise
                renew = True

    def _result(self, w, call, method, args, what):
        """The result of actor w's `call` of `method`; when the actor is lost with its
        worker, it is made again and called again (at most `RETRIES` times)."""
        for retries in range(RETRIES + 1):
            try:
                result = _wait_call(call, self.timeout)
                self.reached = self.reached or isinstance(self.handles[w], _DirectActor)
                break
            except TimeoutError:
                raise self._timeout(what, w) from None
            except Exception as exc:
                # (a lost worker: the connection's OSError, or the scheduler's word that
                # the actor is gone; any other error is the call's own: a bad entry of X)
                lost = isinstance(exc, OSError) or self.futures[w].status != "finished"
                if isinstance(exc, OSError) and self.futures[w].status == "finished" \
                        and isinstance(self.handles[w], _DirectActor) and not self.reached:
                    # (the client may not reach the workers itself: through the scheduler
                    # (`call` makes the handle again); once it has, a lost worker)
                    self.direct = False
                    call = self.call(w, method, args)
                    continue
                if not lost or retries == RETRIES:
                    raise
            call = self.call(w, method, args, renew=True)
        return result

    def close(self):
        self.client.cancel(self.futures)


def _map_runs(actors, what):
    """A `pgs.engine.rounds.run_rounds` map: one call of each shard's actor a
    round, carrying every run's task (``run`` its key)."""
    rounds = [0]

    def map_fn(plans):
        rounds[0] += 1
        keys = list(plans)
        results = actors.map("run_rounds", [
            ([dict(plans[key][w], run=key) for key in keys],)
            for w in range(len(actors.futures))], f"{what} {rounds[0]}")
        return {key: [result[i] for result in results] for i, key in enumerate(keys)}
    return map_fn


def _wait_call(call, timeout):
    """An actor call's result within `timeout` seconds. The wait polls (sleeps of 0.1 to
    1 ms: a round waits at most 1 ms longer) rather than block in ``call.result``: a
    Ctrl-C there leaves Dask's coroutine un-awaited (a RuntimeWarning), while here it
    lands in the sleep."""
    deadline = time.monotonic() + timeout
    pause = 0.0001
    while not call.done():
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(pause)
        pause = min(2.0 * pause, 0.001)
    return call.result()
