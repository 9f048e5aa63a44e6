"""Ctrl-C stops every long call: the kernels run in chunks (pgs/engine/chunks.py), and a
chunked run gives an unsplit run's bits."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
from sigint import CHILD_SIGINT

import pgs
from pgs.engine import chunks
from pgs.estimators import PGSClassifier, PGSRegressor


def _problem(m=300, n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.3, format="csr", random_state=seed)
    z = X @ rng.standard_normal(n)
    return X, z, np.digitize(z, np.quantile(z, [0.25, 0.5, 0.75]))


def _fits(X, z, labels):
    """Each long call, as a function returning its weights."""
    return {
        "train": lambda: pgs.train(X, np.sign(z), loss="logistic", p=1.7, T=3000, k=3,
                                   seed=1).full_weights(),
        "train_csgd": lambda: pgs.train_csgd(X, z, T=3000, iterate="average",
                                             sampling="permutation", seed=2).full_weights(),
        "train_cadaline": lambda: pgs.train_cadaline(X, labels, T=3000, seed=3).full_weights(),
        "classifier": lambda: PGSClassifier(T=700, k=2, random_state=4, n_jobs=2).fit(
            X, labels).coef_,
        "classifier_one_thread": lambda: PGSClassifier(T=700, random_state=5, n_jobs=1).fit(
            X, labels).coef_,
        "regressor": lambda: PGSRegressor(T=900, random_state=6).fit(X, z).coef_,
    }


@pytest.mark.parametrize("name", list(_fits(*_problem())))
def test_chunked_runs_equal_unsplit_runs(monkeypatch, name):
    """Chunks of a few iterations give the bits of one chunk for the whole run."""
    X, z, labels = _problem()
    fit = _fits(X, z, labels)[name]
    monkeypatch.setattr(chunks, "CHUNK_WORK", 2**62)
    whole = fit()
    monkeypatch.setattr(chunks, "CHUNK_WORK", 40)    # a few iterations per chunk
    calls = []
    real = chunks.run_chunked

    def counting(step_to, *args, **kwargs):
        calls.append(1)
        return real(lambda t: (calls.append(t), step_to(t)), *args, **kwargs)

    monkeypatch.setattr("pgs.training.fit.run_chunked", counting)
    monkeypatch.setattr("pgs.training.csgd.run_chunked", counting)
    chunked = fit()
    assert len(calls) > 50                 # it did run in many chunks
    np.testing.assert_array_equal(chunked, whole)


#: Each long call, started in a child process with T far beyond what runs in a test.
_LONG_CALLS = {
    "train": "pgs.train(X, np.sign(z), T=10**12, iterate='last')",
    "train_csgd": "pgs.train_csgd(X, z, T=10**12, eta0=0.01)",
    "train_cadaline": "pgs.train_cadaline(X, labels, T=10**12, eta0=0.01)",
    "classifier_n_jobs_2": "clf.set_params(T=10**12, n_jobs=2).fit(X, labels)",
    "regressor": "PGSRegressor(T=10**12).fit(X, z)",
}

_CHILD = """
import sys
import numpy as np
import scipy.sparse as sp
import pgs
from pgs.estimators import PGSClassifier, PGSRegressor
rng = np.random.default_rng(0)
X = sp.random(3000, 40, density=0.2, format="csr", random_state=0)
z = X @ rng.standard_normal(40)
labels = np.digitize(z, np.quantile(z, [0.25, 0.5, 0.75]))
clf = PGSClassifier(T=200, random_state=0, warm_start=True).fit(X, labels)
coef, X_data = clf.coef_.copy(), X.data.copy()
model = pgs.train(X, np.sign(z), T=100, seed=0)
model.save(sys.argv[1])
# (functions, not eval: a KeyboardInterrupt out of eval(str) makes Python exit by SIGINT
# even when caught)
CALLS = {
CALLS_HERE}
for name, call in CALLS.items():
    print("ready", name, flush=True)
    try:
        call()
    except KeyboardInterrupt:
        # the caller's data, the fitted estimator and the model file are untouched
        same = (np.array_equal(X.data, X_data) and np.array_equal(clf.coef_, coef)
                and np.array_equal(pgs.load_model(sys.argv[1]).coef, model.coef))
        print("interrupted" if same else "changed", name, flush=True)
    else:
        print("finished", name, flush=True)
"""


def test_ctrl_c_stops_every_long_call(tmp_path):
    """SIGINT about 1 s into each call of hours raises KeyboardInterrupt within a
    fraction of a second (allowed: 3 s, on a loaded machine), leaving the data, an
    estimator fitted before and a saved model unchanged. Before the chunks, every call
    but train's ran on (the child is killed after 60 s)."""
    import threading

    script = tmp_path / "long.py"
    calls = "".join(f"    {k!r}: lambda: {v},\n" for k, v in _LONG_CALLS.items())
    script.write_text(CHILD_SIGINT + _CHILD.replace("CALLS_HERE", calls))
    latencies = {}
    with subprocess.Popen([sys.executable, str(script), str(tmp_path / "m.npz")],
                          stdout=subprocess.PIPE, text=True) as proc:
        watchdog = threading.Timer(60, proc.kill)
        watchdog.start()
        try:
            for name in _LONG_CALLS:
                assert proc.stdout.readline().split() == ["ready", name]
                time.sleep(1.0)
                sent = time.monotonic()
                proc.send_signal(signal.SIGINT)
                line = proc.stdout.readline().split()
                latencies[name] = time.monotonic() - sent
                assert line == ["interrupted", name], (line, latencies)
            assert proc.wait(timeout=30) == 0
        finally:
            watchdog.cancel()
            proc.kill()
    print({k: round(v, 3) for k, v in latencies.items()})
    assert max(latencies.values()) < 3.0, latencies


def test_run_on_threads_stops_the_other_workers_on_an_error():
    """A worker's error stops the others at their next chunk and reaches the caller."""
    started = []

    def work(g, stop):
        started.append(g)
        if g == 0:
            raise ValueError("bad row")
        # a run of hours, in chunks of one step of ~1 ms
        chunks.run_chunked(lambda t: time.sleep(0.001), 0, 10**9, chunks.CHUNK_WORK, stop)

    t0 = time.monotonic()
    with pytest.raises(ValueError, match="bad row"):
        chunks.run_on_threads(work, 3)
    assert sorted(started) == [0, 1, 2]
    assert time.monotonic() - t0 < 30


def test_run_on_threads_returns_results_in_order():
    assert chunks.run_on_threads(lambda g, stop: g * g, 4) == [0, 1, 4, 9]


def test_ctrl_c_during_threads_is_a_stop_request_then_keyboardinterrupt():
    """Under `interrupts_to`, SIGINT sets the workers' stop event instead of raising in the
    main thread (whose concurrent.futures calls hold locks the workers need); the
    KeyboardInterrupt comes when the block ends, and Python's handler is back."""
    import os
    import threading

    from sigint import default_sigint

    stop, reached = threading.Event(), []
    with default_sigint():
        with pytest.raises(KeyboardInterrupt), chunks.interrupts_to(stop):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):       # (the handler runs at the next bytecodes)
                if stop.is_set():
                    break
                time.sleep(0.001)
            reached.append(stop.is_set())
        assert reached == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        # a worker pool interrupted: the workers stop at a chunk, the caller gets Ctrl-C

        def work(g, stop):
            if g == 0:
                os.kill(os.getpid(), signal.SIGINT)
            chunks.run_chunked(lambda t: time.sleep(0.001), 0, 10**9, chunks.CHUNK_WORK, stop)

        with pytest.raises(KeyboardInterrupt):
            chunks.run_on_threads(work, 2)


@pytest.mark.parametrize("chunk", [1, 7, 100, 2**62])
def test_row_scan_in_chunks_equals_one_pass(chunk):
    """The "auto" rules' O(nnz) scan of X (compiled, per row) on X split into blocks of
    rows, as `pgs.dask`'s shards scan it: the same bits, concatenated; NaN kept."""
    from pgs.rules import defaults
    from pgs.rules.data import as_csr_buffers

    rng = np.random.default_rng(0)
    for m in (1, 7, 1001):
        X = sp.random(m, 50, density=0.3, format="csr", random_state=m)
        X.data = 10 * rng.standard_normal(X.nnz)
        Xb = as_csr_buffers(X)
        for q in (2.0, 1.7 / 0.7, 3.0):
            whole = defaults.row_sq_norms(Xb, q)
            parts = [defaults.row_sq_norms(as_csr_buffers(X[lo:lo + chunk]), q)
                     for lo in range(0, m, chunk)]
            for i, a in enumerate(whole):
                np.testing.assert_array_equal(a, np.concatenate([b[i] for b in parts]))
        X.data[X.nnz // 2] = np.nan
        stats = defaults.row_stats(as_csr_buffers(X, check_entries=False), 2.0)
        assert np.isnan(stats["max_q"]) and np.isnan(stats["sq"])
