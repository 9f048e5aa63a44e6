"""Out of the box: pgs's estimators with every default against the peers' defaults.

Every estimator is constructed with its defaults (only ``random_state`` set), fitted on the
training part of each set and scored on the test part: test accuracy for classification,
R^2 for regression, and the fit's wall time (median of `cfg.repeats` fits, one when a fit
takes over 20 s). pgs's score is the median over `cfg.repeats` seeds, with their range,
and the loss its default chose for each seed (h: one-vs-rest hinge, cs: Crammer-Singer).
Peers: scikit-learn's SGDClassifier, LinearSVC (and on multiclass sets its
Crammer-Singer) and LogisticRegression / SGDRegressor, LinearSVR and Ridge, all with their
defaults.

Sets: every public real set of ../shared/data (a9a, MNIST, R8 and letter with their own test
sets, the RCV1 sample with its own, mushrooms split 70/30 at random) and generated ones where passes
matter: the hard RCV1-like set (200k rows, labels noisy near the boundary), RCV1-like rows
with 8 topics, news20-like text (20 classes, 130,107 features, ~150 non-zeros a row), dense
10-class rows, and dense and sparse regression.

The second table checks ``sigma="auto"``: the test score of a fit at every value of its
grid (all the training rows, `max_passes` passes, the same seed), the best of them in
hindsight and the one the search chose, and that pick fitted for the same iterations on the
rows less a held-out share (`validation_fraction`'s): what learning from every row adds. The
third compares the default fit's time with one fit at the chosen loss and sigma for the same
iterations (the final fit alone): the search's cost. The grid, the pick and the cost are
seed 0's.
"""

import functools
import time
import warnings

import numpy as np
import scipy.sparse as sp

from bench.harness.common import markdown_table, write_report
from bench.harness.data import (
    a9a,
    generate_rcv1_like,
    letter,
    mnist,
    mushrooms,
    r8,
    rcv1_hard,
    rcv1_like,
    rcv1_like_multiclass,
    rcv1_sample,
)
from pgs.rules.defaults import auto_validation_fraction

SLOW_FIT_SECONDS = 20.0


# ------------------------------------------------------------------------ data sets


def _split(X, y, test_fraction=0.25, seed=0):
    idx = np.random.default_rng(seed).permutation(X.shape[0])
    te, tr = np.split(idx, [int(test_fraction * X.shape[0])])
    return X[tr], y[tr], X[te], y[te]


def _dense_multiclass(m, seed=0, d=50, n_classes=10):
    """Class centres ~ U[0,1]^d plus noise: non-centred features, as raw data often is."""
    rng = np.random.default_rng(seed)
    centres = rng.random((n_classes, d))
    y = rng.integers(0, n_classes, m)
    return centres[y] + 0.35 * rng.normal(size=(m, d)), y


def _news20_like(m, seed=0):
    """20 newsgroups' shape: generated RCV1-like rows summed in pairs (~150 non-zeros a row
    over 130,107 features), 20 topics (the label of the first of the pair)."""
    s = generate_rcv1_like(n_train=2 * m, n_test=0, n_features=130_107, n_classes=20, seed=seed)
    X = (s.X_train[0::2] + s.X_train[1::2]).tocsr()
    X.sort_indices()
    return X, s.y_train[0::2]


def _dense_regression(m, seed=0, d=50):
    """y = x w + b + noise, with non-centred features and an intercept (R^2 ~ 0.9)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) + rng.random(d) * 3.0
    w = rng.normal(size=d)
    y = X @ w + 5.0 + rng.normal(scale=0.33 * np.std(X @ w), size=m)
    return X, y


def _sparse_regression(X, seed=0):
    """A linear target with noise on sparse rows (R^2 ~ 0.8)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=X.shape[1]) * (rng.random(X.shape[1]) < 0.2)
    s = np.asarray(X @ w).ravel()
    return s + 1.0 + rng.normal(scale=0.5 * np.std(s), size=X.shape[0])


def classification_sets(quick):
    """(name, X_train, y_train, X_test, y_test) for every classification set."""
    sets = []
    for f in (a9a, mushrooms, rcv1_sample, r8, letter):
        s = f()
        sets.append((s.name + " (real)", s.X_train, s.y_train, s.X_test, s.y_test))
    Xm, ym, Xmt, ymt = mnist()
    if quick:
        Xm, ym = Xm[:10_000], ym[:10_000]
    sets.append(("MNIST, 10 classes (real)", Xm, ym, Xmt, ymt))
    h = rcv1_hard(50_000 if quick else 200_000)
    sets.append((f"hard RCV1-like ({h.X_train.shape[0] // 1000}k)", h.X_train, h.y_train,
                 h.X_test, h.y_test))
    m = 5_000 if quick else 20_000
    X, y = rcv1_like_multiclass(2 * m, 8, seed=0)
    sets.append(("RCV1-like, 8 classes", *_split(X, y, 0.5)))
    X, y = _news20_like(5_000 if quick else 18_846)
    sets.append(("news20-like, 20 classes", *_split(X, y, 0.4)))
    X, y = _dense_multiclass(m + 10_000)
    sets.append(("dense 10-class (50 d)", X[:m], y[:m], X[m:], y[m:]))
    return sets


def regression_sets(quick):
    """(name, X_train, y_train, X_test, y_test) for every regression set."""
    m = 5_000 if quick else 20_000
    X, y = _dense_regression(m + 10_000)
    sets = [("dense regression (50 d)", X[:m], y[:m], X[m:], y[m:])]
    rc = rcv1_like(20_000 if quick else 100_000)
    y_all = _sparse_regression(sp.vstack([rc.X_train, rc.X_test]).tocsr())
    n = rc.X_train.shape[0]
    sets.append(("sparse regression (RCV1-like rows)", rc.X_train, y_all[:n], rc.X_test,
                 y_all[n:]))
    return sets


# --------------------------------------------------------------------------- fitting


def _fit_timed(make, X, y, repeats):
    """(median seconds, the estimators ``make(random_state=r)`` fitted): refit while fits
    are quick."""
    times, fitted = [], []
    for r in range(repeats):
        est = make(random_state=r)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # (the peers' ConvergenceWarnings)
            est.fit(X, y)
        times.append(time.perf_counter() - t0)
        fitted.append(est)
        if times[-1] > SLOW_FIT_SECONDS:
            break
    return float(np.median(times)), fitted


def _peers(regression, multiclass=True):
    """(label, make(seed) or None where the peer does not apply) for each peer."""
    from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier, SGDRegressor
    from sklearn.svm import LinearSVC, LinearSVR
    return ((("SGDRegressor()", SGDRegressor), ("LinearSVR()", LinearSVR),
             ("Ridge()", lambda random_state: Ridge())) if regression else
            (("SGDClassifier()", SGDClassifier), ("LinearSVC()", LinearSVC),
             ("LinearSVC(crammer_singer)", lambda random_state: LinearSVC(
                 multi_class="crammer_singer", random_state=random_state) if multiclass
              else None), ("LogisticRegression()", lambda random_state: LogisticRegression())))


def _one_set(entry, regression, repeats):
    """One set: the default fit, the peers, the grid in hindsight and the final fit alone."""
    from pgs import PGSClassifier, PGSRegressor
    name, X, y, Xt, yt = entry
    cls = PGSRegressor if regression else PGSClassifier
    secs, fitted = _fit_timed(cls, X, y, repeats)
    est = fitted[0]
    seeds = [e.score(Xt, yt) for e in fitted]
    out = {"pgs": (float(np.median(seeds)), secs)}
    multiclass = not regression and np.unique(y).shape[0] > 2
    for label, make in _peers(regression, multiclass):
        if make(random_state=0) is None:
            continue
        p_secs, peer = _fit_timed(make, X, y, repeats)
        out[label] = (peer[0].score(Xt, yt), p_secs)
    same = {} if regression else {"loss": est.loss_}
    hindsight = [cls(sigma=float(s), random_state=0, **same).fit(X, y).score(Xt, yt)
                 for s in est.sigma_grid_]
    # The same sigma and iterations without a held-out share of the rows (what they add).
    kept = np.random.default_rng(1).permutation(X.shape[0])[
        int(auto_validation_fraction(X.shape[0]) * X.shape[0]):]
    split_only = cls(sigma=est.sigma_, T=est.t_, random_state=0, **same).fit(X[kept], y[kept])
    alone, _ = _fit_timed(functools.partial(cls, sigma=est.sigma_, T=est.t_, **same), X, y,
                          repeats)
    print(name, {k: (round(v[0], 4), round(v[1], 3)) for k, v in out.items()}, flush=True)
    return dict(name=name, out=out, est=est, hindsight=hindsight, alone=alone,
                split_only=split_only.score(Xt, yt), seeds=seeds,
                losses=[getattr(e, "loss_", "") for e in fitted])


# ---------------------------------------------------------------------------- report


def _pct(score, regression):
    return f"{score:.4f}" if regression else f"{100 * score:.2f}"


def _tables(rows, regression):
    peers = [label for label, _ in _peers(regression)]
    main, auto, cost = [], [], []
    for row in rows:
        out, est = row["out"], row["est"]
        best_peer = max((c for c in peers if c in out), key=lambda c: out[c][0])
        short = {"hinge": "h", "crammer_singer": "cs"}
        main.append([row["name"], f"{_pct(out['pgs'][0], regression)} "
                     f"[{_pct(min(row['seeds']), regression)}–"
                     f"{_pct(max(row['seeds']), regression)}] ({out['pgs'][1]:.2g} s)",
                     f"{est.n_iter_:.3g}", "/".join(short.get(v, v) for v in row["losses"])]
                    + [f"{_pct(out[c][0], regression)} ({out[c][1]:.2g} s)" if c in out
                       else "-" for c in peers]
                    + [f"{out['pgs'][1] / out[peers[0]][1]:.2f}x",
                       f"{(1 if regression else 100) * (out['pgs'][0] - out[best_peer][0]):+.3g}"
                       f" ({best_peer})"])
        scores, grid = np.array(row["hindsight"]), est.sigma_grid_
        pick = int(np.flatnonzero(grid == est.sigma_)[0])
        best = int(np.argmax(scores))
        auto.append([row["name"], " / ".join(_pct(s, regression) for s in scores),
                     f"{grid[best]:.3g}: {_pct(scores[best], regression)}",
                     f"{grid[pick]:.3g}: {_pct(scores[pick], regression)}",
                     f"{(1 if regression else 100) * (scores[pick] - scores[best]):+.3g}",
                     _pct(row["split_only"], regression)])
        cost.append([row["name"], f"{out['pgs'][1]:.3g}", f"{row['alone']:.3g}",
                     f"{out['pgs'][1] / row['alone']:.2f}x"])
    unit = "R²" if regression else "accuracy %"
    return (markdown_table(["set", f"PGS…() test {unit} [seeds] (time)", "passes", "loss"]
                           + peers
                           + ["time / SGD's", "− best peer"], main),
            markdown_table(["set", "each grid value, ascending sigma (all rows, max_passes)",
                            "best in hindsight", "auto's pick", "difference",
                            "auto's pick and T without the held-out rows"], auto),
            markdown_table(["set", "default fit s", "final fit alone s", "ratio"], cost))


def run(cfg):
    """Run on every set, write results/defaults.md (defaults_quick.md with --quick)."""
    repeats = 1 if cfg.quick else cfg.repeats
    sections = []
    for regression, sets in ((False, classification_sets(cfg.quick)),
                             (True, regression_sets(cfg.quick))):
        rows = [_one_set(entry, regression, repeats) for entry in sets]
        main, auto, cost = _tables(rows, regression)
        kind = "Regression" if regression else "Classification"
        sections += [(f"{kind}: every default, against the peers' defaults", main),
                     (f"{kind}: sigma='auto' against its grid in hindsight", auto),
                     (f"{kind}: the default fit against one fit at its sigma", cost)]
    write_report("defaults", "Defaults against the peers' defaults", sections, cfg,
                 intro=__doc__.split("\n\n", 1)[1].strip())
