"""Experiment: the block's one-pass path at p = 2 without l1 (`dual_wide` in pgs/_dual.pxd:
each entry's K coordinates in one pass for the margins, the updates, Q and the average's
folds) against a build that runs the same block output by output, build against build.

Build both trees from one commit, the alternative with ``wide = False`` where
pgs/_core.pyx calls `dual_wide`: ``meson setup BUILD --buildtype=release``, ``ninja -C
BUILD``, the extension modules copied from BUILD/pgs into the tree's pgs/. Then, from the
repository root::

    python bench/experiments/exp_block_paths.py --base TREE0 --alt TREE1 [--rounds 4]

Each case (a set and a model) runs in a fresh process per build that loads the set, fits
once to warm up and times `REPEATS` fits of two passes at sigma = 1e-4 (the best, wall
seconds); the builds run in turn (A B, then B A), and each round's ratio alt / base is
taken within the round. Multinomial, Crammer-Singer and one-vs-rest logistic (`fit_many`:
one block) on R8 and MNIST (real) and news20-like text (20 classes x 130k features).
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
REPEATS = 3
CASES = [(s, m) for s in ("R8", "MNIST", "news20-like")
         for m in ("multinomial", "crammer_singer", "one-vs-rest logistic")]


def _worker(tree, set_name, model):
    """Time the case in the build of `tree` (its pgs first on the path, not an editable
    install's); print the best of REPEATS fits, in seconds."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import scipy.sparse as sp

    import pgs
    from bench.experiments.exp_defaults import _news20_like
    from bench.harness.data import mnist, r8
    from pgs.training.fit import fit_many
    assert pgs.__file__.startswith(tree), pgs.__file__
    if set_name == "R8":
        split = r8()
        X, y = split.X_train, split.y_train
    elif set_name == "MNIST":
        X, y = mnist()[:2]
    else:
        X, y = _news20_like(18_846)
    X = sp.csr_matrix(X)
    common = dict(sigma=1e-4, T=2 * X.shape[0], seed=0)
    ys = [np.where(y == c, 1.0, -1.0) for c in np.unique(y)]

    def fit():
        if model == "one-vs-rest logistic":
            return fit_many(X, ys, loss="logistic", **common)
        return pgs.train(X, y, loss=model, **common)
    fit()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fit()
        times.append(time.perf_counter() - t0)
    print(min(times))


def _time(tree, case):
    out = subprocess.run([sys.executable, __file__, "--worker", tree, *case], check=True,
                         capture_output=True, text=True, cwd="/")
    return float(out.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the tree with the path")
    parser.add_argument("--alt", help="the tree without it")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(*args.worker)
    sys.path.append(str(ROOT))
    from bench.harness.common import Config, fmt, markdown_table, write_report
    rows = []
    for case in CASES:
        ratios, base = [], []
        for r in range(args.rounds):
            order = (args.base, args.alt) if r % 2 == 0 else (args.alt, args.base)
            t = dict(zip(order, (_time(tree, case) for tree in order), strict=True))
            ratios.append(t[args.alt] / t[args.base])
            base.append(t[args.base])
        rows.append([*case, fmt(base), fmt(ratios)])
        print(rows[-1], flush=True)
    table = markdown_table(["set", "model", "two passes, s (with the path)",
                            "without / with, same round"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + f" {args.rounds} rounds."
    write_report("block_paths", "The block's one-pass path against its absence",
                 [("Build against build", table)], Config(), intro)


if __name__ == "__main__":
    main()
