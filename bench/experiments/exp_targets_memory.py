"""Experiment: a one-vs-rest fit's peak memory when each of its K problems held its own
target vector and a block a copy of them side by side, against the estimator's one
(m, K) array of targets read in place, build against build.

Each tree holds its build (``meson setup BUILD --buildtype=release``, ``ninja -C BUILD``,
the extension modules copied into the tree's pgs/). From the repository root::

    python bench/experiments/exp_targets_memory.py --base TREE0 --alt TREE1

Each case runs in a fresh process per build: `PGSClassifier(loss, random_state=0,
n_jobs)` at a fixed sigma (``sigma=1e-4, max_passes=2``) or with the defaults (the sigma
search), fitted once, then again under tracemalloc (its peak, MiB); the two builds' coef
must be the same bits. Sets: MNIST (as CSR), letter and R8 (real), the 10-class RCV1-like set (200k
rows); one-vs-rest hinge (a block of K problems, or one block for each of 2 threads) and
squared (0/1 targets, read as a regression's).
"""

import argparse
import hashlib
import subprocess
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [(s, loss, sigma, 1) for s in ("MNIST", "letter", "R8", "RCV1-like")
         for sigma in ("1e-4", "auto") for loss in ("hinge", "squared")]
CASES += [("RCV1-like", "hinge", sigma, 2) for sigma in ("1e-4", "auto")]


def _worker(tree, set_name, loss, sigma, n_jobs):
    """Fit the case in the build of `tree`; print the traced peak (bytes) and a hash of
    the coef."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import scipy.sparse as sp

    import pgs
    from bench.harness.data import letter, mnist, r8, rcv1_like_multiclass
    assert pgs.__file__.startswith(tree), pgs.__file__
    if set_name == "RCV1-like":
        X, y = rcv1_like_multiclass(200_000, 10)
    else:
        split = {"MNIST": mnist, "letter": letter, "R8": r8}[set_name]()
        X, y = split[:2] if isinstance(split, tuple) else (split.X_train, split.y_train)
        X = sp.csr_matrix(X)        # (MNIST's pixels: converted before the fit's trace)
    kw = dict(loss=loss, random_state=0, n_jobs=int(n_jobs))
    kw.update(dict(sigma=1e-4, max_passes=2) if sigma != "auto" else {})
    pgs.PGSClassifier(**kw).fit(X, y)
    tracemalloc.start()
    est = pgs.PGSClassifier(**kw).fit(X, y)
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
    parser.add_argument("--base", help="the tree whose problems hold their own targets")
    parser.add_argument("--alt", help="the tree reading the estimator's targets in place")
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
    table = markdown_table(["set", "loss", "sigma", "n_jobs", "targets per problem (MiB)",
                            "targets read in place (MiB)", "in place / per problem"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + " The same bits in every case."
    write_report("targets_memory", "One-vs-rest targets held once",
                 [("tracemalloc peak of a one-vs-rest fit", table)], Config(), intro)


if __name__ == "__main__":
    main()
