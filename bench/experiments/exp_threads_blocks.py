"""Experiment: a K-output problem split between threads, each worker's classes on one
block with the round's state moved as (n_features + 1, K) arrays, against the build
whose workers keep each class's vectors apart, build against build.

Build both trees (``meson setup BUILD --buildtype=release``, ``ninja -C BUILD``, the
extension modules copied from BUILD/pgs into the tree's pgs/). Then, from the repository
root::

    python bench/experiments/exp_threads_blocks.py --base TREE0 --alt TREE1 [--rounds 4]

Each case (a set and a loss) runs in a fresh process per build that loads the set, fits
once to warm up and times `REPEATS` fits of three passes at sigma = 1e-4 on 2 threads
(the best, wall seconds), then one thread's in the same process; the builds run in turn
(A B, then B A), and each round's ratios are taken within the round. Multinomial and
Crammer-Singer on R8 and MNIST (real), news20-like text (20 classes x 130k features) and
the 10-class RCV1-like set (200k rows).
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPEATS = 3
CASES = [(s, m) for s in ("R8", "MNIST", "news20-like", "RCV1-like, 10 classes")
         for m in ("multinomial", "crammer_singer")]


def _worker(tree, set_name, loss):
    """Time the case in the build of `tree` (its pgs first on the path, not an editable
    install's); print the best of REPEATS fits on 2 threads and on one, in seconds."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import scipy.sparse as sp

    import pgs
    from bench.experiments.exp_defaults import _news20_like
    from bench.harness.data import mnist, r8, rcv1_like_multiclass
    assert pgs.__file__.startswith(tree), pgs.__file__
    if set_name == "R8":
        split = r8()
        X, y = split.X_train, split.y_train
    elif set_name == "MNIST":
        X, y = mnist()[:2]
    elif set_name == "news20-like":
        X, y = _news20_like(18_846)
    else:
        X, y = rcv1_like_multiclass(200_000, 10)
    X = sp.csr_matrix(X)

    def best(n_jobs):
        common = dict(loss=loss, sigma=1e-4, T=3 * X.shape[0], seed=0, n_jobs=n_jobs)
        pgs.train(X, y, **common)
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            pgs.train(X, y, **common)
            times.append(time.perf_counter() - t0)
        return min(times)
    print(best(2), best(1))


def _time(tree, case):
    out = subprocess.run([sys.executable, __file__, "--worker", tree, *case], check=True,
                         capture_output=True, text=True, cwd="/")
    return [float(v) for v in out.stdout.split()[-2:]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the tree whose workers keep the classes apart")
    parser.add_argument("--alt", help="the tree whose workers run a block")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(*args.worker)
    sys.path.append(str(ROOT))
    from bench.harness.common import Config, fmt, markdown_table, write_report
    rows = []
    for case in CASES:
        alt2, ratio, base_vs_one, alt_vs_one = [], [], [], []
        for r in range(args.rounds):
            order = (args.base, args.alt) if r % 2 == 0 else (args.alt, args.base)
            t = dict(zip(order, (_time(tree, case) for tree in order), strict=True))
            alt2.append(t[args.alt][0])
            ratio.append(t[args.alt][0] / t[args.base][0])
            base_vs_one.append(t[args.base][0] / t[args.base][1])
            alt_vs_one.append(t[args.alt][0] / t[args.alt][1])
        rows.append([*case, fmt(alt2), fmt(ratio), fmt(base_vs_one), fmt(alt_vs_one)])
        print(rows[-1], flush=True)
    table = markdown_table(["set", "loss", "2 threads, block, s", "block / apart, same round",
                            "apart: 2 threads / 1", "block: 2 threads / 1"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + f" {args.rounds} rounds."
    write_report("threads_blocks", "K outputs on threads: a block per worker against "
                 "classes apart", [("Build against build", table)], Config(), intro)


if __name__ == "__main__":
    main()
