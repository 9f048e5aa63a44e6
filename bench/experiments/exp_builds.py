"""Experiment: one path of the kernel against its absence, build against build, interleaved.

A specialised path stays only if it is at least 15% faster on two data sets, one of them
real (STYLE.md). `exp_variants.py` times the build it runs in; this script runs several
builds side by side, each in its own worker process that loads the data once, and times
them in turn (A B, then B A the next round) so that the load of a shared machine falls
on both alike. Times are CPU seconds (`time.process_time`) of the compiled loop alone
(`pgs.engine.solver.Solver.run`, one thread), and each round's ratio alternative / base is
taken within the round. The final iterates of the two builds are compared too: the
largest difference relative to the largest |w_j|, and whether the bits are equal.

Build each variant as a wheel and unpack it (``pip wheel --no-deps -w WH SRC`` then
``python -m zipfile -e WH/*.whl DIR``), then, from the repository root::

    python bench/experiments/exp_builds.py --base DIR0 --alt p18=DIR1 --alt prefetch=DIR2

Case groups (`GROUPS`): ``p18`` (p = 1.8, k = 1 and 300: the special update of
p = 1.8 against the general vector power), ``prefetch`` (p = 2 and 1.5, k = 1, i.i.d.
and permutation rows: the rows drawn ahead and prefetched against drawn when needed) and
``kout`` (the K-output loop at K = 1 as the alternative, the binary loop before it as the
base), logistic loss, on the RCV1-like set and on the real RCV1 sample (``--sets``: MNIST).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SIGMA = 1e-5

# (p, k, sampling) per group; every case runs on both sets
GROUPS = {
    "p18": [(1.8, 1, "iid"), (1.8, 300, "iid")],
    "prefetch": [(2.0, 1, "iid"), (2.0, 1, "permutation"), (1.5, 1, "iid"),
                 (1.5, 1, "permutation")],
    # the K-output loop at K = 1 (the alternative) against the binary loop before it (base)
    "kout": [(2.0, 1, "iid"), (2.0, 1, "permutation"), (1.5, 1, "iid"), (1.3, 1, "iid"),
             (2.0, 300, "iid")],
}


# ------------------------------------------------------------------ the worker

def _load(name, m):
    if name == "mnist":
        # the 60,000 real training images (pixels / 255, ~150 non-zeros a row: X is ~110 MB
        # of CSR, far bigger than the caches, unlike the RCV1 sample's 1 MB); digits 0-4
        # against 5-9
        import scipy.sparse as sp

        from bench.harness.data import mnist
        X, y, _, _ = mnist()
        return sp.csr_matrix(X), np.where(y >= 5, 1.0, -1.0)
    from bench.harness.data import rcv1_like, rcv1_sample
    split = rcv1_like(m) if name == "rcv1_like" else rcv1_sample()
    X = split.X_train
    return X, np.ascontiguousarray(split.y_train, dtype=np.float64)


def _worker():
    """Serve runs over stdin/stdout, one JSON line each (the data loaded once)."""
    from pgs._core import SAMPLING_MODES
    from pgs.engine.solver import Solver
    from pgs.rules.losses import LOSS_NAMES
    sets = {}
    for line in sys.stdin:
        req = json.loads(line)
        key = (req["set"], req["m"])
        if key not in sets:
            sets[key] = _load(*key)
        X, y = sets[key]
        s = Solver(X.shape[1], LOSS_NAMES.index("logistic"), req["p"], SIGMA, 0.0, 1.0,
                   0.0, req["k"], 0, False, np.array([1, 2, 3, 4], dtype=np.uint64),
                   SAMPLING_MODES.index(req["sampling"]))
        c0, w0 = time.process_time(), time.perf_counter()
        status = s.run(req["T"], X.data, X.indices, X.indptr, y)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        np.save(req["out"], s.last())
        print(json.dumps(dict(cpu=cpu, wall=wall, status=int(status))), flush=True)


class Build:
    """A worker process running one unpacked build (its directory first on sys.path)."""

    def __init__(self, name, path):
        self.name = name
        env = dict(os.environ, PYTHONPATH=f"{path}{os.pathsep}{ROOT}",
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        # (an editable install's finder would shadow PYTHONPATH: it is dropped)
        code = ("import sys; sys.path.remove(''); sys.meta_path[:] = [f for f in "
                "sys.meta_path if 'editable' not in type(f).__module__]; "
                "import pgs, bench.experiments.exp_builds as e; "
                f"assert pgs.__file__.startswith({str(path)!r}), pgs.__file__; e._worker()")
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env,
                                     cwd="/")

    def run(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"build {self.name}: the worker died")
        out = json.loads(line)
        if out["status"] != 0:
            raise RuntimeError(f"build {self.name}: status {out['status']} for {req}")
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ------------------------------------------------------------------ the parent

SETS = ("rcv1_like", "rcv1_sample", "mnist")


def _sets(m, names):
    # (name, m, iterations at k = 1, label): one pass of the RCV1-like rows; 1,000 passes
    # of the 1,000 real rows; 10 passes of MNIST. At k = 300, T / 300 iterations.
    every = {"rcv1_like": (m, m, f"RCV1-like, first {m:,} rows"),
             "rcv1_sample": (0, 1_000_000, "RCV1 sample (real), 1,000 rows"),
             "mnist": (0, 600_000, "MNIST (real), 60,000 rows")}
    return [(name, *every[name]) for name in names]


def compare(base, alts, m, rounds, tmp, sets=SETS[:2]):
    """Sections (heading, table) of every group's cases, interleaved over `rounds`."""
    from bench.harness.common import fmt, markdown_table
    workers = {"base": Build("base", base)}
    for group, path in alts.items():
        workers[group] = Build(group, path)
    sections = []
    try:
        for group in alts:
            rows = []
            for set_name, mm, T1, label in _sets(m, sets):
                cases = GROUPS[group]
                cpu = {(c, b): [] for c in cases for b in ("base", group)}
                wall = {(c, b): [] for c in cases for b in ("base", group)}
                for rnd in range(rounds):
                    for c in cases:
                        order = ("base", group) if rnd % 2 == 0 else (group, "base")
                        for b in order:
                            p, k, sampling = c
                            out = workers[b].run(set=set_name, m=mm, p=p, k=k,
                                                 sampling=sampling, T=T1 // k,
                                                 out=str(tmp / f"{b}_{rnd}.npy"))
                            cpu[c, b].append(out["cpu"])
                            wall[c, b].append(out["wall"])
                        wa = np.load(tmp / f"base_{rnd}.npy")
                        wb = np.load(tmp / f"{group}_{rnd}.npy")
                        if rnd == 0:
                            cpu[c, "diff"] = (float(np.max(np.abs(wa - wb))
                                                    / np.max(np.abs(wa))),
                                              bool(np.array_equal(wa, wb)))
                    print(f"{group} {set_name} round {rnd + 1}/{rounds} "
                          f"load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
                for c in cases:
                    a, b = np.array(cpu[c, "base"]), np.array(cpu[c, group])
                    diff, same = cpu[c, "diff"]
                    rows.append([label, f"{c[0]:g}", c[1], c[2], fmt(a, 3), fmt(b, 3),
                                 fmt(b / a, 3), fmt(np.array(wall[c, group])
                                                    / np.array(wall[c, "base"]), 3),
                                 f"{diff:.1e}" + (" (equal bits)" if same else "")])
            header = ["set", "p", "k", "rows", "CPU s, with (base)", f"CPU s, without ({group})",
                      "CPU without / with, same round", "wall without / with",
                      "max |w diff| / max |w|"]
            sections.append((group, markdown_table(header, rows)))
    finally:
        for w in workers.values():
            w.close()
    return sections


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the unpacked build with every path")
    ap.add_argument("--alt", action="append", required=True, metavar="GROUP=DIR",
                    help=f"a build without one path, timed on a group of {sorted(GROUPS)}")
    ap.add_argument("--m", type=int, default=781_265, help="RCV1-like rows (a prefix)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sets", default="rcv1_like,rcv1_sample",
                    help=f"comma-separated, of {SETS}")
    ap.add_argument("--name", default="kernel_paths", help="results/NAME.md")
    ap.add_argument("--note", default="", help="a line for the report (e.g. the commits)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import tempfile

    from bench.harness.common import Config, write_report
    alts = dict(a.split("=", 1) for a in args.alt)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        sections = compare(args.base, alts, args.m, args.rounds, Path(tmp),
                           args.sets.split(","))
    load_end = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    intro = (f"Logistic, sigma = {SIGMA:g}, intercept, iterate 'last'; each case "
             f"{args.rounds} rounds, the two builds in turn (A B, then B A), one worker "
             f"process per build. CPU seconds of `Solver.run` alone, medians [min–max]; "
             f"load average {load} at the start, {load_end} at the end. "
             f"{args.note}")
    write_report(args.name, "Kernel paths against their absence, build against build",
                 sections, Config(), intro)


if __name__ == "__main__":
    main()
