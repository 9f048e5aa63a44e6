"""pgs.dask.train when workers are lost: a worker process killed mid-round or between
rounds, or dropped by the scheduler, costs the round again and the model keeps its bits;
scattered data lost with its worker is a RuntimeError naming the partition and the worker,
and the client goes on; Ctrl-C cancels the fit's tasks. Each test runs its own
LocalCluster of 2 single-threaded worker processes (with nannies, which restart a killed
worker)."""

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sigint import default_sigint  # noqa: E402

import pgs  # noqa: E402
import pgs.dask  # noqa: E402
from pgs.engine.rounds import partition_rows  # noqa: E402

# The worker plugin below goes to worker processes, which cannot import this test module
# (the tests folder is not on their path when pytest runs as a script): send this
# module's classes and functions by value.
pytest.importorskip("cloudpickle").register_pickle_by_value(sys.modules[__name__])

M = 3000
#: (merge_every given: the Dask engine's default round is twice the threads engine's)
KW = dict(loss="logistic", sigma=1e-3, seed=5, iterate="average", sampling="permutation",
          merge_every=M // 8)
#: The Ctrl-C test's T: 4000 rounds of 1000 iterations, about 30 s on a loaded 2-core machine
#: (7 ms a round), the signal coming after the first.
T_CTRL_C = 4 * 10**6


@pytest.fixture
def client():
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def _problem(m=M, n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.25, format="csr", random_state=rng)
    y = np.where(X @ rng.standard_normal(n) + 0.1 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _dask(X, W=2):
    chunks = tuple(hi - lo for lo, hi in partition_rows(X.shape[0], W))
    return da.from_array(X, chunks=(chunks, X.shape[1]), asarray=False)


def _same_bits(a, b):
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept and a.iteration == b.iteration


def _pids(client):
    return client.run(os.getpid)            # {address: pid}


class _KillOnRound(distributed.WorkerPlugin):
    """Kill this worker's process (SIGKILL) as its shard's actor starts its `at`-th
    round: mid-round. Only once in the cluster (the first worker there claims `marker`;
    the nanny's new process gets the plugin again and must not kill itself)."""

    def __init__(self, marker, at):
        self.marker, self.at = str(marker), at

    def setup(self, worker):
        from pgs.dask.training import _ShardActor
        marker, at, seen = self.marker, self.at, [0]
        run_rounds = _ShardActor.run_rounds

        def killing(actor, tasks):
            seen[0] += 1
            if seen[0] == at:
                try:
                    os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    pass
                else:
                    os.kill(os.getpid(), signal.SIGKILL)
            return run_rounds(actor, tasks)

        _ShardActor.run_rounds = killing


@pytest.mark.parametrize("at", [3, 9])      # 10% and 30% into 8 passes (30 rounds)
def test_worker_killed_mid_round_gives_the_same_bits(client, tmp_path, at):
    X, y = _problem()
    kw = dict(KW, T=8 * M)
    ref = pgs.train(X, y, n_jobs=2, **kw)
    before = set(_pids(client).values())
    client.register_plugin(_KillOnRound(tmp_path / "killed", at), name="kill")
    got = pgs.dask.train(_dask(X), y, client=client, timeout=120, **kw)
    assert (tmp_path / "killed").exists()                  # a worker was killed
    _same_bits(got, ref)
    client.wait_for_workers(2, timeout=60)
    assert set(_pids(client).values()) != before           # (the nanny restarted it)


def test_worker_killed_during_the_sigma_search_gives_the_same_bits(client, tmp_path):
    """sigma="auto": a worker killed at its 3rd call of rounds (the 7 candidates' first
    rung), its actor made again with every candidate's set-up: the model is the one
    without the fault (pgs.train(n_jobs=2)'s)."""
    X, y = _problem(seed=2)
    kw = dict(loss="logistic", seed=5, merge_every=300)
    ref = pgs.train(X, y, n_jobs=2, **kw)
    client.register_plugin(_KillOnRound(tmp_path / "killed", 3), name="kill")
    got = pgs.dask.train(_dask(X), y, client=client, timeout=120, n_jobs=2, **kw)
    assert (tmp_path / "killed").exists()
    _same_bits(got, ref)
    np.testing.assert_array_equal(got.sigma_scores, ref.sigma_scores)


def test_worker_killed_between_rounds_gives_the_same_bits(client):
    """Killed by SIGKILL from the callback, at 80% of a 4-pass fit (the issue's case)."""
    X, y = _problem(seed=1)
    kw = dict(KW, T=4 * M, sampling="iid", iterate="last", merge_every=150)
    ref = pgs.train(X, y, n_jobs=2, **kw)
    pids = list(_pids(client).values())
    killed = []

    def kill(progress):
        if not killed and progress.t >= 0.8 * kw["T"]:
            os.kill(pids[1], signal.SIGKILL)
            killed.append(progress.t)

    got = pgs.dask.train(_dask(X), y, client=client, timeout=120, callback=kill,
                         callback_every=300, **kw)
    assert killed
    _same_bits(got, ref)


def test_worker_dropped_by_the_scheduler_gives_the_same_bits(client):
    """The scheduler drops a worker (as when its connection is lost: what it held is
    gone) while a round runs; a graceful retirement asked later (which the scheduler
    does not carry out while the fit's actors live there) changes nothing either."""
    X, y = _problem(seed=2)
    kw = dict(KW, T=6 * M, merge_every=100)
    ref = pgs.train(X, y, n_jobs=2, **kw)
    done = []

    async def drop(dask_scheduler, address):
        await dask_scheduler.remove_worker(address, stimulus_id="pgs-test-drop",
                                           close=True)

    def drop_one(progress):
        if not done and progress.t >= 0.3 * kw["T"]:
            address = sorted(client.scheduler_info()["workers"])[0]
            thread = threading.Thread(target=client.run_on_scheduler, args=(drop,),
                                      kwargs=dict(address=address))
            thread.start()                      # (while the next round runs)
            done.append(thread)
        elif len(done) == 1 and progress.t >= 0.6 * kw["T"]:
            workers = sorted(client.scheduler_info()["workers"])
            if len(workers) == 2:
                done.append(threading.Thread(target=client.retire_workers,
                                             args=(workers[:1],)))
                done[-1].start()

    got = pgs.dask.train(_dask(X), y, client=client, timeout=120, callback=drop_one,
                         callback_every=200, **kw)
    for thread in done:
        thread.join(60)
    assert done
    _same_bits(got, ref)


def test_lost_scattered_data_is_a_runtime_error_and_the_client_goes_on(client):
    X, y = _problem(seed=3)
    half = M // 2
    workers = sorted(client.scheduler_info()["workers"])
    futures = [client.scatter(X[:half], workers=workers[:1]),
               client.scatter(X[half:], workers=workers[1:])]
    meta = sp.csr_matrix((0, X.shape[1]))
    Xd = da.concatenate([da.from_delayed(f, shape=(half, X.shape[1]), dtype=X.dtype,
                                         meta=meta) for f in futures])
    pids = _pids(client)
    killed = []

    def kill(progress):          # (both: else a copy of a chunk may live on the other)
        if not killed:
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)
            killed.append(time.monotonic())

    # (both workers die: the first partition found lost is named, either of the two)
    with pytest.raises(RuntimeError, match=rf"partition (0 \(rows 0\.\.{half - 1}\)|1 \(rows "
                                           rf"{half}\.\.{M - 1}\)), last on worker tcp://.*cannot "
                                           rf"be rebuilt") as info:
        pgs.dask.train(Xd, y, client=client, T=20 * M, callback=kill,
                       callback_every=200, timeout=120, **dict(KW, merge_every=100))
    assert any(w in str(info.value) for w in workers)
    assert time.monotonic() - killed[0] < 60
    # The client goes on: the next fit (with a graph) runs and is the threads engine's.
    client.wait_for_workers(2, timeout=60)
    kw = dict(KW, T=2 * M)
    _same_bits(pgs.dask.train(_dask(X), y, client=client, timeout=120, **kw),
               pgs.train(X, y, n_jobs=2, **kw))


def test_ctrl_c_cancels_the_fits_tasks(client):
    """SIGINT half a second after the fit's first round raises KeyboardInterrupt, and the
    fit's tasks leave the scheduler. Python's SIGINT handler is installed for the fit (a
    shell that ignores SIGINT passes that on: the signal would never come), and the fit
    ends by itself (T_CTRL_C: tens of seconds) so that without the signal the test fails
    rather than hangs."""
    X, y = _problem(seed=4)
    started, done = threading.Event(), threading.Event()

    def ctrl_c():
        if started.wait(60) and not done.wait(0.5):
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=ctrl_c)
    with default_sigint():
        sender.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                pgs.dask.train(_dask(X), y, client=client, T=T_CTRL_C,
                               callback=lambda report: started.set(), callback_every=1000,
                               timeout=120, **dict(KW, merge_every=500))
        finally:
            done.set()
            sender.join()

    def ours(dask_scheduler):
        return [str(k) for k in dask_scheduler.tasks if "_ShardActor" in str(k)]

    deadline = time.monotonic() + 30
    while client.run_on_scheduler(ours) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.run_on_scheduler(ours) == []


def test_no_workers_is_a_timeout_not_a_hang(client):
    X, y = _problem(m=400)
    client.cluster.scale(0)
    deadline = time.monotonic() + 30
    while client.scheduler_info()["workers"] and time.monotonic() < deadline:
        time.sleep(0.1)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"timeout=3 s"):
        pgs.dask.train(_dask(X), y, client=client, T=4000, timeout=3, **KW)
    assert time.monotonic() - start < 30
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        pgs.dask.train(_dask(X), y, client=client, timeout=0)


def test_lost_file_is_an_os_error_naming_the_partition(client, tmp_path):
    """X read from a file that is gone when the workers are lost (both: else a block may
    survive on the other one, and the fit goes on with the same bits)."""
    X, y = _problem(seed=5)
    path = tmp_path / "train.svm"
    pgs.dump_svmlight(X, y, path)
    Xd, yd = pgs.dask.read_svmlight(path, blocksize=20000, n_features=X.shape[1],
                                    client=client)
    assert Xd.numblocks[0] >= 2
    pids = _pids(client)
    killed = []

    def kill(progress):
        if not killed:
            path.unlink()
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)
            killed.append(time.monotonic())

    with pytest.raises(OSError, match=r"X's partition \d+ \(rows \d+\.\.\d+\), last on "
                                      r"worker tcp://.*could not be rebuilt.*train\.svm"):
        pgs.dask.train(Xd, yd, client=client, T=6 * M, callback=kill,
                       callback_every=200, timeout=120, **dict(KW, merge_every=100))
    assert time.monotonic() - killed[0] < 60
