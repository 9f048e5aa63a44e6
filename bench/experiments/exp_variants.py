"""Experiment: what the kernel's specialised variants buy, build against build.

A variant of the update (AVX2 powers and roots for p < 2, p = 1.5's u computed from
lambda) stays only if it is at least 15% faster on two data sets, one of them real. A
variant is switched by the build, not by a runtime flag, so this experiment times the
build it runs in and names it (``$PGS_BENCH_BUILD``, default from ``SIMD_POWERS``):
run it under each build (e.g. one installed with ``-Csetup-args=-Dsimd=disabled``) and
compare the files ``results/variants_<build>.md``.

Timed: logistic, k = 1, the paper's set-up (`peers.PAPER_RUN`: steps 1/(sigma t),
iterate="last", i.i.d. rows), for p = 2, 1.8, 1.5 and 1.7, on
the RCV1-like set (one pass) and on the real RCV1 sample (1,000 rows of RCV1's 47,236
columns: 300 passes), every p once per round.
"""

import os

import numpy as np

from bench.harness import peers
from bench.harness.common import fmt, markdown_table, write_report
from bench.harness.data import rcv1_for, rcv1_sample

PS = (2.0, 1.8, 1.5, 1.7)
SIGMA = 1e-5


def _build():
    import pgs._core

    return os.environ.get("PGS_BENCH_BUILD",
                          "simd" if pgs._core.SIMD_POWERS else "nosimd")


def run(cfg):
    """Time every p on both sets in this build; write results/variants_<build>.md."""
    sets = [("RCV1-like", rcv1_for(cfg), 1), ("RCV1 sample (real)", rcv1_sample(), 300)]
    rounds = cfg.repeats if cfg.quick else max(cfg.repeats, 5)
    sections = []
    for name, split, passes in sets:
        X, y = split.X_train, split.y_train
        T = X.shape[0] * (passes // (10 if cfg.quick and passes > 1 else 1))
        seconds = {p: [] for p in PS}
        for _ in range(rounds):
            for p in PS:
                seconds[p].append(peers.run_pgs(X, y, **peers.paper_run(
                    loss="logistic", p=p, k=1, sigma=SIGMA, T=T, iterate="last",
                    seed=1))[0])
        nnz = X.nnz * T / X.shape[0]
        base = np.array(seconds[2.0])
        rows = [[f"{p:g}", fmt(seconds[p], 3), f"{min(seconds[p]) / nnz * 1e9:.3g}",
                 fmt(np.array(seconds[p]) / base, 3)] for p in PS]
        table = markdown_table(["p", "seconds", "ns per non-zero (fastest round)",
                                "time / p = 2, same round"], rows)
        sections.append((f"{name}: {X.shape[0]:,} rows, T = {T:,}", table))
    intro = (f"Build: `{_build()}`. Logistic, k = 1, iterate='last', i.i.d. rows, "
             f"sigma = {SIGMA:g}; {rounds} rounds, every p once per round.")
    return write_report(f"variants_{_build()}", "Variants of the update, one build", sections,
                        cfg, intro)
