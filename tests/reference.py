"""Plain NumPy transcriptions of the papers' pseudo-code, O(n) per iteration, for the tests.

Written from docs/design.md (and the papers), independently of the compiled kernel: they
materialise w at every step, exactly as the paper's Figure 1 does.
"""

import numpy as np


def _sigmoid_neg(m):
    """1 / (1 + exp(m)) for a scalar m, without ever evaluating exp of a large positive number."""
    # (np.where would evaluate both branches and overflow: an error under the suite's filters.)
    m = float(m)
    if m > 0:
        e = np.exp(-m)
        return e / (1.0 + e)
    return 1.0 / (1.0 + np.exp(m))


#: The K-output losses' scalar forms: two classes, z = z_1 - z_0, y = +-1 (docs/design.md 6d).
BINARY_TWIN = {"multinomial": "logistic", "crammer_singer": "hinge"}


def dloss(loss, z, y, eps):
    """Derivative of each loss in z, transcribed from its textbook definition."""
    loss = BINARY_TWIN.get(loss, loss)
    m = y * z
    if loss == "hinge":
        return -y if m < 1 else 0.0
    if loss == "logistic":
        return -y * float(_sigmoid_neg(m))
    if loss == "squared":
        return 2.0 * (z - y)
    if loss == "squared_hinge":
        return -2.0 * y * max(0.0, 1 - m)
    if loss == "smooth_hinge":
        if m >= 1:
            return 0.0
        if m <= 1 - eps:
            return -y
        return -y * (1 - m) / eps
    if loss == "modified_huber":
        if m >= 1:
            return 0.0
        if m >= -1:
            return -2.0 * y * (1 - m)
        return -4.0 * y
    if loss == "huber":
        return float(np.clip(z - y, -eps, eps))
    if loss == "epsilon_insensitive":
        r = z - y
        return 1.0 if r > eps else (-1.0 if r < -eps else 0.0)
    if loss == "absolute":
        return float(np.sign(z - y))
    raise ValueError(loss)


def loss_value(loss, z, y, eps):
    """Value of each loss (vectorised over z, y)."""
    loss = BINARY_TWIN.get(loss, loss)
    z = np.asarray(z, dtype=float)
    y = np.asarray(y, dtype=float)
    m = y * z
    if loss == "hinge":
        return np.maximum(0.0, 1 - m)
    if loss == "logistic":
        return np.logaddexp(0.0, -m)
    if loss == "squared":
        return (z - y) ** 2
    if loss == "squared_hinge":
        return np.maximum(0.0, 1 - m) ** 2
    if loss == "smooth_hinge":
        return np.where(m >= 1, 0.0,
                        np.where(m <= 1 - eps, 1 - m - eps / 2, (1 - m) ** 2 / (2 * eps)))
    if loss == "modified_huber":
        return np.where(m >= 1, 0.0, np.where(m >= -1, (1 - m) ** 2, -4 * m))
    if loss == "huber":
        a = np.abs(z - y)
        return np.where(a <= eps, 0.5 * a**2, eps * a - 0.5 * eps**2)
    if loss == "epsilon_insensitive":
        return np.maximum(0.0, np.abs(z - y) - eps)
    if loss == "absolute":
        return np.abs(z - y)
    raise ValueError(loss)


def grad_r_star(theta, p):
    """The mirror map: grad r*(theta)_j = (p-1) ||theta||_q^(2-q) sign(theta_j) |theta_j|^(q-1).

    Evaluated on theta / max|theta| (the map is positively homogeneous of degree 1), so that
    |theta_j|^q neither overflows nor underflows when q is large (p near 1).
    """
    q = p / (p - 1)
    scale = np.max(np.abs(theta))
    if scale == 0:
        return np.zeros_like(theta)
    r = theta / scale
    norm_q = np.sum(np.abs(r) ** q) ** (1 / q)
    return scale * (p - 1) * norm_q ** (2 - q) * np.sign(r) * np.abs(r) ** (q - 1)


def pgs_reference(X, y, *, loss, p, sigma, T, k, rows, B=None, icpt=0.0, eps=0.0,
                  t_offset=0.0):
    """The Primal Gradient Solver of Zhu et al. (2009), Figure 1, on a dense X.

    `rows` holds the T*k sampled row indices; returns the list of iterates
    w_1..w_T, each of length n_features + 1 (the last entry is the weight of
    the constant column of value `icpt`). `t_offset` = t0 replaces the mapping's
    t sigma by (t + t0) sigma (0: the paper's Figure 1).
    """
    X = np.asarray(X, dtype=float)
    m, n = X.shape
    Xa = np.hstack([X, np.full((m, 1), icpt)])
    lam = np.zeros(n + 1)
    w = np.zeros(n + 1)
    iterates = []
    for t in range(1, T + 1):
        batch = rows[(t - 1) * k: t * k]
        lam_t = np.zeros(n + 1)
        for i in batch:
            lam_t += dloss(loss, Xa[i] @ w, y[i], eps) * Xa[i]
        lam = lam - lam_t / k
        w = grad_r_star(lam / ((t + t_offset) * sigma), p)
        if B is not None:
            norm_w = np.sum(np.abs(w) ** p) ** (1 / p)
            if norm_w > B:
                w = w * (B / norm_w)
        iterates.append(w.copy())
    return iterates


def pegasos_reference(X, y, *, sigma, T, rows):
    """Pegasos (Shalev-Shwartz et al.), k = 1, no projection, no bias, its own update rule.

    w_{t+1} = (1 - 1/t) w_t + 1[y <w_t, x> < 1] y x / (sigma t).
    """
    X = np.asarray(X, dtype=float)
    w = np.zeros(X.shape[1])
    iterates = []
    for t in range(1, T + 1):
        i = rows[t - 1]
        hit = y[i] * (X[i] @ w) < 1
        w = (1 - 1 / t) * w
        if hit:
            w = w + y[i] * X[i] / (sigma * t)
        iterates.append(w.copy())
    return iterates


def sgd_offset_reference(X, y, *, loss, sigma, T, rows, t_offset, icpt=0.0, eps=0.0):
    """Plain SGD on sigma/2 ||w||^2 + loss with step 1/(sigma (t + t0)), k = 1, from w = 0.

    scikit-learn's "optimal" schedule (its t0 from a heuristic, here given): per step
    w <- (1 - eta sigma) w - eta loss'(<w, x>, y) x, eta = 1/(sigma (t + t0)). The
    constant column of value `icpt` is part of w and regularised like the rest.
    """
    X = np.asarray(X, dtype=float)
    m, n = X.shape
    Xa = np.hstack([X, np.full((m, 1), icpt)])
    w = np.zeros(n + 1)
    iterates = []
    for t in range(1, T + 1):
        i = rows[t - 1]
        eta = 1.0 / (sigma * (t + t_offset))
        g = dloss(loss, Xa[i] @ w, y[i], eps)
        w = (1.0 - eta * sigma) * w - eta * g * Xa[i]
        iterates.append(w.copy())
    return iterates


def _projected(w, p, B):
    """w rescaled into ||w||_p <= B (B None: unbounded)."""
    if B is not None:
        norm_w = np.sum(np.abs(w) ** p) ** (1 / p)
        if norm_w > B:
            return w * (B / norm_w)
    return w


def _round_steps(total, sizes):
    """A round's `total` iterations split in proportion to the shard sizes (largest
    remainders, ties to the lower index)."""
    m = sum(sizes)
    steps = [total * s // m for s in sizes]
    rests = sorted(range(len(sizes)), key=lambda v: (-(total * sizes[v] % m), v))
    for v in rests[:total - sum(steps)]:
        steps[v] += 1
    return steps


def pgs_rounds_reference(X, y, *, loss, p, sigma, T, bounds, tau, B=None, icpt=0.0, eps=0.0,
                         t_offset=0.0, l1=0.0):
    """Parallel PGS by merging dual states (docs/parallel.md), W = len(bounds) workers,
    rows taken cyclically within each shard (``sampling="cyclic"``), k = 1.

    A round runs min(W tau, T - t) iterations, split in proportion to the shard sizes
    (largest remainders, ties to the lower index). Worker w starts from rho lam at the
    iteration offset rho (t + t_offset), rho = its share of the round, and runs plain PGS
    on its shard; the merge adds the workers' changes to lam and their iterations to t.
    Returns (w_T from the merged lam, the local iterates in order: round by round,
    worker by worker). With `l1` (p < 2: docs/sparse.md) each worker truncates its lam
    eagerly (`truncated`, l1 more owed each step), starting from the round's lam owing
    nothing, and a coordinate every worker truncated to 0 stays 0 in the merge.
    """
    Xa = _with_column(X, icpt)
    return _rounds(Xa.shape[1], T=T, bounds=bounds, tau=tau, sigma=sigma, t_offset=t_offset,
                   iterate=lambda theta: _projected(grad_r_star(theta, p), p, B),
                   gradient=lambda w, i: dloss(loss, Xa[i] @ w, y[i], eps) * Xa[i], l1=l1)


def multiclass_rounds_reference(X, y, n_classes, *, loss, p, sigma, T, bounds, tau, B=None,
                                icpt=0.0, t_offset=0.0):
    """`pgs_rounds_reference` with K outputs: each worker runs the K-output step of
    `multiclass_reference` (the paper's step, no free bias) from rho Lam, and the merge
    adds the workers' changes to every class's lam. Returns (W_T, the local iterates)."""
    Xa = _with_column(X, icpt)
    return _rounds((n_classes, Xa.shape[1]), T=T, bounds=bounds, tau=tau, sigma=sigma,
                   t_offset=t_offset,
                   iterate=lambda Lam: np.array([_projected(grad_r_star(lc, p), p, B)
                                                 for lc in Lam]),
                   gradient=lambda W, i: np.outer(
                       multiclass_dloss(loss, W @ Xa[i], int(y[i]))[1], Xa[i]))


def _with_column(X, icpt):
    X = np.asarray(X, dtype=float)
    return np.hstack([X, np.full((X.shape[0], 1), icpt)])


def _rounds(shape, *, T, bounds, tau, sigma, t_offset, iterate, gradient, l1=0.0):
    """The rounds of `pgs_rounds_reference` for a dual state of `shape`: ``iterate(lam /
    tsig)`` maps it to w, ``gradient(w, i)`` is row i's subgradient in its shape (l1: one
    output's)."""
    sizes = [hi - lo for lo, hi in bounds]
    pos = [0] * len(bounds)
    lam = np.zeros(shape)
    t = 0
    iterates = []
    while t < T:
        total = min(len(bounds) * tau, T - t)
        steps = _round_steps(total, sizes)
        change = np.zeros(shape)
        zero = np.ones(shape, dtype=bool)
        for v, (lo, _hi) in enumerate(bounds):
            if steps[v] == 0:
                continue
            rho = steps[v] / total
            lam_v, debt = rho * lam, np.zeros(shape)
            off = rho * (t + t_offset)
            w = iterate(lam_v / (off * sigma)) if np.any(lam_v) else np.zeros(shape)
            for s in range(1, steps[v] + 1):
                i = lo + pos[v] % sizes[v]
                pos[v] += 1
                lam_v = lam_v - gradient(w, i)
                if l1:
                    lam_v, debt = truncated(lam_v, debt + l1)
                w = iterate(lam_v / ((s + off) * sigma))
                iterates.append(w.copy())
            change += lam_v - rho * lam
            zero &= lam_v == 0.0
        lam = lam + change
        if l1:
            lam[zero] = 0.0
        t += total
    return iterate(lam / ((t + t_offset) * sigma)), iterates


def asgd_step(eta0, sigma):
    """Averaged SGD's step eta_t = eta0 (1 + sigma eta0 t)^(-3/4), t = 0, 1, ... before
    iteration t + 1 (the kernel's "asgd" schedule; Xu 2011, Bottou's svmasgd)."""
    return lambda t: eta0 * (1.0 + sigma * eta0 * t) ** -0.75


def mirror_descent_reference(X, y, *, loss, p, sigma, T, k, rows, step, B=None, icpt=0.0,
                             eps=0.0, bias_rate=0.0, weights=None, l1=0.0):
    """Stochastic mirror descent on the dual point z with a step function (docs/design.md 6c).

    Per iteration t = 1..T with eta = step(t - 1): the batch's subgradient g at (w, b),
    ``z <- (1 - sigma eta) z - eta g``, ``w = grad r*(z)`` (then rescaled into
    ``||w||_p <= B``; z itself is not), and a free bias ``b <- b - bias_rate eta g_b``.
    `weights` scale each row's gradient (the cyclic and permutation samplers'). Returns
    the list of (w_t, b_t). With ``step(t) = 1 / (sigma (t + 1 + t0))`` it is
    `pgs_reference`. With `l1` the l1 term (docs/sparse.md), whose amount D grows by ``eta
    l1`` a step (in z's units, shrinking with it): at p = 2 dual averaging, w = grad
    r*(z truncated towards 0 by D), z itself untouched; at p < 2 the eager truncation of
    z (`truncated`), what 0 stops staying owed.
    """
    X = np.asarray(X, dtype=float)
    m, n = X.shape
    Xa = np.hstack([X, np.full((m, 1), icpt)])
    z = np.zeros(n + 1)
    w = np.zeros(n + 1)
    debt = np.zeros(n + 1)
    b = 0.0
    iterates = []
    for t in range(1, T + 1):
        eta = step(t - 1)
        g = np.zeros(n + 1)
        g_b = 0.0
        for i in rows[(t - 1) * k: t * k]:
            d = dloss(loss, Xa[i] @ w + b, y[i], eps) * (1.0 if weights is None else weights[i])
            g += d * Xa[i] / k
            g_b += d / k
        z, debt = (1.0 - sigma * eta) * z - eta * g, (1.0 - sigma * eta) * debt + eta * l1
        if p == 2.0:
            w = _projected(grad_r_star(truncated(z, debt)[0], p), p, B)
        else:
            z, debt = truncated(z, debt)
            w = _projected(grad_r_star(z, p), p, B)
        b = b - bias_rate * eta * g_b
        iterates.append((w.copy(), b))
    return iterates


def truncated(z, debt):
    """(z, debt) after every entry of z but the last (the constant column) moved towards 0
    by its `debt`, stopping at 0: the part of a debt that 0 stopped stays owed (the
    cumulative penalty of Tsuruoka et al. 2009, applied at every step). Debts are in z's
    units: they shrink with z by the step's 1 - sigma eta. New arrays."""
    z, debt = z.copy(), debt.copy()
    paid = np.minimum(np.abs(z[:-1]), debt[:-1])
    z[:-1] = np.sign(z[:-1]) * (np.abs(z[:-1]) - paid)
    debt[:-1] -= paid
    return z, debt


def weighted_average(iterates, weight=lambda t: t):
    """sum_t weight(t) (w_t, b_t) / sum_t weight(t) over iterates numbered from 1."""
    ws = np.array([weight(t) for t in range(1, len(iterates) + 1)], dtype=float)
    w = sum(c * it[0] for c, it in zip(ws, iterates, strict=True)) / ws.sum()
    b = sum(c * it[1] for c, it in zip(ws, iterates, strict=True)) / ws.sum()
    return w, b


def asgd_rounds_reference(X, y, *, loss, p, sigma, T, bounds, tau, eta0, B=None,
                          bias_rate=0.0, eps=0.0):
    """Parallel PGS under the "asgd" schedule (docs/parallel.md), rows taken cyclically
    within each shard, k = 1, a free bias.

    Rounds as in `pgs_rounds_reference`; worker v starts from the common dual point z and
    bias b at the common t, runs its steps with eta_{t + s - 1} (`asgd_step`) on its shard,
    and the merge moves from (z, b) by gamma times the mean of the workers' changes
    weighted by their shares rho_v: gamma = min(sqrt(workers that ran), 3/2); 1 when
    one worker ran. Returns (the
    merged (w, b), the local iterates in order with their averaging weight t + s:
    [(w, b, weight), ...]).
    """
    X = np.asarray(X, dtype=float)
    m, n = X.shape
    Xa = np.hstack([X, np.zeros((m, 1))])
    step = asgd_step(eta0, sigma)
    W = len(bounds)
    sizes = [hi - lo for lo, hi in bounds]
    pos = [0] * W
    z, b, t = np.zeros(n + 1), 0.0, 0

    def iterate(zv):
        return _projected(grad_r_star(zv, p), p, B)

    iterates = []
    while t < T:
        total = min(W * tau, T - t)
        steps = _round_steps(total, sizes)
        z_new, b_new = np.zeros(n + 1), 0.0
        for v, (lo, _hi) in enumerate(bounds):
            rho = steps[v] / total
            zv, bv = z.copy(), b
            w = iterate(zv)
            for s in range(1, steps[v] + 1):
                i = lo + pos[v] % sizes[v]
                pos[v] += 1
                eta = step(t + s - 1)
                d = dloss(loss, Xa[i] @ w + bv, y[i], eps)
                zv = (1.0 - sigma * eta) * zv - eta * d * Xa[i]
                bv = bv - bias_rate * eta * d
                w = iterate(zv)
                iterates.append((w.copy(), bv, t + s))
            z_new += rho * zv
            b_new += rho * bv
        active = sum(1 for s in steps if s > 0)
        gamma = 1.0 if active <= 1 else min(np.sqrt(active), 1.5)
        z, b = z + gamma * (z_new - z), b + gamma * (b_new - b)
        t += total
    return (iterate(z), b), iterates


def multiclass_dloss(loss, z, y):
    """(loss, gradient in the K margins z) of a K-output loss for a row of class index y,
    from their definitions (docs/design.md 6d): softmax cross-entropy and the multiclass hinge."""
    z = np.asarray(z, dtype=float)
    if loss == "multinomial":
        e = np.exp(z - z.max())
        g = e / e.sum()
        g[y] -= 1.0
        return float(np.log(e.sum()) + z.max() - z[y]), g
    if loss == "crammer_singer":
        other = np.where(np.arange(z.shape[0]) == y, -np.inf, z)
        r = int(np.argmax(other))
        v = 1.0 + z[r] - z[y]
        g = np.zeros_like(z)
        if v > 0:
            g[y], g[r] = -1.0, 1.0
        return max(v, 0.0), g
    raise ValueError(loss)


def multiclass_reference(X, y, n_classes, *, loss, p, sigma, T, k, rows, step, B=None,
                         icpt=0.0, bias_rate=0.0, weights=None, l1=0.0):
    """`mirror_descent_reference` with K outputs (docs/design.md 6d): per iteration, every batch
    row's K margins at the current (W, b), the loss's K coefficients, then for each class
    ``z_c <- (1 - sigma eta) z_c - eta g_c``, ``w_c = grad r*(z_c)`` (rescaled into
    ``||w_c||_p <= B``) and ``b_c <- b_c - bias_rate eta g_{b,c}``. `y` holds class
    indices. Returns the list of (W_t, b_t), W_t of shape (K, n_features + 1)."""
    X = np.asarray(X, dtype=float)
    m, n = X.shape
    Xa = np.hstack([X, np.full((m, 1), icpt)])
    Z = np.zeros((n_classes, n + 1))
    debts = np.zeros((n_classes, n + 1))
    W = np.zeros((n_classes, n + 1))
    b = np.zeros(n_classes)
    iterates = []
    for t in range(1, T + 1):
        eta = step(t - 1)
        G = np.zeros((n_classes, n + 1))
        g_b = np.zeros(n_classes)
        for i in rows[(t - 1) * k: t * k]:
            _, g = multiclass_dloss(loss, W @ Xa[i] + b, int(y[i]))
            g = g * (1.0 if weights is None else weights[i])
            G += np.outer(g, Xa[i]) / k
            g_b += g / k
        Z, debts = (1.0 - sigma * eta) * Z - eta * G, (1.0 - sigma * eta) * debts + eta * l1
        pairs = [truncated(zc, dc) for zc, dc in zip(Z, debts, strict=True)]
        if p != 2.0:        # (the eager truncation; p = 2 reads Z truncated: see above)
            Z, debts = np.array([zc for zc, _ in pairs]), np.array([dc for _, dc in pairs])
        W = np.array([_projected(grad_r_star(zc, p), p, B) for zc, _ in pairs])
        b = b - bias_rate * eta * g_b
        iterates.append((W.copy(), b.copy()))
    return iterates
