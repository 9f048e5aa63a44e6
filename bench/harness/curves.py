"""Test-accuracy-versus-training-time curves for every solver (evaluation is never timed)."""

import time

import numpy as np

from bench.harness import peers
from bench.harness.common import accuracy


def pgs_path(X, y, T_list, **kwargs):
    """Yield (seconds, model) after each T in increasing `T_list`, along one training path.

    The path is one run continued chunk by chunk (`warm_start`, `keep_state`:
    bit-identical to an unsplit run, so each point costs only its extra iterations) and
    `seconds` is the cumulative time of the train() calls.
    """
    model, total, done = None, 0.0, 0
    for T in T_list:
        seconds, model = peers.run_pgs(X, y, T=int(T) - done, keep_state=True,
                                       warm_start=model, **kwargs)
        total += seconds
        done = int(T)
        yield total, model


def pgs_curve(X, y, X_test, y_test, T_list, **kwargs):
    """Test accuracy of pgs after each T in `T_list` (see `pgs_path`); (times, accs).

    Each point's time is that of one fresh pgs.train call with that T (timed after
    the path has been evaluated), so it includes exactly one call's fixed cost.
    """
    accs = [accuracy(y_test, model.decision_function(X_test))
            for _, model in pgs_path(X, y, T_list, **kwargs)]
    times = [peers.run_pgs(X, y, T=int(T), **kwargs)[0] for T in T_list]
    return times, accs


def pgs_passes_curve(X, y, X_test, y_test, passes, seed, **params):
    """pgs.train after each of `passes` (increasing, may be fractions of m / k), along
    one run continued by warm starts (`pgs_path`); (cumulative s, accs)."""
    T_list = [max(1, int(f * X.shape[0] / params.get("k", 1))) for f in passes]
    times, accs = [], []
    for seconds, model in pgs_path(X, y, T_list, seed=seed, **params):
        times.append(seconds)
        accs.append(float(np.mean(model.predict(X_test) == y_test)))
    return times, accs


def estimator_curve(X, y, X_test, y_test, passes, seed, **params):
    """PGSClassifier(**params) after each of `passes` (increasing, may be fractions),
    continued by warm starts (fit time only); (cumulative s, accs)."""
    from pgs import PGSClassifier

    est = PGSClassifier(random_state=seed, warm_start=True, **params)
    m, k = X.shape[0], est.k
    times, accs, total, done = [], [], 0.0, 0
    for f in passes:
        T = max(1, int(f * m / k))
        est.set_params(T=T - done)
        t0 = time.perf_counter()
        est.fit(X, y)
        total += time.perf_counter() - t0
        done = T
        times.append(total)
        accs.append(float(np.mean(est.predict(X_test) == y_test)))
    return times, accs


def liblinear_curve(prob, m, X_test, y_test, *, solver, sigma, eps_list):
    """LIBLINEAR run once per stopping tolerance in `eps_list`; returns (times, accs)."""
    times, accs = [], []
    for eps in eps_list:
        seconds, (w, b) = peers.run_liblinear(prob, m, solver=solver, sigma=sigma, eps=eps)
        times.append(seconds)
        accs.append(accuracy(y_test, X_test @ w + b))
    return times, accs


def lbfgs_test_curve(X, y, X_test, y_test, *, loss="logistic", p=2.0, sigma, maxiter):
    """L-BFGS on the objective: (times, accs) at every iteration, from one timed run."""
    times, iterates, _ = peers.lbfgs_curve(X, y, loss=loss, p=p, sigma=sigma, maxiter=maxiter)
    accs = [accuracy(y_test, X_test @ w + b) for w, b in iterates]
    return times, accs


def sgd_test_curve(X, y, X_test, y_test, *, loss, sigma, passes, seed, shuffle=True):
    """SGDClassifier, one partial_fit per pass; (cumulative times, accs)."""
    return peers.sgd_curve(X, y, X_test, y_test, loss=loss, sigma=sigma, passes=passes,
                           shuffle=shuffle, seed=seed)


def median_curve(curves):
    """Pointwise median, min and max of same-length (times, accs) curves.

    Returns (median times, median accs, min accs, max accs).
    """
    t = np.array([c[0] for c in curves], dtype=np.float64)
    a = np.array([c[1] for c in curves], dtype=np.float64)
    return np.median(t, axis=0), np.median(a, axis=0), a.min(axis=0), a.max(axis=0)


def time_to_target(curve, target):
    """First time at which a (times, accs) curve reaches `target` accuracy, else NaN.

    The time is the elapsed time of the first point at or above the target; since
    accuracy is only observed at the curve's points, this is an upper bound.
    """
    for t, a in zip(curve[0], curve[1], strict=True):
        if a >= target:
            return t
    return np.nan
