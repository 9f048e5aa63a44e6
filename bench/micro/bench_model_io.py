"""Peak memory of `pgs.load_model` on a large compressed model, against numpy's
load-then-copy (what load_model did before it read each array once, straight into
the array it keeps).

The model file holds n float64 coefficients, mostly zeros, written with
``numpy.savez_compressed`` (the issue's case: 250M coefficients in a file of about
2 MB). Each reader runs in a fresh subprocess that resets the kernel's peak-RSS counter
(/proc/self/clear_refs) before it loads; we report the growth of the peak RSS (VmHWM)
over the RSS before, and tracemalloc's peak, both divided by the array's size.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.harness.common import fmt, markdown_table, write_report

_CHILD = r"""
import json, sys, tracemalloc
import numpy as np
import pgs

def status():
    d = {{}}
    for line in open("/proc/self/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            k, v = line.split(":")
            d[k] = int(v.split()[0]) * 1024
    return d

path, how = {path!r}, {how!r}
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
before = status()
tracemalloc.start()
if how == "load_model":
    coef = pgs.load_model(path).coef
else:
    with np.load(path, allow_pickle=False) as z:
        coef = np.array(z["coef"], dtype=np.float64)
_, traced = tracemalloc.get_traced_memory()
tracemalloc.stop()
after = status()
print(json.dumps(dict(growth=after["VmHWM"] - before["VmRSS"], traced=traced,
                      nbytes=coef.nbytes)))
"""

READERS = {"load_model": "pgs.load_model",
           "numpy": "numpy.load, then np.array(coef, float64) (pgs before #19)"}


def _write_model(path, n):
    """A pgs.Model file of n coefficients (one in a thousand non-zero), compressed."""
    import pgs

    coef = np.zeros(n)
    coef[::1000] = 1.5
    model = pgs.Model(coef=coef[:1], intercept=0.5, iteration=1, T=1, classes=None,
                      params=dict(loss="squared", p=2.0, sigma=1e-4, epsilon=0.0,
                                  fit_intercept=True, intercept_scaling=1.0))
    model.save(path)
    with np.load(path, allow_pickle=False) as z:
        header = json.loads(str(z["header"][()]))
    header["n_features"] = n
    np.savez_compressed(path, header=np.array(json.dumps(header)), coef=coef)


def _measure(path, how):
    # cwd: not the repository root, whose pgs/ source would shadow the installed pgs.
    out = subprocess.run([sys.executable, "-c", _CHILD.format(path=str(path), how=how)],
                         capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(cfg):
    """Run the experiment, write results/model_io.md and return its path."""
    n = 10_000_000 if cfg.quick else 250_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        _write_model(path, n)
        size = path.stat().st_size
        rows = []
        for how, label in READERS.items():
            runs = [_measure(path, how) for _ in range(cfg.repeats)]
            nbytes = runs[0]["nbytes"]
            rows.append([label, fmt([r["growth"] / nbytes for r in runs], 3),
                         fmt([r["traced"] / nbytes for r in runs], 3)])
    table = markdown_table(["reader", "peak RSS growth / array", "tracemalloc peak / array"],
                           rows)
    intro = (f"A compressed model file of {n:,} float64 coefficients ({8 * n / 2**20:,.0f} "
             f"MiB as an array, {size / 2**20:.1f} MiB on disk). {cfg.repeats} runs per "
             "reader, each in a fresh subprocess.")
    return write_report("model_io", "Peak memory of loading a model", [("", table)], cfg,
                        intro)
