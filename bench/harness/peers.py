"""The solvers pgs is compared with, behind small uniform wrappers, and the paper's set-up
of pgs that the experiments run (`PAPER_RUN`).

Every wrapper minimises (or approximates) the same objective as pgs with the same
sigma: F(w) = sigma * ||w||_p^2 / (2 (p-1)) + (1/m) sum_i loss(<w, x_i> + b, y_i),
the bias b being an extra regularised coordinate (a constant feature of value 1), as
in pgs's `PAPER_RUN` (intercept="column", intercept_scaling=1) and LIBLINEAR (-B 1).
"""

import time
import warnings
from types import MappingProxyType

import numpy as np
import scipy.optimize
import scipy.sparse as sp

import pgs

# ---------------------------------------------------------------- pgs

#: The paper's set-up as `pgs.train` ran it by default before the averaged-SGD defaults
#: (#24): `pgs.PAPER` (steps 1 / (sigma t), i.i.d. rows, t_offset 0, a regularised
#: intercept column of value 1) with the last iterate, not the preset's random one. The
#: experiments of the paper's algorithm pass it explicitly (with `PAPER_SIGMA` where they
#: left sigma to the default), so that they measure what they measured before the
#: defaults changed; `paper_run` overrides some of its values.
PAPER_RUN = MappingProxyType(dict(pgs.PAPER, iterate="last"))
#: `pgs.train`'s default sigma before #24 (now "auto").
PAPER_SIGMA = 1e-4


def paper_run(**kwargs):
    """`PAPER_RUN` updated with `kwargs` (any `pgs.train` arguments): a new dict."""
    return dict(PAPER_RUN, **kwargs)


def run_pgs(X, y, *, sampling=None, **kwargs):
    """pgs.train timed with perf_counter; returns (seconds, model)."""
    if sampling is not None:
        kwargs["sampling"] = sampling
    t0 = time.perf_counter()
    model = pgs.train(X, y, **kwargs)
    return time.perf_counter() - t0, model


# ---------------------------------------------------------------- scikit-learn SGD

_SKLEARN_LOSS = {"hinge": "hinge", "logistic": "log_loss", "squared": "squared_error"}


def run_sgd(X, y, *, loss, sigma, passes=1, shuffle=True, seed=0):
    """sklearn's SGDClassifier (l2, alpha = sigma, Pegasos-like 'optimal' step), timed.

    One pass is m samples (max_iter=passes, tol=None). Returns (seconds, estimator).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier
    clf = SGDClassifier(loss=_SKLEARN_LOSS[loss], penalty="l2", alpha=sigma, max_iter=passes,
                        tol=None, shuffle=shuffle, random_state=seed, fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        clf.fit(X, y)
        return time.perf_counter() - t0, clf


def sgd_curve(X, y, X_test, y_test, *, loss, sigma, passes, shuffle=True, seed=0, **params):
    """Test accuracy after each pass of SGDClassifier.partial_fit; evaluation is not timed.

    `params` go to SGDClassifier as they are (e.g. average, learning_rate, eta0).
    Returns (cumulative seconds, accuracies) per pass.
    """
    from sklearn.linear_model import SGDClassifier
    clf = SGDClassifier(loss=_SKLEARN_LOSS[loss], penalty="l2", alpha=sigma, shuffle=shuffle,
                        random_state=seed, fit_intercept=True, **params)
    classes = np.unique(y)
    times, accs, total = [], [], 0.0
    for _ in range(passes):
        t0 = time.perf_counter()
        clf.partial_fit(X, y, classes=classes)
        total += time.perf_counter() - t0
        times.append(total)
        accs.append(float(np.mean(clf.predict(X_test) == y_test)))
    return times, accs


# ---------------------------------------------------------------- LIBLINEAR

LIBLINEAR_SOLVERS = {"hinge": 3, "logistic": 0, "logistic_dual": 7}


def liblinear_available():
    """True when the liblinear-official package imports."""
    try:
        import liblinear.liblinearutil  # noqa: F401
    except ImportError:
        return False
    return True


def liblinear_problem(X, y):
    """LIBLINEAR's own copy of (X, y) with a bias feature; returns (seconds, problem)."""
    from liblinear.liblinearutil import problem
    t0 = time.perf_counter()
    prob = problem(np.asarray(y, dtype=np.float64), sp.csr_matrix(X, dtype=np.float64))
    prob.set_bias(1.0)
    return time.perf_counter() - t0, prob


def run_liblinear(prob, m, *, solver, sigma, eps=None):
    """Train LIBLINEAR on a prepared problem with C = 1 / (sigma m); returns (seconds, (w, b)).

    The C-form objective (1/2)||w||^2 + C sum loss is m*C times sigma's form, so both
    have the same minimiser. The returned (w, b) give decision values whose sign
    predicts +1.
    """
    from liblinear.liblinearutil import parameter, train
    opts = f"-s {LIBLINEAR_SOLVERS[solver]} -c {1.0 / (sigma * m):.10g} -B 1 -q"
    if eps is not None:
        opts += f" -e {eps:g}"
    t0 = time.perf_counter()
    model = train(prob, parameter(opts))
    seconds = time.perf_counter() - t0
    w, b = model.get_decfun()
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    return seconds, (sign * np.asarray(w), sign * b)


# ---------------------------------------------------------------- L-BFGS on the objective


def _loss_and_dz(z, y, loss):
    if loss == "logistic":
        yz = y * z
        value = np.logaddexp(0.0, -yz)
        dz = -y * np.exp(-np.logaddexp(0.0, yz))  # -y / (1 + exp(yz)), overflow-free
    elif loss == "squared":
        r = z - y
        value, dz = r * r, 2.0 * r
    else:
        raise ValueError(f"L-BFGS needs a differentiable loss, got {loss!r}")
    return value, dz


def objective_and_gradient(wb, X, y, loss, p, sigma):
    """F(w, b) and its gradient, vectorised with scipy.sparse (b is regularised too)."""
    m = X.shape[0]
    w, b = wb[:-1], wb[-1]
    value, dz = _loss_and_dz(X @ w + b, y, loss)
    dz /= m
    grad = np.empty_like(wb)
    grad[:-1] = X.T @ dz
    grad[-1] = dz.sum()
    if p == 2.0:
        reg, reg_grad = 0.5 * sigma * (wb @ wb), sigma * wb
    else:
        a = np.abs(wb)
        norm = np.sum(a ** p) ** (1.0 / p)
        reg = sigma * norm * norm / (2.0 * (p - 1.0))
        reg_grad = (sigma / (p - 1.0)) * norm ** (2.0 - p) * np.sign(wb) * a ** (p - 1.0) \
            if norm > 0 else np.zeros_like(wb)
    return value.mean() + reg, grad + reg_grad


def lbfgs_curve(X, y, *, loss="logistic", p=2.0, sigma, maxiter=200, tol=1e-10, ftol=1e-15,
                until=None):
    """L-BFGS-B on the objective, recording (seconds since start, w, b) at every iteration.

    `tol` and `ftol` are L-BFGS-B's gtol and ftol (tight by default: run to `maxiter`).
    `until(w, b) -> bool`, if given, is called after every iteration with its own time
    excluded from the clock; returning True stops the run. Returns (times, list of
    (w, b), OptimizeResult or None when stopped by `until`).
    """
    X = sp.csr_matrix(X)
    n = X.shape[1]
    times, iterates = [], []
    excluded = [0.0]
    t0 = time.perf_counter()

    def record(xk):
        now = time.perf_counter()
        times.append(now - t0 - excluded[0])
        iterates.append((xk[:n].copy(), float(xk[n])))
        if until is not None:
            stop = until(*iterates[-1])
            excluded[0] += time.perf_counter() - now
            if stop:
                raise StopIteration

    res = None
    try:
        res = scipy.optimize.minimize(objective_and_gradient, np.zeros(n + 1),
                                      args=(X, y, loss, p, sigma), jac=True, method="L-BFGS-B",
                                      callback=record, options={"maxiter": maxiter, "gtol": tol,
                                                                "ftol": ftol, "maxcor": 10})
    except StopIteration:
        pass
    return times, iterates, res


def batch_optimum(X, y, *, loss="logistic", p=2.0, sigma, maxiter=500):
    """The minimiser (w, b) of the objective by L-BFGS (gtol 1e-8, ftol 1e-12, maxiter)."""
    _, iterates, res = lbfgs_curve(X, y, loss=loss, p=p, sigma=sigma, maxiter=maxiter,
                                   tol=1e-8, ftol=1e-12)
    n = X.shape[1]
    return res.x[:n].copy(), float(res.x[n])
