"""A plain NumPy transcription of CSGD's Algorithm 1 (Mu et al., KDD 2013), for the tests.

O(n_features) per step: w, the running means xbar_t and ybar_t are materialised at
every step exactly as the paper writes them, independently of the compiled kernel's
O(nnz) representation.
"""

import numpy as np


def step_size(variant, eta0, switch, t):
    """eta_t of step t >= 1 (the paper's section 4.2 for "csgd")."""
    if variant == "csgd" and t >= switch:
        return eta0 * np.sqrt(switch) / t
    return eta0 / np.sqrt(t)


def csgd_reference(X, y, rows, *, eta0, variant="csgd", switch=1, fit_intercept=True,
                   iterate="last"):
    """Run Algorithm 1 on the row sequence `rows`; return (coef, intercept).

    X is dense (n_samples, n_features); y is (n_samples,) or (n_samples, K) — with K
    columns, K independent regressors see the same rows (C-Adaline's Algorithm 2).
    The paper's leading constant 1 is prepended when fit_intercept. With every
    seen row zero (||xbar|| = 0), the hyperplane is undefined and the step is not
    projected.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    single = Y.ndim == 1
    if single:
        Y = Y[:, None]
    m, n = X.shape
    K = Y.shape[1]
    if fit_intercept:
        X = np.hstack([np.ones((m, 1)), X])
    d = X.shape[1]
    W = np.zeros((d, K))
    xbar = np.zeros(d)
    ybar = np.zeros(K)
    wsum = np.zeros((d, K))
    for t, i in enumerate(rows, start=1):
        x, yt = X[i], Y[i]
        eta = step_size(variant, eta0, switch, t)
        g = -np.outer(x, yt - x @ W)            # gradient of (y - <w, x>)^2 / 2
        v = W - eta * g
        if variant != "sgd":
            xbar = (t - 1) / t * xbar + x / t
            ybar = (t - 1) / t * ybar + yt / t
            nrm = xbar @ xbar
            if nrm > 0:
                v = v - np.outer(xbar, xbar @ v - ybar) / nrm
        W = v
        wsum += W
    if iterate == "average":
        W = wsum / len(rows)
    if fit_intercept:
        coef, intercept = W[1:], W[0]
    else:
        coef, intercept = W, np.zeros(K)
    if single:
        return coef[:, 0], float(intercept[0])
    return coef, intercept
