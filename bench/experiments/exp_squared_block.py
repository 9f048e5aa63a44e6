"""Experiment: squared-loss one-vs-rest, whose problems differ in their "auto" B alone,
in lock-step (each with its own vectors) against on one block (each output projected on
its own B), build against build: default `PGSClassifier(loss="squared")` fits.

Each tree holds its build (``meson setup BUILD --buildtype=release``, ``ninja -C BUILD``,
the extension modules copied into the tree's pgs/). From the repository root::

    python bench/experiments/exp_squared_block.py --base TREE0 --alt TREE1

Each case runs in a fresh process per build, in turn, twice: `PGSClassifier(loss,
random_state=0)` with every other default, fitted three times (the best time kept); the
two builds' coef must be the same bits and their sigma the same. Sets: MNIST (as CSR),
letter and R8 (real), news20-like (11,314 rows, 20 classes x 130k features), the
10-class RCV1-like set (200k rows); squared loss (0/1 targets).
"""

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = ("MNIST", "letter", "R8", "news20-like", "RCV1-like")
CASES = [(s, "squared") for s in SETS]


def _worker(tree, set_name, loss):
    """Fit the case in the build of `tree`; print the best of 3 fit times (s), a hash of
    the coef and the sigma chosen."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import scipy.sparse as sp

    import pgs
    from bench.experiments.exp_defaults import _news20_like
    from bench.harness.data import letter, mnist, r8, rcv1_like_multiclass
    assert pgs.__file__.startswith(tree), pgs.__file__
    if set_name == "RCV1-like":
        X, y = rcv1_like_multiclass(200_000, 10)
    elif set_name == "news20-like":
        X, y = _news20_like(11_314)
    elif set_name == "MNIST":
        X, y = mnist()[:2]
        X = sp.csr_matrix(X)        # (converted once, not inside each fit)
    else:
        split = {"letter": letter, "R8": r8}[set_name]()
        X, y = split.X_train, split.y_train
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        est = pgs.PGSClassifier(loss=loss, random_state=0).fit(X, y)
        best = min(best, time.perf_counter() - t0)
    print(best, hashlib.sha256(est.coef_.tobytes()).hexdigest(), est.sigma_)


def _measure(tree, case):
    out = subprocess.run([sys.executable, __file__, "--worker", tree, *case],
                         check=True, capture_output=True, text=True, cwd="/")
    seconds, digest, sigma = out.stdout.split()[-3:]
    return float(seconds), (digest, sigma)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the tree running the problems in lock-step")
    parser.add_argument("--alt", help="the tree running them on one block")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(*args.worker)
    sys.path.append(str(ROOT))
    from bench.harness.common import Config, markdown_table, write_report
    rows = []
    for case in CASES:
        base, alt = [], []
        for _ in range(2):
            (t0, m0), (t1, m1) = _measure(args.base, case), _measure(args.alt, case)
            if m0 != m1:
                raise AssertionError(f"{case}: the builds' models differ")
            base.append(t0)
            alt.append(t1)
        ratios = [a / b for a, b in zip(alt, base, strict=True)]
        rows.append([*case, f"{min(base):.3f}", f"{min(alt):.3f}",
                     f"{min(ratios):.2f}-{max(ratios):.2f}"])
        print(rows[-1], flush=True)
    table = markdown_table(["set", "loss", "lock-step (s)", "one block (s)",
                            "block / lock-step, each alternation"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + " The same models in every case."
    write_report("squared_block", "Squared-loss one-vs-rest on one block",
                 [("default fits, best of 3, two alternations", table)], Config(), intro)


if __name__ == "__main__":
    main()
