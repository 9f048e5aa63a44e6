"""Does merging pay at the start of a run? Passes to accuracy of W = 2 workers against
one, with pgs.train's defaults (schedule "asgd", weighted average iterate, free
intercept, permutation sampling), for the merges and plans that keep results a function
of (seed, W, merge_every):

- the merge step gamma: x <- x0 + gamma * sum_w rho_w (x_w - x0) for the dual point and
  the free bias (1: the workers' mean, model averaging; the default
  `pgs.engine.rounds.merge_step_for`: min(sqrt W, 3/2); W: the sum of the workers'
  changes; "cos": 1 + (W - 1) times the mean pairwise cosine of the changes, capped);
- on top of the mean: worker 0 alone (on its shard) for the first fraction f of the
  first pass, then all W ("solo"); rounds that grow, the first 1/2^j of the default,
  doubling up to it ("grow"); rounds of another length than the default quarter pass.

The workers are simulated in one process with the engines' own round code
(`pgs.engine.rounds`: plan_round, run_shard, merge), so the figures are deterministic
and the machine's load does not enter them. Separately, the throughput of the threads
engine (`pgs.train(n_jobs=2)` against one thread, 2 passes, median of repeats, with the
load average).

Usage::

    python bench/experiments/exp_parallel_start.py [--quick] [--only NAME ...] [--no-throughput]
                                       [--seeds N] [--variants LABEL ...] [--steps]

Writes bench/results/parallel_start.md (parallel_start_quick.md with --quick); with
--steps, the merge step at W = 4, 8, 16 to parallel_start_steps.md.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
import pgs  # noqa: E402
from bench.harness.common import Config, fmt, markdown_table, write_report  # noqa: E402
from bench.harness.data import dense_hard, mnist_parity, rcv1_hard  # noqa: E402
from pgs.engine import rounds as P  # noqa: E402
from pgs.training.fit import finish, prepare  # noqa: E402

TOLERANCE = 0.2
MEAN = "W={W} mean (model averaging)"
#: A second, looser target (best minus this): the first target is fragile where the curve
#: is flat near its best (a 0.05-point wobble moves the first hit by passes).
LOOSE = 0.5


def _sets(quick):
    """(name, loader, loss, sigma, passes observed): sigma from bench/results/passes.md."""
    r = 50_000 if quick else 200_000
    return [
        (f"rcv1-hard[:{r // 1000}k] logistic", lambda: rcv1_hard(r), "logistic",
         3e-7 * 200_000 / r, 8),
        (f"rcv1-hard[:{r // 1000}k] hinge", lambda: rcv1_hard(r), "hinge",
         5e-7 * 200_000 / r, 8),
        ("dense-hard(100000) logistic", lambda: dense_hard(100_000), "logistic", 1e-9, 10),
        ("mnist-parity logistic", mnist_parity, "logistic", 1e-7, 5),
    ]


def variants(W, keep=None):
    """(label, curve options) of the runs measured at W workers: one worker, the
    workers' mean (model averaging: the merge before the merge step), the default merge
    step, then the alternatives (those whose label contains one of `keep`)."""
    refs = [("W=1", dict(W=1)), (MEAN.format(W=W), dict(W=W, gamma=1.0)),
            (f"W={W} default: gamma=min(sqrt W, 3/2)", dict(W=W))]
    out = [(f"W={W} gamma={label}", dict(W=W, gamma=g)) for label, g in (
        ("2W/(W+1)", 2.0 * W / (W + 1)), ("1.5", 1.5), ("1.75", 1.75), ("W", float(W)),
        ("1+(W-1)cos, at most 1.9", "cos1.9"), ("1+(W-1)cos, at most 1.5", "cos1.5"))]
    out += [(f"W={W} mean, solo f={f}", dict(W=W, gamma=1.0, solo=f))
            for f in ("1/8", "1/4", "1/2")]
    out += [(f"W={W} mean, grow from 1/{2 ** j}", dict(W=W, gamma=1.0, grow=j))
            for j in (2, 4)]
    out += [(f"W={W} mean, round {r} pass", dict(W=W, gamma=1.0, round=r))
            for r in ("1/16", "1/8", "1/2")]
    if keep:
        out = [o for o in out if any(k in o[0] for k in keep)]
    return refs + out


def _frac(s):
    num, _, den = str(s).partition("/")
    return float(num) / float(den or 1)


def curve(split, loss, sigma, passes, seed, W=1, gamma=None, solo=0.0, grow=0,
          round="1/4", log=None):
    """[(passes done, test accuracy %)] of one simulated run, observed at the first round
    end at or after each quarter pass. `gamma`: the merge step (None: the engine's
    default; a number: `make_params`' merge_step; "cosC": 1 + (W - 1) times the
    workers' changes' mean pairwise cosine, at most C). `log` (a dict) receives the
    rounds and the non-zeros of the deltas."""
    X, y = split.X_train, split.y_train
    m = X.shape[0]
    run = prepare(X, y, loss=loss, sigma=sigma, T=int(passes * m), seed=seed)
    bounds = P.partition_rows(m, W)
    sizes = [hi - lo for lo, hi in bounds]
    params, state = P.setup(run, sizes, merge_step=1.0 if isinstance(gamma, str) else gamma)
    shards = [(run.Xb.data, run.Xb.indices, run.Xb.indptr[lo:hi + 1], run.y_kernel[lo:hi])
              for lo, hi in bounds]
    full = max(W, int(_frac(round) * m))          # the round's iterations, W tau
    solo_end = int(_frac(solo) * m)
    out, next_obs, r = [], m // 4, 0
    while int(state["kernel"]["t"]) < run.t_total:
        t0 = int(state["kernel"]["t"])
        R = full if not grow else min(full, max(W, (full >> grow) << r))
        tasks = P.plan_round(state, run.t_total, -(-R // W))
        if W > 1 and t0 < solo_end:
            # worker 0 alone: the whole round is its share (rho = 1)
            R = min(R, solo_end - t0, run.t_total - t0)
            for task in tasks:
                task.update(steps=R if task["worker"] == 0 else 0, round_steps=R)
        deltas = []
        for task in tasks:
            if task["steps"] or W == 1:
                deltas.append(P.run_shard(task, params, *shards[task["worker"]]))
            else:
                deltas.append(dict(worker=task["worker"], steps=0, status=0, stopped=False,
                                   t=0, loss_sum=0.0, sampler=task["sampler"],
                                   dlam=0.0, db=0.0, b_sum=0.0, rho_sum=0.0, b_pick=0.0,
                                   avg_sum=0.0, w_pick=None))
        active = sum(1 for d in deltas if d["steps"])
        if log is not None and W > 1:
            log["rounds"] = log.get("rounds", 0) + 1
            log["nnz"] = log.get("nnz", 0) + sum(int(np.count_nonzero(d["dlam"]))
                                                 for d in deltas if d["steps"])
            log["deltas"] = log.get("deltas", 0) + active
        if W > 1 and active > 1 and isinstance(gamma, str):
            # "cos": from the mean pairwise cosine of the workers' changes
            ds = [d["dlam"] for d in deltas]
            c = float(np.mean([ds[i] @ ds[j] / (np.linalg.norm(ds[i]) * np.linalg.norm(ds[j])
                                                + 1e-300)
                               for i in range(W) for j in range(i + 1, W)]))
            g = min(1.0 + (W - 1) * max(c, 0.0), float(gamma[3:]))
            deltas = [dict(d, dlam=g * d["dlam"], db=g * d["db"]) for d in deltas]
        state = P.merge(state, deltas, params)
        r += 1
        t = int(state["kernel"]["t"])
        if t >= next_obs or t >= run.t_total:
            out.append((t / m, _accuracy(run, state, split)))
            while next_obs <= t:
                next_obs += m // 4
    return out


def _accuracy(run, state, split):
    """Test accuracy (%) of the model of a common state (the state is not touched)."""
    kernel = {k: (v.copy() if isinstance(v, np.ndarray) else v)
              for k, v in P.final_solver_state(state).items() if k != "workers"}
    run.solver.set_state(kernel)
    model = finish(run, False, True)
    return 100.0 * float(np.mean(model.predict(split.X_test) == split.y_test))


def passes_to(c, target):
    return next((p for p, a in c if a >= target - 1e-9), np.nan)


def _after_whole_passes(c):
    """The accuracies observed first at or after 1, 2, ... passes."""
    out, k = [], 1
    for p, a in c:
        if p >= k - 1e-9:
            out.append(a)
            k = int(np.floor(p + 1e-9)) + 1
    return out


def _cell(values):
    return " / ".join("n/a" if np.isnan(x) else f"{x:.3g}" for x in values)


def throughput(split, loss, sigma, repeats):
    """Samples per second of pgs.train(n_jobs=W), W = 1, 2, for 2 passes, the ratios
    W = 2 / W = 1 of the rates and of the process's CPU seconds (both threads), and the
    load average before and after."""
    X, y = split.X_train, split.y_train
    rates, cpu, load = {1: [], 2: []}, {1: [], 2: []}, [os.getloadavg()[0]]
    for _ in range(repeats):
        for W in (1, 2):
            t0, c0 = time.perf_counter(), time.process_time()
            pgs.train(X, y, loss=loss, sigma=sigma, T=2 * X.shape[0], n_jobs=W, seed=0)
            rates[W].append(2 * X.shape[0] / (time.perf_counter() - t0))
            cpu[W].append(time.process_time() - c0)
    ratio = [b / a for a, b in zip(rates[1], rates[2], strict=True)]
    cpu_ratio = [b / a for a, b in zip(cpu[1], cpu[2], strict=True)]
    return rates, ratio, cpu_ratio, load + [os.getloadavg()[0]]


def run(cfg, only=None, do_throughput=True, W=2, seeds=(0, 1), keep=None):
    sections, summary = [], []
    for name, load, loss, sigma, passes in _sets(cfg.quick):
        if only and not any(o in name for o in only):
            continue
        split = load()
        curves = {}
        for label, opts in variants(W, keep):
            curves[label] = [curve(split, loss, sigma, passes, s, **opts) for s in seeds]
            print(f"{name} {label}: " + " | ".join(
                " ".join(f"{a:.2f}" for _, a in c) for c in curves[label]), flush=True)
        mean = MEAN.format(W=W)
        best = [max(a for lab in ("W=1", mean) for _, a in curves[lab][i])
                for i in range(len(seeds))]
        rows = []
        ref = {}
        for label, _ in variants(W, keep):
            cells = []
            for tol in (TOLERANCE, LOOSE):
                p = np.array([passes_to(c, b - tol) for c, b in zip(curves[label], best,
                                                                    strict=True)])
                ref.setdefault(("W=1", tol), p)
                if label == mean:
                    ref[("mean", tol)] = p
                cells += [_cell(p), f"{np.mean(p):.3g}", fmt(p / ref[("W=1", tol)], 3),
                          fmt(p / ref[("mean", tol)], 3) if ("mean", tol) in ref else ""]
            rows.append([label, " ".join(f"{a:.2f}" for a in
                                         _after_whole_passes(curves[label][0]))] + cells)
        head = []
        for tol in (TOLERANCE, LOOSE):
            head += [f"passes to best - {tol} (seeds {', '.join(map(str, seeds))})",
                     "mean", "/ W=1 (median)", f"/ W={W} mean (median)"]
        sections.append((f"{name}, sigma={sigma:g}", markdown_table(
            ["run", "test acc % after 1, 2, ... passes (seed 0)"] + head, rows)))
        summary.append(f"- {name}: best of W=1 and the W={W} mean over {passes} passes "
                       + ", ".join(f"{b:.2f}%" for b in best))
        if do_throughput:
            rates, ratio, cpu, load = throughput(split, loss, sigma, cfg.repeats)
            summary.append(f"  - throughput W=2 / W=1 (pgs.train, 2 passes, {cfg.repeats} "
                           f"runs each): {fmt(ratio, 3)}; W=1 {fmt(rates[1], 3, 1e-6)} M "
                           f"samples/s; CPU seconds W=2 / W=1 {fmt(cpu, 3)}; 1-minute "
                           f"load average {load[0]:.1f} before, {load[1]:.1f} after "
                           f"(2 cores: a throughput ratio means something only on two "
                           f"idle cores)")
        print("\n".join(summary[-2:]), flush=True)
    intro = (
        f"Simulated workers (one process, `pgs.engine.rounds`' own plan, shard run and "
        f"merge: the numbers the threads engine gives); pgs.train's defaults at a fixed "
        f"sigma; W = {W} contiguous shards. Passes to a target: the first round end, "
        f"observed at or after each quarter pass, whose test accuracy is within "
        f"{TOLERANCE} (or {LOOSE}) points of the best that W = 1 or the mean (model "
        f"averaging) W = {W} reached on that seed in the passes observed; n/a: never "
        f"(the mean of passes then counts nan). The time "
        f"ratio of W = {W} to one worker is about (passes ratio) / (throughput ratio).")
    write_report("parallel_start", "Parallel PGS at the start of a run: passes to accuracy",
                 [("Targets and throughput", "\n".join(summary))] + sections, cfg,
                 intro=intro)


def run_steps(cfg, seed=0):
    """The merge step at W = 4, 8, 16 (seed 0): accuracy after each pass for gamma in
    {1, 1.5, 1.9, sqrt W}; writes parallel_start_steps.md."""
    sections = []
    for name, load, loss, sigma, _ in _sets(cfg.quick):
        if not name.startswith(("rcv1-hard", "dense")) or "hinge" in name:
            continue
        split = load()
        passes = 6 if name.startswith("rcv1") else 8
        rows = [["1", "-", " ".join(f"{a:.2f}" for a in _after_whole_passes(
            curve(split, loss, sigma, passes, seed, W=1)))]]
        for W in (4, 8, 16):
            for gamma in (1.0, 1.5, 1.9, float(np.sqrt(W))):
                c = curve(split, loss, sigma, passes, seed, W=W, gamma=gamma)
                rows.append([W, f"{gamma:.3g}",
                             " ".join(f"{a:.2f}" for a in _after_whole_passes(c))])
                print(name, rows[-1], flush=True)
        sections.append((f"{name}, sigma={sigma:g}", markdown_table(
            ["W", "merge step gamma", f"test acc % after 1 .. {passes} passes"], rows)))
    intro = ("Simulated workers as in parallel_start.md; seed 0; the merge moves the "
             "common point by gamma times the workers' mean change. In a direction where "
             "every worker converges within the round the merge multiplies the error by "
             "1 - gamma each round: gamma >= 2 cannot converge there.")
    write_report("parallel_start_steps", "The merge step at W = 4, 8, 16", sections, cfg,
                 intro=intro)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--variants", nargs="*", help="labels' substrings to keep")
    parser.add_argument("--steps", action="store_true",
                        help="only the merge step at W = 4, 8, 16 (parallel_start_steps.md)")
    args = parser.parse_args(argv)
    if args.steps:
        run_steps(Config(quick=args.quick))
        return
    run(Config(quick=args.quick), only=args.only, do_throughput=not args.no_throughput,
        seeds=tuple(range(args.seeds)), keep=args.variants)


if __name__ == "__main__":
    main()
