"""Parallel PGS beyond this machine, by simulation: W workers run round by round in one
process (the same rounds, merges and numbers as the threads and Dask engines).

With pgs.train's defaults (schedule "asgd", weighted average iterate, free intercept,
permutation sampling) on the hard RCV1-like set, for W in {1, 2, 4, ..., 64}, rounds of
W * tau iterations (a fraction of a pass) and two merges (the workers' mean, i.e. model
averaging, and the default merge step `pgs.engine.rounds.merge_step_for`): the passes to
come within 0.5 and 0.2 points of one worker's best test accuracy, and what they make of
W workers' time if every worker ran at one worker's speed (W p_1 / p_W: the merge pays
where it exceeds 1), with the bytes a round sends (the state out to every worker, the
deltas back, dense; and the deltas' non-zeros, for sparse deltas). W = 1 is plain PGS.
Also the paper's schedule with the unscaled ("delayed-gradient") start of the workers,
`extrapolate=False`, against its scaled start.

Usage::

    python bench/experiments/exp_parallel_sim.py [--quick]
    python bench/run.py [--quick] --only parallel_sim

Writes bench/results/parallel_sim.md and parallel_sim.png (``_quick`` with --quick: a
20,000-row subsample).
"""

import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
from bench.experiments.exp_parallel_start import curve, passes_to  # noqa: E402
from bench.harness.common import (  # noqa: E402
    Config,
    accuracy,
    figure_path,
    markdown_table,
    pyplot,
    without_load,
    write_report,
)
from bench.harness.data import rcv1_hard, rcv1_like  # noqa: E402
from bench.harness.peers import paper_run  # noqa: E402
from pgs.engine import rounds as P  # noqa: E402
from pgs.training.fit import finish, prepare  # noqa: E402

TOLERANCES = (0.5, 0.2)     # points below one worker's best test accuracy
WORKERS = (1, 2, 4, 8, 16, 32, 64)
#: Iterations per round, W * tau, as fractions of a pass over the m rows.
ROUND_FRACTIONS = ("1/16", "1/4", "1")
#: The merges compared: the workers' mean (model averaging) and the default step.
MERGES = (("mean", 1.0), ("default", None))
PASSES = 8


def simulate(X, y, W, round_iters, *, extrapolate=True, **kwargs):
    """One run of W simulated workers, rounds of `round_iters`: (model, bytes dense per
    round, mean non-zeros of a delta, rounds)."""
    run = prepare(X, y, **kwargs)
    Xb, m = run.Xb, run.Xb.shape[0]
    bounds = P.partition_rows(m, W)
    params, state = P.setup(run, [hi - lo for lo, hi in bounds], extrapolate=extrapolate)
    tau = max(1, round_iters // W)
    shards = [(Xb.data, Xb.indices, Xb.indptr[lo:hi + 1], run.y_kernel[lo:hi])
              for lo, hi in bounds]
    log = dict(rounds=0, nnz=0, deltas=0)

    def map_fn(tasks):
        return [P.run_shard(task, params, *shards[task["worker"]]) for task in tasks]

    def on_round(st, deltas):
        log["rounds"] += 1
        if W > 1:
            log["nnz"] += sum(int(np.count_nonzero(d["dlam"])) for d in deltas)
            log["deltas"] += len(deltas)
        return True

    state = P.run_rounds(state, params, map_fn, run.t_total, tau, on_round=on_round)
    run.solver.set_state(P.final_solver_state(state))
    model = finish(run, False, False)
    n_cols = run.n_features + 1
    # out: lam (n doubles) to each worker; back: dlam, and the iterates' sum for "average"
    back = 2 if params["average"] else 1
    dense = 0 if W == 1 else W * 8 * n_cols * (1 + back)
    nnz = log["nnz"] / log["deltas"] if log["deltas"] else 0.0
    return model, dense, nnz, log["rounds"]


def _hard_configs(m):
    """(name, loss, sigma) on `m` rows of rcv1_hard: bench/results/passes.md's best sigma
    at 200k rows, scaled as 1 / m."""
    return [(f"logistic sigma={3e-7 * 200_000 / m:.2g}", "logistic", 3e-7 * 200_000 / m),
            (f"hinge sigma={5e-7 * 200_000 / m:.2g}", "hinge", 5e-7 * 200_000 / m)]


def _paper_config():
    # The paper's set-up (steps 1/(sigma (t + t0)), i.i.d. rows, an intercept column of 1)
    base = paper_run(T=None, k=1, iterate="average", t_offset="auto", sampling="iid")
    return "hinge p=2 sigma=1e-5 (paper's schedule)", dict(base, loss="hinge", p=2.0,
                                                           sigma=1e-5)


def _after(c, passes):
    return next((a for p, a in c if p >= passes - 1e-9), np.nan)


def run(cfg):
    """The simulation's tables and plot (see the module docstring)."""
    m = 20_000 if cfg.quick else 100_000
    passes = 4 if cfg.quick else PASSES
    split = rcv1_hard(m)
    n_cols = split.X_train.shape[1] + 1
    sections, speedups, lines = [], {}, []
    for name, loss, sigma in _hard_configs(m):
        base = curve(split, loss, sigma, passes, 0, W=1)
        best = max(a for _, a in base)
        p1 = {tol: passes_to(base, best - tol) for tol in TOLERANCES}
        rows = [[1, "-", "-", "-", f"{_after(base, 2):.2f}", f"{_after(base, passes):.2f}"]
                + [f"{p1[tol]:g}" for tol in TOLERANCES] + ["1", "-", "-"]]
        pays = {}
        for W in WORKERS[1:]:
            for frac in ROUND_FRACTIONS:
                for merge, gamma in MERGES:
                    log = {}
                    c = curve(split, loss, sigma, passes, 0, W=W, gamma=gamma, round=frac,
                              log=log)
                    pw = {tol: passes_to(c, best - tol) for tol in TOLERANCES}
                    speed = W * p1[TOLERANCES[0]] / pw[TOLERANCES[0]]
                    speedups.setdefault((name, frac, merge), []).append((W, speed))
                    if speed > 1:
                        pays.setdefault(merge, []).append((W, frac, speed))
                    g = P.merge_step_for(W) if gamma is None else gamma
                    # out: lam (n doubles) to each worker; back: dlam and the iterates' sum
                    dense = W * 8 * n_cols * 3
                    nnz = log["nnz"] / log["deltas"] if log.get("deltas") else 0.0
                    rows.append([W, frac, f"{merge} ({g:.3g})", log.get("rounds", 0),
                                 f"{_after(c, 2):.2f}", f"{_after(c, passes):.2f}"]
                                + ["n/a" if np.isnan(pw[t]) else f"{pw[t]:.3g}"
                                   for t in TOLERANCES]
                                + ["n/a" if np.isnan(speed) else f"{speed:.2f}",
                                   f"{dense / 1e6:.2f}", f"{nnz / n_cols:.2f}"])
                    print(name, rows[-1], flush=True)
        sections.append((f"{name}: rcv1_hard, {m:,} rows, {passes} passes", markdown_table(
            ["W", "W tau / m", "merge (step)", "rounds", "test acc % after 2 passes",
             f"after {passes}"]
            + [f"passes to best - {t}" for t in TOLERANCES]
            + [f"W p_1 / p_W (to best - {TOLERANCES[0]})", "MB per round (dense)",
               "delta non-zeros / n"], rows)))
        for merge, _ in MERGES:
            got = pays.get(merge, [])
            lines.append(
                f"- {name}, {merge} merge: one worker's best {best:.2f}%; W p_1 / p_W > 1 "
                f"(the merge pays at equal speed per worker) for "
                + (", ".join(f"W={W} rounds {f} ({s:.2f})" for W, f, s in got)
                   if got else "no W and round length tested"))
    sections.insert(0, ("Summary", "\n".join(lines)))
    sections.append(_unscaled(cfg))
    _plot(speedups, cfg)
    intro = (
        "Simulated workers (one process, the engines' own round and merge code: "
        "`bench.exp_parallel_start.curve`). Rows 0 .. m-1 of rcv1_hard split into W "
        "contiguous shards; pgs.train's defaults at a fixed sigma, seed 0; test accuracy "
        "observed at the first round end at or after each quarter pass. Passes to a "
        "target: the first such observation within 0.5 (or 0.2) points of the best that "
        "W = 1 reached; n/a: never. `MB per round` counts lam out to every worker and "
        "dlam plus the iterates' sum back, dense float64; `delta non-zeros / n` is the "
        "mean fraction of coordinates a worker's delta touches (sparse deltas pay below "
        "about 0.67: 12 bytes per non-zero against 8 per coordinate).")
    return without_load(write_report("parallel_sim", "Parallel PGS by simulation", sections,
                                      cfg, intro=intro))


def _unscaled(cfg):
    """The paper's schedule: workers started unscaled (the delayed-gradient form) against
    the scaled start, at a fixed number of samples on the RCV1-like set."""
    m = 20_000 if cfg.quick else 100_000
    split = rcv1_like(m)
    X, y, X_test, y_test = split.X_train, split.y_train, split.X_test, split.y_test
    name, kw = _paper_config()
    kw = dict(kw, T=3 * m, seed=0)
    rows = []
    for W in (2, 8, 32):
        for frac in (1 / 64, 1 / 4):
            round_iters = max(W, int(frac * m))
            for extrapolate in (True, False):
                model, _, _, _ = simulate(X, y, W, round_iters, extrapolate=extrapolate, **kw)
                rows.append([W, f"{frac:g}", "scaled (default)" if extrapolate else "unscaled",
                             f"{100 * accuracy(y_test, model.decision_function(X_test)):.2f}",
                             f"{model.objective(X, y):.5f}"])
                print(rows[-1], flush=True)
    return (f"Workers started unscaled (the delayed-gradient form): {name}, rcv1_like, "
            f"{m:,} rows, 3 passes",
            markdown_table(["W", "W tau / m", "worker start", "test acc %", "objective"],
                           rows))


def _plot(speedups, cfg):
    """W p_1 / p_W against W, one line per round length and merge, one panel per loss."""
    plt = pyplot()
    names = sorted({name for name, _, _ in speedups})
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.8), squeeze=False)
    for col, name in enumerate(names):
        ax = axes[0, col]
        for (n, frac, merge), pts in sorted(speedups.items()):
            if n != name:
                continue
            ax.plot([w for w, _ in pts], [0.0 if np.isnan(s) else s for _, s in pts],
                    marker="o",
                    ls="-" if merge == "default" else "--",
                    label=f"W tau = {frac} m, {merge}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers W")
        ax.set_ylabel(f"W p_1 / p_W (to best - {TOLERANCES[0]}; 0: never)")
        ax.set_title(name, fontsize=8)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(figure_path("parallel_sim", cfg))
    plt.close(fig)


if __name__ == "__main__":
    run(Config(quick="--quick" in sys.argv[1:]))
