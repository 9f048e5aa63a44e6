"""Constrained SGD for least squares (`pgs.train_csgd`): the cost of a step.

Each step of CSGD (Mu, Ding, Zhou, Tao, KDD 2013) projects the iterate onto the
hyperplane through the running mean of the rows seen; pgs keeps w = a + gamma S (S the
running row sum) so that a step costs O(non-zeros of the row), as plain SGD's. Timed here
on the RCV1-like rows (bench/harness/data.py: 47,236 features, ~76 non-zeros a row) with
least-squares targets: the compiled kernel's sgd, ncsgd and csgd steps (and csgd with the
average iterate) against scikit-learn's SGDRegressor, in CPU ns a sample. The kernel's
runs are timed alone (no validation, no eta0 search); SGDRegressor's fit includes its input
checks.

Run::

    python bench/run.py [--quick] --only csgd
"""

import time
import warnings

import numpy as np

from bench.harness.common import fmt, markdown_table, write_report
from bench.harness.data import generate_rcv1_like
from pgs._csgd import CSGDSolver
from pgs.rules.data import as_csr_buffers

VARIANT_ID = {"csgd": 0, "ncsgd": 1, "sgd": 2}
RUNS = {"pgs sgd": ("sgd", False), "pgs ncsgd": ("ncsgd", False),
        "pgs csgd": ("csgd", False), "pgs csgd, average": ("csgd", True)}


def rcv1_like_regression(m, seed):
    """The RCV1-like rows with least-squares targets: a hidden model on 2,000 random
    features plus noise of scale 0.1."""
    X = generate_rcv1_like(n_train=m, n_test=0, seed=seed).X_train
    rng = np.random.default_rng([seed, 11])
    w = np.zeros(X.shape[1])
    hot = rng.choice(X.shape[1], 2000, replace=False)
    w[hot] = rng.normal(size=2000)
    return X, X @ w + 0.1 * rng.normal(size=m)


def step_cost(X, y, T, repeats, seed):
    """CPU ns a sample of each kernel run of `RUNS` and of SGDRegressor, over `repeats`
    interleaved rounds: {label: [ns, ...]}."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDRegressor

    m = X.shape[0]
    Xb = as_csr_buffers(X)
    yk = np.ascontiguousarray(y)
    times = {k: [] for k in [*RUNS, "sklearn SGDRegressor"]}
    state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
    epochs = max(1, T // m)
    for _ in range(repeats):
        for label, (variant, average) in RUNS.items():
            s = CSGDSolver(X.shape[1], 1, VARIANT_ID[variant], 0.5, m // 2, 1.0, average,
                           state)
            t0 = time.process_time()
            s.run(T, Xb.data, Xb.indices, Xb.indptr, yk)
            times[label].append((time.process_time() - t0) / T * 1e9)
        reg = SGDRegressor(penalty=None, learning_rate="invscaling", eta0=0.5, power_t=0.5,
                           max_iter=epochs, tol=None, shuffle=True, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.process_time()
            reg.fit(X, y)
        times["sklearn SGDRegressor"].append((time.process_time() - t0) / (epochs * m) * 1e9)
    return times


def run(cfg, seed=0):
    """Write results/csgd.md (csgd_quick.md if cfg.quick) and return its path."""
    m, T, repeats = (20_000, 100_000, 2) if cfg.quick else (100_000, 500_000, 5)
    X, y = rcv1_like_regression(m, seed)
    times = step_cost(X, y, T, repeats, seed)
    base = np.array(times["pgs sgd"])
    sk = np.array(times["sklearn SGDRegressor"])
    rows = [[label, fmt(v, 3), fmt(np.array(v) / base, 3), fmt(np.array(v) / sk, 3)]
            for label, v in times.items()]
    table = markdown_table(["method", "CPU ns a sample", "/ pgs sgd, same round",
                            "/ SGDRegressor, same round"], rows)
    intro = (f"RCV1-like rows with least-squares targets: {m:,} x {X.shape[1]:,}, "
             f"{X.nnz / m:.1f} non-zeros a row, float64, int32 indices. pgs: {T:,} steps of "
             f"the compiled kernel (i.i.d. rows, eta0 = 0.5, the switch at m / 2); "
             f"SGDRegressor: {max(1, T // m)} shuffled epochs of squared error, no penalty, "
             f"eta0 / sqrt(t) with eta0 = 0.5. {repeats} rounds, every method once a round.")
    return write_report("csgd", "CSGD: the cost of a step", [("", table)], cfg, intro)
