"""Experiment: the block's margins at p = 2 without l1 (`_dot_block_two` in pgs/_dual.pxd)
prefetching the row drawn ahead, as the binary loop's do, against a build without it,
build against build.

Build both trees: ``meson setup BUILD --buildtype=release``, ``ninja -C BUILD``, the
extension modules copied from BUILD/pgs into the tree's pgs/. Then, from the repository
root::

    python bench/experiments/exp_block_prefetch.py --base TREE0 --alt TREE1 [--rounds 2]

Each case (a set and a model) runs in a fresh process per build that loads the set, fits
once to warm up and times `REPEATS` fits of one pass at sigma = 1e-4 (the best, wall
seconds, the call's set-up included); the builds run in turn (A B, then B A), and each
round's ratio alt / base is taken within the round. Multinomial, one-vs-rest hinge and
logistic (`fit_many`: one block) on R8 and MNIST (real), news20-like text (20 classes x
130k features) and the 10-class RCV1-like set (200k rows: X outgrows the caches).
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
REPEATS = 3
CASES = [(s, m) for s in ("R8", "MNIST", "news20-like", "RCV1-like")
         for m in ("multinomial", "one-vs-rest hinge", "one-vs-rest logistic")]


def _worker(tree, set_name, model):
    """Time the case in the build of `tree` (its pgs first on the path, not an editable
    install's); print the best of REPEATS fits, in seconds."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import scipy.sparse as sp

    import pgs
    from bench.experiments.exp_defaults import _news20_like
    from bench.harness.data import mnist, r8, rcv1_like_multiclass
    from pgs.training.fit import fit_many
    assert pgs.__file__.startswith(tree), pgs.__file__
    if set_name == "R8":
        split = r8()
        X, y = split.X_train, split.y_train
    elif set_name == "MNIST":
        X, y = mnist()[:2]
    elif set_name == "RCV1-like":
        X, y = rcv1_like_multiclass(200_000, 10)
    else:
        X, y = _news20_like(18_846)
    X = sp.csr_matrix(X)
    common = dict(sigma=1e-4, T=X.shape[0], seed=0)
    ys = [np.where(y == c, 1.0, -1.0) for c in np.unique(y)]

    def fit():
        if model.startswith("one-vs-rest"):
            return fit_many(X, ys, loss=model.split()[-1], **common)
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
    parser.add_argument("--base", help="the tree without the prefetch")
    parser.add_argument("--alt", help="the tree with it")
    parser.add_argument("--rounds", type=int, default=2)
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
    table = markdown_table(["set", "model", "one pass, s (without the prefetch)",
                            "with / without, same round"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + f" {args.rounds} rounds."
    write_report("block_prefetch", "The block's margins prefetching the row ahead",
                 [("Build against build", table)], Config(), intro)


if __name__ == "__main__":
    main()
