"""Experiment: one-vs-rest of K < 8 classes as one solver of K outputs (output-major)
against K solvers in lock-step, build against build (bench/results/ovr_one_solver.md).

Each tree holds its build (``meson setup build --buildtype=release -Db_ndebug=if-release``,
``ninja -C build``, the extension modules copied into the tree's pgs/). From the
repository root::

    python bench/experiments/exp_ovr_one_solver.py --base TREE0 --alt TREE1

A fresh process per build and set runs every case, the builds in turn (A B, then B A).
Cases: `fit_many` on the first K classes' rows, one pass (T = m), sigma = 1e-4, the average
kept, best of 3 (hinge and logistic, p = 2 and 1.5, K = 2, 3, 5, 7; K = 5 on 2 threads);
`PGSClassifier()` with every default on the first 5 classes, best of 2. Sets: MNIST (real)
and the RCV1-like rows (200k, 10 topics). Prints the table's rows, with whether the two
builds' models are the same bits.
"""

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [dict(loss=loss, p=p, K=K) for K in (2, 3, 5, 7) for loss in ("hinge", "logistic")
         for p in (2.0, 1.5)] + [dict(loss="hinge", p=2.0, K=5, n_jobs=2)]
SETS = ("MNIST", "RCV1-like 10 classes")


def _data(name):
    import scipy.sparse as sp

    from bench.harness.data import mnist, rcv1_like_multiclass
    if name == "MNIST":
        X, y = mnist()[:2]
        return sp.csr_matrix(X), y
    return rcv1_like_multiclass(200_000, 10)


def _worker(tree, name):
    """Each case in the build of `tree`: [(best seconds, digest of the models)], as JSON."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import numpy as np

    import pgs
    import pgs.training.fit as F
    assert pgs.__file__.startswith(tree), pgs.__file__
    X, y = _data(name)
    out = []
    for case in CASES:
        classes = np.unique(y)[:case["K"]]
        keep = np.flatnonzero(np.isin(y, classes))
        Xk = F.as_csr_buffers(X[keep], check_entries=False)
        ys = list(np.where(y[keep][:, None] == classes, 1.0, -1.0).T)
        kw = dict(loss=case["loss"], p=case["p"], T=Xk.shape[0], sigma=1e-4, seed=1,
                  iterate="average", n_jobs=case.get("n_jobs", 1))
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            models = F.fit_many(Xk, ys, **kw)
            best = min(best, time.perf_counter() - t)
        digest = hashlib.sha1(np.stack([m.coef for m in models]).tobytes()).hexdigest()
        out.append((best, digest))
    keep = np.flatnonzero(np.isin(y, np.unique(y)[:5]))
    best = float("inf")
    for _ in range(2):
        t = time.perf_counter()
        clf = pgs.PGSClassifier(random_state=0).fit(X[keep], y[keep])
        best = min(best, time.perf_counter() - t)
    out.append((best, hashlib.sha1(clf.coef_.tobytes()).hexdigest()))
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the tree whose one-vs-rest runs in lock-step")
    parser.add_argument("--alt", help="the tree with one solver")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(*args.worker)
    labels = [f"{c['loss']}, p = {c['p']:g}, K = {c['K']}"
              + (f", n_jobs = {c['n_jobs']}" if "n_jobs" in c else "") for c in CASES]
    labels.append("PGSClassifier(), 5 classes")
    for name in SETS:
        got = {"base": [], "alt": []}
        for order in (("base", "alt"), ("alt", "base")):
            for arm in order:
                run = subprocess.run([sys.executable, __file__, "--worker",
                                      getattr(args, arm), name],
                                     capture_output=True, text=True, cwd=ROOT, check=True)
                got[arm].append(json.loads(run.stdout.strip().splitlines()[-1]))
        for i, label in enumerate(labels):
            base, alt = ([r[i][0] for r in got[arm]] for arm in ("base", "alt"))
            same = got["base"][0][i][1] == got["alt"][0][i][1]
            print(f"| {name} | {label} | {min(base):.4f} | {min(alt):.4f} | "
                  f"{alt[0] / base[0]:.2f}-{alt[1] / base[1]:.2f} | "
                  f"{'same bits' if same else 'differ'} |", flush=True)


if __name__ == "__main__":
    main()
