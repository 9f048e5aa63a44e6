"""Fit time and test accuracy: pgs.PGSClassifier vs scikit-learn's SGDClassifier.

A 10-class problem shaped like RCV1 (sparse CSR, L2-normalised tf-idf-like rows, ~76
non-zeros per row out of 20,000 power-law-distributed features), generated here with
vectorised NumPy. Both estimators get the same loss, alpha = sigma, the same number of
epochs (PGS: T = epochs * m / k iterations, k = 1; SGD: max_iter = epochs, tol=None) and
n_jobs=2 one-vs-rest threads. Each fit is timed `--repeats` times; the median is reported.

Usage::

    python bench/bench_estimators.py [--rows 50000] [--features 20000] [--repeats 3]

Prints a Markdown table and writes it to bench/results/estimators.md.
"""

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

import pgs


def make_rcv1_like(n_rows, n_features, nnz_per_row, n_classes, topical=0.1, seed=0):
    """A sparse multiclass problem with RCV1's shape statistics, generated vectorised.

    A topic model: every row draws its terms from a power-law background vocabulary
    (a few frequent terms, a long tail), except a fraction `topical` of them drawn
    from its class's own 300-term topic (itself power-law weighted; topics overlap).
    Row lengths are Poisson around `nnz_per_row`; values are log-tf times idf; rows
    are L2 normalised, as in RCV1. Class sizes are unequal.
    """
    rng = np.random.default_rng(seed)
    priors = rng.dirichlet(np.full(n_classes, 3.0))
    y = rng.choice(n_classes, size=n_rows, p=priors)
    # Repeated draws of popular terms merge (about 12% of them), so draw 14% more.
    lengths = np.clip(rng.poisson(1.14 * nnz_per_row, size=n_rows), 5, None)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(indptr[-1])
    row_of = np.repeat(np.arange(n_rows), lengths)

    background = 1.0 / np.arange(1, n_features + 1) ** 0.9
    cols = rng.choice(n_features, size=nnz, p=background / background.sum())
    topic_size = 300
    topics = np.stack([rng.choice(min(n_features, 10 * topic_size), size=topic_size,
                                  replace=False) for _ in range(n_classes)])
    in_topic = 1.0 / np.arange(1, topic_size + 1) ** 0.7
    from_topic = rng.random(nnz) < topical
    picks = rng.choice(topic_size, size=int(from_topic.sum()), p=in_topic / in_topic.sum())
    cols[from_topic] = topics[y[row_of[from_topic]], picks]

    tf = 1.0 + np.log1p(rng.geometric(0.6, size=nnz).astype(np.float64))
    X = sp.csr_matrix((tf, cols.astype(np.int32), indptr), shape=(n_rows, n_features))
    X.sum_duplicates()  # repeated terms in a row add up, as counts do
    df = np.bincount(X.indices, minlength=n_features)
    idf = np.log((1.0 + n_rows) / (1.0 + df)) + 1.0
    X.data *= idf[X.indices]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = (sp.diags(1.0 / norms) @ X).tocsr()
    return X, y


def timed_fit(make_estimator, X, y, Xte, yte, repeats):
    """Median wall time, median CPU time (all threads) and median accuracy of `repeats` fits.

    CPU time is reported too because on a shared, oversubscribed machine the wall time
    mostly measures how much of a core the process was given.
    """
    walls, cpus, accs = [], [], []
    for _ in range(repeats):
        est = make_estimator()
        w0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, y)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        accs.append(est.score(Xte, yte))
    return statistics.median(walls), statistics.median(cpus), statistics.median(accs), walls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--features", type=int, default=20_000)
    ap.add_argument("--nnz", type=int, default=76)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "estimators.md"))
    args = ap.parse_args()

    X, y = make_rcv1_like(args.rows, args.features, args.nnz, args.classes)
    n_test = args.rows // 5
    Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
    m = Xtr.shape[0]
    nnz_row = Xtr.nnz / m

    settings = [("hinge", "hinge", 1e-5), ("logistic", "log_loss", 1e-5),
                ("hinge", "hinge", 1e-4), ("modified_huber", "modified_huber", 1e-5)]
    rows = []
    for loss, sgd_loss, sigma in settings:
        def make_pgs(loss=loss, sigma=sigma):
            return pgs.PGSClassifier(loss=loss, sigma=sigma, T=args.epochs * m,
                                     n_jobs=args.n_jobs, random_state=0)

        def make_sgd(sgd_loss=sgd_loss, sigma=sigma):
            return SGDClassifier(loss=sgd_loss, alpha=sigma, max_iter=args.epochs, tol=None,
                                 n_jobs=args.n_jobs, random_state=0)

        t_pgs, c_pgs, a_pgs, all_pgs = timed_fit(make_pgs, Xtr, ytr, Xte, yte, args.repeats)
        t_sgd, c_sgd, a_sgd, all_sgd = timed_fit(make_sgd, Xtr, ytr, Xte, yte, args.repeats)
        rows.append((loss, sigma, t_pgs, c_pgs, a_pgs, t_sgd, c_sgd, a_sgd, all_pgs, all_sgd))
        print(f"{loss:15s} sigma={sigma:g}: PGS {t_pgs:.3f}s (cpu {c_pgs:.3f}s) acc {a_pgs:.4f}"
              f" | SGD {t_sgd:.3f}s (cpu {c_sgd:.3f}s) acc {a_sgd:.4f} | wall speed-up "
              f"{t_sgd / t_pgs:.2f}x, cpu {c_sgd / c_pgs:.2f}x", flush=True)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        "# PGSClassifier vs SGDClassifier (10-class RCV1-like, one-vs-rest, n_jobs="
        f"{args.n_jobs})",
        "",
        f"Data: {args.rows} rows ({m} train / {n_test} test), {args.features} features, "
        f"{nnz_row:.1f} non-zeros per row, {args.classes} classes, generated by "
        "`make_rcv1_like` (bench/bench_estimators.py).",
        f"Both: same loss, alpha = sigma, {args.epochs} epochs (PGS T = {args.epochs} m, k = 1, "
        "iterate='last'; SGD max_iter, tol=None), random_state=0. "
        f"Median of {args.repeats} fits; accuracy on the held-out rows. CPU = process time "
        "of the fit summed over its threads.",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"shared with other jobs (load average at the end {load[0]:.1f}, {load[1]:.1f}, "
        f"{load[2]:.1f}): timings are noisy.",
        "",
        "| loss | sigma = alpha | PGS wall (s) | PGS CPU (s) | PGS acc | SGD wall (s) | "
        "SGD CPU (s) | SGD acc | SGD/PGS wall | SGD/PGS CPU | PGS walls | SGD walls |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for loss, sigma, t_pgs, c_pgs, a_pgs, t_sgd, c_sgd, a_sgd, all_pgs, all_sgd in rows:
        lines.append(
            f"| {loss} | {sigma:g} | {t_pgs:.3f} | {c_pgs:.3f} | {a_pgs:.4f} | {t_sgd:.3f} | "
            f"{c_sgd:.3f} | {a_sgd:.4f} | {t_sgd / t_pgs:.2f}x | {c_sgd / c_pgs:.2f}x | "
            f"{', '.join(f'{t:.2f}' for t in all_pgs)} | {', '.join(f'{t:.2f}' for t in all_sgd)} |"
        )
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
