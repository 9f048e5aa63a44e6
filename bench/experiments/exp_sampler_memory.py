"""Experiment: a K-class fit's peak memory when its K outputs each built a sampler (a
permutation of the rows, or an alias table with sample weights) against one sampler for
all of them (output 0's, the only one the kernel reads), build against build.

Each tree holds its build (``meson setup BUILD --buildtype=release``, ``ninja -C BUILD``,
the extension modules copied into the tree's pgs/). From the repository root::

    python bench/experiments/exp_sampler_memory.py --base TREE0 --alt TREE1

Each case runs in a fresh process per build: `PGSClassifier(loss, sigma=1e-4,
max_passes=2, random_state=0, n_jobs)` fitted once, then again under tracemalloc (its
peak, MiB); the two builds' coef must be the same bits. Sets: MNIST and R8 (real), the
10-class RCV1-like set (200k rows); multinomial (one K-output problem) and one-vs-rest
hinge (K problems on a block), without and with sample weights (uniform in [0.5, 1.5]).
"""

import argparse
import hashlib
import subprocess
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [(s, loss, w, 1) for s in ("MNIST", "R8", "RCV1-like")
         for loss in ("multinomial", "hinge") for w in ("none", "uniform")]
CASES.append(("RCV1-like", "multinomial", "none", 2))


def _worker(tree, set_name, loss, weights, n_jobs):
    """Fit the case in the build of `tree`; print the traced peak (bytes) and a hash of
    the coef."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import numpy as np

    import pgs
    from bench.harness.data import mnist, r8, rcv1_like_multiclass
    assert pgs.__file__.startswith(tree), pgs.__file__
    if set_name == "MNIST":
        X, y = mnist()[:2]
    elif set_name == "R8":
        split = r8()
        X, y = split.X_train, split.y_train
    else:
        X, y = rcv1_like_multiclass(200_000, 10)
    sw = None if weights == "none" else np.random.default_rng(0).uniform(0.5, 1.5, X.shape[0])
    kw = dict(loss=loss, sigma=1e-4, max_passes=2, random_state=0, n_jobs=int(n_jobs))
    pgs.PGSClassifier(**kw).fit(X, y, sample_weight=sw)
    tracemalloc.start()
    est = pgs.PGSClassifier(**kw).fit(X, y, sample_weight=sw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(peak, hashlib.sha256(est.coef_.tobytes()).hexdigest())


def _measure(tree, case):
    out = subprocess.run([sys.executable, __file__, "--worker", tree, *map(str, case)],
                         check=True, capture_output=True, text=True, cwd="/")
    peak, digest = out.stdout.split()[-2:]
    return int(peak), digest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the tree whose outputs each build a sampler")
    parser.add_argument("--alt", help="the tree with one sampler")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(*args.worker)
    sys.path.append(str(ROOT))
    from bench.harness.common import Config, markdown_table, write_report
    rows = []
    for case in CASES:
        (base, d0), (alt, d1) = _measure(args.base, case), _measure(args.alt, case)
        if d0 != d1:
            raise AssertionError(f"{case}: the builds' models differ")
        rows.append([*case, f"{base / 2**20:.1f}", f"{alt / 2**20:.1f}", f"{alt / base:.2f}"])
        print(rows[-1], flush=True)
    table = markdown_table(["set", "loss", "sample weights", "n_jobs", "a sampler an output "
                            "(MiB)", "one sampler (MiB)", "one / each"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + " The same bits in every case."
    write_report("sampler_memory", "One sampler for a problem's K outputs",
                 [("tracemalloc peak of a default-iterate fit at a fixed sigma", table)],
                 Config(), intro)


if __name__ == "__main__":
    main()
