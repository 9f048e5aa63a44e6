"""Experiment 1: throughput of one pass (T = m iterations, k = 1, p = 2) on the 781k set.

pgs (each sampling mode the installed pgs offers) against scikit-learn's SGDClassifier
(shuffled and unshuffled, one epoch) and the floor: one sparse X @ w and one X.T @ v
over the same matrix. Each round runs every contender once, in turn, so ratios are
taken within a round; the table shows medians [min-max] over rounds.
"""

import numpy as np

from bench.harness import peers
from bench.harness.common import fmt, markdown_table, timed, write_report
from bench.harness.data import rcv1_like

SIGMA = {"hinge": 1e-5, "logistic": 1e-5}


def _contenders(loss):
    out = []
    for mode in ("iid", "permutation", "cyclic"):
        out.append((f"pgs {loss} sampling={mode}", lambda X, y, mode=mode: peers.run_pgs(
            X, y, **peers.paper_run(loss=loss, p=2.0, k=1, sigma=SIGMA[loss], T=X.shape[0],
                                    iterate="last", seed=1, sampling=mode))[0]))
    for shuffle in (True, False):
        out.append((f"sklearn SGDClassifier {loss} shuffle={shuffle}",
                    lambda X, y, shuffle=shuffle: peers.run_sgd(
                        X, y, loss=loss, sigma=SIGMA[loss], passes=1, shuffle=shuffle,
                        seed=1)[0]))
    return out


def run(cfg):
    """Run the experiment, write results/throughput.md and return its path."""
    m = 50_000 if cfg.quick else None
    split = rcv1_like() if m is None else rcv1_like(m)
    X, y = split.X_train, split.y_train
    nnz, m = X.nnz, X.shape[0]
    w = np.ones(X.shape[1])
    v = np.ones(m)
    floor = [("pgs.train fixed cost (T = 1: validation, setup)", lambda X, y: peers.run_pgs(
                 X, y, **peers.paper_run(loss="hinge", sigma=1e-5, T=1, iterate="last",
                                         seed=1))[0]),
             ("floor: X @ w", lambda X, y: timed(X.dot, w)[0]),
             # epsilon-insensitive with a huge epsilon has loss' = 0 everywhere: the pass
             # draws, prefetches and reads every row and takes its margin, but never
             # updates. It is the cost of reading the rows in that order.
             ("floor: pgs iid, margins only (no updates)", lambda X, y: peers.run_pgs(
                 X, y, **peers.paper_run(loss="epsilon_insensitive", epsilon=1e9, sigma=1e-5,
                                         T=X.shape[0], iterate="last", seed=1))[0]),
             ("floor: pgs cyclic, margins only (no updates)", lambda X, y: peers.run_pgs(
                 X, y, **peers.paper_run(loss="epsilon_insensitive", epsilon=1e9, sigma=1e-5,
                                         T=X.shape[0], iterate="last", seed=1,
                                         sampling="cyclic"))[0]),
             ("floor: X.T @ v", lambda X, y: timed(X.T.dot, v)[0])]
    contenders = _contenders("hinge") + _contenders("logistic") + floor
    seconds = {name: [] for name, _ in contenders}
    for _ in range(cfg.repeats):
        for name, fn in contenders:
            seconds[name].append(fn(X, y))
    base_hinge = np.array(seconds[contenders[0][0]])
    base_logistic = np.array(seconds[_contenders("logistic")[0][0]])
    rows = []
    for name, _ in contenders:
        s = np.array(seconds[name])
        base = base_logistic if "logistic" in name else base_hinge
        peer_loss = "logistic" if "logistic" in name else "hinge"
        sgd = np.array(seconds[f"sklearn SGDClassifier {peer_loss} shuffle=True"])
        rows.append([name, fmt(s, 3), fmt(s / nnz * 1e9, 3), fmt(s / base, 3),
                     fmt(s / sgd, 3)])
    table = markdown_table(["contender", "seconds per pass", "ns per non-zero",
                            "time / pgs (iid), same round",
                            "time / SGD shuffled, same round"], rows)
    intro = (f"Data: RCV1-like, m = {m:,} rows, {X.shape[1]:,} features, {nnz:,} non-zeros "
             f"({nnz / m:.1f} per row), float64 CSR. One pass = T = m iterations with k = 1, "
             f"p = 2, sigma = 1e-5, the paper's set-up (pgs.PAPER: steps 1/(sigma t), an "
             f"intercept column of 1) with iterate='last'; SGDClassifier with max_iter=1, "
             f"tol=None, "
             f"alpha = sigma. The floor rows are one sparse matrix-vector product each; their "
             f"ratio is to pgs hinge, as are the margins-only rows (a pgs.train pass whose loss "
             f"derivative is always 0, epsilon-insensitive with epsilon = 1e9: every row is "
             f"drawn, read and its margin taken, nothing is updated). The fixed-cost row is "
             f"one pgs.train call with T = 1. "
             f"{cfg.repeats} rounds; every contender runs once per round and ratios are "
             f"taken within a round.")
    return write_report("throughput", "Throughput: one pass over the RCV1-like set",
                        [("", table)], cfg, intro)
