"""A built-in example: a generated sparse text-like problem, trained and scored."""

import time

import numpy as np
import scipy.sparse as sp


def make_sparse_classification(n_samples=20000, n_features=5000, nnz_per_row=40,
                               noise=0.05, seed=0):
    """Generate a sparse, L2-normalised binary problem with Zipf-like feature popularity.

    Parameters
    ----------
    n_samples, n_features, nnz_per_row : int
        Shape and (approximate) non-zeros per row.
    noise : float
        Fraction of labels flipped.
    seed : int
        Seed; the output is a deterministic function of the arguments.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64
    y : ndarray of {-1, +1}
    """
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n_features + 1) ** 1.1
    popularity /= popularity.sum()
    cols = rng.choice(n_features, size=(n_samples, nnz_per_row), p=popularity)
    vals = rng.lognormal(0.0, 0.5, size=(n_samples, nnz_per_row))
    rows = np.repeat(np.arange(n_samples), nnz_per_row)
    X = sp.csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(n_samples, n_features))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    w_true = rng.standard_normal(n_features) * (rng.random(n_features) < 0.2)
    y = np.where(X @ w_true > 0, 1.0, -1.0)
    flip = rng.random(n_samples) < noise
    y[flip] = -y[flip]
    return X, y


def run_demo(out=print):
    """Train on a generated problem with the defaults (sigma chosen on held-out rows) and
    print rows, time, the sigma chosen, accuracy and objective."""
    from pgs.training.train import train

    X, y = make_sparse_classification()
    n_train = 16000
    X_tr, y_tr, X_te, y_te = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    out(f"data: {X_tr.shape[0]} train / {X_te.shape[0]} test rows, {X.shape[1]} features, "
        f"{X_tr.nnz} non-zeros (generated, seed 0)")
    for p in (2.0, 1.8):
        start = time.perf_counter()
        model = train(X_tr, y_tr, loss="hinge", p=p, seed=0)
        seconds = time.perf_counter() - start
        acc_tr = np.mean(model.predict(X_tr) == y_tr)
        acc_te = np.mean(model.predict(X_te) == y_te)
        out(f"hinge p={p}: sigma {model.params['sigma']:.3g} (chosen on held-out rows), "
            f"T={model.T} iterations, {seconds:.3f} s in all, "
            f"objective {model.objective(X_tr, y_tr):.4f}, "
            f"train accuracy {acc_tr:.4f}, test accuracy {acc_te:.4f}")
