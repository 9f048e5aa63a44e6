"""Benchmark `pgs.load_svmlight` against scikit-learn and svmloader on an RCV1-sized file.

Writes (once) the RCV1-like set of bench/harness/data.py as an svmlight file: 781,265
rows, 47,236 features, ~76 non-zeros per row, L2-normalised ltc tf-idf values written
with ``repr`` (17 significant digits, ~1.5 GB), and optionally a gzip copy. Then times
each parser in a fresh subprocess (so peak RSS is per parser) and prints a table:
seconds (median of --repeat runs), MB/s, peak RSS and peak RSS relative to the final
CSR matrix's size.

Usage::

    python bench/micro/bench_svmlight.py [--rows 781265] [--repeat 3] [--cache DIR]
                                   [--format repr|rcv1] [--gzip] [--skip-sklearn]
    python bench/run.py [--quick] --only svmlight

The file goes to ``--cache`` (default ``$PGS_BENCH_CACHE`` or bench/cache/, which git
ignores). svmloader is optional (``pip install svmloader``); it is skipped when absent.
From bench/run.py: 781,265 rows, 3 repeats and the gzip copy, written to
results/svmlight.md (quick: 50,000 rows, one repeat, svmlight_quick.md).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
from bench.harness.common import markdown_table, write_report  # noqa: E402
from bench.harness.data import RCV1_N_FEATURES, cache_dir, rcv1_like  # noqa: E402

N_FEATURES = RCV1_N_FEATURES
HERE = Path(__file__).resolve().parent


def write_rcv1_like(path, n_rows, fmt="repr", chunk=20000):
    """Write the RCV1-like set's first `n_rows` training rows and labels
    (`bench.harness.data.rcv1_like`) as an svmlight file (1-based, sorted indices).

    Parameters
    ----------
    path : str
    n_rows : int
    fmt : {"repr", "rcv1"}
        "repr" writes values with Python's repr (17 significant digits);
        "rcv1" as the real RCV1 files do ("%.7e").
    """
    split = rcv1_like(n_rows)
    X, y = split.X_train, split.y_train
    keys = [f"{j + 1}:" for j in range(X.shape[1])]
    value_fmt = repr if fmt == "repr" else "{:.7e}".format
    tmp = path + ".part"
    with open(tmp, "w", encoding="ascii") as out:
        for start in range(0, n_rows, chunk):
            rows = X[start:start + chunk]
            ptr, ind, val = rows.indptr.tolist(), rows.indices.tolist(), rows.data.tolist()
            lines = []
            for r, label in enumerate(y[start:start + chunk].tolist()):
                feats = " ".join([keys[j] + value_fmt(v) for j, v in
                                  zip(ind[ptr[r]:ptr[r + 1]], val[ptr[r]:ptr[r + 1]],
                                      strict=True)])
                lines.append(f"{int(label)} {feats}\n")
            out.write("".join(lines))
    os.replace(tmp, path)


# The process's own peak RSS in kB: VmHWM, which starts afresh with the exec; ru_maxrss
# keeps the peak of the process that forked it, such as bench/run.py holding a large set.
PEAK_RSS = r"""
import resource

def peak_kb():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

RUNNER = PEAK_RSS + r"""
import json, sys, time
import numpy as np
which, path, n_features, n_threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# imports stay outside the timed region
if which == "pgs":
    import pgs
elif which == "sklearn":
    from sklearn.datasets import load_svmlight_file
elif which == "svmloader":
    from svmloader import load_svmfile
t = time.perf_counter()
c = time.process_time()
if which == "pgs":
    X, y = pgs.load_svmlight(path, n_features=n_features,
                             n_threads=None if n_threads == "auto" else int(n_threads))
elif which == "sklearn":
    X, y = load_svmlight_file(path, n_features=n_features)
elif which == "svmloader":
    X, y = load_svmfile(path)
sec = time.perf_counter() - t
cpu = time.process_time() - c
X = X.tocsr()
csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
print(json.dumps(dict(seconds=sec, cpu=cpu, peak=peak_kb() * 1024, csr=csr_bytes, nnz=int(X.nnz),
                      rows=X.shape[0], checksum=float(np.sum(X.data)) + float(np.sum(y)))))
"""


def run_one(which, path, n_threads):
    # cwd: not the repository root, whose pgs/ source would shadow the installed pgs.
    out = subprocess.run([sys.executable, "-c", RUNNER, which, path, str(N_FEATURES),
                          str(n_threads)], capture_output=True, text=True, cwd=HERE)
    if out.returncode != 0:
        raise RuntimeError(f"{which} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(cfg):
    """The experiment of bench/run.py: write results/svmlight.md and return its path."""
    argv = ["--rows", "50000", "--repeat", "1"] if cfg.quick else ["--repeat", "3", "--gzip"]
    rows, size, base = main(argv)
    table = markdown_table(["parser", "input", "threads", "seconds", "MB/s", "CPU s",
                            "MB per CPU-s", "peak RSS MB", "peak RSS / CSR size",
                            "time / pgs plain 1 thread, same run"], rows)
    intro = (f"An RCV1-like svmlight file ({size / 1e6:,.0f} MB; 47,236 features, ~76 "
             f"non-zeros a row, values written with repr). Every parser runs in a fresh "
             f"subprocess; seconds are medians of the repeats (scikit-learn: one run). MB/s "
             f"is relative to the uncompressed text; CPU s is the process's CPU time (all "
             f"threads), so MB per CPU-s is the per-core speed whatever else runs on the "
             f"machine; peak RSS includes the interpreter with numpy and scipy "
             f"({base / 1e6:.0f} MB).")
    return write_report("svmlight", "Reading svmlight files", [("", table)], cfg, intro)


def main(argv=None):
    """Parse the command line, time the parsers and print a table.

    Returns (table rows, the file's size in bytes, the interpreter's own peak RSS).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=781265)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", default=str(cache_dir()))
    ap.add_argument("--format", choices=["repr", "rcv1"], default="repr")
    ap.add_argument("--gzip", action="store_true", help="also time a .gz copy")
    ap.add_argument("--skip-sklearn", action="store_true")
    ap.add_argument("--skip-svmloader", action="store_true")
    args = ap.parse_args(argv)

    os.makedirs(args.cache, exist_ok=True)
    path = os.path.join(args.cache, f"rcv1like_v2_{args.rows}_{args.format}.svm")
    if not os.path.exists(path):
        print(f"generating {path} ...", flush=True)
        t = time.perf_counter()
        write_rcv1_like(path, args.rows, args.format)
        print(f"  {time.perf_counter() - t:.0f} s", flush=True)
    size = os.path.getsize(path)
    print(f"file: {path}, {size / 1e6:.0f} MB, {os.cpu_count()} CPUs")

    cases = [("pgs", path, 1), ("pgs", path, 2)]
    if not args.skip_svmloader:
        try:
            import svmloader  # noqa: F401
            cases.append(("svmloader", path, 1))
        except ImportError:
            print("svmloader not installed: skipped (pip install svmloader)")
    if not args.skip_sklearn:
        cases.append(("sklearn", path, 1))
    if args.gzip:
        gz = path + ".gz"
        if not os.path.exists(gz):
            print(f"compressing {gz} ...", flush=True)
            subprocess.run(["gzip", "-k", "-1", path], check=True)
        cases += [("pgs", gz, 1), ("pgs", gz, 2)]

    print(f"{'parser':<10} {'input':<6} {'threads':>7} {'seconds':>8} {'MB/s':>7} "
          f"{'CPU s':>7} {'MB/CPU-s':>8} {'peak RSS MB':>11} {'peak/CSR':>8}  runs (s)")
    rows, first = [], None
    for which, p, threads in cases:
        runs = [run_one(which, p, threads) for _ in range(args.repeat if which != "sklearn"
                                                           else 1)]
        sec = float(np.median([r["seconds"] for r in runs]))
        cpu = float(np.median([r["cpu"] for r in runs]))
        peak = max(r["peak"] for r in runs)
        csr = runs[0]["csr"]
        kind = "gz" if p.endswith(".gz") else "plain"
        print(f"{which:<10} {kind:<6} {threads:>7} {sec:>8.2f} {size / 1e6 / sec:>7.0f} "
              f"{cpu:>7.2f} {size / 1e6 / cpu:>8.0f} {peak / 1e6:>11.0f} {peak / csr:>8.2f}  "
              + " ".join(f"{r['seconds']:.2f}" for r in runs), flush=True)
        # Within this run, against the first case (pgs, plain text, one thread).
        first = sec if first is None else first
        rows.append([which, kind, threads, f"{sec:.2f}", f"{size / 1e6 / sec:.0f}",
                     f"{cpu:.2f}", f"{size / 1e6 / cpu:.0f}", f"{peak / 1e6:.0f}",
                     f"{peak / csr:.2f}", f"{sec / first:.2f}"])
    base = run_baseline()
    print(f"MB/s is relative to the uncompressed text size; CPU s is the process's CPU time "
          f"(all threads), so MB/CPU-s is the per-core speed whatever else runs on the "
          f"machine; peak RSS includes the interpreter with numpy and scipy imported "
          f"({base / 1e6:.0f} MB).")
    return rows, size, base


def run_baseline():
    code = PEAK_RSS + "import numpy, scipy.sparse, pgs\nprint(peak_kb() * 1024)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=HERE)
    return int(out.stdout.strip())


if __name__ == "__main__":
    main()
