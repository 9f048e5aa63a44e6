"""Multiclass as one problem (docs/design.md 6d): PGSClassifier(loss="multinomial") against
one-vs-rest logistic and hinge, "crammer_singer", the default (loss "auto": one-vs-rest
hinge or Crammer-Singer, chosen on the held-out rows) and scikit-learn's
LogisticRegression.

Sets: MNIST, R8 and letter (real), RCV1-like with 8 and 10 classes, news20-like (20 classes x 130k
features, `exp_defaults._news20_like`). Every PGSClassifier runs its defaults (sigma
"auto", at most 10 passes, random_state=0); LogisticRegression's C is chosen from
`C_GRID` on a fifth of the training rows held out, then refitted on all of them (its
time: the refit; the search's in brackets). Reported: test accuracy, mean test log loss of
`predict_proba` (clipped at 1e-15), fit seconds (wall), and a reliability plot
(results/multiclass.png: top-class confidence against accuracy, 10 bins). Then the cost
of one pass per row at a fixed sigma (the multinomial's chosen one), each model's K
outputs in one block (docs/multiclass.md): multinomial, Crammer-Singer and one-vs-rest
logistic (`fit_many`) against K separate one-vs-rest logistic runs. Last, what choosing
sigma costs the fits (one-vs-rest hinge, multinomial, the default): the search's seconds and
the final fit's (held-out scoring outside both), a row drawn for all the candidates
alive at once and for one candidate against a row of the final fit.
"""

import contextlib
import time

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

import pgs
from bench.experiments.exp_defaults import _news20_like, _split
from bench.harness.common import figure_path, markdown_table, pyplot, timed, write_report
from bench.harness.data import letter, mnist, r8, rcv1_like_multiclass
from pgs.training import sigma_auto
from pgs.training.fit import fit_many

C_GRID = (0.1, 1.0, 10.0)


def _sets(quick):
    Xm, ym, Xmt, ymt = mnist()
    if quick:
        Xm, ym = Xm[:10_000], ym[:10_000]
    m = 5_000 if quick else 20_000
    out = [("MNIST (real), 10 classes", Xm, ym, Xmt, ymt)] + [
        (f"{s.name} (real), {len(np.unique(s.y_train))} classes", s.X_train, s.y_train,
         s.X_test, s.y_test) for s in (r8(), letter())]
    for k in (8, 10):
        out.append((f"RCV1-like, {k} classes", *_split(*rcv1_like_multiclass(2 * m, k), 0.5)))
    out.append(("news20-like, 20 classes", *_split(*_news20_like(5_000 if quick else 18_846),
                                                   0.4)))
    return out


def _lr(X, y):
    """LogisticRegression with C from C_GRID on a held-out fifth, refitted on all rows."""
    Xa, ya, Xv, yv = _split(X, y, 0.2, seed=1)
    t0 = time.perf_counter()
    scores = [LogisticRegression(C=c, max_iter=1000).fit(Xa, ya).score(Xv, yv) for c in C_GRID]
    search = time.perf_counter() - t0
    c = C_GRID[int(np.argmax(scores))]
    seconds, est = timed(LogisticRegression(C=c, max_iter=1000).fit, X, y)
    return est, seconds, f"C={c:g} [{search:.1f} s]"


def _log_loss(proba, y_index):
    return float(np.mean(-np.log(np.clip(proba[np.arange(len(y_index)), y_index], 1e-15, 1))))


def _reliability(ax, proba, y_index, label):
    conf, right = proba.max(axis=1), proba.argmax(axis=1) == y_index
    bins = np.minimum((conf * 10).astype(int), 9)
    xs = [conf[bins == b].mean() for b in range(10) if np.any(bins == b)]
    ys = [right[bins == b].mean() for b in range(10) if np.any(bins == b)]
    ax.plot(xs, ys, "o-", label=label, ms=3)


def _per_row(X, y, sigma, repeats=3):
    """Microseconds per row of one pass at `sigma` (medians): multinomial, Crammer-Singer,
    one-vs-rest logistic (one block), K separate logistic runs; each run in turn."""
    X, classes = sp.csr_matrix(X), np.unique(y)     # (converted once, outside the times)
    ovr_targets = [np.where(y == c, 1.0, -1.0) for c in classes]
    common = dict(sigma=sigma, T=X.shape[0], seed=0, max_passes=1.0)
    fits = [lambda: pgs.train(X, y, loss="multinomial", **common),
            lambda: pgs.train(X, y, loss="crammer_singer", **common),
            lambda: fit_many(X, np.column_stack(ovr_targets), loss="logistic", **common),
            lambda: [pgs.train(X, t, loss="logistic", **common) for t in ovr_targets]]
    times = [[] for _ in fits]
    for _ in range(repeats):
        for f, t in zip(fits, times, strict=True):
            t0 = time.perf_counter()
            f()
            t.append(time.perf_counter() - t0)
    return [np.median(t) * 1e6 / X.shape[0] for t in times], X.nnz / X.shape[0]


@contextlib.contextmanager
def _advances(log):
    """Log each `InMemoryRows.advance` of a sigma="auto" fit: (in the search, seconds, passes
    (of its rows: the search's fewer) and rows (iterations k) of its runs at once, summed)."""
    advance = sigma_auto.InMemoryRows.advance

    def timed_advance(self, groups, t_end):
        rows = [(t_end - g[0].solver.t) * g[0].params.k for g in groups]
        t0 = time.perf_counter()
        advance(self, groups, t_end)
        n = groups[0][0].Xb.shape[0]
        log.append((len(groups) > 1, time.perf_counter() - t0, max(rows) / n, sum(rows) / n,
                    max(rows), sum(rows)))
    sigma_auto.InMemoryRows.advance = timed_advance
    try:
        yield log
    finally:
        sigma_auto.InMemoryRows.advance = advance


def _search_cost(name, X, y, loss):
    """A table row: the default fit's search against its final fit, compared a row drawn."""
    with _advances([]) as log:
        pgs.PGSClassifier(loss=loss, random_state=0).fit(X, y)
    (s_s, s_all, s_one, r_all, r_one), (f_s, f_p, _, f_r, _) = (
        np.sum([e[1:] for e in log if e[0] == s], axis=0) for s in (True, False))
    per_final = f_s / f_r
    return [name, loss, f"{s_s:.2f}", f"{s_one:.2f} ({s_all:.2f})", f"{f_s:.2f}", f"{f_p:.2f}",
            f"{s_s / r_all / per_final:.2f}", f"{s_s / r_one / per_final:.2f}"]


def run(cfg):
    """Run the experiment, write results/multiclass.md and its plot; return the path."""
    rows, cost_rows, search_rows = [], [], []
    plt = pyplot()
    sets = _sets(cfg.quick)
    fig, axes = plt.subplots(1, len(sets), figsize=(3.2 * len(sets), 3.2))
    for ax, (name, X, y, Xt, yt) in zip(axes, sets, strict=True):
        classes = np.unique(y)
        yt_index = np.searchsorted(classes, yt)
        fits = {f"pgs {loss}": timed(pgs.PGSClassifier(loss=loss, random_state=0).fit, X, y)[::-1]
                for loss in ("multinomial", "logistic", "hinge", "crammer_singer", "auto")}
        lr, lr_s, lr_note = _lr(X, y)
        fits["LogisticRegression"] = (lr, lr_s)
        for label, (est, seconds) in fits.items():
            acc = float(np.mean(est.predict(Xt) == yt))
            note = lr_note if label == "LogisticRegression" else f"sigma={est.sigma_:.2g}" + (
                f", {est.loss_}" if est.loss == "auto" else "")
            if hasattr(est, "predict_proba"):
                proba = est.predict_proba(Xt)
                loss_cell = f"{_log_loss(proba, yt_index):.4f}"
                _reliability(ax, proba, yt_index, label)
            else:
                loss_cell = "-"
            rows.append([name, label, f"{acc:.4f}", loss_cell, f"{seconds:.2f}", note])
            print(rows[-1], flush=True)
        ax.plot([0, 1], [0, 1], "k:", lw=0.8)
        ax.set(title=name, xlabel="top-class confidence", ylabel="accuracy")
        ax.legend(fontsize=6)
        sigma = fits["pgs multinomial"][0].sigma_
        (multi, cs, ovr, apart), nnz = _per_row(X, y, sigma)
        cost_rows.append([name, len(classes), f"{nnz:.0f}", f"{multi:.2f} ({multi / ovr:.2f}x)",
                          f"{cs:.2f} ({cs / ovr:.2f}x)", f"{ovr:.2f}",
                          f"{apart:.2f} ({ovr / apart:.2f}x)"])
        print(cost_rows[-1], flush=True)
        for loss in ("hinge", "multinomial", "auto"):
            search_rows.append(_search_cost(name, X, y, loss))
            print(search_rows[-1], flush=True)
    fig.tight_layout()
    fig.savefig(figure_path("multiclass", cfg))
    sections = [
        ("Accuracy, log loss and time", markdown_table(
            ["set", "model", "test accuracy", "test log loss", "fit s", "chosen"], rows)),
        ("One pass, microseconds a row: each model's K outputs in one block",
         markdown_table(["set", "K", "non-zeros a row", "multinomial (/ one-vs-rest)",
                         "crammer_singer (/ one-vs-rest)", "one-vs-rest logistic, a block",
                         "K separate logistic runs (one-vs-rest / them)"], cost_rows)),
        ("What choosing sigma costs: the search's candidates against the final fit",
         markdown_table(["set", "loss", "search s", "candidate passes (all at once)", "final s",
                         "final passes", "a row of all candidates / a final fit's row",
                         "a candidate's row / a final fit's row"], search_rows))]
    intro = __doc__.split("\n\n", 1)[1].replace("\n", " ")
    return write_report("multiclass", "Multiclass as one problem", sections, cfg, intro)
