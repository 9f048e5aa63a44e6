"""Out of the box: pgs's estimators with their defaults against the peers' defaults.

Every estimator is constructed with its defaults (only ``random_state`` set) and fitted on
the training part of each set, scored on the test part: test accuracy for classification,
R^2 for regression, and the fit's wall time. Besides ``PGSClassifier()`` /
``PGSRegressor()`` the table has the candidate settings the defaults were chosen from
(one argument changed each; t_offset and intercept_scaling on the paper's schedule and
intercept column, which they apply to). Peers: scikit-learn's SGDClassifier, LinearSVC,
LogisticRegression / SGDRegressor, LinearSVR, Ridge, all with their defaults.

Sets: every public real set of ../shared/data (a9a and MNIST with their own test sets,
the RCV1 sample with its own, mushrooms split 70/30 at random; none is a regression set)
and generated ones: dense binary (two Gaussians), dense 10-class (non-centred features),
sparse binary (the RCV1-like set's first rows), sparse 8-class (the RCV1-like rows with
eight topics, `rcv1_like_multiclass`), dense and sparse regression. Times are medians
over `cfg.repeats` fits (one fit when a fit takes over 20 s); accuracy is
random_state=0's (the others' spread is shown for pgs in the "seeds" column).

A second table checks ``sigma="auto"`` on each set: the test accuracy of every value of
its grid (fitted on all the training rows), the best of them chosen in hindsight, and
the one "auto" picked from its held-out split; then the same on the RCV1-like set (781k
rows), with the time of "auto" against one fit at the sigma it chose (CPU and wall
seconds, in the same round). The last table runs `pgs.train` on the paper's set-up
(`pgs.PAPER`, sigma = 1e-4: its defaults before #24) with each `iterate` over 40 seeds:
test accuracy and training objective of each iterate choice.
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp

from bench.harness.common import markdown_table, write_report
from bench.harness.data import (
    a9a,
    mnist,
    mushrooms,
    rcv1_like,
    rcv1_like_multiclass,
    rcv1_sample,
    toy_gaussians,
)

#: The paper's schedule and intercept column (the estimators' defaults before #24), which
#: t_offset and intercept_scaling apply to (the averaged-SGD schedule and the free
#: intercept ignore them).
_PGS_SCHEDULE = {"schedule": "pgs", "intercept": "column"}
#: pgs columns: (label, estimator arguments or a function of m giving them); the first
#: is the estimator's defaults, each other one changes one default (t_offset and
#: intercept_scaling on the paper's schedule and intercept column), or restores the former
#: defaults: before #20 sigma=1e-4, iterate="last", and for the regressor t_offset=0,
#: "iid" rows, intercept_scaling=1; all on the paper's schedule and intercept column.
_ALTERNATIVES = (
    ("iterate=last", {"iterate": "last"}),
    ("sigma=1e-4", {"sigma": 1e-4}),
    ("schedule=pgs, intercept=column", _PGS_SCHEDULE),
    ("t_offset=0 (pgs schedule)", dict(_PGS_SCHEDULE, t_offset=0)),
    ("sampling=iid", {"sampling": "iid"}),
    ("intercept_scaling=1 (pgs schedule)", dict(_PGS_SCHEDULE, intercept_scaling=1.0)),
    ("T=5 passes", lambda m: {"T": 5 * m}),
    ("T=20 passes", lambda m: {"T": 20 * m}),
)
PGS_CLASSIFIER_COLUMNS = (("PGSClassifier()", {}),) + _ALTERNATIVES + (
    ("former defaults", dict(_PGS_SCHEDULE, sigma=1e-4, iterate="last")),)
PGS_REGRESSOR_COLUMNS = (("PGSRegressor()", {}),) + _ALTERNATIVES + (
    ("former defaults", dict(_PGS_SCHEDULE, sigma=1e-4, iterate="last", t_offset=0,
                             sampling="iid", intercept_scaling=1.0)),)
SLOW_FIT_SECONDS = 20.0


# ------------------------------------------------------------------------ data sets


def _split(X, y, test_fraction=0.25, seed=0):
    idx = np.random.default_rng(seed).permutation(X.shape[0])
    n_test = int(test_fraction * X.shape[0])
    te, tr = idx[:n_test], idx[n_test:]
    return X[tr], y[tr], X[te], y[te]


def _dense_multiclass(m, seed=0, d=50, n_classes=10):
    """Class centres ~ U[0,1]^d plus noise: non-centred features, as raw data often is."""
    rng = np.random.default_rng(seed)
    centres = rng.random((n_classes, d))
    y = rng.integers(0, n_classes, m)
    return centres[y] + 0.35 * rng.normal(size=(m, d)), y


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
    """(name, X_train, y_train, X_test, y_test, real) for every classification set."""
    sets = []
    for f in (a9a, mushrooms, rcv1_sample):
        s = f()
        sets.append((s.name, s.X_train, s.y_train, s.X_test, s.y_test, True))
    Xm, ym, Xmt, ymt = mnist()
    if quick:
        Xm, ym = Xm[:10_000], ym[:10_000]
    sets.append(("MNIST (10 classes)", Xm, ym, Xmt, ymt, True))
    m = 5_000 if quick else 20_000
    toy, toy_test = toy_gaussians(20, m, draw=0), toy_gaussians(20, 10_000, draw=1)
    sets.append(("gen. dense binary (20 d)", toy.X.toarray(), toy.y, toy_test.X.toarray(),
                 toy_test.y, False))
    X, y = _dense_multiclass(m + 10_000)
    sets.append(("gen. dense 10-class (50 d)", X[:m], y[:m], X[m:], y[m:], False))
    rc = rcv1_like(20_000 if quick else 100_000)
    sets.append((f"RCV1-like sparse binary ({rc.X_train.shape[0] // 1000}k)", rc.X_train,
                 rc.y_train, rc.X_test, rc.y_test, False))
    X, y = rcv1_like_multiclass(2 * m, 8, seed=0)
    sets.append(("RCV1-like sparse 8-class", *_split(X, y, 0.5), False))
    return sets


def regression_sets(quick):
    """(name, X_train, y_train, X_test, y_test, real) for every regression set."""
    m = 5_000 if quick else 20_000
    X, y = _dense_regression(m + 10_000)
    sets = [("gen. dense regression (50 d)", X[:m], y[:m], X[m:], y[m:], False)]
    rc = rcv1_like(20_000 if quick else 100_000)
    y_all = _sparse_regression(sp.vstack([rc.X_train, rc.X_test]).tocsr())
    n = rc.X_train.shape[0]
    sets.append(("sparse regression (RCV1-like rows)", rc.X_train, y_all[:n], rc.X_test,
                 y_all[n:], False))
    return sets


# --------------------------------------------------------------------------- fitting


def _fit_timed(make, X, y, repeats):
    """(median seconds, estimator of the first fit): refit while fits are quick."""
    times, first = [], None
    for r in range(repeats):
        est = make(r)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # (the peers' ConvergenceWarnings)
            est.fit(X, y)
        times.append(time.perf_counter() - t0)
        first = first or est
        if times[-1] > SLOW_FIT_SECONDS:
            break
    return float(np.median(times)), first


def _peers(regression):
    from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier, SGDRegressor
    from sklearn.svm import LinearSVC, LinearSVR
    if regression:
        return (("SGDRegressor()", lambda r: SGDRegressor(random_state=r)),
                ("LinearSVR()", lambda r: LinearSVR(random_state=r)),
                ("Ridge()", lambda r: Ridge()))
    return (("SGDClassifier()", lambda r: SGDClassifier(random_state=r)),
            ("LinearSVC()", lambda r: LinearSVC(random_state=r)),
            ("LogisticRegression()", lambda r: LogisticRegression()))


def _score(est, X, y):
    return est.score(X, y)


def _one_set(entry, regression, repeats):
    """One row of the table: {column: (score, seconds)} and the pgs seeds' spread."""
    from pgs import PGSClassifier, PGSRegressor
    name, X, y, Xt, yt, _ = entry
    cls, columns = (PGSRegressor, PGS_REGRESSOR_COLUMNS) if regression else \
        (PGSClassifier, PGS_CLASSIFIER_COLUMNS)
    out, spread = {}, None
    for label, kwargs in columns:
        kwargs = kwargs(X.shape[0]) if callable(kwargs) else kwargs
        secs, est = _fit_timed(lambda r, kw=kwargs: cls(random_state=r, **kw), X, y, repeats)
        out[label] = (_score(est, Xt, yt), secs)
        if not kwargs:
            scores = [_score(cls(random_state=r).fit(X, y), Xt, yt) for r in range(1, 3)]
            spread = (min(scores + [out[label][0]]), max(scores + [out[label][0]]))
            default_est = est
    for label, make in _peers(regression):
        secs, est = _fit_timed(make, X, y, repeats)
        out[label] = (_score(est, Xt, yt), secs)
    print(name, {k: (round(v[0], 4), round(v[1], 3)) for k, v in out.items()}, flush=True)
    return out, spread, default_est


def _auto_check(entry, est, regression):
    """Test score of every grid value of the default fit's sigma search, vs its pick."""
    from pgs import PGSClassifier, PGSRegressor
    name, X, y, Xt, yt, _ = entry
    cls = PGSRegressor if regression else PGSClassifier
    grid = est.sigma_grid_
    if grid is None:
        return None
    scores = [_score(cls(sigma=float(s), random_state=0).fit(X, y), Xt, yt) for s in grid]
    return grid, scores, est.sigma_


def _rcv1_auto(quick, rounds):
    """sigma="auto" on the RCV1-like set: its time against one fit at the sigma it chose
    (CPU and wall seconds, alternating within each round), and its grid in hindsight."""
    from pgs import PGSClassifier
    s = rcv1_like(50_000 if quick else 781_265)
    X, y, Xt, yt = s.X_train, s.y_train, s.X_test, s.y_test
    lines, first = [], None
    for r in range(rounds):
        row = []
        for kwargs in ({}, None):
            kwargs = {"sigma": row[0][2].sigma_} if kwargs is None else kwargs
            c0, w0 = time.process_time(), time.perf_counter()
            fitted = PGSClassifier(random_state=r, **kwargs).fit(X, y)
            row.append((time.process_time() - c0, time.perf_counter() - w0, fitted))
        (ca, wa, a), (cf, wf, _) = row
        first = first or a
        lines.append([str(r), f"{a.sigma_:.3g}", f"{100 * a.score(Xt, yt):.2f}",
                      f"{ca:.1f} / {wa:.1f}", f"{cf:.1f} / {wf:.1f}",
                      f"{ca / cf:.2f}x / {wa / wf:.2f}x"])
    timing = markdown_table(["random_state", "sigma_", "test accuracy %",
                             "auto: CPU / wall s", "fixed at sigma_: CPU / wall s",
                             "ratio CPU / wall"], lines)
    scores = [PGSClassifier(sigma=float(g), random_state=0).fit(X, y).score(Xt, yt)
              for g in first.sigma_grid_]
    hindsight = _auto_table([(s.name, (first.sigma_grid_, scores, first.sigma_))], False)
    return s.name, timing, hindsight


def _train_iterates(n_seeds):
    """`pgs.train`'s iterate choices over seeds on the paper's set-up (`PAPER_RUN`, sigma
    1e-4, as pgs.train's defaults were before #24): accuracy and objective."""
    import pgs
    from bench.harness.common import fmt
    from bench.harness.peers import PAPER_SIGMA, paper_run
    lines = []
    for f in (a9a, mushrooms, rcv1_sample):
        s = f()
        for iterate in ("random", "last", "average"):
            accs, objs = [], []
            for seed in range(n_seeds):
                model = pgs.train(s.X_train, s.y_train, **paper_run(
                    sigma=PAPER_SIGMA, iterate=iterate, seed=seed))
                accs.append(np.mean(model.predict(s.X_test) == s.y_test))
                objs.append(model.objective(s.X_train, s.y_train))
            lines.append([s.name, iterate, fmt(accs, 4, 100.0), fmt(objs, 4),
                          f"{np.percentile(objs, 90):.4g}"])
    return markdown_table(["set", "iterate", "test accuracy % median [min–max]",
                           "objective median [min–max]", "objective 90th percentile"], lines)


# ---------------------------------------------------------------------------- report


def _table(rows, regression):
    columns = [c for c, _ in (PGS_REGRESSOR_COLUMNS if regression else PGS_CLASSIFIER_COLUMNS)]
    columns += [c for c, _ in _peers(regression)]
    unit = "R²" if regression else "accuracy %"
    header = ["set"] + columns + ["defaults − best peer", "time / SGD", "seeds 0–2"]
    lines = []
    for name, out, spread in rows:
        def cell(c, out=out):
            s, t = out[c]
            return f"{s:.4f} ({t:.2g} s)" if regression else f"{100 * s:.2f} ({t:.2g} s)"
        peers = [c for c, _ in _peers(regression)]
        best_peer = max(out[c][0] for c in peers)
        gap = out[columns[0]][0] - best_peer
        sgd = out[peers[0]][1]
        lines.append([name] + [cell(c) for c in columns] + [
            f"{gap:+.4f}" if regression else f"{100 * gap:+.2f}",
            f"{out[columns[0]][1] / sgd:.2f}x",
            f"{spread[0]:.4f}–{spread[1]:.4f}" if regression
            else f"{100 * spread[0]:.2f}–{100 * spread[1]:.2f}"])
    return f"Test {unit} (fit time).\n\n" + markdown_table(header, lines)


def _auto_table(rows, regression):
    lines = []
    for name, (grid, scores, chosen) in rows:
        scale = 1.0 if regression else 100.0
        best = int(np.argmax(scores))
        pick = int(np.flatnonzero(np.isclose(grid, chosen))[0])
        lines.append([name, " / ".join(f"{scale * s:.2f}" if not regression else f"{s:.3f}"
                                       for s in scores),
                      f"{grid[best]:.3g}: {scale * scores[best]:.4g}",
                      f"{chosen:.3g}: {scale * scores[pick]:.4g}",
                      f"{scale * (scores[pick] - scores[best]):+.3g}"])
    return markdown_table(["set", "test score of each grid value (ascending sigma)",
                           "best in hindsight", "auto's pick", "difference"], lines)


def run(cfg):
    """Run on every set, write results/defaults.md (defaults_quick.md with --quick)."""
    repeats = 1 if cfg.quick else cfg.repeats
    sections = []
    for regression, sets in ((False, classification_sets(cfg.quick)),
                             (True, regression_sets(cfg.quick))):
        rows, autos = [], []
        for entry in sets:
            out, spread, est = _one_set(entry, regression, repeats)
            rows.append((entry[0] + (" (real)" if entry[5] else ""), out, spread))
            check = _auto_check(entry, est, regression)
            if check is not None:
                autos.append((entry[0], check))
        kind = "Regression" if regression else "Classification"
        sections.append((kind, _table(rows, regression)))
        if autos:
            sections.append((f"{kind}: sigma='auto' against its grid in hindsight",
                             _auto_table(autos, regression)))
    name, timing, hindsight = _rcv1_auto(cfg.quick, 1 if cfg.quick else 3)
    sections.append((f"sigma='auto' on {name}: time against one fit at the chosen sigma",
                     timing))
    sections.append((f"sigma='auto' on {name}: its grid in hindsight (random_state=0)",
                     hindsight))
    n_seeds = 10 if cfg.quick else 40
    sections.append((f"pgs.train's iterate on the paper's set-up (pgs.PAPER, sigma=1e-4; "
                     f"{n_seeds} seeds)",
                     _train_iterates(n_seeds)))
    write_report("defaults", "Defaults against the peers' defaults", sections, cfg,
                 intro=__doc__.split("\n\n", 1)[1].strip())


if __name__ == "__main__":
    import sys

    from bench.harness.common import Config
    run(Config(quick="--quick" in sys.argv[1:]))
