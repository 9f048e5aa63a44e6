"""Experiment: one-vs-rest's K problems as one block against K separate runs, whole
calls and the kernel alone, with the average and with the last iterate, and the block
split in two (each half run in lock-step).

From the repository root::

    python bench/experiments/exp_ovr_apart.py [--reps 5]

One pass (T = m) at sigma = 1e-4, seed 1: `pgs.training.fit.fit_many` (the problems as
one block) against `fit` of each problem in turn (the same bits, checked), on 200k
RCV1-like rows with 10 classes (10 x 47k) and on news20-like text (11,314 rows, 20 x
130k). "Kernel" is the time inside `run_lockstep`, the rest of a call is its set-up and
its iterates. Two halves: `prepare_many(X, ys, 2)` run by `run_many_to` on one thread
(blocks of 5 and 10: those of 5, below `BLOCK_MIN_OUTPUTS`, run in lock-step). Each
figure is the best of `--reps` calls; the state's bytes are the block's lam and the
average's.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))

import pgs.engine.solver as S  # noqa: E402
import pgs.training.fit as F  # noqa: E402
from bench.experiments.exp_defaults import _news20_like  # noqa: E402
from bench.harness.common import Config, markdown_table, write_report  # noqa: E402
from bench.harness.data import rcv1_like_multiclass  # noqa: E402

_KERNEL = [0.0]


def _timed_lockstep(run_lockstep):
    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        out = run_lockstep(*args, **kwargs)
        _KERNEL[0] += time.perf_counter() - t0
        return out
    return timed


def _best(fn, reps):
    """(best whole seconds, best kernel seconds, the last result) over `reps` calls."""
    whole, kernel = [], []
    for _ in range(reps):
        _KERNEL[0] = 0.0
        t0 = time.perf_counter()
        out = fn()
        whole.append(time.perf_counter() - t0)
        kernel.append(_KERNEL[0])
    return min(whole), min(kernel), out


def _case(name, Xb, ys, loss, it, reps):
    """One table row: the block, the K runs and the two halves of one set and setting."""
    kw = dict(T=Xb.shape[0], sigma=1e-4, loss=loss, iterate=it, seed=1)
    wb, kb, block = _best(lambda: F.fit_many(Xb, ys, **kw), reps)
    wa, ka, apart = _best(lambda: [F.fit(Xb, yc, **kw) for yc in ys], reps)
    for one, two in zip(block, apart, strict=True):
        if not np.array_equal(one.coef, two.coef):
            raise AssertionError(f"{name} {loss} {it}: the bits differ")

    def halves():
        runs = F.prepare_many(Xb, ys, 2, **kw)
        F.run_many_to(runs, runs[0].t_total, 1)
        return F.finish_all(runs, False)
    wh, _, _ = _best(halves, reps)
    state = len(ys) * 8 * Xb.shape[1] * (2 if it == "average" else 1)
    return [name, loss, it, f"{state / 2**20:.1f}", f"{wb:.3f}", f"{wa:.3f}", f"{wb / wa:.2f}",
            f"{kb:.3f}", f"{ka:.3f}", f"{kb / ka:.2f}", f"{wh / wb:.2f}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    S.run_lockstep = F.run_lockstep = _timed_lockstep(S.run_lockstep)
    sets = [("RCV1-like, 200k rows, 10 x 47k", *rcv1_like_multiclass(200_000, 10)),
            ("news20-like, 20 x 130k", *_news20_like(11_314))]
    rows = []
    for name, X, y in sets:
        ys = [np.where(y == c, 1.0, -1.0) for c in np.unique(y)]
        Xb = F.as_csr_buffers(X, check_entries=False)
        for loss in ("hinge", "logistic"):
            for it in ("average", "last"):
                rows.append(_case(name, Xb, ys, loss, it, args.reps))
                print(rows[-1], flush=True)
    table = markdown_table(["set", "loss", "iterate", "block state (MiB)", "block (s)",
                            "K runs (s)", "block / K runs", "block kernel (s)",
                            "K runs' kernels (s)", "kernel ratio", "two halves / block"],
                           rows)
    intro = __doc__.split("\n\n")[0].replace("\n", " ")
    write_report("ovr_apart", "One-vs-rest: one block against K separate runs",
                 [(f"one pass, best of {args.reps} calls", table)], Config(), intro)


if __name__ == "__main__":
    main()
