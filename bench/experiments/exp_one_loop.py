"""Experiment: one loop for one to K outputs against d1a486a's two (One/Many), build
against build: every path users run, its time and its bits.

Each tree holds its build (``meson setup build --buildtype=release``, ``ninja -C build``,
the extension modules copied into the tree's pgs/). From the repository root::

    python bench/experiments/exp_one_loop.py --base TREE0 --alt TREE1

A fresh process per build and set runs every case of the set, best of 3 each; the builds
in turn (A B, then B A). Cases: one pass (T = m) of `pgs.train`, sigma = 1e-4, the last
iterate, logistic and hinge at p = 2, 1.8, 1.5, 1.3, i.i.d. and cyclic rows; 2 threads;
l1 = 1e-6 at p = 2 and 1.5; one-vs-rest hinge on one block (`fit_many`), multinomial and
Crammer-Singer at p = 2 and 1.5. The two builds' coef must be the same bits. Sets: the
RCV1-like rows (200k, binary and 10 classes), MNIST even/odd and MNIST's 10 digits (real),
news20-like (11,314 rows, 20 classes x 130k features).
"""

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = [dict(loss=loss, p=p, sampling=s) for loss in ("logistic", "hinge")
          for p in (2.0, 1.8, 1.5, 1.3) for s in ("iid", "cyclic")] + [
    dict(loss="logistic", p=2.0, n_jobs=2), dict(loss="logistic", p=1.5, n_jobs=2),
    dict(loss="logistic", p=2.0, l1=1e-6), dict(loss="logistic", p=1.5, l1=1e-6)]
MULTI = [dict(loss=loss, p=p) for loss in ("ovr-hinge", "multinomial", "crammer_singer")
         for p in (2.0, 1.5)]
SETS = {"RCV1-like 200k": BINARY, "MNIST even/odd": BINARY, "RCV1-like 10 classes": MULTI,
        "MNIST 10 digits": MULTI, "news20-like": MULTI}


def _data(name):
    import scipy.sparse as sp

    from bench.experiments.exp_defaults import _news20_like
    from bench.harness.data import mnist, mnist_parity, rcv1_like, rcv1_like_multiclass
    if name == "RCV1-like 200k":
        s = rcv1_like(200_000)
        return s.X_train, s.y_train
    if name == "MNIST even/odd":
        s = mnist_parity()
        return s.X_train, s.y_train
    if name == "RCV1-like 10 classes":
        return rcv1_like_multiclass(200_000, 10)
    if name == "MNIST 10 digits":
        X, y = mnist()[:2]
        return sp.csr_matrix(X), y
    return _news20_like(11_314)


def _worker(tree, name):
    """Each case of set `name` in the build of `tree`: (best seconds, coef digest), as JSON."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import numpy as np

    import pgs
    import pgs.training.fit as F
    assert pgs.__file__.startswith(tree), pgs.__file__
    X, y = _data(name)
    Xb = F.as_csr_buffers(X, check_entries=False)
    out = []
    for case in SETS[name]:
        kw = dict(case, T=Xb.shape[0], sigma=1e-4, iterate="last", seed=1)
        if kw["loss"] == "ovr-hinge":
            ys = [np.where(y == c, 1.0, -1.0) for c in np.unique(y)]
            kw["loss"] = "hinge"

            def call(kw=kw, ys=ys):
                return np.stack([m.coef for m in F.fit_many(Xb, ys, **kw)])
        else:
            def call(kw=kw):
                return pgs.train(Xb, y, **kw).coef
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            coef = call()
            best = min(best, time.perf_counter() - t0)
        out.append((best, hashlib.sha256(np.ascontiguousarray(coef).tobytes()).hexdigest()))
    print(json.dumps(out))


def _measure(tree, name):
    run = subprocess.run([sys.executable, __file__, "--worker", tree, name], check=True,
                         capture_output=True, text=True, cwd="/")
    return json.loads(run.stdout.splitlines()[-1])


def _label(case):
    extra = [f"{k}={v}" for k, v in case.items() if k not in ("loss", "p")]
    return f"{case['loss']}, p = {case['p']:g}" + (", " + ", ".join(extra) if extra else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="d1a486a's tree (the One and Many loops)")
    parser.add_argument("--alt", help="the tree with one loop")
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(*args.worker)
    sys.path.append(str(ROOT))
    from bench.harness.common import Config, markdown_table, write_report
    rows = []
    for name in args.sets:
        base, alt = [], []
        for order in ((args.base, args.alt), (args.alt, args.base)):
            got = {tree: _measure(tree, name) for tree in order}
            base.append(got[args.base])
            alt.append(got[args.alt])
        for c, case in enumerate(SETS[name]):
            if len({run[c][1] for run in base + alt}) != 1:
                raise AssertionError(f"{name}, {case}: the builds' models differ")
            b, a = [run[c][0] for run in base], [run[c][0] for run in alt]
            ratios = [x / y for x, y in zip(a, b, strict=True)]
            rows.append([name, _label(case), f"{min(b):.3f}", f"{min(a):.3f}",
                         f"{min(ratios):.2f}-{max(ratios):.2f}"])
            print(rows[-1], flush=True)
    table = markdown_table(["set", "case", "d1a486a (s)", "one loop (s)",
                            "one loop / d1a486a, each alternation"], rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ") + " The same models in every case."
    write_report("one_loop", "One loop for one to K outputs", [("build against build", table)],
                 Config(), intro)


if __name__ == "__main__":
    main()
