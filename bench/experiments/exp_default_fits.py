"""Experiment: default `PGSClassifier()` fits of two trees, tree against tree.

Each tree holds its build (``meson setup build --buildtype=release``, ``ninja -C build``,
the extension modules copied into the tree's pgs/). From the repository root::

    python bench/experiments/exp_default_fits.py --base TREE0 --alt TREE1 --out NAME

A fresh process per tree and round fits every set with every default, one seed after
another (`--seeds`; first an untimed fit on 3,000 rows), the trees in turn (A B, then B A,
...; `--rounds`); a seed's time is its best over the rounds, its test accuracy, loss,
sigma and passes its first round's.
Sets: exp_defaults' multiclass sets (R8, letter and MNIST real; RCV1-like 8 classes,
news20-like and dense 10-class generated), or those named with `--sets`; ``--sets
bands``: `bands_sets`. Writes results/NAME.md.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SETS = ("R8", "letter", "MNIST", "RCV1-like, 8", "news20", "dense 10")


def _bands(m, noise, seed, n_classes=5):
    """Five classes, bands of one feature (one linear score each cannot separate a middle
    band from the rest; Crammer-Singer can), three features of noise and `noise` sparse
    ones (20 non-zeros a row): a Crammer-Singer lead that takes passes to show."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, n_classes, m)
    X = sp.hstack([sp.csr_matrix(np.column_stack([t / n_classes, 0.3 * rng.normal(size=(
        m, 3))])), sp.random(m, noise, density=20 / noise, random_state=seed)]).tocsr()
    return X, np.floor(t).astype(int)


def bands_sets():
    """(name, X, y, X_test, y_test): `_bands` at 4,000 and 20,000 rows, 2,000-20,000 noise
    features, 4,000 test rows."""
    return [(f"bands, {m} rows, {noise} noise", *_bands(m, noise, 0), *_bands(4000, noise, 1))
            for noise in (2000, 5000, 20000) for m in (4000, 20000)]


def _worker(tree, names, seeds):
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path[:0] = [tree, str(ROOT)]
    import pgs
    from bench.experiments.exp_defaults import classification_sets
    assert pgs.__file__.startswith(tree), pgs.__file__
    sets = bands_sets() if "bands" in names else classification_sets(False)
    for name, X, y, Xt, yt in sets:
        if not any(n in name for n in names):
            continue
        pgs.PGSClassifier(random_state=0).fit(X[:3000], y[:3000])     # (warm: imports)
        for seed in range(seeds):
            t0 = time.perf_counter()
            est = pgs.PGSClassifier(random_state=seed).fit(X, y)
            secs = time.perf_counter() - t0
            print(json.dumps(dict(set=name, seed=seed, secs=secs, acc=100 * est.score(Xt, yt),
                                  loss=est.loss_, sigma=est.sigma_, passes=est.n_iter_)),
                  flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base")
    parser.add_argument("--alt")
    parser.add_argument("--out")
    parser.add_argument("--sets", nargs="+", default=SETS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(args.worker[0], args.sets, args.seeds)
    trees = [args.base, args.alt]
    fits = {}
    for r in range(args.rounds):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            out = subprocess.run([sys.executable, __file__, "--worker", tree, "-", "--sets",
                                  *args.sets, "--seeds", str(args.seeds)], check=True,
                                 capture_output=True, text=True, cwd=ROOT).stdout
            for fit in map(json.loads, out.splitlines()):
                fits.setdefault((fit["set"], tree, fit["seed"]), []).append(fit)
    sys.path.insert(0, str(ROOT))
    from bench.harness.common import machine_info, markdown_table
    rows = []
    for name in dict.fromkeys(k[0] for k in fits):
        cells = [name]
        for tree in trees:
            first = [fits[(name, tree, s)][0] for s in range(args.seeds)]
            acc = [f["acc"] for f in first]
            secs = [min(f["secs"] for f in fits[(name, tree, s)]) for s in range(args.seeds)]
            cells += [f"{np.median(acc):.2f} [{min(acc):.2f}-{max(acc):.2f}]",
                      f"{np.median(secs):.3f}",
                      "/".join(f["loss"][:2] for f in first)]
        ratio = [min(f["secs"] for f in fits[(name, args.alt, s)])
                 / min(f["secs"] for f in fits[(name, args.base, s)]) for s in range(args.seeds)]
        rows.append(cells + [f"{np.median(ratio):.2f} [{min(ratio):.2f}-{max(ratio):.2f}]"])
    header = ["set"] + [f"{t} {c}" for t in ("base", "alt")
                        for c in ("accuracy % [seeds]", "s (median)", "loss")] + [
        "alt / base time [seeds]"]
    text = (f"# Default fits, tree against tree\n\n{machine_info()}\n\n"
            f"`{' '.join(sys.argv)}`\n\n" + markdown_table(header, rows) + "\n")
    path = ROOT / "bench" / "results" / f"{args.out}.md"
    path.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
