"""Run the pgs benchmark suite: `python bench/run.py [--quick] [--only NAME ...]`.

Writes results/NAME.md tables (NAME_quick.md with --quick) and PNG plots, and prints
the tables; README.md quotes the headline figures. --quick shrinks every
experiment (smaller sets, fewer seeds) to finish in a few minutes; the full run, on the
781k-row sets, takes much longer.

Every experiment is a module of `EXPERIMENTS` with a `run(cfg)` (cfg:
harness.common.Config, whose `quick` it honours): experiments/exp_*.py (the paper's
experiments and the measurements behind the defaults) and micro/ (bench_*.py, single
components timed). Most also keep their own command lines (see their
docstrings). harness/ holds the helpers: common.py (configuration, statistics, tables,
plots), data.py (the generated and real data sets), peers.py (scikit-learn, LIBLINEAR and
L-BFGS runners) and curves.py (accuracy-against-time curves).
"""

import argparse
import importlib
import os
import sys
import time
import traceback
from pathlib import Path

# Single-threaded BLAS, set before numpy loads: every solver here is single-threaded, and
# OpenBLAS threads on a loaded 2-core machine made L-BFGS ~10x slower in our tests.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# The repository root goes last, for the `bench` package: an installed pgs must win over
# the source tree's pgs/, whose compiled modules exist only in a build.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench.harness.common import Config  # noqa: E402

EXPERIMENTS = {
    "throughput": "bench.experiments.exp_throughput",
    "pcost": "bench.experiments.exp_pcost",
    "time_to_accuracy": "bench.experiments.exp_time_to_accuracy",
    "passes": "bench.experiments.exp_passes",
    "inverse_time": "bench.experiments.exp_inverse_time",
    "table2": "bench.experiments.exp_table2",
    "memory": "bench.experiments.exp_memory",
    "defaults": "bench.experiments.exp_defaults",
    "lockstep": "bench.micro.bench_lockstep",
    "multiclass": "bench.experiments.exp_multiclass",
    "csgd": "bench.micro.bench_csgd",
    "parallel_hard": "bench.experiments.exp_parallel_hard",
    "dask_rounds": "bench.experiments.exp_dask_rounds",
    "dask_scale": "bench.experiments.exp_dask_scale",
    "sparse": "bench.experiments.exp_sparse",
}


def main(argv=None):
    """Parse the command line and run the chosen experiments in order."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few minutes")
    parser.add_argument("--only", nargs="+", choices=sorted(EXPERIMENTS), metavar="NAME",
                        help=f"run only these experiments: {', '.join(EXPERIMENTS)}")
    args = parser.parse_args(argv)
    cfg = Config(quick=args.quick)
    names = args.only or list(EXPERIMENTS)
    failed = []
    t_start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        print(f"\n=== {name} ===", flush=True)
        try:
            importlib.import_module(EXPERIMENTS[name]).run(cfg)
        except Exception:  # noqa: BLE001 - report and go on with the other experiments
            traceback.print_exc()
            failed.append(name)
        print(f"=== {name}: {time.perf_counter() - t0:.0f} s ===", flush=True)
    print(f"\nTotal {time.perf_counter() - t_start:.0f} s; failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
