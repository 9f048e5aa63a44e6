"""One-vs-rest in lock-step against the same problems one after another.

`PGSClassifier` seeds every one-vs-rest problem with `random_state`, so the problems draw
the same rows, and runs them in lock-step (each takes the next 256 rows in turn): a row is
fetched from memory once for all classes. This script times `PGSClassifier(n_jobs=1).fit`
against `pgs.train` on each problem in turn with the same arguments, which gives the same
models bit for bit (checked), for several row counts of the 10-class RCV1-like problem
(`bench.harness.data.rcv1_like_multiclass`, as bench_estimators.py). Kernel time
dominates: both include their validation and setup.

Usage::

    python bench/micro/bench_lockstep.py [--rows 50000 200000] [--rounds 3]
    python bench/run.py [--quick] --only lockstep

Prints a Markdown table and writes it to bench/results/lockstep.md
(lockstep_quick.md from a quick run of bench/run.py: 20,000 rows, 2 rounds).
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
import pgs  # noqa: E402
from bench.harness.common import RESULTS  # noqa: E402
from bench.harness.data import rcv1_like_multiclass  # noqa: E402
from bench.micro.bench_estimators import print_and_write  # noqa: E402


def fit_lockstep(X, y, kw, seed):
    """PGSClassifier(n_jobs=1).fit: (seconds, the fitted estimator)."""
    clf = pgs.PGSClassifier(n_jobs=1, random_state=seed, **kw)
    t0 = time.perf_counter()
    clf.fit(X, y)
    return time.perf_counter() - t0, clf


def fit_in_turn(X, y, kw, seed, clf):
    """The same problems with pgs.train, one after another: (seconds, models).

    The estimator's resolved "auto" settings are passed as numbers, so that their O(nnz)
    scans (paid once by the estimator) are not repeated per class.
    """
    args = dict(kw, sampling="permutation", intercept_scaling=clf.intercept_scaling_,
                seed=seed)
    offsets = [model.params["t_offset"] for model in clf._models]
    t0 = time.perf_counter()
    models = [pgs.train(X, np.where(y == c, 1, -1), t_offset=t0_c, **args)
              for c, t0_c in zip(clf.classes_, offsets, strict=True)]
    return time.perf_counter() - t0, models




def run(cfg):
    """The experiment of bench/run.py: the defaults, or 20,000 rows and 2 rounds if quick."""
    argv = ["--rows", "20000", "--rounds", "2"] if cfg.quick else []
    return main(argv + ["--out", str(RESULTS / f"lockstep{'_quick' if cfg.quick else ''}.md")])


def main(argv=None):
    """Parse the command line (`argv`, default sys.argv), run, write the table; its path."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "lockstep.md"))
    args = ap.parse_args(argv)

    rows = []
    for n_rows in args.rows:
        X, y = rcv1_like_multiclass(n_rows, args.classes)
        for loss in ("hinge", "logistic"):
            # The paper's schedule, an intercept column and the last iterate (what this
            # measured before #24); the estimator's other defaults.
            kw = dict(loss=loss, sigma=1e-5, T=args.epochs * n_rows, schedule="pgs",
                      intercept="column", iterate="last")
            lock, turn = [], []
            for seed in range(args.rounds):
                t_lock, clf = fit_lockstep(X, y, kw, seed)
                t_turn, models = fit_in_turn(X, y, kw, seed, clf)
                for c, model in enumerate(models):
                    if not np.array_equal(model.coef, clf.coef_[c]):
                        raise AssertionError(f"class {c}: lock-step and pgs.train differ")
                lock.append(t_lock)
                turn.append(t_turn)
            ratio = [b / a for a, b in zip(lock, turn, strict=True)]
            rows.append(
                f"| {n_rows:,} | {X.nnz:,} | {loss} | {statistics.median(lock):.3f} "
                f"[{min(lock):.3f}-{max(lock):.3f}] | {statistics.median(turn):.3f} "
                f"[{min(turn):.3f}-{max(turn):.3f}] | {statistics.median(ratio):.2f}x |")
            print(rows[-1], flush=True)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    text = "\n".join([
        "# One-vs-rest: lock-step against one problem after another",
        "",
        f"`bench/micro/bench_lockstep.py`: the {args.classes}-class RCV1-like problem of "
        "`bench.harness.data.rcv1_like_multiclass` (47,236 features, ~76 non-zeros per "
        "row), "
        f"sigma = 1e-5, {args.epochs} epochs (T = {args.epochs} m), schedule='pgs', "
        "intercept='column', iterate='last', PGSClassifier's other defaults (a permutation "
        "per pass, intercept_scaling and t_offset 'auto'). *Lock-step*: "
        "`PGSClassifier(n_jobs=1).fit`. "
        "*In turn*: `pgs.train` on each class's problem, one after another, with the same "
        "seed and settings; every model is checked to be bit-identical to the estimator's. "
        f"Seconds, median [min-max] over random_state 0..{args.rounds - 1}; the ratio is "
        "taken per seed.",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
        f"(load average at the end {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}).",
        "",
        "| rows | non-zeros | loss | lock-step (s) | in turn (s) | in turn / lock-step |",
        "|---|---|---|---|---|---|",
        *rows,
    ]) + "\n"
    print_and_write(text, args.out)
    return Path(args.out)


if __name__ == "__main__":
    main()
