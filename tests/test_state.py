"""A Solver's state: resumed runs give an unsplit run's bits, and a state of another
form is refused, not misread."""

import numpy as np
import pytest
import scipy.sparse as sp
from sigint import CHILD_SIGINT

import pgs
from pgs.engine.solver import Solver
from pgs.rules.data import as_csr_buffers

SEED = np.array([3, 1, 4, 1], dtype=np.uint64)
LOGISTIC = pgs.LOSS_NAMES.index("logistic")


def _wide(m=200, n=3000, nnz=12, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=nnz / n, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.nnz)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


def _narrow(m=200, n=9, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.6))
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


def _solver(n_features, p, k, average=False):
    return Solver(n_features, LOGISTIC, p, 1e-2, 0.0, 1.0, 0.0, k, 0, average, SEED.copy())


@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.7, 1.1])
@pytest.mark.parametrize("k", [1, 64])
def test_split_solver_runs_same_bits(p, k):
    """Run to 12 at once, or to 5, get_state, a new solver, set_state, then to 12."""
    X, y = _wide()
    b = as_csr_buffers(X)
    whole = _solver(X.shape[1], p, k, average=True)
    whole.run(12, b.data, b.indices, b.indptr, y)
    first = _solver(X.shape[1], p, k, average=True)
    first.run(5, b.data, b.indices, b.indptr, y)
    second = _solver(X.shape[1], p, k, average=True)
    second.set_state(first.get_state())
    second.run(12, b.data, b.indices, b.indptr, y)
    np.testing.assert_array_equal(second.lam, whole.lam)
    np.testing.assert_array_equal(second.u, whole.u)
    np.testing.assert_array_equal(second.average(), whole.average())


def test_state_of_another_average_form_is_refused():
    """p >= 1.2 keeps the average in one vector (C u - wsum), p < 1.2 in two (wsum and
    clast, spans): a state of the other form is refused, not misread."""
    X, y = _narrow()
    b = as_csr_buffers(X)
    spans = _solver(X.shape[1], 1.1, 1, average=True)
    spans.run(5, b.data, b.indices, b.indptr, y)
    state = spans.get_state()
    assert state["clast"] is not None
    with pytest.raises(ValueError, match="average in another form"):
        _solver(X.shape[1], 1.7, 1, average=True).set_state(state)
    state["clast"] = None
    with pytest.raises(ValueError, match="average in another form"):
        _solver(X.shape[1], 1.1, 1, average=True).set_state(state)


def test_train_split_run_same_bits_on_chosen_rows():
    """pgs.train with batches, run whole and as a warm-started second half: same bits."""
    X, y = _wide(seed=4)
    kw = dict(loss="hinge", p=1.8, sigma=1e-3, k=32, seed=6, iterate="last")
    whole = pgs.train(X, y, T=40, **kw)
    half = pgs.train(X, y, T=20, keep_state=True, **kw)
    split = pgs.train(X, y, T=20, warm_start=half, **kw)
    np.testing.assert_array_equal(split.full_weights(), whole.full_weights())


def test_a_long_train_is_interrupted_by_ctrl_c(tmp_path):
    """pgs.train returns to Python between chunks of the kernel: SIGINT during a run of
    10^12 iterations (hours) raises KeyboardInterrupt (the process would otherwise run
    until the timeout kills it and the test fails)."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "long.py"
    script.write_text(
        CHILD_SIGINT
        + "import sys\nimport numpy as np\nimport scipy.sparse as sp\nimport pgs\n"
        "X = sp.random(2000, 50, density=0.2, random_state=0, format='csr')\n"
        "y = np.where(np.arange(2000) % 2 == 0, -1.0, 1.0)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    pgs.train(X, y, T=10**12, iterate='last')\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(42)\n")
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                          text=True) as proc:
        try:
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 42
        finally:
            proc.kill()
