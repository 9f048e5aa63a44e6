"""Experiment 6: peak memory of pgs.train on the 781k CSR, float64 and float32.

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

from bench.common import fmt, markdown_table, write_report

_CHILD = r"""
import json, sys, tracemalloc
sys.path.insert(0, {root!r})
import numpy as np
from bench.data import rcv1_like
import pgs

def status():
    d = {{}}
    for line in open("/proc/self/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            k, v = line.split(":")
            d[k] = int(v.split()[0]) * 1024
    return d

dtype = np.dtype({dtype!r})
split = rcv1_like({m}, dtype=dtype)
X, y = split.X_train, split.y_train
del split
matrix = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
pgs.train(X[:1000], y[:1000], loss="logistic", T=10, seed=0)  # import/first-call costs
import ctypes, gc
try:
    malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
except OSError:
    malloc_trim = None
results = []
for p, k, iterate in {configs!r}:
    for _ in range({repeats}):
        # Hand freed memory back to the OS so a run cannot reuse pages an earlier one
        # left resident (that would hide its allocations from the RSS peak).
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
        pgs.train(X, y, loss="logistic", p=p, k=k, sigma=1e-5, T=X.shape[0] // k,
                  iterate=iterate, seed=1)
        _, traced = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        after = status()
        results.append(dict(p=p, k=k, iterate=iterate, matrix=matrix, n_features=X.shape[1],
                            rss_before=before["VmRSS"],
                            peak_growth=after["VmHWM"] - before["VmRSS"],
                            traced_peak=traced, clear_refs_ok=clear_refs_ok))
print(json.dumps(results))
"""


# (p, k, iterate): the average keeps two more vectors (and a batch of k >= 16 the
# per-column sums); p = 1.8 with k < 16 keeps lam and u interleaved for a run (two more),
# and iterate="random" the picked iterate (one more).
CONFIGS = ((2.0, 1, "average"), (1.8, 300, "average"), (1.8, 1, "random"))


def _measure(dtype, m, repeats):
    """All CONFIGS x repeats in one fresh subprocess for `dtype` (peak reset between runs)."""
    root = str(Path(__file__).resolve().parents[1])
    code = _CHILD.format(root=root, dtype=dtype, m=m, configs=CONFIGS, repeats=repeats)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(cfg):
    """Run the experiment, write results/memory.md and return its path."""
    m = 50_000 if cfg.quick else 781_265
    rows = []
    for dtype in ("float64", "float32"):
        results = _measure(dtype, m, cfg.repeats)
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
             f"logistic pgs. For scale: one float64 vector of "
             f"n_features is {8 * n_features / 2**20:.2f} MiB, the labels are "
             f"{8 * m / 2**20:.1f} MiB. {cfg.repeats} runs per row, one subprocess per dtype; "
             f"clear_refs {'worked' if runs[0]['clear_refs_ok'] else 'was NOT available'}.")
    return write_report("memory", "Peak memory of pgs.train", [("", table)], cfg, intro)
