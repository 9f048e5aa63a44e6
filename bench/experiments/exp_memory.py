"""Experiment 6: peak memory of pgs.train on the 781k CSR, float64 and float32, and the
issue's budget (4 x n_features x 8 bytes + 20 MB) on a problem of millions of features.

Each dtype runs in a fresh subprocess that loads the data once. Before every measurement
freed memory is returned to the OS (malloc_trim) and the kernel's peak-RSS counter is
reset (/proc/self/clear_refs), so neither the loading's temporaries nor earlier runs
count; then one pass is trained and we report the growth of the peak RSS (VmHWM) over
the RSS before it, plus tracemalloc's peak of Python/numpy allocations during training.
The matrix's own size (data + indices + indptr) is the yardstick: pgs reads it in place.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.harness.common import fmt, markdown_table, write_report
from bench.harness.peers import PAPER_RUN, PAPER_SIGMA

# Shared by both children: measure(fn) runs fn and returns (peak RSS growth, tracemalloc
# peak, clear_refs worked). Before it, freed memory goes back to the OS (malloc_trim) so
# a run cannot reuse pages an earlier one left resident (that would hide its
# allocations from the RSS peak), and the kernel's peak-RSS counter is reset.
_MEASURE = r"""
import ctypes, gc, json, sys, tracemalloc
sys.path.append({root!r})  # after site-packages: the installed pgs
import numpy as np
import pgs

PAPER = {paper!r}   # bench.harness.peers.PAPER_RUN: the pgs.train runs measured
SIGMA = {sigma!r}   # bench.harness.peers.PAPER_SIGMA: where no sigma is given

def status():
    d = {{}}
    for line in open("/proc/self/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            k, v = line.split(":")
            d[k] = int(v.split()[0]) * 1024
    return d

try:
    malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
except OSError:
    malloc_trim = None

def measure(fn):
    gc.collect()
    if malloc_trim is not None:
        malloc_trim(0)
    clear_refs_ok = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        clear_refs_ok = False
    before = status()
    tracemalloc.start()
    out = fn()
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after = status()
    del out
    return after["VmHWM"] - before["VmRSS"], traced, clear_refs_ok

def measure_all(configs, make_fit, repeats):
    results = []
    for what in configs:
        for _ in range(repeats):
            growth, traced, _ = measure(make_fit(what))
            results.append(dict(what=list(what), peak_growth=growth, traced_peak=traced))
    print(json.dumps(results))
"""

_CHILD = r"""
from bench.harness.data import rcv1_like

dtype = np.dtype({dtype!r})
split = rcv1_like({m}, dtype=dtype)
X, y = split.X_train, split.y_train
del split
matrix = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
pgs.train(X[:1000], y[:1000], **dict(PAPER, loss="logistic", sigma=SIGMA, T=10, seed=0))
results = []   # (above: import/first-call costs)
for p, k, iterate in {configs!r}:
    for _ in range({repeats}):
        growth, traced, clear_refs_ok = measure(
            lambda: pgs.train(X, y, **dict(PAPER, loss="logistic", p=p, k=k, sigma=1e-5,
                                           T=X.shape[0] // k, iterate=iterate, seed=1)))
        results.append(dict(p=p, k=k, iterate=iterate, matrix=matrix, n_features=X.shape[1],
                            peak_growth=growth, traced_peak=traced,
                            clear_refs_ok=clear_refs_ok))
print(json.dumps(results))
"""


# (p, k, iterate): the average keeps two more vectors (and a batch of k >= 16 the
# per-column sums); p = 1.8 row by row keeps lam and u interleaved for a run (two more),
# and iterate="random" the picked iterate (one more).
CONFIGS = ((2.0, 1, "average"), (1.8, 300, "average"), (1.8, 1, "random"))


# The budget is about vectors of n_features, which RCV1's 47k columns make too small to
# see (one is 0.36 MiB, the budget's 20 MB hide fifty): so a wide problem as well,
# hashed-feature-like, every configuration of pgs.train and the estimators.
_WIDE_X = r"""
import scipy.sparse as sp
from pgs.estimators import PGSClassifier

n, m, nnz = {n}, {m}, 50
rng = np.random.default_rng(0)
X = sp.csr_matrix((rng.random(m * nnz), rng.integers(0, n, m * nnz).astype(np.int32),
                   np.arange(0, m * nnz + 1, nnz, dtype=np.int32)), shape=(m, n))
X.sum_duplicates()
"""
_WIDE_CHILD = _WIDE_X + r"""y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
pgs.train(X[:100], y[:100], **dict(PAPER, sigma=SIGMA, T=5))
def make_fit(what):
    if what[0] == "train":
        _, p, k, iterate, keep = what
        return lambda: pgs.train(X, y, **dict(PAPER, loss="logistic", p=p, k=k, sigma=SIGMA,
                                              T=m // k, iterate=iterate, keep_state=keep,
                                              seed=1))
    return lambda: PGSClassifier(p=what[1], random_state=1).fit(X, y)

measure_all({configs!r}, make_fit, {repeats})
"""

WIDE_CONFIGS = tuple(("train", p, k, iterate, False)
                     for p in (2.0, 1.8, 1.5, 1.7) for k in (1, 64)
                     for iterate in ("random", "last", "average")) + (
    ("train", 2.0, 1, "random", True), ("train", 1.8, 1, "random", True),
    ("train", 1.8, 64, "average", True),
    ("PGSClassifier", 2.0), ("PGSClassifier", 1.8))


# K classes: a block of K outputs (or K solvers in lock-step) against K vectors of
# n_features, the unit of a K-class fit's state; the fixed-sigma runs and the defaults.
_CLASSES_CHILD = _WIDE_X + r"""K = {K}
y = rng.integers(0, K, m).astype(np.float64)
PGSClassifier(loss="multinomial", sigma=SIGMA, T=5).fit(X[:100], y[:100])
def make_fit(what):
    if what[0] == "fixed":
        _, loss, p, iterate = what
        return lambda: PGSClassifier(loss=loss, p=p, sigma=SIGMA, T=m, iterate=iterate,
                                     random_state=1).fit(X, y)
    return lambda: PGSClassifier(loss=what[1], random_state=1).fit(X, y)

measure_all({configs!r}, make_fit, {repeats})
"""

CLASSES_CONFIGS = tuple(("fixed", loss, p, iterate)
                        for loss in ("multinomial", "crammer_singer", "logistic", "hinge")
                        for p in (2.0, 1.5) for iterate in ("last", "average")) + tuple(
    ("PGSClassifier", loss) for loss in ("multinomial", "logistic", "hinge"))


def _in_subprocess(child):
    """Run `_MEASURE` + child in a fresh interpreter; its JSON list of results."""
    root = str(Path(__file__).resolve().parents[2])
    # cwd: not the repository root, whose pgs/ source would shadow the installed pgs.
    measure = _MEASURE.format(root=root, paper=dict(PAPER_RUN), sigma=PAPER_SIGMA)
    out = subprocess.run([sys.executable, "-c", measure + child],
                         capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _wide_section(cfg):
    n, m = (1_000_000, 20_000) if cfg.quick else (4_000_000, 100_000)
    # (WIDE_CONFIGS x repeats in one fresh subprocess, the peak reset between runs)
    results = _in_subprocess(_WIDE_CHILD.format(n=n, m=m, configs=WIDE_CONFIGS,
                                                repeats=cfg.repeats))
    vector = 8 * n
    budget = 4 * vector + 20 * 2**20
    rows = []
    for what in WIDE_CONFIGS:
        runs = [r for r in results if tuple(r["what"]) == what]
        growth = np.array([r["peak_growth"] for r in runs], dtype=float)
        traced = np.array([r["traced_peak"] for r in runs], dtype=float)
        worst = max(growth.max(), traced.max())
        if what[0] == "train":
            label = (f"train p={what[1]:g} k={what[2]} iterate={what[3]}"
                     + (" keep_state" if what[4] else ""))
        else:
            label = f"{what[0]}(p={what[1]:g}) default"
        rows.append([label, fmt(growth / vector, 3), fmt(traced / vector, 3),
                     "yes" if worst <= budget else "**no**"])
    table = markdown_table(["run", "peak RSS growth / vector", "tracemalloc peak / vector",
                            "within 4 vectors + 20 MB"], rows)
    intro = (f"Random sparse X, m = {m:,} rows of 50 non-zeros over n = {n:,} features "
             f"(one float64 vector of n_features: {vector / 2**20:.1f} MiB, the budget "
             f"{budget / 2**20:.0f} MiB); one pass of logistic pgs (the paper's set-up, "
             f"pgs.PAPER, sigma = {PAPER_SIGMA:g}; the estimators with their defaults). "
             "tracemalloc counts "
             "numpy's allocations whether or not their pages are touched; the RSS only "
             f"the pages touched. {cfg.repeats} runs per row, one subprocess.")
    note = ("keep_state=True returns the solver's state with the model; for p < 1.2 "
            "with the average that is lam, u and the average's two vectors besides the "
            "coef: five vectors that the caller asked to keep, none of them a working "
            "copy (p >= 1.2 keeps the average in one vector: four).")
    return (f"Wide problem: the budget at {n:,} features",
            intro + "\n\n" + table + "\n\n" + note)


def _classes_section(cfg):
    n, m, K = (100_000, 20_000, 10) if cfg.quick else (1_000_000, 100_000, 10)
    results = _in_subprocess(_CLASSES_CHILD.format(n=n, m=m, K=K, configs=CLASSES_CONFIGS,
                                                   repeats=cfg.repeats))
    block = 8 * n * K
    rows = []
    for what in CLASSES_CONFIGS:
        runs = [r for r in results if tuple(r["what"]) == what]
        growth = np.array([r["peak_growth"] for r in runs], dtype=float)
        traced = np.array([r["traced_peak"] for r in runs], dtype=float)
        label = (f"loss={what[1]} p={what[2]:g} iterate={what[3]}, one pass"
                 if what[0] == "fixed" else f"loss={what[1]}, the defaults")
        rows.append([label, fmt(growth / block, 3), fmt(traced / block, 3)])
    table = markdown_table(["run", "peak RSS growth / block", "tracemalloc peak / block"],
                           rows)
    intro = (f"Random sparse X as above, m = {m:,} rows over n = {n:,} features, {K} "
             f"classes drawn at random; a block is K float64 vectors of n_features "
             f"({block / 2**20:.0f} MiB). PGSClassifier, one pass at sigma = {PAPER_SIGMA:g}, "
             "and its default fits (sigma chosen among candidates, each a block). "
             f"{cfg.repeats} runs per row, one subprocess.")
    return f"{K} classes: against the block", intro + "\n\n" + table


def run(cfg):
    """Run the experiment, write results/memory.md and return its path."""
    m = 50_000 if cfg.quick else 781_265
    rows = []
    for dtype in ("float64", "float32"):
        # (all CONFIGS x repeats in one fresh subprocess per dtype)
        results = _in_subprocess(_CHILD.format(dtype=dtype, m=m, configs=CONFIGS,
                                               repeats=cfg.repeats))
        for p, k, iterate in CONFIGS:
            runs = [r for r in results if (r["p"], r["k"], r["iterate"]) == (p, k, iterate)]
            mat = runs[0]["matrix"]
            growth = np.array([r["peak_growth"] for r in runs], dtype=float)
            traced = np.array([r["traced_peak"] for r in runs], dtype=float)
            rows.append([dtype, f"{p:g}", k, iterate, f"{mat / 2**20:.1f}",
                         fmt(growth / 2**20, 3),
                         fmt(traced / 2**20, 3), fmt(growth / mat, 3)])
    n_features = runs[0]["n_features"]
    table = markdown_table(["X dtype", "p", "k", "iterate", "X (CSR) MiB",
                            "peak RSS growth MiB",
                            "tracemalloc peak MiB", "peak growth / size of X"], rows)
    intro = (f"RCV1-like, m = {m:,}, {n_features:,} features; one pass (T = m / k) of "
             f"logistic pgs (the paper's set-up, pgs.PAPER, sigma = 1e-5). For scale: one "
             f"float64 vector of "
             f"n_features is {8 * n_features / 2**20:.2f} MiB, the labels are "
             f"{8 * m / 2**20:.1f} MiB. {cfg.repeats} runs per row, one subprocess per dtype; "
             f"clear_refs {'worked' if runs[0]['clear_refs_ok'] else 'was NOT available'}.")
    return write_report("memory", "Peak memory of pgs.train",
                        [("RCV1-like: against the size of X", table), _wide_section(cfg),
                         _classes_section(cfg)],
                        cfg, intro)
