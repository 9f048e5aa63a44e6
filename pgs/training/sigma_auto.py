"""``sigma="auto"`` (docs/defaults.md, section 3): sigma chosen by successive halving on
held-out rows, the candidates sharing the seed and the training rows (one after another),
for one model or several compared (section 9), and the winner's run continued, not
refitted, with half the held-out rows until its score on the other half stops improving
(section 4).
"""

import contextlib
import functools
import math
import time

import numpy as np

from pgs.rules import defaults as D
from pgs.rules import parameters as P
from pgs.rules import validation as V
from pgs.rules.data import (
    CSRBuffers,
    as_csr_buffers,
    class_indices,
    kernel_classes,
    kernel_targets,
)
from pgs.rules.params import seed_entropy
from pgs.training.classes import auto_losses, class_targets, one_vs_rest, ovr_model
from pgs.training.fit import finish_all, intercepts, prepare_many, run_many_to


def is_auto(sigma):
    """True when `sigma` is the string "auto" (the other strings are errors)."""
    if isinstance(sigma, str):
        if sigma != "auto":
            raise TypeError(f"sigma must be a float > 0 or 'auto', got sigma={sigma!r}")
        return True
    return False


def check_search(sigma_grid, validation_fraction, verbose):
    """The search's own arguments checked by their entries of `pgs.rules.parameters`
    (`pgs.train` checks them for a fixed sigma too): (sigma_grid, validation_fraction,
    verbose), normalised."""
    return tuple(P.check(name, value) for name, value in zip(
        P.SEARCH_ARGS, (sigma_grid, validation_fraction, verbose), strict=True))


def validation_split(n_rows, fraction, seed, strata=None):
    """Sorted row indices (train, validation), shuffled by `seed`, stratified by `strata`:
    each stratum gives ``floor(fraction * n_c)`` rows to validation, at least one of two."""
    rng = np.random.default_rng([seed, 0x5167])   # (its own stream, not the sampler's)
    if strata is None:
        groups = [np.arange(n_rows)]
    else:
        # Each stratum's rows in ascending order, the strata in sorted order (a stable
        # sort: np.unique and a mask per stratum took 0.26 s of a 200k-row fit).
        order = np.argsort(strata, kind="stable")
        cuts = np.flatnonzero(strata[order][1:] != strata[order][:-1]) + 1
        groups = np.split(order, cuts)
    val = []
    for rows in groups:
        n_c = rows.shape[0]
        n_val = int(fraction * n_c) if n_c < 2 else min(max(1, int(fraction * n_c)), n_c - 1)
        val.append(rng.permutation(rows)[:n_val])
    val = np.sort(np.concatenate(val)).astype(np.int64)
    in_train = np.ones(n_rows, dtype=bool)
    in_train[val] = False
    return np.flatnonzero(in_train).astype(np.int64), val


def validation_weights(sample_weight, rows):
    """The weights of `rows`, or None (no weights, or all zero there)."""
    if sample_weight is None:
        return None
    w = sample_weight[rows]
    return w if np.any(w > 0) else None


class Holdout:
    """The held-out rows `X_val` (with their `weights` or None): each model's per-row
    scores (``per_row(Z)`` of its margins Z, rows x problems), their mean, and the standard
    error of the difference of two models' scores on these same rows."""

    def __init__(self, X_val, per_row, weights):
        self.X_val, self.per_row = X_val, per_row
        # (scaled to a maximum of 1: Kish's effective size without overflow)
        self.weights = None if weights is None else weights / np.max(weights)
        w = self.weights
        self.n_eff = float(X_val.shape[0]) if w is None else \
            float(np.sum(w)) ** 2 / float(np.sum(w * w))

    def values(self, coefs, intercepts):
        """Per-row scores of the problems' coefficients (the columns of an (n_features, P)
        array: one product reads X_val once) and intercepts."""
        return self.per_row(self.X_val @ coefs + np.asarray(intercepts))

    def score(self, values):
        """The (weighted) mean of per-row scores."""
        return float(np.average(values, weights=self.weights))

    def se_of_difference(self, a, b):
        """The standard error of ``score(a) - score(b)``, paired on the same rows (0 where
        either is not finite)."""
        d = a - b
        if not np.all(np.isfinite(d)):
            return 0.0
        mean = np.average(d, weights=self.weights)
        var = float(np.average((d - mean) ** 2, weights=self.weights))
        return math.sqrt(var / max(self.n_eff, 1.0))


def accuracy_per_row(y_index, threshold=0.0):
    """`fit_auto`'s ``per_row(Z, rows)`` for classification: 1 where the argmax of a row's
    margins is its class index (`y_index` of all the rows; a single problem: class 1 above
    `threshold`), else 0."""
    def per_row(Z, rows):
        pred = (Z[:, 0] > threshold).astype(np.intp) if Z.shape[1] == 1 else Z.argmax(axis=1)
        return (pred == y_index[rows]).astype(np.float64)
    return per_row


def r2_per_row(y, weights):
    """`fit_auto`'s ``per_row(Z, rows)`` for a regression: ``1 - e_i^2 / Var(y)`` on the
    rows, whose (weighted) mean is R^2 (a constant y: Var(y) taken as 1); its
    ``extrapolate``: the halving ranks the candidates one rung on."""
    def per_row(Z, rows):
        y_rows, w = y[rows], validation_weights(weights, rows)
        ss_tot = float(np.average((y_rows - np.average(y_rows, weights=w)) ** 2, weights=w))
        e = y_rows - Z[:, 0]
        return 1.0 - e * e / (ss_tot if ss_tot > 0.0 else 1.0)
    per_row.extrapolate = True
    return per_row


def _current(runs):
    """The runs' current iterates (the average, or the last for the other choices: a picked
    iterate may lie ahead) as the columns of one (n_features, P) array, each solver's taken
    in one pass over its vectors, and their intercepts (a K-output run gives K of each)."""
    which = "average" if runs[0].params.iterate == "average" else "last"
    W = np.empty((runs[0].n_features + 1, sum(run.solver.n_out for run in runs)))
    icpts, c = [], 0
    for run in runs:
        solver, R = run.solver, run.solver.n_out
        if solver.l1 > 0.0:         # (zero where the sparse model is)
            W[:, c:c + R] = np.atleast_2d(solver.iterate(which)).T
        else:
            solver._check_which(which)
            solver._iterate_to(W[:, c:c + R], which == "average")
        icpts.extend(intercepts(run, W[:, c] if R == 1 else W[:, c:c + R].T,
                                solver._scalars(), which))
        c += R
    return W[:runs[0].n_features], icpts


class InMemoryRows:
    """`fit_auto`'s rows in memory (`Xb`): the training split and the held-out rows that
    join it later copied once, in that order (the first rows a view); runs advanced
    by `pgs.training.fit.run_many_to` on `n_jobs` threads (one problem per candidate: split by
    rows, in rounds of `merge_every`, as ``pgs.train(n_jobs=W)`` runs it)."""

    def __init__(self, Xb, n_jobs=1, merge_every=None):
        self.Xb, self.n_jobs, self.n_rows = Xb, n_jobs, Xb.shape[0]
        self.merge_every = merge_every

    def split(self, train, val, joined):
        """Keep the training rows `train`, then `joined`; return the held-out rows `val`
        (a CSR matrix)."""
        X, self.order = self.Xb.matrix(), np.concatenate([train, joined])
        self.X_later = as_csr_buffers(X[self.order], check_entries=False)
        b, n = self.X_later, train.shape[0]
        end = b.indptr[n]
        self.X_train = CSRBuffers(b.data[:end], b.indices[:end], b.indptr[:n + 1],
                                  (n, b.shape[1]), b.entries_checked)
        return X[val]

    def every_row(self):
        """From now on the training rows, then the held-out ones that join them, are the
        training rows: (the runs' X, the rows' indices in X in that order)."""
        return self.X_later, self.order

    def stats(self, q, full=False):
        """`pgs.rules.defaults.row_stats` of the training rows."""
        return D.row_stats(self.X_train, q, full=full)

    def advance(self, groups, t_end):
        """Every run of `groups` (lists of runs, one per candidate) to iteration t_end."""
        # (a candidate of one problem is split by rows; R problems by slices of columns)
        run_many_to([run for group in groups for run in group], t_end, self.n_jobs,
                    split=all(len(group) == 1 and group[0].each is None for group in groups),
                    merge_every=self.merge_every)

    def close(self):
        """Nothing to release."""


def _choose(alive, scores, values, holdout, keep):
    """The `keep` candidates of `alive` (grid indices, ascending sigma) that go on: first,
    by decreasing sigma, those whose score is within the paired standard error of the
    best (Breiman et al.'s one-standard-error rule: runs this short hardly tell the small
    sigmas apart, and favour them), then the others by score (ties to the larger sigma).
    NaN scores rank last; all NaN: the largest sigmas."""
    def key(g):
        return (scores[g] if np.isfinite(scores[g]) else -math.inf, g)
    ranked = sorted(alive, key=key, reverse=True)
    best = ranked[0]
    band = [g for g in alive if np.isfinite(scores[g]) and scores[g] >= scores[best]
            - holdout.se_of_difference(values[best], values[g])]
    order = sorted(band, reverse=True) + [g for g in ranked if g not in band]
    return sorted(order[:keep])


def _report(verbose, start, text, passes_done, passes_max, short=None):
    """A `verbose` line (a sigma rung's scores, or a pass's held-out score) with the
    elapsed time and a bound on the time left (at `passes_max`): printed, or for a
    callable `verbose` (the command line's progress display) the bound and the line, or
    its `short` form, passed to it."""
    if not verbose:
        return
    elapsed = time.perf_counter() - start
    bound = elapsed / passes_done * max(passes_max - passes_done, 0)
    if callable(verbose):
        verbose(f"at most {bound:.1f} s left: {short or text}")
    else:
        print(f"-- {text}; {elapsed:.2f} s, at most {bound:.2f} s left", flush=True)


def fit_auto(rows, families, per_row, *, grid, validation_fraction, seed, T, max_passes,
             sample_weight=None, strata=None, keep_state=False, verbose=0,
             start=None, **train_kwargs):
    """Choose sigma by successive halving on held-out rows, then continue the winner on
    every row (module docstring): (the final model of each problem of the chosen family,
    the ascending grid, each family's held-out score of each value at its last rung (one
    row a family), the chosen family's index).

    `families`: the models compared, each a pair (targets, kwargs): its targets (one
    problem's (m,), or R binary problems' (m, R): `prepare_many`'s) and the `prepare`
    arguments that make it that model (the loss, its `known_classes`). Each family halves
    its own grid; their best are compared at each rung until one leads by more than the
    paired standard error (at the last rung: the first family, the order being the
    preference, unless another beats it by more), and only the one kept halves on
    (docs/defaults.md 9).

    `rows` (`InMemoryRows`, or `pgs.dask.training.DaskRows`): ``split(train, val,
    joined)`` keeps the training rows and returns the held-out ones, then ``X_train`` is
    what `prepare` reads of them and ``stats(q, full)`` their
    `pgs.rules.defaults.row_stats`; ``advance(groups, t_end)`` runs lists of runs to
    t_end; ``every_row()`` makes the training rows then `joined` the training rows,
    returning what the runs read and the rows' indices in that order. ``per_row(Z,
    rows)``: the per-row scores of held-out margins (``per_row.extrapolate``: `_halve`'s).
    `grid` None: `D.default_sigma_grid`; `validation_fraction` "auto": `D.auto_validation_fraction`
    (none held out: the training rows score). T None: until the held-out score stops
    improving, at most `max_passes` passes. `verbose`: 0, 1 or a callable (`_report`); `start`
    is the call's ``time.perf_counter()``; the rest are `prepare`'s arguments but sigma.
    """
    start = time.perf_counter() if start is None else start
    report = functools.partial(_report, verbose, start)
    m = rows.n_rows
    k = V.check_count("k", train_kwargs.get("k", 1))
    if not train_kwargs.get("k_above_rows", False):
        V.check_k_rows(k, m, T)
    train_kwargs["k_above_rows"] = True  # (the split may have fewer rows than k)
    t_cap = T if T is not None else D.default_T(m, k, max_passes)
    train, val = validation_split(m, D.auto_validation_fraction(m) if validation_fraction
                                  == "auto" else validation_fraction, seed, strata)
    if val.shape[0] == 0:
        train = val = np.arange(m, dtype=np.int64)
    # (the held-out rows the stop reads, positions in val: never trained on; the others
    # join the training once the search has chosen)
    stop = np.arange(val.shape[0]) if val is train else \
        _stop_rows(val, strata, seed) if T is None else np.empty(0, dtype=np.int64)
    joined = np.delete(val, stop)
    holdout = Holdout(rows.split(train, val, joined), lambda Z: per_row(Z, val),
                      validation_weights(sample_weight, val))
    if grid is None:
        grid = D.default_sigma_grid(D.mean_sq(rows.stats(2.0, False)), train.shape[0])
    weights = validation_weights(sample_weight, train)
    # (a candidate's problems: the outputs of a block for each thread, `prepare_many`;
    # candidate f * len(grid) + g is family f's at grid[g])
    groups = []
    for targets, kwargs in families:
        Y = targets[train]
        groups += [prepare_many(rows.X_train, Y, getattr(rows, "n_jobs", 1),
                                row_stats=rows.stats, sigma=float(s), T=t_cap, seed=seed,
                                sample_weight=weights, **{**train_kwargs, **kwargs})
                   for s in grid]
    per_pass = D.default_T(train.shape[0], k, 1.0)
    win, scores, values = _halve(rows, groups, [kw.get("loss") for _, kw in families], grid,
                                 holdout, per_pass, k, max(1, int(D.SEARCH_SHARE * t_cap)),
                                 max_passes, report, getattr(per_row, "extrapolate", False))
    family, runs = win // len(grid), groups[win]
    if joined.shape[0] > 0:
        # Every row counts: the winner goes on with the held-out rows too (docs/defaults.md
        # 2) but those that tell it when to stop (4)
        Xb, trained = rows.every_row()
        w = None if sample_weight is None else sample_weight[trained]
        Y = families[family][0][trained]
        runs = [run._replace(Xb=Xb, y_kernel=Y if run.columns is None else Y[:, run.columns],
                             weights=w) for run in runs]
    # (max_passes: passes of the rows trained on)
    m = train.shape[0] + joined.shape[0]
    t_cap = t_cap if T is not None else D.default_T(m, k, max_passes)
    if T is not None:
        rows.advance([runs], t_cap)
    else:
        left = Holdout(holdout.X_val[stop], lambda Z: per_row(Z, val[stop]),
                       validation_weights(sample_weight, val[stop]))
        _until_stale(rows, runs, left, lambda: left.values(*_current(runs)),
                     values[win][stop], t_cap, k, D.default_T(m, k, 1.0), max_passes, report,
                     grid[win % len(grid)])
    # (their passes: T k / rows; rows kept elsewhere give X^T v for the null model's check)
    models = finish_all(runs, keep_state, getattr(rows, "xt_dot", None))
    return models, grid, scores.reshape(len(families), len(grid)), family


def _stop_rows(val, strata, seed):
    """The positions in `val` of the held-out rows that are never trained on, whose score
    stops the run: `D.STOP_FRACTION` of them, stratified as the split (all of them where
    that is none: each class one row)."""
    n = val.shape[0]
    _, stop = validation_split(n, D.STOP_FRACTION, seed + 1,
                               None if strata is None else strata[val])
    return stop if stop.shape[0] > 0 else np.arange(n, dtype=np.int64)


def _halve(rows, groups, names, grid, holdout, per_pass, k, t_search, max_passes, report,
           extrapolate):
    """Successive halving of the candidates `groups` (one list of runs each: a family for
    each of `names`, each over the ascending sigma `grid`) within `t_search` iterations,
    ranked by their held-out scores (each row's extrapolated one rung on, if
    `extrapolate`); several families are compared at each rung, each by its best score
    there (`_prefer_first`), until they part by more than the paired standard error (or
    at the last), and the one kept halves on alone: (the winner's index, each candidate's
    score at its last rung, its per-row scores there)."""
    n = len(grid)
    scores, values, before = np.full(len(groups), np.nan), [None] * len(groups), \
        [None] * len(groups)
    families = [list(range(f * n, (f + 1) * n)) for f in range(len(names))]
    pair_rungs = 0
    rung = max(D.FIRST_RUNG_PASSES * per_pass, D.FIRST_RUNG_ROWS / k)   # (iterations)
    while True:
        t_end = min(t_search, max(1, math.ceil(rung)))
        alive = [c for family in families for c in family]
        rows.advance([groups[c] for c in alive], t_end)
        for c in alive:
            before[c], values[c] = values[c], holdout.values(*_current(groups[c]))
            scores[c] = holdout.score(values[c])
        # Halve down to two, which race on to `D.RACE_PASSES` (at least a rung of their
        # own) before the choice: short runs favour the small sigmas, which the larger
        # overtake later (measured: the hard RCV1-like set's held-out accuracy at 1 pass
        # ranked 2e-7 first, from 2 passes on 6.3e-6).
        pair_rungs += len(families[0]) == 2
        last = t_end >= t_search or (pair_rungs and t_end >= D.RACE_PASSES * per_pass)
        # R^2: the small sigmas start slowly, and are judged where their curves are going
        # (each row's score one rung on, 2 v - v_before; measured: docs/defaults.md 3)
        judged = {c: 2.0 * values[c] - before[c] if extrapolate and before[c] is not None
                  else values[c] for c in alive}
        heads = [max(family, key=lambda c: scores[c] if np.isfinite(scores[c]) else -math.inf)
                 for family in families]
        for f, family in enumerate(families):
            keep = 1 if last or len(family) == 1 else max(math.ceil(len(family) / 2), 2)
            kept = _choose(family, {c: holdout.score(judged[c]) for c in family}, judged,
                           holdout, keep)
            best = max((scores[c] for c in family if np.isfinite(scores[c])), default=math.nan)
            report(f"sigma rung of {t_end / per_pass:.3g} passes: " + ", ".join(
                f"{grid[c % n]:.3g}: {scores[c]:.4f}" for c in family) + "; kept "
                + ", ".join(f"{grid[c % n]:.3g}" for c in kept), t_end / per_pass, max_passes,
                short=f"sigma rung of {t_end / per_pass:.3g} passes: {len(kept)} of "
                f"{len(family)} kept, best score {best:.4f}")
            families[f] = kept
        if len(families) > 1:
            # The loss by the families' best as soon as they part by more than the paired
            # standard error (letter: 64% against 69% at the first rung), saving the
            # other family's rungs; a tie goes on (a loss may take passes to pull ahead),
            # and at the last rung goes to the first (docs/defaults.md 9)
            win = _prefer_first(heads, scores, values, holdout) if all(
                len(family) == 1 for family in families) else _parted(heads, scores, values,
                                                                       holdout)
            if win is not None:
                report("loss: " + ", ".join(f"{names[c // n]} {scores[c]:.4f}"
                                            for c in heads) + f"; kept {names[win // n]}",
                       t_end / per_pass, max_passes)
                families = [families[win // n]]
        for c in set(alive).difference(*families):
            groups[c] = None            # (the losers' states freed)
        if len(families) == 1 and len(families[0]) == 1:
            return families[0][0], scores, values
        rung *= 2


def _parted(winners, scores, values, holdout):
    """`_prefer_first`'s choice where it is clear: another family beats the first by more
    than the paired standard error, or the first beats every other by more (a NaN score
    is beaten); else None (a tie, decided later)."""
    win = _prefer_first(winners, scores, values, holdout)
    first = winners[0]
    return win if win != first or all(not np.isfinite(scores[c]) or scores[first] > scores[c]
                                      + holdout.se_of_difference(values[first], values[c])
                                      for c in winners[1:]) else None


def _prefer_first(winners, scores, values, holdout):
    """The families' choice by their best candidates `winners`: the first, unless another's
    score beats it by more than the paired standard error (then the best of those); NaN
    scores never win."""
    first = winners[0]
    better = [c for c in winners[1:] if np.isfinite(scores[c]) and (
        not np.isfinite(scores[first]) or scores[c] > scores[first]
        + holdout.se_of_difference(values[c], values[first]))]
    return max(better, key=lambda c: scores[c], default=first)


def _until_stale(rows, runs, holdout, values_now, start_values, t_cap, k, per_pass,
                 max_passes, report, sigma):
    """Run `runs` on to `t_cap`, or until `D.N_ITER_NO_CHANGE` held-out scores in a row
    (``values_now()``: per row), taken every pass (`per_pass` iterations, at least
    `D.CHECK_ROWS` rows), are no better than the best (at first `start_values`': the
    winner's last rung's). (Any gain counts: a steady climb of gains each within the noise went on
    rising where the stop had read them as stale; docs/defaults.md 4.)"""
    t, best, stale = runs[0].solver.t, holdout.score(start_values), 0
    check = max(per_pass, math.ceil(D.CHECK_ROWS / k))
    while t < t_cap and stale < D.N_ITER_NO_CHANGE:
        t = min(t_cap, t + check)
        rows.advance([runs], t)
        score = holdout.score(values_now())
        if score > best:
            best, stale = score, 0
        else:
            stale += 1
        report(f"pass {t / per_pass:.3g} (sigma {sigma:.3g}): held-out score {score:.4f}, "
               f"best {best:.4f}", t / per_pass, max_passes)


def train_auto(X, y, *, n_jobs=1, merge_every=None, warm_start=None, **kwargs):
    """`pgs.train` with ``sigma="auto"`` and no warm start (`train_on_rows` on
    `InMemoryRows`)."""
    start = time.perf_counter()
    n_jobs = V.check_count("n_jobs", n_jobs)
    merge_every = V.check_count("merge_every", merge_every, allow_none=True)
    return train_on_rows(lambda: InMemoryRows(as_csr_buffers(X, check_entries=False), n_jobs,
                                              merge_every), y, start=start, **kwargs)


def train_on_rows(make_rows, y, *, sigma_grid=None, validation_fraction="auto", seed=None,
                  max_passes=D.DEFAULTS["max_passes"], verbose=0, start=None,
                  loss=D.DEFAULTS["loss"], callback=None, callback_every=None, classes=None,
                  **kwargs):
    """`fit_auto` for `pgs.train`'s arguments on the rows ``make_rows()`` makes once the
    arguments are checked (and closes): the model, with ``model.sigma_grid`` and
    ``model.sigma_scores``. Labels of more than two classes with a binary loss train one
    problem a class on one sigma, scored on the prediction they make together (a
    `OneVsRestModel`); ``loss="auto"`` hinge, or for more than two classes also
    Crammer-Singer, the one that scores better kept (`fit_auto`)."""
    if callback is not None:
        # (a callback follows one run's iterations; the search runs several candidates)
        raise ValueError("callback needs a fixed sigma: sigma='auto' runs several "
                         "candidates (verbose=1 reports the search and each pass)")
    V.check_count("callback_every", callback_every, allow_none=True)
    V.check_bool("keep_state", kwargs.get("keep_state", False))
    if loss != "auto":
        V.check_loss(loss)
    sigma_grid, validation_fraction, verbose = check_search(sigma_grid, validation_fraction,
                                                            verbose)
    max_passes = V.check_positive("max_passes", max_passes)
    seed = seed_entropy(seed)
    many = one_vs_rest(loss, y, classes)
    classification = many or loss == "auto" or loss in V.CLASSIFICATION_LOSSES
    with contextlib.closing(make_rows()) as rows:
        if many:
            y_index, classes = class_indices(y, rows.n_rows, classes)
            losses = auto_losses(len(classes), True) if loss == "auto" else (loss,)
            y_kernel = None
        else:
            losses = ("hinge",) if loss == "auto" else (loss,)
            y_kernel, classes = kernel_targets(y, rows.n_rows, losses[0], classes)
            y_index = y_kernel if losses[0] in V.MULTICLASS_LOSSES else y_kernel > 0 \
                if classification else None
        weights = V.check_sample_weight(kwargs.pop("sample_weight", None), rows.n_rows)
        T = V.check_count("T", kwargs.pop("T", None), allow_none=True)
        per_row = accuracy_per_row(y_index.astype(np.intp), threshold=0.5 if loss == "squared"
                                   else 0.0) if classification \
            else r2_per_row(y_kernel, weights)
        n_classes = len(classes) if classification else 2
        families = [(y_kernel if not many else class_targets(y_index, n_classes, name),
                     dict(loss=name, known_classes=kernel_classes(name, n_classes)))
                    for name in losses]
        models, grid, scores, chosen = fit_auto(
            rows, families, per_row, grid=sigma_grid, validation_fraction=validation_fraction,
            seed=seed, T=T, max_passes=max_passes, sample_weight=weights,
            strata=(y_index if many else y_kernel) if classification else None,
            verbose=verbose, start=start, **kwargs)
    multiclass = losses[chosen] in V.MULTICLASS_LOSSES
    model = ovr_model(models, classes) if many and not multiclass else models[0]
    if classification:
        model.classes = classes
    model.sigma_grid, model.sigma_scores = grid, scores[chosen]
    return model
