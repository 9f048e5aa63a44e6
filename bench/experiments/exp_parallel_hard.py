"""Time to accuracy with threads where passes matter: ``pgs.train(n_jobs=2)`` against one
thread on the hard RCV1-like set (`bench.harness.data.rcv1_hard`), with pgs.train's defaults at a
fixed sigma (so that both run the same problem; sigma="auto" would add its grid to both).

Each curve is one run continued by warm starts, observed every quarter pass (one round
of the default merge_every: the warm starts do not change the rounds); its wall-clock
time is the cumulative training time (W = 1 and W = 2 alternate, one round a seed). The
time to accuracy is the first observed time within 0.2 points of the best accuracy any
curve of the round reached. Beside it, the time of 2 passes with 2 threads over that with
one (same seed): what the second core gives for the same work, so that the time ratio
reads as (passes ratio) x (this). Needs two idle cores: the ratios mean nothing on a
loaded machine (the report records the load).

Usage::

    python bench/experiments/exp_parallel_hard.py [--quick] [--rows M] [--rounds R]

Writes bench/results/parallel_hard.md (parallel_hard_quick.md with --quick: 50,000 rows).
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
import pgs  # noqa: E402
from bench.harness.common import Config, fmt, markdown_table, write_report  # noqa: E402
from bench.harness.data import rcv1_hard  # noqa: E402

TOLERANCE = 0.2
#: Passes between observations (the threads engine's default round: a finer step would
#: cut rounds short)
STEP = 0.25
#: (loss, sigma) at 200k rows; sigma scales as 1 / m (the best sigma of bench/results/passes.md)
CONFIGS = [("logistic", 3e-7), ("hinge", 5e-7)]


def _curve(X, y, X_test, y_test, passes, n_jobs, seed, **kw):
    """Test accuracy (%) and cumulative seconds after each of `passes` (one run)."""
    m = X.shape[0]
    model, done, total, out = None, 0, 0.0, []
    for f in passes:
        T = int(f * m)
        t0 = time.perf_counter()
        model = pgs.train(X, y, T=T - done, n_jobs=n_jobs, seed=seed, keep_state=True,
                          warm_start=model, **kw)
        total += time.perf_counter() - t0
        done = T
        out.append((total, 100.0 * float(np.mean(model.predict(X_test) == y_test))))
    return out


def _time_to(curve, target):
    return next((t for t, a in curve if a >= target), np.nan)


def run(cfg, rows=None, rounds=None):
    m = rows or (50_000 if cfg.quick else 200_000)
    rounds = rounds or (1 if cfg.quick else 2)
    split = rcv1_hard(m)
    X, y, Xt, yt = split.X_train, split.y_train, split.X_test, split.y_test
    passes = [STEP * i for i in range(1, int((6 if cfg.quick else 10) / STEP) + 1)]
    rows_out, per = [], int(1 / STEP)      # (the printed curves: once a pass)
    for loss, sigma200k in CONFIGS:
        sigma = sigma200k * 200_000 / m
        ratios, times, same_work = [], {1: [], 2: []}, []
        for r in range(rounds):
            secs = {}
            for W in (1, 2):
                t0 = time.perf_counter()
                pgs.train(X, y, T=2 * m, n_jobs=W, seed=r, loss=loss, sigma=sigma)
                secs[W] = time.perf_counter() - t0
            same_work.append(secs[2] / secs[1])
            curves = {W: _curve(X, y, Xt, yt, passes, W, r, loss=loss, sigma=sigma)
                      for W in (1, 2)}
            best = max(a for c in curves.values() for _, a in c)
            for W in (1, 2):
                times[W].append(_time_to(curves[W], best - TOLERANCE))
            ratios.append(times[2][-1] / times[1][-1])
            print(f"  {loss} round {r}: best {best:.2f}%; " + "; ".join(
                f"W={W}: " + " ".join(f"{a:.2f}" for _, a in curves[W][per - 1::per])
                + f" (to target {times[W][-1]:.2f} s)" for W in (1, 2)), flush=True)
        rows_out.append([loss, f"{sigma:.2g}", fmt(times[1], 3, unit=" s"),
                         fmt(times[2], 3, unit=" s"), fmt(ratios, 3), fmt(same_work, 3)])
    table = markdown_table(["loss", "sigma", "1 thread: time to target",
                            "2 threads: time to target", "2 / 1",
                            "2 / 1 for the same 2 passes"], rows_out)
    print(table)
    intro = (f"rcv1_hard, {m:,} training rows; pgs.train's defaults at a fixed sigma; "
             f"curves observed every {STEP:g} pass (warm starts); target: the best accuracy "
             f"of the round minus {TOLERANCE} points; {rounds} round(s), load "
             f"{os.getloadavg()[0]:.1f} at the end.")
    write_report("parallel_hard", "Time to accuracy: 2 threads against 1 (hard set)",
                 [("Time to accuracy", table)], cfg, intro=intro)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--rounds", type=int)
    args = parser.parse_args(argv)
    run(Config(quick=args.quick), rows=args.rows, rounds=args.rounds)


if __name__ == "__main__":
    main()
