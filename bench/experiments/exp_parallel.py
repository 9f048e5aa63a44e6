"""Parallel PGS on threads: ``pgs.train(..., n_jobs=2)`` against one thread, on the 781k
RCV1-like set (hinge and logistic, p = 2 and p = 1.8).

Three measurements, each a ratio taken within one repeat (W = 1 and W = 2 alternate):

- throughput: samples per second over one pass (T = m, k = 1), 2 threads against 1,
  and the CPU time of all threads per sample (what the threads cost in work: where two
  idle cores are available, wall-clock scaling is at most 2 / that ratio);
- time to accuracy: test accuracy after 0.03 .. 2 passes (each point a fresh, timed run);
  the time each needs to come within 0.2 points of the best accuracy either reached;
- objective: the training objective after the same number of samples (1 and 2 passes).

Usage::

    python bench/experiments/exp_parallel.py [--quick]
    python bench/run.py [--quick] --only parallel

Writes bench/results/parallel.md (parallel_quick.md with --quick: 100,000 rows, one
repeat). The simulation of more workers is bench/experiments/exp_parallel_sim.py.
"""

import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
import pgs  # noqa: E402
from bench.harness import peers  # noqa: E402
from bench.harness.common import (  # noqa: E402
    Config,
    accuracy,
    fmt,
    markdown_table,
    without_load,
    write_report,
)
from bench.harness.data import rcv1_like  # noqa: E402

TOLERANCE = 0.002  # "within 0.2 points of the best test accuracy"
CONFIGS = [("hinge", 2.0, 3e-5), ("logistic", 2.0, 3e-5), ("hinge", 1.8, 3e-6),
           ("logistic", 1.8, 3e-6)]


def _train(X, y, T, n_jobs, loss, p, sigma):
    kw = peers.paper_run(loss=loss, p=p, sigma=sigma, k=1, iterate="average", t_offset="auto",
                         seed=0)
    t0, c0 = time.perf_counter(), time.process_time()
    model = pgs.train(X, y, T=T, n_jobs=n_jobs, **kw)
    _train.cpu = time.process_time() - c0        # (all threads' CPU time)
    return time.perf_counter() - t0, model


def run(cfg):
    """The three tables (see the module docstring)."""
    split = rcv1_like(100_000) if cfg.quick else rcv1_like()
    X, y, X_test, y_test = split.X_train, split.y_train, split.X_test, split.y_test
    m = X.shape[0]
    repeats = 1 if cfg.quick else 3
    passes = [0.03, 0.05, 0.08, 0.12, 0.2, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0]
    thr_rows, tta_rows, obj_rows = [], [], []
    for loss, p, sigma in CONFIGS:
        name = f"{loss} p={p:g} sigma={sigma:g}"
        rates, cpu = {1: [], 2: []}, {1: [], 2: []}
        for _ in range(repeats):
            for W in (1, 2):
                seconds, _ = _train(X, y, m, W, loss, p, sigma)
                rates[W].append(m / seconds)
                cpu[W].append(_train.cpu / m * 1e6)
        ratios = [b / a for a, b in zip(rates[1], rates[2], strict=True)]
        cpu_ratios = [b / a for a, b in zip(cpu[1], cpu[2], strict=True)]
        thr_rows.append([name, fmt(rates[1], scale=1e-6), fmt(rates[2], scale=1e-6),
                         fmt(ratios), fmt(cpu[1]), fmt(cpu[2]), fmt(cpu_ratios)])
        print(thr_rows[-1], flush=True)

        curves, objectives = {1: [], 2: []}, {1: {}, 2: {}}
        for _ in range(max(1, repeats - 1)):
            for W in (1, 2):
                times, accs = [], []
                for f in passes:
                    seconds, model = _train(X, y, int(f * m), W, loss, p, sigma)
                    times.append(seconds)
                    accs.append(accuracy(y_test, model.decision_function(X_test)))
                    if f in (1.0, 2.0):
                        objectives[W].setdefault(f, []).append(model.objective(X, y))
                curves[W].append((times, accs))
        best = max(max(a) for W in (1, 2) for _, a in curves[W])
        reach = {W: [next((t for t, a in zip(ts, acs, strict=True)
                           if a >= best - TOLERANCE), np.nan) for ts, acs in curves[W]]
                 for W in (1, 2)}
        tta_ratio = [b / a for a, b in zip(reach[1], reach[2], strict=True)]
        tta_rows.append([name, f"{100 * best:.2f}",
                         fmt(reach[1], unit=" s"), fmt(reach[2], unit=" s"), fmt(tta_ratio),
                         " / ".join(f"{100 * a:.2f}" for a in curves[1][0][1]),
                         " / ".join(f"{100 * a:.2f}" for a in curves[2][0][1])])
        print(tta_rows[-1], flush=True)
        for f in (1.0, 2.0):
            one, two = objectives[1][f], objectives[2][f]
            obj_rows.append([name, f"{f:g}", f"{np.median(one):.5f}", f"{np.median(two):.5f}",
                             f"{100 * (np.median(two) / np.median(one) - 1):+.2f}%"])
            print(obj_rows[-1], flush=True)

    sections = [
        ("Throughput: samples per second over one pass (millions)",
         markdown_table(["configuration", "1 thread", "2 threads", "2 threads / 1",
                         "CPU s per 10^6 samples, 1 thread", "2 threads", "2 / 1"],
                        thr_rows)),
        ("Time to within 0.2 points of the best test accuracy",
         markdown_table(["configuration", "best acc %", "1 thread", "2 threads",
                         "ratio (2 / 1)",
                         "1 thread: acc % at " + " / ".join(f"{f:g}" for f in passes)
                         + " passes", "2 threads: acc %"], tta_rows)),
        ("Training objective after the same number of samples",
         markdown_table(["configuration", "passes", "1 thread", "2 threads", "2 vs 1"],
                        obj_rows)),
    ]
    intro = (f"pgs.train(n_jobs=2) against n_jobs=1 on {m:,} rows of the RCV1-like set "
             "(the paper's schedule and intercept column of 1, k = 1, iterate='average', "
             "t_offset='auto', sampling='iid', the default "
             "merge_every: a round is a quarter of a pass). Figures are medians "
             f"[min–max] over {repeats} repeat(s) ({max(1, repeats - 1)} for the accuracy "
             "curves); ratios are taken within a repeat. "
             "Each accuracy point is a fresh run, timed whole (validation included).")
    return without_load(write_report("parallel", "Parallel PGS on threads", sections, cfg,
                                     intro=intro))


if __name__ == "__main__":
    run(Config(quick="--quick" in sys.argv[1:]))
