"""How long `pgs.dask`'s rounds should be: what a round costs beyond its work, and what
longer rounds (fewer merges) cost in accuracy.

The hard RCV1-like set (`bench.harness.data.rcv1_hard`, 200,000 rows), logistic at a
fixed sigma (3e-7 scaled as 1 / m), pgs.train's other defaults, 2 shards. For rounds of
1/4 to 2 passes: test accuracy after 2 and 4 passes (threads engine, whose model
`pgs.dask.train` equals bit for bit: checked); for 1/4 and 1/2, a 4-pass fit's wall time
on a `LocalCluster` of 2 single-threaded processes (X persisted, not timed) against the
threads engine's, in `--repeats` alternating pairs; overhead per round = (Dask - threads)
/ rounds within a pair.

Usage: ``python bench/run.py --only dask_rounds [--quick]``. Writes
bench/results/dask_rounds.md (dask_rounds_quick.md with --quick: 50,000 rows).
"""

import os
import time

import numpy as np

from bench.harness.common import fmt, markdown_table, write_report
from bench.harness.data import rcv1_hard

W = 2
ROUNDS = (0.25, 0.5, 1.0, 2.0)      # passes per round
TIMED = (0.25, 0.5)


def _accuracy(model, split):
    return 100.0 * float(np.mean(model.predict(split.X_test) == split.y_test))


def run(cfg):
    import dask.array as da
    import distributed

    import pgs.dask

    m, repeats = (50_000, 2) if cfg.quick else (200_000, 5)
    split = rcv1_hard(m)
    X, y = split.X_train, split.y_train
    kw = dict(loss="logistic", sigma=3e-7 * 200_000 / m, seed=1)
    acc_rows = []
    for f in ROUNDS:
        tau = max(1, int(f * m / W))
        accs = [_accuracy(pgs.train(X, y, T=p * m, n_jobs=W, merge_every=tau, **kw), split)
                for p in (2, 4)]
        acc_rows.append([f"{f:g}", f"{accs[0]:.2f}", f"{accs[1]:.2f}"])
    one = [_accuracy(pgs.train(X, y, T=p * m, **kw), split) for p in (2, 4)]
    acc_rows.append(["(one thread)", f"{one[0]:.2f}", f"{one[1]:.2f}"])

    cluster = distributed.LocalCluster(n_workers=W, threads_per_worker=1, processes=True)
    client = distributed.Client(cluster, direct_to_workers=True)
    time_rows = []
    try:
        Xd = da.from_array(X, chunks=(-(-m // W), X.shape[1])).persist()
        for f in TIMED:
            tau = max(1, int(f * m / W))
            fit = dict(kw, T=4 * m, merge_every=tau)
            n_rounds = -(-fit["T"] // (W * tau))
            pgs.dask.train(Xd, y, client=client, **fit)        # (untimed: warm-up)
            pairs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                ref = pgs.train(X, y, n_jobs=W, **fit)
                t1 = time.perf_counter()
                got = pgs.dask.train(Xd, y, client=client, **fit)
                t2 = time.perf_counter()
                if not np.array_equal(ref.coef, got.coef):
                    raise AssertionError("pgs.dask.train and pgs.train(n_jobs=2) differ")
                pairs.append((t1 - t0, t2 - t1, os.getloadavg()[0]))
            th, dk, load = (np.array(c) for c in zip(*pairs, strict=True))
            time_rows.append([f"{f:g}", str(n_rounds), fmt(th, 3, unit=" s"),
                              fmt(dk, 3, unit=" s"), fmt(dk / th, 3),
                              fmt((dk - th) / n_rounds * 1e3, 3, unit=" ms"), fmt(load, 2)])
    finally:
        client.close()
        cluster.close()
    acc_table = markdown_table(["passes a round", "accuracy % after 2 passes",
                                "after 4 passes"], acc_rows)
    time_table = markdown_table(["passes a round", "rounds", "pgs.train(n_jobs=2)",
                                 "pgs.dask.train", "dask / threads", "overhead per round",
                                 "load average (1 min)"], time_rows)
    intro = (f"rcv1_hard, {m:,} training rows; logistic, sigma {kw['sigma']:.2g}, pgs.train's "
             f"other defaults; {W} shards; {repeats} timed pairs per round length.")
    write_report("dask_rounds", "Round length on a Dask cluster",
                 [("Accuracy against the round length (threads engine = Dask, bit for bit)",
                   acc_table), ("A 4-pass fit: Dask against threads", time_table)],
                 cfg, intro=intro)
