"""Experiment: a block's K margins at p < 2 in one pass over the row's entries (each
entry's K coordinates together) against output by output, build against build.

Each tree holds its build (``meson setup BUILD --buildtype=release``, ``ninja -C BUILD``,
the extension modules copied into the tree's pgs/). From the repository root::

    python bench/experiments/exp_block_margins.py --base TREE0 --alt TREE1

Each case runs in a fresh process per build, in turn, twice. "default": a default
`PGSClassifier(p, loss, random_state=0)` fit (sigma chosen by its search, then the final
fit), best of 2. "pass": one pass at sigma = 1e-4 with the average, one-vs-rest's K
problems as one block (`fit_many`) or the K classes of multinomial, best of 3. The two
builds' coef must be the same bits. Sets: MNIST (as CSR), letter and R8 (real),
news20-like (11,314 rows, 20 classes x 130k features), the 10-class RCV1-like set (200k
rows).
"""

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = ("MNIST", "letter", "R8", "news20-like", "RCV1-like")
CASES = ([(s, "pass", loss, "1.5") for s in SETS for loss in ("hinge", "multinomial")]
         + [(s, "default", loss, p) for s in SETS for loss in ("hinge", "multinomial")
            for p in ("1.5", "1.3")])


def _data(set_name):
    import scipy.sparse as sp

    from bench.experiments.exp_defaults import _news20_like
    from bench.harness.data import letter, mnist, r8, rcv1_like_multiclass
    if set_name == "RCV1-like":
        return rcv1_like_multiclass(200_000, 10)
    if set_name == "news20-like":
        return _news20_like(11_314)
    if set_name == "MNIST":
        X, y = mnist()[:2]
        return sp.csr_matrix(X), y          # (converted once, not inside each fit)
    split = {"letter": letter, "R8": r8}[set_name]()
    return split.X_train, split.y_train


def _worker(tree, set_name, kind, loss, p):
    """Run the case in the build of `tree`; print its best time (s) and a hash of the
    coefficients."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import numpy as np

    import pgs
    import pgs.training.fit as F
    assert pgs.__file__.startswith(tree), pgs.__file__
    X, y = _data(set_name)
    p = float(p)
    if kind == "default":
        def call():
            return pgs.PGSClassifier(p=p, loss=loss, random_state=0).fit(X, y).coef_
        reps = 2
    else:
        Xb = F.as_csr_buffers(X, check_entries=False)
        kw = dict(T=Xb.shape[0], sigma=1e-4, p=p, iterate="average", seed=1)
        classes = np.unique(y)
        if loss == "hinge":
            ys = [np.where(y == c, 1.0, -1.0) for c in classes]

            def call():
                return np.stack([m.coef for m in F.fit_many(Xb, ys, loss=loss, **kw)])
        else:
            def call():
                return F.fit(Xb, y, loss=loss, **kw).coef
        reps = 3
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        coef = call()
        best = min(best, time.perf_counter() - t0)
    print(best, hashlib.sha256(np.ascontiguousarray(coef).tobytes()).hexdigest())


def _measure(tree, case):
    out = subprocess.run([sys.executable, __file__, "--worker", tree, *case],
                         check=True, capture_output=True, text=True, cwd="/")
    seconds, digest = out.stdout.split()[-2:]
    return float(seconds), digest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the tree taking a block's margins output by output")
    parser.add_argument("--alt", help="the tree taking them in one pass")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
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
    table = markdown_table(["set", "call", "loss", "p", "output by output (s)", "one pass (s)",
                            "one pass / output by output, each alternation"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + " The same models in every case."
    write_report("block_margins", "A block's margins at p < 2 in one pass",
                 [("build against build", table)], Config(), intro)


if __name__ == "__main__":
    main()
