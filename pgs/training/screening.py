"""The null model's certificate for the l1 term (docs/sparse.md, "Choosing λ"): w = 0 with
its best bias b0 minimises the objective iff the loss's gradient in w there, g = (1/m) Σ s_i
ℓ'(b0, y_i) x_i, has ‖g‖_∞ <= l1 (the l_p term's subgradient at 0 is 0). `l1_max` is that
norm; a fit at p < 2 whose l1 reaches it returns (0, b0) exactly, where the truncated
dual would keep the noise of its last steps."""

import numpy as np
import scipy.sparse as sp

from pgs._core import py_loss
from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers, kernel_targets
from pgs.rules.losses import loss_spec


def null_point(X, y, loss, sample_weight=None, fit_intercept=False, xt=None):
    """(g, b0): the gradient in w at w = 0, shape (n_features, outputs), and the bias b0
    (one an output) with which w = 0 is optimal; b0 is 0 without a bias and None where no
    finite one is optimal or none is computed (a free bias for regression). A kink at b0
    (hinge) takes the mix of its one-sided derivatives whose mean over the rows is 0, a
    valid subgradient of both w and b. `xt(v)`, if given, is X^T v (X's rows elsewhere:
    `pgs.dask`'s shards), X then giving only the shape."""
    spec = loss_spec(loss)
    Xb = as_csr_buffers(X)
    m = Xb.shape[0]
    csr = sp.csr_matrix((Xb.data, Xb.indices, Xb.indptr), shape=Xb.shape)
    y_kernel, _ = kernel_targets(y, m, loss)
    s = np.ones(m) if sample_weight is None else V.check_sample_weight(sample_weight, m)
    eps = V.check_epsilon(loss, None)
    b0 = 0.0
    if spec.multiclass:         # (softmax at the bias: g_c = p_c - [y = c])
        K = int(y_kernel.max()) + 1
        labels = y_kernel.astype(np.int64)
        share, b0 = np.full(K, 1.0 / K), np.zeros(K)
        if fit_intercept:       # (the bias's optimum: p_c the classes' weighted shares)
            share = np.bincount(labels, weights=s, minlength=K) / max(s.sum(), 1e-300)
            b0 = np.log(share) if np.all(share > 0.0) else None
        g = np.tile(share, (m, 1))
        g[np.arange(m), labels] -= 1.0
    else:
        values, inverse = np.unique(y_kernel, return_inverse=True)
        counts = np.bincount(inverse, weights=s, minlength=values.shape[0])

        def deriv(b):
            return np.array([py_loss(spec.id, b, v, eps, True) for v in values])
        if fit_intercept:
            b0 = _best_bias(spec.id, values, counts, eps) if spec.is_classification else None
        if b0 is None or not fit_intercept:
            d = deriv(0.0)      # (the bias at 0: the kernel's derivative there)
        else:
            step = 1e-9 * max(1.0, abs(b0))
            left, right = deriv(b0 - step), deriv(b0 + step)
            lo, hi = counts @ left, counts @ right
            mix = min(max(hi / (hi - lo), 0.0), 1.0) if hi != lo else 0.5
            d = mix * left + (1.0 - mix) * right
        g = d[inverse][:, None]
    v = g * s[:, None]
    return (csr.T @ v if xt is None else xt(v)) / m, b0


def _best_bias(loss_id, values, counts, eps):
    """argmin_b sum_v counts_v loss(b, v) for two targets: bisection on the mean derivative
    (non-decreasing in b); None where it keeps its sign (one class: b0 infinite)."""
    def mean_deriv(b):
        return sum(c * py_loss(loss_id, b, v, eps, True)
                   for v, c in zip(values, counts, strict=True))
    lo, hi = -1.0, 1.0
    while mean_deriv(lo) > 0.0 or mean_deriv(hi) < 0.0:
        lo, hi = 2.0 * lo, 2.0 * hi
        if hi > 2.0 ** 60:
            return None
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if mean_deriv(mid) < 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


def screen(model, Xb, y_kernel, sample_weight=None, xt=None):
    """`model` (a fit with l1 > 0 on rows `Xb` with targets `y_kernel`, the kernel's) set
    to the null model (0, b0) where l1 reaches the certificate's bound (a free bias or
    none; the constant column's weight is not computed; `xt`: `null_point`'s). At p < 2
    only, and where the model has a non-zero weight: the check costs a product with X (as
    much as a pass at p = 2), and p = 2's dual averaging zeroes a weight whose mean
    gradient is within l1."""
    prm = model.params
    if prm["p"] == 2.0 or not np.any(model.coef) or prm["loss"] == "crammer_singer" or \
            (prm["fit_intercept"] and prm["intercept"] != "free"):
        return model
    g, b0 = null_point(Xb, y_kernel, prm["loss"], sample_weight, prm["fit_intercept"], xt)
    if b0 is None or np.shape(b0) != np.shape(model.intercept) or \
            (g.size and np.max(np.abs(g)) > prm["l1"]):
        return model
    model.coef[...] = 0.0
    model.intercept = b0 if np.ndim(b0) == 0 else np.asarray(b0, dtype=np.float64)
    return model
