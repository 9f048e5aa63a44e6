"""Constrained SGD for least squares: the CSGD paper's Figures 2 and 3, and per-step cost.

Mu, Ding, Zhou, Tao, "Constrained Stochastic Gradient Descent for Large-scale Least
Squares Problem", KDD 2013.

1. Figure 2: l(w) - l(w*) against samples seen and against CPU seconds for SGD, ASGD
   (averaged SGD), NCSGD, CSGD and 2SGD (recursive least squares, O(d^2) a step,
   written here in NumPy) on the paper's two synthetic set-ups: n=10,000, d=100 and
   n=5,000, d=5,000 (uniform[0,1] inputs, standard Gaussian w*, noise variance 0.2).
   The first-order methods use the best eta0 of a grid (the paper tuned it with the
   Hessian's spectrum); CSGD is also run with eta0="auto" (no tuning).  Also: the
   loss scikit-learn's SGDRegressor (eta0/sqrt(t), best eta0 of a grid) reaches after
   N samples, and how many samples CSGD(auto) needs to reach it.
2. Figure 3: C-Adaline (CSGD per class, eta0="auto") against Adaline (plain SGD,
   constant step, best of a grid) - test error against samples and CPU seconds on
   scikit-learn's digits, a generated 10-class set and MNIST (if the idx files exist).
3. Per-step cost on the RCV1-like rows (bench/harness/data.py; 47,236 features, ~76
   non-zeros a row) with least-squares targets:
   the kernel's sgd / ncsgd / csgd steps and scikit-learn's SGDRegressor.

Times are process CPU seconds (time.process_time) of the training calls only; loss
evaluations at the checkpoints are not counted.  Run:

    python bench/micro/bench_csgd.py            # a few minutes
    python bench/micro/bench_csgd.py --quick    # under a minute
    python bench/run.py [--quick] --only csgd

Writes bench/results/csgd_fig2_*.png, csgd_fig3_*.png and bench/results/csgd.md
(with --quick: csgd_quick.md and *_quick.png).
"""

import argparse
import gzip
import struct
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import pgs
from pgs._csgd import CSGDSolver
from pgs.rules.data import as_csr_buffers
from pgs.training.csgd import auto_eta0

if __package__ in (None, ""):  # run as a script: the `bench` package is in the repo root
    sys.path.append(str(Path(__file__).resolve().parents[2]))
from bench.harness.common import RESULTS, Config, machine_info, pyplot  # noqa: E402
from bench.harness.data import generate_rcv1_like, shared_data_dir  # noqa: E402

plt = pyplot()
MNIST = shared_data_dir() / "mnist"
VARIANT_ID = {"csgd": 0, "ncsgd": 1, "sgd": 2}


# ------------------------------------------------------------------ data

def paper_setup(n, d, seed):
    """The paper's synthetic least squares: uniform[0,1] x, w* ~ N(0, I), noise var 0.2."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    w_star = rng.normal(size=d)
    y = X @ w_star + rng.normal(size=n) * np.sqrt(0.2)
    return X, y


def lstsq_loss(X, y):
    """l(w*) = min mean (y - <w, x> - b)^2 / 2 (the empirical optimum, with the bias)."""
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    sol = np.linalg.lstsq(A, y, rcond=None)[0]
    return 0.5 * float(np.mean((A @ sol - y) ** 2))


def log_checkpoints(T, per_decade=8, first=10):
    pts = np.unique(np.round(np.logspace(np.log10(first), np.log10(T),
                                         int(per_decade * np.log10(T / first)) + 1)))
    return [int(p) for p in pts]


# ------------------------------------------------------------------ runners

def run_kernel(Xb, Y, variant, eta0, checkpoints, *, average=False, switch=None,
               constant_step=False, permutation=False, seed=0, evaluate):
    """Run the compiled kernel to each checkpoint; return (samples, cpu_seconds, values).

    `evaluate(W)` maps the (n_features + 1, K) weights to the plotted value. A run that
    diverges stops its curve there.
    """
    m = Xb.shape[0]
    K = Y.shape[1]
    switch = m // 2 if switch is None else switch
    state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
    s = CSGDSolver(Xb.shape[1], K, VARIANT_ID[variant], eta0, switch, 1.0, average, state,
                   constant_step, permutation)
    yflat = np.ascontiguousarray(Y).reshape(-1)
    cpu, xs, ts, vs = 0.0, [], [], []
    for t in checkpoints:
        t0 = time.process_time()
        status = s.run(t, Xb.data, Xb.indices, Xb.indptr, yflat)
        cpu += time.process_time() - t0
        if status != 0:
            break
        W = s.average() if average else s.last()
        value = evaluate(W)
        if not np.isfinite(value):
            break
        xs.append(t)
        ts.append(cpu)
        vs.append(value)
    return np.array(xs), np.array(ts), np.array(vs)


def run_rls(X, y, checkpoints, *, evaluate, seed=0, budget=None, lam=1.0):
    """2SGD: recursive least squares (Sherman-Morrison), O(d^2) a step, with the bias.

    P_0 = I / lam (a ridge prior of weight lam, negligible after a few hundred rows).
    `budget` (CPU seconds) stops the run early: it is impractical for large d.
    """
    m, d = X.shape
    rng = np.random.default_rng(seed)
    A = np.hstack([X, np.ones((m, 1))])
    P = np.eye(d + 1) / lam
    w = np.zeros(d + 1)
    cpu, t, xs, ts, vs = 0.0, 0, [], [], []
    for c in checkpoints:
        t0 = time.process_time()
        rows = rng.integers(0, m, c - t)
        for i in rows:
            x = A[i]
            Px = P @ x
            k = Px / (1.0 + x @ Px)
            w += k * (y[i] - x @ w)
            P -= np.outer(k, Px)
        cpu += time.process_time() - t0
        t = c
        xs.append(t)
        ts.append(cpu)
        vs.append(evaluate(w[:, None]))
        if budget is not None and cpu > budget:
            break
    return np.array(xs), np.array(ts), np.array(vs)


def sklearn_sgd_curve(X, y, eta0, epochs, l_opt, seed=0):
    """SGDRegressor (squared error, no penalty, eta0/sqrt(t)) loss after each epoch."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDRegressor

    reg = SGDRegressor(penalty=None, learning_rate="invscaling", eta0=eta0, power_t=0.5,
                       max_iter=1, tol=None, shuffle=True, random_state=seed)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(epochs):
            reg.partial_fit(X, y)
            z = X @ reg.coef_ + reg.intercept_[0]
            loss = 0.5 * float(np.mean((y - z) ** 2)) - l_opt
            out.append(loss if np.isfinite(loss) else np.inf)
    return np.array(out)


# ------------------------------------------------------------------ Figure 2

def _at(xs, vs, mark, fmt):
    """The curve's value at the checkpoint nearest `mark` (within 25 %), formatted."""
    if len(xs) == 0:
        return "-"
    k = int(np.argmin(np.abs(np.log(xs / mark))))
    return fmt.format(vs[k]) if abs(xs[k] - mark) <= 0.25 * mark else "-"


def figure2(name, n, d, T, grid, rls_budget, seed, lines, suffix=""):
    X, y = paper_setup(n, d, seed)
    l_opt = lstsq_loss(X, y)
    Xb = as_csr_buffers(X)
    Y = y.reshape(-1, 1)
    A = np.hstack([X, np.ones((n, 1))])

    def excess(W):
        return 0.5 * float(np.mean((A @ W[:, 0] - y) ** 2)) - l_opt

    checkpoints = log_checkpoints(T)
    methods = {"SGD": ("sgd", False), "ASGD": ("sgd", True), "NCSGD": ("ncsgd", False),
               "CSGD": ("csgd", False)}
    curves, best_eta, grid_rows = {}, {}, []
    for label, (variant, average) in methods.items():
        finals = {}
        for eta0 in grid:
            xs, ts, vs = run_kernel(Xb, Y, variant, eta0, [T], average=average,
                                    seed=seed, evaluate=excess)
            finals[eta0] = vs[-1] if len(vs) else np.inf
        best = min(finals, key=finals.get)
        best_eta[label] = best
        grid_rows.append((label, finals))
        curves[label] = run_kernel(Xb, Y, variant, best, checkpoints, average=average,
                                   seed=seed, evaluate=excess)
    t0 = time.process_time()
    eta_auto, _ = auto_eta0(Xb, Y, variant_id=0, switch=n // 2, icpt=1.0, average=False,
                            seq=np.random.SeedSequence(seed))
    auto_cpu = time.process_time() - t0
    xs, ts, vs = run_kernel(Xb, Y, "csgd", eta_auto, checkpoints, seed=seed, evaluate=excess)
    curves["CSGD (auto)"] = (xs, ts + auto_cpu, vs)
    curves["2SGD"] = run_rls(X, y, checkpoints, evaluate=excess, seed=seed, budget=rls_budget)

    styles = {"SGD": "C0-", "ASGD": "C4-", "NCSGD": "C2-", "CSGD": "C3-",
              "CSGD (auto)": "C3--", "2SGD": "C1-"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, (xs, ts, vs) in curves.items():
        vs = np.maximum(vs, 1e-12)
        axes[0].loglog(xs, vs, styles[label], label=label)
        axes[1].loglog(np.maximum(ts, 1e-5), vs, styles[label], label=label)
    axes[0].set_xlabel("samples seen")
    axes[1].set_xlabel("CPU seconds (training only)")
    for ax in axes:
        ax.set_ylabel("l(w) - l(w*)")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"CSGD paper, Figure 2 analogue: {name} (n={n}, d={d})")
    fig.tight_layout()
    path = RESULTS / f"csgd_fig2_{name}{suffix}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)

    lines.append(f"\n### Figure 2, {name}: n={n}, d={d}, T={T} samples, l(w*)={l_opt:.5f}\n")
    lines.append(f"Plot: `{path.name}`. eta0: best final loss over the grid "
                 f"{', '.join(f'{g:g}' for g in grid)}; CSGD (auto) picked "
                 f"eta0={eta_auto:.4g} in {auto_cpu:.3f} CPU s (counted in its time axis).\n")
    marks = [m for m in (100, 1000, 10**4, 10**5, 10**6) if m <= T]
    lines.append("| method | eta0 | " + " | ".join(f"excess @ {m:.0e}" for m in marks)
                 + " | final excess | CPU s |")
    lines.append("|---" * (len(marks) + 4) + "|")
    for label, (xs, ts, vs) in curves.items():
        eta = best_eta.get(label, eta_auto if label == "CSGD (auto)" else float("nan"))
        cells = [_at(xs, vs, m, "{:.3g}") for m in marks]
        last = f"{vs[-1]:.3g} (@{xs[-1]})" if len(xs) else "-"
        cpu = f"{ts[-1]:.2f}" if len(ts) else "-"
        lines.append(f"| {label} | {eta:.4g} | " + " | ".join(cells) + f" | {last} | {cpu} |")
    lines.append("\nFinal excess loss per eta0 of the grid (inf = diverged):\n")
    lines.append("| method | " + " | ".join(f"{g:g}" for g in grid) + " |")
    lines.append("|---" * (len(grid) + 1) + "|")
    for label, finals in grid_rows:
        lines.append(f"| {label} | " + " | ".join(f"{finals[g]:.3g}" for g in grid) + " |")
    return X, y, l_opt, Xb, curves


def sklearn_target(X, y, l_opt, Xb, epochs, grid, seed, lines):
    """Samples CSGD(auto) needs to reach SGDRegressor's loss after N samples.

    SGDRegressor gets, at every N, the best loss over its eta0 grid (a different eta0 may
    win at different N). CSGD runs once with eta0="auto", with i.i.d. rows (the paper's
    set-up) and with a fresh row order each epoch (sampling="permutation", as
    SGDRegressor's shuffle=True).
    """
    n = X.shape[0]
    sk = np.array([sklearn_sgd_curve(X, y, eta0, epochs, l_opt, seed=seed) for eta0 in grid])
    best_k = np.argmin(sk, axis=0)
    curve = sk[best_k, np.arange(epochs)]
    A = np.hstack([X, np.ones((n, 1))])

    def excess(W):
        return 0.5 * float(np.mean((A @ W[:, 0] - y) ** 2)) - l_opt

    step = max(1, n // 100)
    cps = list(range(step, 3 * epochs * n + 1, step))
    runs = {}
    for sampling in ("iid", "permutation"):
        model = pgs.train_csgd(X, y, T=1, sampling=sampling, seed=seed)   # eta0_ as chosen
        runs[sampling] = (model.eta0_, run_kernel(
            Xb, y.reshape(-1, 1), "csgd", model.eta0_, cps, seed=seed, evaluate=excess,
            permutation=sampling == "permutation"))
    lines.append(f"\n### CSGD (auto) against scikit-learn's SGDRegressor (n={n}, "
                 f"d={X.shape[1]})\n")
    lines.append("SGDRegressor: squared error, no penalty, invscaling eta0/sqrt(t), shuffled "
                 "epochs (one partial_fit each); at every N the best loss over eta0 in "
                 f"{', '.join(f'{g:g}' for g in grid)}. CSGD: eta0='auto' (iid -> "
                 f"{runs['iid'][0]:.4g}, permutation -> {runs['permutation'][0]:.4g}), "
                 f"losses checked every {step} samples.\n")
    lines.append("| N (samples) | SGDRegressor best excess @ N (eta0) | CSGD iid: samples "
                 "to reach it | N / samples | CSGD permutation: samples | N / samples |")
    lines.append("|---|---|---|---|---|---|")
    ratios = {"iid": [], "permutation": []}
    for e in range(epochs):
        N = (e + 1) * n
        row = f"| {N} | {curve[e]:.4g} ({grid[best_k[e]]:g}) |"
        for sampling in ("iid", "permutation"):
            xs, _, vs = runs[sampling][1]
            hit = np.nonzero(vs <= curve[e])[0]
            if len(hit):
                need = int(xs[hit[0]])
                ratios[sampling].append(N / need)
                row += f" {need} | {N / need:.1f} |"
            else:
                ratios[sampling].append(0.0)
                row += f" > {xs[-1]} | < {N / xs[-1]:.2f} |"
        lines.append(row)
    return ratios


# ------------------------------------------------------------------ Figure 3

def load_mnist():
    def images(path):
        with gzip.open(path) as f:
            _, n, r, c = struct.unpack(">IIII", f.read(16))
            return np.frombuffer(f.read(), dtype=np.uint8).reshape(n, r * c) / 255.0

    def labels(path):
        with gzip.open(path) as f:
            struct.unpack(">II", f.read(8))
            return np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64)

    return (images(MNIST / "train-images-idx3-ubyte.gz"),
            labels(MNIST / "train-labels-idx1-ubyte.gz"),
            images(MNIST / "t10k-images-idx3-ubyte.gz"),
            labels(MNIST / "t10k-labels-idx1-ubyte.gz"))


def generated_10class(seed, n_train=20000, n_test=5000, d=50):
    """10 classes, non-centred features in about [0, 1]: class centres ~ U[0,1]^d + noise."""
    rng = np.random.default_rng(seed)
    centres = rng.random((10, d))
    y = rng.integers(0, 10, n_train + n_test)
    X = centres[y] + 0.35 * rng.normal(size=(n_train + n_test, d))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def figure3(name, Xtr, ytr, Xte, yte, T, adaline_grid, seed, lines, suffix=""):
    classes = np.unique(ytr)
    Y = (ytr[:, None] == classes[None, :]).astype(np.float64)
    Xb = as_csr_buffers(sp.csr_matrix(Xtr))
    Ate = np.hstack([Xte, np.ones((Xte.shape[0], 1))])

    def test_error(W):
        return float(np.mean(classes[np.argmax(Ate @ W, axis=1)] != yte))

    checkpoints = log_checkpoints(T, per_decade=6)
    finals = {}
    short = [min(T, 20 * Xtr.shape[0] // 10)]
    for eta in adaline_grid:
        _, _, vs = run_kernel(Xb, Y, "sgd", eta, short, constant_step=True, seed=seed,
                              evaluate=test_error)
        finals[eta] = vs[-1] if len(vs) else np.inf
    eta_ada = min(finals, key=finals.get)
    t0 = time.process_time()
    eta_c, _ = auto_eta0(Xb, Y, variant_id=0, switch=Xtr.shape[0] // 2, icpt=1.0,
                         average=False, seq=np.random.SeedSequence(seed))
    auto_cpu = time.process_time() - t0
    curves = {
        f"Adaline (eta={eta_ada:g})": run_kernel(Xb, Y, "sgd", eta_ada, checkpoints,
                                                 constant_step=True, seed=seed,
                                                 evaluate=test_error),
    }
    xs, ts, vs = run_kernel(Xb, Y, "csgd", eta_c, checkpoints, seed=seed,
                            evaluate=test_error)
    curves[f"C-Adaline (auto eta0={eta_c:.3g})"] = (xs, ts + auto_cpu, vs)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, (xs, ts, vs) in curves.items():
        axes[0].semilogx(xs, vs, label=label)
        axes[1].semilogx(np.maximum(ts, 1e-5), vs, label=label)
    axes[0].set_xlabel("samples seen")
    axes[1].set_xlabel("CPU seconds (training only)")
    for ax in axes:
        ax.set_ylabel("test error")
        ax.set_ylim(0, min(1.0, 1.5 * max(v[0] for _, _, v in curves.values())))
        ax.grid(True, alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"CSGD paper, Figure 3 analogue: {name}")
    fig.tight_layout()
    path = RESULTS / f"csgd_fig3_{name}{suffix}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)

    A = np.hstack([Xtr, np.ones((Xtr.shape[0], 1))])
    W = np.linalg.lstsq(A, Y, rcond=None)[0]
    err_lstsq = test_error(W)
    lines.append(f"\n### Figure 3, {name}: {Xtr.shape[0]} train / {Xte.shape[0]} test rows, "
                 f"{Xtr.shape[1]} features, {len(classes)} classes\n")
    lines.append(f"Plot: `{path.name}`. Adaline: constant step, best of "
                 f"{', '.join(f'{g:g}' for g in adaline_grid)} by test error after "
                 f"{short[0]} samples. Exact least-squares classifier (lstsq): test error "
                 f"{err_lstsq:.4f}.\n")
    lines.append("| method | test error @ 1e3 | @ 1e4 | @ 1e5 | final (samples) | CPU s | "
                 "samples to reach lstsq error + 0.01 |")
    lines.append("|---|---|---|---|---|---|---|")
    for label, (xs, ts, vs) in curves.items():
        cells = [_at(xs, vs, m, "{:.4f}") for m in (1000, 10**4, 10**5)]
        hit = np.nonzero(vs <= err_lstsq + 0.01)[0]
        reach = str(xs[hit[0]]) if len(hit) else "not reached"
        lines.append(f"| {label} | " + " | ".join(cells)
                     + f" | {vs[-1]:.4f} ({xs[-1]}) | {ts[-1]:.2f} | {reach} |")


# ------------------------------------------------------------------ per-step cost

def rcv1_like_regression(m, seed):
    """The RCV1-like rows (`bench.harness.data.generate_rcv1_like`) with least-squares
    targets: a hidden model on 2,000 random features plus noise of scale 0.1."""
    X = generate_rcv1_like(n_train=m, n_test=0, seed=seed).X_train
    rng = np.random.default_rng([seed, 11])
    w = np.zeros(X.shape[1])
    hot = rng.choice(X.shape[1], 2000, replace=False)
    w[hot] = rng.normal(size=2000)
    y = X @ w + 0.1 * rng.normal(size=m)
    return X, y


def step_cost(m, T, repeats, seed, lines):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDRegressor

    X, y = rcv1_like_regression(m, seed)
    Xb = as_csr_buffers(X)
    yk = np.ascontiguousarray(y)
    runs = {"pgs sgd": ("sgd", False), "pgs ncsgd": ("ncsgd", False),
            "pgs csgd": ("csgd", False), "pgs csgd, average": ("csgd", True)}
    times = {k: [] for k in list(runs) + ["sklearn SGDRegressor"]}
    state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
    for _ in range(repeats):
        for label, (variant, average) in runs.items():
            s = CSGDSolver(X.shape[1], 1, VARIANT_ID[variant], 0.5, m // 2, 1.0, average,
                           state)
            t0 = time.process_time()
            s.run(T, Xb.data, Xb.indices, Xb.indptr, yk)
            times[label].append((time.process_time() - t0) / T * 1e9)
        epochs = max(1, T // m)
        reg = SGDRegressor(penalty=None, learning_rate="invscaling", eta0=0.5, power_t=0.5,
                           max_iter=epochs, tol=None, shuffle=True, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.process_time()
            reg.fit(X, y)
            times["sklearn SGDRegressor"].append(
                (time.process_time() - t0) / (epochs * m) * 1e9)
    med = {k: float(np.median(v)) for k, v in times.items()}
    lines.append(f"\n### Per-step cost on a sparse RCV1-like matrix ({m} x {X.shape[1]}, "
                 f"{X.nnz / m:.1f} non-zeros a row, float64, int32 indices)\n")
    lines.append(f"{T} steps per run, {repeats} interleaved repeats, median (min - max) "
                 f"CPU ns per sample. pgs draws rows i.i.d.; SGDRegressor shuffles epochs "
                 f"({max(1, T // m)} epochs, its time includes its input checks).\n")
    lines.append("| method | ns / sample | min - max | vs pgs sgd | vs sklearn |")
    lines.append("|---|---|---|---|---|")
    for k, v in times.items():
        lines.append(f"| {k} | {med[k]:.0f} | {min(v):.0f} - {max(v):.0f} | "
                     f"{med[k] / med['pgs sgd']:.2f} | "
                     f"{med[k] / med['sklearn SGDRegressor']:.2f} |")
    return med


# ------------------------------------------------------------------ main

def progress(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(argv=None):
    """Parse the command line (`argv`, default sys.argv) and run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return run(Config(quick=args.quick), seed=args.seed)


def run(cfg, seed=0):
    """Run every part, write results/csgd.md (csgd_quick.md if cfg.quick); its path."""
    np.seterr(over="ignore", invalid="ignore")    # diverging grid points are expected
    RESULTS.mkdir(parents=True, exist_ok=True)
    q = cfg.quick
    suffix = "_quick" if q else ""
    lines = [
        "# CSGD benchmark (bench/micro/bench_csgd.py" + (" --quick" if q else "") + ")\n",
        machine_info() + " Times here are CPU seconds of this process.\n",
    ]
    t_start = time.time()

    grid1 = [2.0**k for k in range(-7, 3)]
    progress("Figure 2, set-up 1")
    X1, y1, l1, Xb1, _ = figure2("setup1", 10000 if not q else 4000, 100 if not q else 50,
                                  10**6 if not q else 10**5, grid1,
                                  rls_budget=15.0 if not q else 3.0, seed=seed, lines=lines,
                                  suffix=suffix)
    progress("SGDRegressor target")
    ratios = sklearn_target(X1, y1, l1, Xb1, epochs=10,
                            grid=[2.0**k for k in range(-8, 1)], seed=seed, lines=lines)
    progress("Figure 2, set-up 2")
    grid2 = [2.0**k for k in range(-10, 1, 2)]
    figure2("setup2", 5000 if not q else 1000, 5000 if not q else 1000,
            10**5 if not q else 2 * 10**4, grid2,
            rls_budget=10.0 if not q else 2.0, seed=seed, lines=lines, suffix=suffix)

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    progress("Figure 3")
    Xd, yd = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(Xd / 16.0, yd, test_size=0.3, random_state=0,
                                          stratify=yd)
    ada_grid = [2.0**k for k in range(-12, 0, 2)]
    figure3("digits", Xtr, ytr, Xte, yte, 2 * 10**5 if not q else 3 * 10**4, ada_grid,
            seed, lines, suffix)
    g = generated_10class(seed, n_train=20000 if not q else 5000)
    figure3("generated10", *g, 3 * 10**5 if not q else 3 * 10**4, ada_grid, seed, lines,
            suffix)
    if MNIST.exists() and not q:
        Xm, ym, Xmt, ymt = load_mnist()
        figure3("mnist", Xm, ym, Xmt, ymt, 10**6, [2.0**k for k in range(-14, -2, 2)],
                seed, lines, suffix)

    progress("per-step cost")
    med = step_cost(100000 if not q else 20000, 500000 if not q else 100000,
                    5 if not q else 2, seed, lines)

    lines.insert(2, "\n## Summary\n")
    summary = [
        "- CSGD(auto) vs SGDRegressor (best eta0 of a grid at every N) on set-up 1, "
        "N = 1..10 epochs: samples ratio N / (CSGD's samples to reach SGDRegressor's loss "
        "at N), target >= 8: iid rows "
        + ", ".join(f"{r:.1f}" for r in ratios["iid"]) + "; permutation rows "
        + ", ".join(f"{r:.1f}" for r in ratios["permutation"])
        + " (0.0: not reached within 3 x 10 epochs).",
        f"- Per-step cost, sparse RCV1-like: csgd / sgd = "
        f"{med['pgs csgd'] / med['pgs sgd']:.2f}, csgd / SGDRegressor = "
        f"{med['pgs csgd'] / med['sklearn SGDRegressor']:.2f} (target: within 1.5x).",
        f"- Wall time of this script: {time.time() - t_start:.0f} s.",
    ]
    for k, s in enumerate(summary):
        lines.insert(3 + k, s)
    path = RESULTS / f"csgd{suffix}.md"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return path


if __name__ == "__main__":
    main()
