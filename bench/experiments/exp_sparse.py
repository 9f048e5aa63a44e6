"""Sparse models (docs/sparse.md): test accuracy against non-zero weights and time, pgs with
l1 (p = 2 and p = 1.5, sigma = 1e-3 l1_max, a fixed number of passes at each of a decreasing
l1 grid, each fit on its own; at p = 2 the default average and the last iterate) against
scikit-learn's SGDClassifier with l1 and elastic-net penalties and LIBLINEAR's l1 logistic
regression (scikit-learn's liblinear solver); and the cost of the l1 term, a fit with l1 > 0
against the same fit with l1 = 0 in one round.

Logistic loss everywhere, binary sets: the hard RCV1-like set (100k rows; 20k quick), a9a
and R8's largest class against the rest (real). The peers' alpha and C run over grids of
the same width. A row's time is one fit's.
"""

import numpy as np
from sklearn.linear_model import LogisticRegression, SGDClassifier

import pgs
from bench.harness.common import figure_path, markdown_table, pyplot, timed, write_report
from bench.harness.data import a9a, r8, rcv1_hard
from pgs.sparse import l1_max

PASSES = 5
GRID = np.logspace(-0.5, -3.0, 6)        # fractions of l1_max (alpha, 1 / (C m) alike)


def _sets(cfg):
    hard, adult, text = rcv1_hard(20_000 if cfg.quick else 100_000), a9a(), r8()
    top = np.bincount(text.y_train.astype(int)).argmax()
    binary = lambda v: np.where(v == top, 1.0, -1.0)        # noqa: E731
    return [(hard.name, hard.X_train, hard.y_train, hard.X_test, hard.y_test),
            ("a9a", adult.X_train, adult.y_train, adult.X_test, adult.y_test),
            ("R8 (largest class)", text.X_train, binary(text.y_train), text.X_test,
             binary(text.y_test))]


def _fits(X, y):
    """(method, value, fit) for every point of every curve."""
    m, top = X.shape[0], l1_max(X, y, "logistic")
    for f in GRID:
        for p, it in ((2.0, "average"), (2.0, "last"), (1.5, "average")):
            yield f"pgs p={p:g}" + (", last" if it == "last" else ""), f * top, \
                lambda f=f, p=p, it=it: pgs.train(X, y, loss="logistic", p=p, iterate=it,
                                                  sigma=1e-3 * top, l1=f * top,
                                                  max_passes=PASSES, seed=0)
        yield "SGD l1", f * top, lambda f=f: SGDClassifier(
            loss="log_loss", penalty="l1", alpha=f * top, max_iter=PASSES, tol=None,
            random_state=0).fit(X, y)
        yield "SGD elasticnet", f * top, lambda f=f: SGDClassifier(
            loss="log_loss", penalty="elasticnet", alpha=f * top / 0.15, max_iter=PASSES,
            tol=None, random_state=0).fit(X, y)
        yield "LIBLINEAR l1", 1.0 / (f * top * m), lambda f=f: LogisticRegression(
            penalty="l1", solver="liblinear", C=1.0 / (f * top * m)).fit(X, y)


def _point(model, X_test, y_test):
    coef = model.coef if hasattr(model, "coef") else model.coef_
    return int(np.count_nonzero(coef)), float(np.mean(model.predict(X_test) == y_test))


def run(cfg):
    """Run the experiment, write results/sparse.md and its plot; return the path."""
    import warnings
    warnings.filterwarnings("ignore")        # (the peers' convergence warnings at 5 epochs)
    sections, plt = [], pyplot()
    sets = _sets(cfg)
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4))
    for ax, (name, X, y, X_test, y_test) in zip(axes, sets, strict=True):
        rows, curves = [], {}
        for method, value, fit in _fits(X, y):
            seconds, model = timed(fit)
            nnz, acc = _point(model, X_test, y_test)
            rows.append([method, f"{value:.3g}", f"{nnz:,}", f"{100 * acc:.2f}",
                         f"{seconds:.3f}"])
            curves.setdefault(method, []).append((nnz, 100 * acc))
        for method, pts in curves.items():
            ax.plot(*zip(*sorted(pts), strict=True), marker="o", label=method)
        ax.set(xscale="symlog", xlabel="non-zero weights", ylabel="test accuracy (%)",
               title=name)
        sections.append((f"{name}: {X.shape[0]:,} rows x {X.shape[1]:,} features",
                         markdown_table(["method", "l1, alpha or C", "non-zeros",
                                         "accuracy %", "seconds"], rows)))
        sections.append((f"{name}: the l1 term's cost", _cost(X, y, cfg)))
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(figure_path("sparse", cfg), dpi=100)
    return write_report("sparse", "Sparse models: accuracy against non-zero weights",
                        sections, cfg, intro=__doc__.split("\n\n")[0].replace("\n", " "))


def _cost(X, y, cfg):
    """Median time of a fit with l1 > 0 over the same fit with l1 = 0, per p and schedule (a
    round runs the three): l1 = 1e-9 l1_max times the machinery alone (the same model),
    0.1 l1_max a sparse model (whose weak margins also make the loss's branches harder)."""
    top, rows = l1_max(X, y, "logistic"), []
    for p in (2.0, 1.5, 1.3):
        for schedule in ("asgd", "pgs"):
            ratios = []
            for _ in range(cfg.repeats):
                kw = dict(loss="logistic", p=p, sigma=1e-3 * top, max_passes=PASSES, seed=0,
                          schedule=schedule)
                dense, _ = timed(pgs.train, X, y, **kw)
                ratios.append([timed(pgs.train, X, y, l1=f * top, **kw)[0] / dense
                               for f in (1e-9, 0.1)])
            ratios = np.array(ratios)
            rows.append([f"{p:g}", schedule] + [
                f"{np.median(r):.2f} [{r.min():.2f}-{r.max():.2f}]" for r in ratios.T])
    return markdown_table(["p", "schedule", "time, l1 = 1e-9 l1_max / l1 = 0",
                           "time, l1 = 0.1 l1_max / l1 = 0"], rows)


if __name__ == "__main__":
    from bench.harness.common import Config
    run(Config(quick=True))
