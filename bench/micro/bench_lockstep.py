"""One-vs-rest together against the same problems one after another.

`PGSClassifier` seeds every one-vs-rest problem with `random_state`, so the problems draw
the same rows, and runs them together (`pgs.training.fit.fit_many`: the outputs of one
solver; the σ search's candidates in lock-step): a row is fetched from memory once for all
classes. This script times `PGSClassifier(sigma=..., T=...,
n_jobs=1).fit` against `pgs.train` on each problem in turn with the same arguments, which
gives the same models bit for bit (checked), on data sets of several shapes:

* ``rcv1``: `bench.harness.data.rcv1_like_multiclass` (47,236 features, ~76 non-zeros a
  row), 10 classes;
* ``gen22k``: `generate_rcv1_like` with 22,000 features (the fewest its 10 topic
  vocabularies allow; ~20k), 10 classes;
* ``news20``: 20 newsgroups' shape, 11,314 rows of ~150 non-zeros over 130,107 features,
  20 classes (`generate_rcv1_like` rows summed in pairs);
* ``mnist``: MNIST's 60,000 training images (784 dense pixels), 10 digits (real data);
* ``r8``: Reuters R8's 5,485 training documents, 8 classes (real data).

For each: the estimator's defaults (iterate="average", a free intercept, the asgd schedule)
and iterate="last", at the given sigmas and p; the lock-step turns as `fit_many` chooses
them (``--turns auto``) or forced short or long (``--turns short long``). Kernel time
dominates: both sides include their validation and setup. The ratio is lock-step / in
turn (below 1: lock-step pays), taken per seed, the two interleaved.

Usage::

    python bench/micro/bench_lockstep.py [--sets rcv1 news20] [--rounds 3]
    python bench/micro/bench_lockstep.py --default --sets r8 news20 --turns auto short
    python bench/run.py [--quick] --only lockstep

Prints a Markdown table and writes it to bench/results/lockstep.md
(lockstep_quick.md from a quick run of bench/run.py: fewer configurations, 2 rounds).
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
import pgs  # noqa: E402
import pgs.training.fit as F  # noqa: E402
from bench.harness.common import RESULTS, print_and_write  # noqa: E402
from bench.harness.data import generate_rcv1_like, mnist, r8  # noqa: E402

#: name: (description, rows, epochs)
SETS = {
    "rcv1": ("RCV1-like, 47,236 features, 10 classes", 40_000, 1),
    "gen22k": ("RCV1-like, 22,000 features, 10 classes", 40_000, 1),
    "news20": ("news20-like, 130,107 features, ~150 nnz a row, 20 classes", 11_314, 3),
    "mnist": ("MNIST, 784 dense features, 10 classes (real)", 60_000, 1),
    "r8": ("R8, Reuters text, 19,982 features, 8 classes (real)", 5_485, 1),
}


def load(name, rows):
    """(X as CSR, class ids) of data set `name` with `rows` rows (MNIST: its first rows)."""
    if name == "mnist":
        X, y = mnist()[:2]
        return sp.csr_matrix(X[:rows]), y[:rows]
    if name == "r8":
        return r8().X_train[:rows], r8().y_train[:rows]
    if name == "news20":
        # generated rows summed in pairs: ~150 non-zeros a row, 20 classes (the label of
        # the first of the pair)
        s = generate_rcv1_like(n_train=2 * rows, n_test=0, n_features=130_107, n_classes=20)
        X = (s.X_train[0::2] + s.X_train[1::2]).tocsr()
        X.sort_indices()
        return X, s.y_train[0::2]
    n_features = 22_000 if name == "gen22k" else 47_236
    s = generate_rcv1_like(n_train=rows, n_test=0, n_features=n_features, n_classes=10)
    return s.X_train, s.y_train


def fit_lockstep(X, y, kw, seed, turns="auto"):
    """PGSClassifier(n_jobs=1).fit: (seconds, the fitted estimator, the turns taken).
    `turns`: "auto" (as `fit_many` chooses: "short", LOCKSTEP_ROWS, or "long", a chunk
    each), or "short" or "long" for every size, or "apart": each solver to the end alone,
    one after another."""
    clf = pgs.PGSClassifier(n_jobs=1, random_state=seed, **kw)
    cache, long, vector_bytes, sizes = F.LOCKSTEP_CACHE, F.LOCKSTEP_LONG, F._vector_bytes, []
    F.LOCKSTEP_CACHE = {"auto": cache, "short": float("inf"), "long": -1, "apart": -1}[turns]
    F.LOCKSTEP_LONG = 10**15 if turns == "apart" else long     # (one chunk: the whole run)
    F._vector_bytes = lambda solver: sizes.append(vector_bytes(solver)) or sizes[-1]
    try:
        t0 = time.perf_counter()
        clf.fit(X, y)
        seconds = time.perf_counter() - t0
        return seconds, clf, "long" if sum(sizes) > F.LOCKSTEP_CACHE else "short"
    finally:
        F.LOCKSTEP_CACHE, F.LOCKSTEP_LONG, F._vector_bytes = cache, long, vector_bytes


def fit_in_turn(X, y, kw, seed, clf):
    """The same problems with pgs.train, one after another: (seconds, models).

    The estimator's resolved "auto" settings are passed as numbers, so that their O(nnz)
    scans (paid once by the estimator) are not repeated per class.
    """
    args = dict(kw, sampling="permutation", intercept_scaling=clf.intercept_scaling_,
                seed=seed)
    offsets = clf.params_["t_offset"]        # (one per class, or shared by all)
    offsets = offsets if isinstance(offsets, list) else [offsets] * len(clf.classes_)
    t0 = time.perf_counter()
    models = [pgs.train(X, np.where(y == c, 1, -1), t_offset=t0_c, **args)
              for c, t0_c in zip(clf.classes_, offsets, strict=True)]
    return time.perf_counter() - t0, models


def run(cfg):
    """The experiment of bench/run.py: the defaults, or fewer configurations if quick."""
    argv = ["--sets", "rcv1", "news20", "--rounds", "2"] if cfg.quick else []
    return main(argv + ["--out", str(RESULTS / f"lockstep{'_quick' if cfg.quick else ''}.md")])


def _command(argv):
    """The arguments of this run (all but --out), as a command line."""
    return " ".join(a for a, b in zip(argv, ["", *argv[:-1]], strict=True)
                    if "--out" not in (a, b))


def _span(values):
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def _default_fits(args, argv):
    """`PGSClassifier()` (its sigma candidates in lock-step, in each of ``--turns``) on
    ``--sets``, the turns in alternating order each round after one fit to warm the process
    (its first large allocations); the same bits checked; the table written to --out."""
    rows = []
    for name in args.sets:
        X, y = load(name, args.rows or SETS[name][1])
        fit_lockstep(X, y, {}, 99, args.turns[0])
        times, coef = {t: [] for t in args.turns}, {}
        for r in range(args.rounds):
            for turns in args.turns[::1 if r % 2 == 0 else -1]:
                seconds, clf, _ = fit_lockstep(X, y, {}, r, turns)
                times[turns].append(seconds)
                assert np.array_equal(coef.setdefault(r, clf.coef_), clf.coef_), (name, turns)
        ratios = [[a / b for a, b in zip(times[t], times[args.turns[0]], strict=True)]
                  for t in args.turns[1:]]
        rows.append(f"| {name} | {X.shape[0]:,} x {X.shape[1]:,}, {len(np.unique(y))} "
                    "classes | " + " | ".join(_span(times[t]) for t in args.turns) + " | "
                    + " | ".join(f"{min(r):.2f}-{max(r):.2f}x" for r in ratios) + " |")
        print(rows[-1], flush=True)
    text = "\n".join([
        "# Default fits: the sigma candidates in lock-step, or apart",
        "",
        f"`python bench/micro/bench_lockstep.py {_command(argv)}`: `PGSClassifier(n_jobs=1, "
        f"random_state=r).fit` with every other default, r = 0..{args.rounds - 1}, the turns "
        "alternated in order each round, after one fit that warms the process. Turns: the "
        "sigma search's candidates in lock-step as `fit_many` chooses (auto), forced short "
        "or long, or apart (each candidate to the rung's end alone, one after another). The "
        "same weights in every case (checked). Seconds, median [min-max]; the ratio to the "
        "first turns' time is taken per round.",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores.",
        "",
        "| set | shape | " + " | ".join(f"{t} (s)" for t in args.turns) + " | "
        + " | ".join(f"{t} / {args.turns[0]}" for t in args.turns[1:]) + " |",
        "|---|---|" + "---|" * (2 * len(args.turns) - 1),
        *rows,
    ]) + "\n"
    print_and_write(text, args.out)
    return Path(args.out)


def main(argv=None):
    """Parse the command line (`argv`, default sys.argv), run, write the table; its path."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--rows", type=int, default=None, help="rows of every set (default: "
                    "its own)")
    ap.add_argument("--sigma", type=float, nargs="+", default=[1e-6, 1e-4])
    ap.add_argument("--p", type=float, nargs="+", default=[2.0])
    ap.add_argument("--iterate", nargs="+", default=["average", "last"])
    ap.add_argument("--loss", default="hinge")
    ap.add_argument("--turns", nargs="+", default=["auto"],
                    choices=["auto", "short", "long", "apart"],
                    help="lock-step turns: as fit_many chooses, or forced; apart: none")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "lockstep.md"))
    ap.add_argument("--long-factor", type=int, default=None,
                    help="LOCKSTEP_LONG for this run (a long turn's chunks)")
    ap.add_argument("--default", action="store_true", help="time PGSClassifier() (the "
                    "search's candidates in lock-step) in each --turns, the same bits")
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)
    if args.default:
        return _default_fits(args, argv)
    if args.long_factor is not None:
        F.LOCKSTEP_LONG = args.long_factor

    rows = []
    for name in args.sets:
        desc, n_rows, epochs = SETS[name]
        X, y = load(name, args.rows or n_rows)
        for p in args.p:
            for sigma in args.sigma:
                for iterate in args.iterate:
                    kw = dict(loss=args.loss, p=p, sigma=sigma, T=epochs * X.shape[0],
                              iterate=iterate)
                    lock, turn, chosen = {t: [] for t in args.turns}, [], {}
                    for seed in range(args.rounds):
                        for turns in args.turns:
                            t_lock, clf, chosen[turns] = fit_lockstep(X, y, kw, seed,
                                                                      turns)
                            lock[turns].append(t_lock)
                        t_turn, models = fit_in_turn(X, y, kw, seed, clf)
                        for c, model in enumerate(models):
                            if not np.array_equal(model.coef, clf.coef_[c]):
                                raise AssertionError(
                                    f"class {c}: lock-step and pgs.train differ")
                        turn.append(t_turn)
                    for turns, times in lock.items():
                        ratio = [a / b for a, b in zip(times, turn, strict=True)]
                        rows.append(
                            f"| {name} | {X.shape[0]:,} x {X.shape[1]:,}, "
                            f"{len(np.unique(y))} classes, {X.nnz / X.shape[0]:.0f} nnz/row "
                            f"| {epochs} | {p:g} | {sigma:g} | {iterate} | "
                            f"{'auto: ' if turns == 'auto' else ''}{chosen[turns]} | "
                            f"{_span(times)} | "
                            f"{_span(turn)} | {statistics.median(ratio):.2f}x |")
                        print(rows[-1], flush=True)

    load_avg = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    text = "\n".join([
        "# One-vs-rest: lock-step against one problem after another",
        "",
        f"`python bench/micro/bench_lockstep.py {_command(argv)}`: "
        f"loss={args.loss!r}, T = epochs x rows, PGSClassifier's other defaults (asgd, "
        "a free intercept, a permutation per pass, t_offset 'auto'). *Lock-step*: "
        "`PGSClassifier(sigma=..., T=..., n_jobs=1).fit`. *In turn*: `pgs.train` on each "
        "class's problem, one after another, with the same seed and settings; every model "
        "is checked to be bit-identical to the estimator's. Seconds, median [min-max] "
        f"over random_state 0..{args.rounds - 1}, the two interleaved; the ratio "
        "lock-step / in turn is taken per seed (below 1: lock-step pays). *Turns*: each "
        "solver's turn in `fit_many`, short (`LOCKSTEP_ROWS` rows) or long (a chunk of "
        "`LOCKSTEP_LONG` times the usual work); auto: as `fit_many` chooses from "
        "`LOCKSTEP_CACHE`.",
        "Data: " + "; ".join(f"{n}: {SETS[n][0]}" for n in args.sets) + ".",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
        f"(load average at the end {load_avg[0]:.1f}, {load_avg[1]:.1f}, "
        f"{load_avg[2]:.1f}).",
        "",
        "| set | shape | epochs | p | sigma | iterate | turns | lock-step (s) | in turn (s) "
        "| lock-step / in turn |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]) + "\n"
    print_and_write(text, args.out)
    return Path(args.out)


if __name__ == "__main__":
    main()
