"""One-vs-rest together against the same problems one after another.

`PGSClassifier` seeds every one-vs-rest problem with `random_state`, so the problems draw
the same rows, and runs them together (`pgs.training.fit.fit_many`: the outputs of one
solver): a row is fetched from memory once for all classes. This script times
`PGSClassifier(sigma=..., T=..., n_jobs=1).fit` against `pgs.train` on each problem in turn
with the same arguments, which gives the same models bit for bit (checked), on data sets of
several shapes:

* ``rcv1``: `bench.harness.data.rcv1_like_multiclass` (47,236 features, ~76 non-zeros a
  row), 10 classes;
* ``gen22k``: `generate_rcv1_like` with 22,000 features (the fewest its 10 topic
  vocabularies allow; ~20k), 10 classes;
* ``news20``: 20 newsgroups' shape, 11,314 rows of ~150 non-zeros over 130,107 features,
  20 classes (`generate_rcv1_like` rows summed in pairs);
* ``mnist``: MNIST's 60,000 training images (784 dense pixels), 10 digits (real data);
* ``r8``: Reuters R8's 5,485 training documents, 8 classes (real data).

For each: the estimator's defaults (iterate="average", a free intercept, the asgd schedule)
and iterate="last", at the given sigmas and p. Kernel time dominates: both sides include
their validation and setup. The ratio is together / in turn (below 1: together pays), taken
per seed, the two interleaved.

Usage::

    python bench/micro/bench_lockstep.py [--sets rcv1 news20] [--rounds 3]
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


def fit_together(X, y, kw, seed):
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
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "lockstep.md"))
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)

    rows = []
    for name in args.sets:
        desc, n_rows, epochs = SETS[name]
        X, y = load(name, args.rows or n_rows)
        for p in args.p:
            for sigma in args.sigma:
                for iterate in args.iterate:
                    kw = dict(loss=args.loss, p=p, sigma=sigma, T=epochs * X.shape[0],
                              iterate=iterate)
                    together, turn = [], []
                    for seed in range(args.rounds):
                        t_together, clf = fit_together(X, y, kw, seed)
                        together.append(t_together)
                        t_turn, models = fit_in_turn(X, y, kw, seed, clf)
                        for c, model in enumerate(models):
                            if not np.array_equal(model.coef, clf.coef_[c]):
                                raise AssertionError(
                                    f"class {c}: together and pgs.train differ")
                        turn.append(t_turn)
                    ratio = [a / b for a, b in zip(together, turn, strict=True)]
                    rows.append(
                        f"| {name} | {X.shape[0]:,} x {X.shape[1]:,}, "
                        f"{len(np.unique(y))} classes, {X.nnz / X.shape[0]:.0f} nnz/row "
                        f"| {epochs} | {p:g} | {sigma:g} | {iterate} | {_span(together)} | "
                        f"{_span(turn)} | {statistics.median(ratio):.2f}x |")
                    print(rows[-1], flush=True)

    load_avg = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    text = "\n".join([
        "# One-vs-rest: together against one problem after another",
        "",
        f"`python bench/micro/bench_lockstep.py {_command(argv)}`: "
        f"loss={args.loss!r}, T = epochs x rows, PGSClassifier's other defaults (asgd, "
        "a free intercept, a permutation per pass, t_offset 'auto'). *Together*: "
        "`PGSClassifier(sigma=..., T=..., n_jobs=1).fit` (the problems the outputs of one "
        "solver). *In turn*: `pgs.train` on each class's problem, one after another, with "
        "the same seed and settings; every model is checked to be bit-identical to the "
        "estimator's. Seconds, median [min-max] over random_state 0..{args.rounds - 1}, the "
        "two interleaved; the ratio together / in turn is taken per seed (below 1: together "
        "pays).",
        "Data: " + "; ".join(f"{n}: {SETS[n][0]}" for n in args.sets) + ".",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
        f"(load average at the end {load_avg[0]:.1f}, {load_avg[1]:.1f}, "
        f"{load_avg[2]:.1f}).",
        "",
        "| set | shape | epochs | p | sigma | iterate | together (s) | in turn (s) "
        "| together / in turn |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]) + "\n"
    print_and_write(text, args.out)
    return Path(args.out)


if __name__ == "__main__":
    main()
