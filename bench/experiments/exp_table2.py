"""Experiment 5: the PGS paper's Table II on the RCV1-like set.

l2-logistic (k=1), l1.8-logistic (k=300) and l2-least-squares (loss="squared" on ±1
labels, classified by the sign of the decision function, k=1), each at the sigma with
the best validation accuracy: test accuracy (median ± sd over 20 seeds) and training
time, next to the accuracy of the batch optimum of the same objective at the same sigma.
"""

import numpy as np

from bench.harness import peers
from bench.harness.common import accuracy, fmt, markdown_table, write_report
from bench.harness.data import rcv1_for

CONFIGS = (
    # name, loss, p, k, passes, iterate, sigma grid, paper's (sigma, accuracy, seconds).
    # The average of all iterates is the better choice for k = 1; with k = 300 the run
    # has only 3 m / 300 iterations and the average still carries the early ones, so
    # the last iterate is returned there.
    ("l2-logistic", "logistic", 2.0, 1, 1, "average", (3e-6, 1e-5, 3e-5, 1e-4),
     "1e-6, 94.735 ± 0.042%, 5.5 s"),
    ("l1.8-logistic", "logistic", 1.8, 300, 3, "last", (1e-6, 3e-6, 1e-5, 3e-5),
     "4e-7, 94.763 ± 0.035%, 57.6 s"),
    ("l2-least-squares", "squared", 2.0, 1, 1, "average", (1e-4, 3e-4, 1e-3, 3e-3),
     "2e-5, 94.615 ± 0.060%, 2.2 s"),
)


def _train(split, loss, p, k, passes, iterate, sigma, seed):
    """The paper's set-up (`peers.PAPER_RUN`) with the configuration's iterate."""
    m = split.X_train.shape[0]
    return peers.run_pgs(split.X_train, split.y_train, **peers.paper_run(
        loss=loss, p=p, k=k, sigma=sigma, T=max(1, passes * m // k), iterate=iterate,
        seed=seed))


def _optimum_accuracy(split, prob, loss, p, sigma, maxiter):
    m = split.X_train.shape[0]
    if loss == "logistic" and p == 2.0 and prob is not None:
        _, (w, b) = peers.run_liblinear(prob, m, solver="logistic", sigma=sigma, eps=0.001)
        how = "LIBLINEAR -s 0 -e 0.001"
    else:
        w, b = peers.batch_optimum(split.X_train, split.y_train, loss=loss, p=p, sigma=sigma,
                                   maxiter=maxiter)
        how = f"L-BFGS, {maxiter} iterations max"
    return accuracy(split.y_test, split.X_test @ w + b), how


def run(cfg):
    """Run the experiment, write results/table2.md and return its path."""
    split = rcv1_for(cfg)
    n_seeds = 3 if cfg.quick else 20
    prob = peers.liblinear_problem(split.X_train, split.y_train)[1] \
        if peers.liblinear_available() else None
    rows, notes = [], []
    for name, loss, p, k, passes, iterate, grid, paper in CONFIGS:
        val = {}
        for s in grid:
            _, model = _train(split, loss, p, k, passes, iterate, s, seed=0)
            val[s] = accuracy(split.y_val, model.decision_function(split.X_val))
        sigma = max(grid, key=lambda s: (val[s], s))
        notes.append(f"{name}: validation accuracy " +
                     ", ".join(f"sigma={s:g}→{100 * a:.2f}%" for s, a in val.items()))
        accs, secs = [], []
        for seed in range(1, n_seeds + 1):
            seconds, model = _train(split, loss, p, k, passes, iterate, sigma, seed)
            secs.append(seconds)
            accs.append(accuracy(split.y_test, model.decision_function(split.X_test)))
        opt, how = _optimum_accuracy(split, prob, loss, p, sigma, 40 if cfg.quick else 150)
        accs = np.array(accs)
        rows.append([name, f"{sigma:g}", k, passes, iterate, f"{100 * np.median(accs):.3f} ± "
                     f"{100 * accs.std(ddof=1):.3f}", fmt(secs, 3), f"{100 * opt:.3f} ({how})",
                     paper])
    table = markdown_table(["regulariser-loss", "sigma (best on validation)", "k", "passes",
                            "iterate",
                            f"pgs test accuracy % (median ± sd, {n_seeds} seeds)",
                            "pgs seconds (median [min–max])", "batch optimum accuracy %",
                            "paper (sigma, accuracy, time on CCAT)"], rows)
    m = split.X_train.shape[0]
    intro = (f"Data: RCV1-like, m = {m:,}. Every pgs run processes the passes shown "
             f"(T = passes * m / k) of the paper's set-up (pgs.PAPER: steps 1/(sigma t), i.i.d. "
             f"rows, an intercept column of 1) and returns the iterate shown; sigma is "
             f"chosen from the grid shown by validation accuracy (seed 0), then {n_seeds} "
             f"seeds are run. The batch optimum is of the same objective at the same sigma. "
             f"The paper's column is the real CCAT on a 2.4 GHz Opteron, for orientation only "
             f"(different data and machine).\n\n" + "\n\n".join(notes))
    return write_report("table2", "Table II analogue", [("", table)], cfg, intro)
