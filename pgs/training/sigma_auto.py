"""``sigma="auto"``: pick sigma from a grid by a held-out split, training the grid in lock-step.

The grid's problems share the training rows and the seed, so they draw the same rows and
`pgs.engine.solver.run_lockstep` fetches each row once for all. The chosen sigma is then
refitted on all the rows: the final model is exactly a plain fit at it.
"""

import math
from typing import NamedTuple

import numpy as np

from pgs.models.pgs_model import Model
from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers, check_targets
from pgs.training.fit import check_sample_weight, default_T, fit, fit_many

#: Default grid: these factors times ``mean_i ||x_i||^2 / m`` (scale-free, and moving as 1/m
#: as the best sigma does; bench/experiments/exp_defaults.py measured best factors of 0.03-3).
DEFAULT_GRID_FACTORS = tuple(float(c) for c in 10.0 ** np.arange(-2.0, 1.01, 0.5))
#: The grid runs take this share of the final fit's passes: on bench/experiments/exp_defaults.py's
#: classification sets as good as full runs at a fifth of the cost ("auto" within 3x one fit;
#: 0.3 took 3.2x); on its sparse regression set it favours a larger sigma (R^2 0.60, not 0.67).
GRID_T_FRACTION = 0.2


class SigmaSearch(NamedTuple):
    """`search_sigma`'s outcome: the chosen sigma, the ascending grid and its scores."""

    sigma: float
    grid: np.ndarray
    scores: np.ndarray


def is_auto(sigma):
    """True when `sigma` is the string "auto" (the other strings are errors)."""
    if isinstance(sigma, str):
        if sigma != "auto":
            raise TypeError(f"sigma must be a float > 0 or 'auto', got sigma={sigma!r}")
        return True
    return False


def check_sigma(sigma):
    """Validate `sigma`: "auto" or a float > 0 (returned as such; TypeError for other strings)."""
    return "auto" if is_auto(sigma) else V.check_positive("sigma", sigma)


def check_validation_fraction(fraction):
    """Validate `validation_fraction`: a float in (0, 1)."""
    if not V.is_real(fraction) or not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"validation_fraction must be a float in (0, 1), "
                         f"got validation_fraction={fraction!r}")
    return float(fraction)


def check_sigma_grid(grid):
    """None (the default grid), or the non-empty `sigma_grid` of floats > 0 as an ascending
    float64 array without duplicates."""
    if grid is None:
        return None
    if isinstance(grid, (str, bytes)) or not np.iterable(grid):
        raise TypeError(f"sigma_grid must be None or a sequence of floats > 0, "
                        f"got sigma_grid={grid!r}")
    values = [V.check_positive("sigma_grid entry", s) for s in grid]
    if not values:
        raise ValueError("sigma_grid must hold at least one value, got an empty sequence")
    return np.unique(np.asarray(values, dtype=np.float64))


def default_sigma_grid(Xb):
    """`DEFAULT_GRID_FACTORS` times ``mean_i ||x_i||^2 / m`` (times 1 / m if X is 0)."""
    m = max(Xb.shape[0], 1)
    data = np.asarray(Xb.data, dtype=np.float64)
    mean_sq = float(np.dot(data, data)) / m
    if not 0.0 < mean_sq < math.inf:
        mean_sq = 1.0
    return np.asarray(DEFAULT_GRID_FACTORS) * (mean_sq / m)


def validation_split(n_rows, fraction, seed, strata=None):
    """Sorted row indices (train, validation), shuffled by `seed`, stratified by `strata`:
    each stratum gives ``floor(fraction * n_c)`` rows to validation, at least one of two."""
    rng = np.random.default_rng([seed, 0x5167])   # (its own stream, not the sampler's)
    groups = [np.arange(n_rows)] if strata is None else \
        [np.flatnonzero(strata == c) for c in np.unique(strata)]
    val = []
    for rows in groups:
        n_c = rows.shape[0]
        n_val = int(fraction * n_c) if n_c < 2 else min(max(1, int(fraction * n_c)), n_c - 1)
        val.append(rng.permutation(rows)[:n_val])
    val = np.sort(np.concatenate(val)).astype(np.int64)
    train = np.setdiff1d(np.arange(n_rows, dtype=np.int64), val)
    return train, val


def accuracy_standard_error(accuracy, n_eff):
    """The standard error of an accuracy measured on `n_eff` (effective) rows."""
    return math.sqrt(max(accuracy * (1.0 - accuracy), 0.0) / max(n_eff, 1.0))


def r2_standard_error(r2, n_eff):
    """The standard error of an R^2 on `n_eff` rows: (1 - R^2) sqrt(2 / n), that of the mean
    of n squared Gaussian residuals."""
    return max(1.0 - r2, 0.0) * math.sqrt(2.0 / max(n_eff, 1.0))


def choose(grid, scores, standard_error):
    """The largest sigma whose score is within `standard_error` of the best (Breiman et al.'s
    one-standard-error rule: the short grid runs cannot tell the small sigmas apart). NaN
    scores never win; all NaN: the largest sigma."""
    finite = np.isfinite(scores)
    if not np.any(finite):
        return float(grid[-1])
    best = float(np.max(scores[finite]))
    tolerance = standard_error if math.isfinite(standard_error) else 0.0
    ok = np.flatnonzero(finite & (scores >= best - tolerance))
    return float(grid[ok[-1]])


def weighted_r2(y_true, y_pred, sample_weight=None):
    """(Weighted) coefficient of determination; 0 for a constant target (no spread)."""
    mean = np.average(y_true, weights=sample_weight)
    ss_tot = float(np.average((y_true - mean) ** 2, weights=sample_weight))
    ss_res = float(np.average((y_true - y_pred) ** 2, weights=sample_weight))
    if ss_tot == 0.0:
        return 0.0 if ss_res == 0.0 else -math.inf
    return 1.0 - ss_res / ss_tot


def search_sigma(Xb, targets, score, *, grid, validation_fraction, seed, T,
                 sample_weight=None, strata=None, n_jobs=1, **train_kwargs):
    """Train every grid value (None: `default_sigma_grid`) on a training split, each of the
    `targets` (one per problem) in lock-step, for `GRID_T_FRACTION` of `T`'s passes; score
    them on the rest (tiny data: on the training rows) with ``score(models, X_val, rows)``,
    higher is better, whose ``score.standard_error(best, n_eff)`` is `choose`'s tolerance."""
    if grid is None:
        grid = default_sigma_grid(Xb)
    m = Xb.shape[0]
    k = V.check_count("k", train_kwargs.get("k", 1))
    if k > m and not train_kwargs.get("k_above_rows", False):
        raise ValueError(f"k must be at most the number of rows of X, got k={k} for {m} rows")
    # (the training split may have fewer rows than k: its batches then repeat rows)
    train_kwargs["k_above_rows"] = True
    train, val = validation_split(m, validation_fraction, seed, strata)
    if val.shape[0] == 0:
        train = val = np.arange(m, dtype=np.int64)
    X_train, X_val = Xb.matrix()[train], Xb.matrix()[val]
    weights = validation_weights(sample_weight, train)   # (None if val had all the weight)
    T_train = max(1, math.ceil(GRID_T_FRACTION * T * train.shape[0] / m))
    ys = [np.ascontiguousarray(y[train]) for y in targets]
    n = len(ys)
    X_train = as_csr_buffers(X_train, check_entries=False)   # (one row scan for all)
    # One grid value per thread at a time (its n problems in lock-step), freed once scored:
    # the search holds no more state than the fit (its models do not depend on the grouping).
    per = max(1, n_jobs) if n == 1 else 1
    scores = []
    for lo in range(0, grid.shape[0], per):
        values = grid[lo:lo + per]
        models = fit_many(X_train, ys * values.shape[0], seed=seed, T=T_train,
                          n_jobs=n_jobs if values.shape[0] * n > 1 else 1, sample_weight=weights,
                          per_problem=[{"sigma": float(s)} for s in values for _ in range(n)],
                          **train_kwargs)
        scores += [score(models[g * n:(g + 1) * n], X_val, val) for g in range(values.shape[0])]
        del models
    scores = np.array(scores, dtype=np.float64)
    w_val = validation_weights(sample_weight, val)
    # (Kish's effective size, with the weights scaled to a maximum of 1: no overflow)
    w_val = None if w_val is None else w_val / np.max(w_val)
    n_eff = float(val.shape[0]) if w_val is None else \
        float(np.sum(w_val)) ** 2 / float(np.sum(w_val * w_val))
    best = float(np.nanmax(scores)) if np.any(np.isfinite(scores)) else math.nan
    return SigmaSearch(choose(grid, scores, score.standard_error(best, n_eff)), grid, scores)


def validation_weights(sample_weight, rows):
    """The weights of `rows`, or None (no weights, or all zero there)."""
    if sample_weight is None:
        return None
    w = sample_weight[rows]
    return w if np.any(w > 0) else None


def classifier_score(y_index, weights, *, threshold=0.0):
    """`search_sigma`'s score for one-vs-rest problems: the (weighted) accuracy of the argmax
    against `y_index`; a single problem predicts class 1 above `threshold`."""
    def score(models, X_val, rows):
        Z = np.asarray(X_val @ np.column_stack([model.coef for model in models]))
        Z = Z + np.array([model.intercept for model in models])
        pred = (Z[:, 0] > threshold).astype(np.intp) if len(models) == 1 else Z.argmax(axis=1)
        return float(np.average(y_index[rows] == pred, weights=validation_weights(weights, rows)))
    score.standard_error = accuracy_standard_error
    return score


def regressor_score(y, weights):
    """`search_sigma`'s score for one regression problem: the (weighted) R^2."""
    def score(models, X_val, rows):
        return weighted_r2(y[rows], models[0].decision_function(X_val),
                           validation_weights(weights, rows))
    score.standard_error = r2_standard_error
    return score


def train_auto(X, y, *, sigma_grid, validation_fraction, seed, warm_start, **kwargs):
    """`pgs.train` with ``sigma="auto"``: `search_sigma`, then a plain fit at the winner (with
    ``sigma_grid`` and ``sigma_scores``); a warm start keeps its model's sigma."""
    if isinstance(warm_start, Model):
        return fit(X, y, sigma=warm_start.params["sigma"], seed=seed, warm_start=warm_start,
                    **kwargs)
    if warm_start is not None:
        raise TypeError(f"warm_start must be a pgs.Model, got {type(warm_start).__name__}")
    seed = resolve_seed(seed)
    loss = kwargs["loss"]
    V.check_loss(loss)
    Xb = as_csr_buffers(X, check_entries=False)
    m = Xb.shape[0]
    classification = loss in V.CLASSIFICATION_LOSSES
    y_kernel, _ = check_targets(y, m, classification=classification)
    weights = check_sample_weight(kwargs.get("sample_weight"), m)
    T = V.check_count("T", kwargs.get("T"), allow_none=True)
    T = default_T(m, V.check_count("k", kwargs.get("k", 1))) if T is None else T

    score = (classifier_score((y_kernel > 0).astype(np.intp), weights) if classification
             else regressor_score(y_kernel, weights))
    search_kwargs = {key: value for key, value in kwargs.items()
                     if key not in ("T", "sample_weight", "callback", "callback_every",
                                    "keep_state", "merge_every")}
    search = search_sigma(Xb, [y_kernel], score, grid=sigma_grid,
                          validation_fraction=validation_fraction, seed=seed, T=T,
                          sample_weight=weights, strata=y_kernel if classification else None,
                          known_classes=np.array([-1.0, 1.0]) if classification else None,
                          **search_kwargs)
    model = fit(Xb, y, sigma=search.sigma, seed=seed, **kwargs)
    model.sigma_grid, model.sigma_scores = search.grid, search.scores
    return model


def resolve_seed(seed):
    """An int seed: `seed` itself, or fresh entropy for None (one draw for split and runs)."""
    seed = V.check_seed(seed)
    if seed is None:
        seed = np.random.SeedSequence()
    return int(seed.entropy) if isinstance(seed, np.random.SeedSequence) else seed
