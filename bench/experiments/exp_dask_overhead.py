"""What a round of `pgs.dask.train` costs beyond its work: the Dask engine against the
threads engine (`pgs.train(n_jobs=2)`) on the same shards, passes and rounds (same bits).

The hard RCV1-like set (`bench.data.rcv1_hard`, 200,000 rows), pgs.train's defaults at a
fixed sigma (logistic, sigma 3e-7 as in exp_parallel_hard), 4 passes in the default
rounds (a quarter of a pass each: 16 rounds). A `LocalCluster` of 2 single-threaded
worker processes holds X as 2 row-chunks (from `dask.array.from_array`, persisted before
any timing: loading is not timed); each timed `pgs.dask.train` call includes everything
a fit does on the cluster (the rows' norms, building the shards' actors, the rounds).
The threads engine and the Dask engine alternate, `--repeats` times, after one untimed
call of each; every pair is checked for equal bits. The overhead per round is (Dask time
- threads time) / rounds, within a pair. Two clients of the same cluster: the default
one (its own messages go through the scheduler; `pgs.dask`'s actor calls go straight to
the workers all the same) and one with ``direct_to_workers=True`` (what `pgs.dask`'s own
LocalCluster uses). Then a cluster whose worker processes do not get Dask's
``MALLOC_TRIM_THRESHOLD_`` (``distributed.nanny.pre-spawn-environ``): with it glibc's mmap
threshold stays at 128 KB, so every array of n_features doubles a worker allocates is a
fresh mmap, paged in again.

The cores are shared: the load average is recorded with every repeat; the ratio means
little when the load is above the 2 cores.

Usage::

    python bench/experiments/exp_dask_overhead.py [--quick] [--rows M] [--repeats R]

Writes bench/results/dask_overhead.md (dask_overhead_quick.md with --quick: 50,000 rows).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
from bench.harness.common import Config, fmt, markdown_table, write_report  # noqa: E402
from bench.harness.data import rcv1_hard  # noqa: E402

N_WORKERS = 2
PASSES = 4
KW = dict(loss="logistic", sigma=3e-7)


def _load():
    return os.getloadavg()[0]


def _pair(X, y, Xd, client, kw):
    """(threads seconds, dask seconds, load before) of one call of each, same bits."""
    import pgs.dask
    load = _load()
    t0 = time.perf_counter()
    ref = pgs.train(X, y, n_jobs=N_WORKERS, **kw)
    t1 = time.perf_counter()
    got = pgs.dask.train(Xd, y, client=client, **kw)
    t2 = time.perf_counter()
    if not (np.array_equal(ref.coef, got.coef) and ref.intercept == got.intercept):
        raise AssertionError("pgs.dask.train and pgs.train(n_jobs=2) differ")
    return t1 - t0, t2 - t1, load


def run(cfg, rows=None, repeats=None):
    import dask
    import dask.array as da
    import distributed

    from pgs.engine.rounds import default_merge_every, partition_rows

    m = rows or (50_000 if cfg.quick else 200_000)
    repeats = repeats or max(cfg.repeats, 5)
    split = rcv1_hard(m)
    X, y = split.X_train, split.y_train
    kw = dict(KW, sigma=KW["sigma"] * 200_000 / m, T=PASSES * m, seed=1)
    tau = default_merge_every(m, N_WORKERS, 1)
    n_rounds = -(-kw["T"] // (N_WORKERS * tau))
    chunks = tuple(hi - lo for lo, hi in partition_rows(m, N_WORKERS))
    environ = dask.config.get("distributed.nanny.pre-spawn-environ")
    no_trim = {k: v for k, v in environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    results = {}
    for workers, env in [("Dask's default", environ),
                         ("no MALLOC_TRIM_THRESHOLD_", no_trim)]:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": env}), \
                distributed.LocalCluster(n_workers=N_WORKERS, threads_per_worker=1,
                                         processes=True, dashboard_address=":0") as cluster:
            clients = {"default": distributed.Client(cluster, set_as_default=False),
                       "direct_to_workers=True": distributed.Client(
                           cluster, set_as_default=False, direct_to_workers=True)}
            if env is no_trim:
                del clients["default"]
            try:
                client = next(iter(clients.values()))
                client.wait_for_workers(N_WORKERS, timeout=120)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")       # ("Sending large graph": X, once)
                    Xd = client.persist(da.from_array(X, chunks=(chunks, X.shape[1]),
                                                      asarray=False))
                with client.as_current():
                    distributed.wait(Xd, timeout=600)
                for name, c in clients.items():
                    _pair(X, y, Xd, c, kw)                # (warm-up: imports, first calls)
                    results[(workers, name)] = []
                for r in range(repeats):
                    for name, c in clients.items():
                        results[(workers, name)].append(_pair(X, y, Xd, c, kw))
                        tt, td, load = results[(workers, name)][-1]
                        print(f"  {workers}, {name} client, repeat {r}: threads {tt:.3f} s, "
                              f"dask {td:.3f} s, ratio {td / tt:.2f}, load {load:.2f}",
                              flush=True)
            finally:
                for c in clients.values():
                    c.close()
    return _report(cfg, m, kw, tau, n_rounds, repeats, results)


def _report(cfg, m, kw, tau, n_rounds, repeats, results):
    rows = []
    for (workers, name), pairs in results.items():
        tt, td, load = (np.array(v) for v in zip(*pairs, strict=True))
        rows.append([workers, name, fmt(tt, 3, unit=" s"), fmt(td, 3, unit=" s"), fmt(td / tt, 3),
                     fmt((td - tt) / n_rounds, 3, scale=1000, unit=" ms"),
                     f"{np.median(load):.2f} [{load.min():.2f}–{load.max():.2f}]"])
    table = markdown_table(["worker processes' environment", "client", "pgs.train(n_jobs=2)",
                            "pgs.dask.train",
                            "dask / threads (target ≤ 1.5)",
                            "overhead per round: (dask − threads) / rounds",
                            "load average (1 min) before each pair"], rows)
    intro = (f"rcv1_hard, {m:,} training rows, {kw['loss']}, sigma {kw['sigma']:.2g}, "
             f"the other arguments pgs.train's defaults; T = {PASSES} passes in "
             f"{n_rounds} rounds of {N_WORKERS} x {tau:,} iterations (merge_every's "
             f"default: a quarter of a pass). A LocalCluster of {N_WORKERS} "
             f"single-threaded worker processes holding X as {N_WORKERS} persisted "
             f"row-chunks (the threads engine's shards); {repeats} pairs per client "
             f"(threads, then Dask; same bits checked), after one untimed pair each; the "
             f"rows without MALLOC_TRIM_THRESHOLD_ are another cluster (see the script's "
             f"docstring); "
             f"figures are medians [min–max] of the pairs, ratios within a pair. The "
             f"2 cores are shared with other work: see the load column.")
    return write_report("dask_overhead", "pgs.dask.train's overhead per round (2 worker "
                        "processes)", [("", table)], cfg, intro=intro)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--repeats", type=int)
    args = parser.parse_args(argv)
    run(Config(quick=args.quick), rows=args.rows, repeats=args.repeats)


if __name__ == "__main__":
    main()
