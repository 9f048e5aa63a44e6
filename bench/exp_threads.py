"""Experiment 8: mini-batches on two threads (`n_threads=2`) against one, same model.

One pass over the RCV1-like set (T = m / k), hinge and logistic, in batches that are
summed per column, the mode the threads share: p = 1.8 with k = 1024, p = 1.7 with
k = 256 and p = 2 with k = 2048. (Smaller batches of p = 2 and 1.5, and on this data
of p = 1.8, update row by row, on one thread, because that is faster; the experiment
checks that each configuration sums per column.) Within each round every configuration
runs on 1 and then 2 threads, so the speed-up is a ratio within a round; the two models
must be bit-identical.
"""

import numpy as np

from bench import peers
from bench.common import batch_path, fmt, markdown_table, write_report
from bench.data import rcv1_for

LOSSES = ("hinge", "logistic")
# (p, k): batches that are summed per column on the RCV1-like set (checked in `run`)
PKS = ((1.8, 1024), (1.7, 256), (2.0, 2048))
SIGMA = 1e-5


def run(cfg):
    """Run the experiment, write results/threads.md and return its path."""
    split = rcv1_for(cfg)
    X, y = split.X_train, split.y_train
    m = X.shape[0]
    for p, k in PKS:
        if batch_path(X, p, k) != "columns":
            raise RuntimeError(f"p = {p:g}, k = {k} updates row by row here: no threads")
    configs = [(loss, p, k) for loss in LOSSES for p, k in PKS]
    seconds = {(c, nt): [] for c in configs for nt in (1, 2)}
    identical = {c: True for c in configs}
    for _ in range(cfg.repeats):
        for c in configs:
            loss, p, k = c
            models = []
            for nt in (1, 2):
                s, model = peers.run_pgs(X, y, loss=loss, p=p, k=k, sigma=SIGMA,
                                         T=max(1, m // k), iterate="last", seed=1,
                                         n_threads=nt)
                seconds[(c, nt)].append(s)
                models.append(model)
            identical[c] &= bool(np.array_equal(models[0].coef, models[1].coef)
                                 and models[0].intercept == models[1].intercept)
    rows = []
    for c in configs:
        one, two = np.array(seconds[(c, 1)]), np.array(seconds[(c, 2)])
        rows.append([c[0], f"{c[1]:g}", c[2], fmt(one, 3), fmt(two, 3), fmt(one / two, 3),
                     "yes" if identical[c] else "NO"])
    table = markdown_table(["loss", "p", "k", "1 thread (s)", "2 threads (s)",
                            "speed-up, same round", "bit-identical"], rows)
    intro = (f"Data: RCV1-like, m = {m:,} rows, {X.nnz:,} non-zeros, float64 CSR. One pass "
             f"(T = m / k), sigma = {SIGMA:g}, iterate='last', seed 1, sampling='iid'. "
             f"{cfg.repeats} rounds; wall-clock seconds of one pgs.train call. The second "
             f"core must be idle for the figures to mean anything.")
    return write_report("threads", "Mini-batches on two threads", [("", table)], cfg, intro)
