"""`pgs.train_csgd` and `pgs.train_cadaline`: Constrained SGD for least squares.

Mu, Ding, Zhou, Tao, KDD 2013 (docs/design.md section 6). The compiled loop is in pgs/_csgd.pyx;
this module validates the arguments, picks the step size and wraps the result in a model.
"""

import math

import numpy as np

from pgs._csgd import VARIANT_NAMES, CSGDSolver
from pgs.engine.chunks import run_chunked
from pgs.models.csgd_model import CAdalineModel, CSGDModel, check_variant
from pgs.rules import validation as V
from pgs.rules.data import as_csr_buffers, check_y_shape, kernel_targets
from pgs.rules.docstrings import fill_doc
from pgs.rules.params import seed_sequence

#: Rows of the subsample on which eta0="auto" runs its trials.
AUTO_SUBSAMPLE = 1000
#: Factor between two step sizes tried by eta0="auto".
AUTO_FACTOR = 2.0
#: Most step sizes eta0="auto" tries.
AUTO_MAX_TRIALS = 16


def _check_switch(switch, n_samples):
    """The step m_switch where the 2-phase step size starts decaying as 1/t."""
    if isinstance(switch, str):
        if switch == "half":
            return max(1, n_samples // 2)
        raise ValueError(f"switch must be 'half' or an integer >= 1, got switch={switch!r}")
    return V.check_count("switch", switch)


def _solve(Xb, Y, *, variant_id, eta0, switch, icpt, average, rng_state, T,
           fixed_rows=None, permutation=False, name="CSGD"):
    """Run the kernel for T steps; return the selected weights, shape (n_cols, K)."""
    K = Y.shape[1]
    solver = CSGDSolver(Xb.shape[1], K, variant_id, eta0, switch, icpt, average, rng_state,
                        permutation=permutation)
    y = Y.reshape(-1)

    def step_to(t_end):
        status = solver.run(t_end, Xb.data, Xb.indices, Xb.indptr, y, fixed_rows)
        if status == 2:
            raise ValueError("fixed_rows holds a row index outside [0, n_samples)")
        if status != 0:
            raise FloatingPointError(
                f"{name} diverged at step {solver.t + 1}: a prediction became infinite or "
                f"NaN; eta0={eta0!r} is too large for this data (use a smaller eta0, or "
                "eta0='auto')")

    # In chunks, so that Ctrl-C stops a long run (a chunked run is bit-identical); a
    # step reads a row and updates K outputs.
    nnz_per_row = Xb.indptr[-1] / max(1, Xb.shape[0])
    run_chunked(step_to, 0, T, (nnz_per_row + 1.0) * K)
    return solver.average() if average else solver.last()


def auto_eta0(Xb, Y, *, variant_id, switch, icpt, average, seq, permutation=False):
    """Pick eta0 by short trial runs on a subsample (after Bottou's sgd, `determineEta0`).

    From the LMS scale 1 / mean ||x||^2 (constant column included), runs of four passes over
    at most `AUTO_SUBSAMPLE` rows move by factors of `AUTO_FACTOR` while the subsample's
    loss falls (a diverged run's is infinite). Returns (eta0, the sorted (eta0, loss) tried).
    """
    m = Xb.shape[0]
    children = seq.spawn(2)
    rng = np.random.default_rng(children[0])
    n_sub = min(m, AUTO_SUBSAMPLE)
    rows = np.sort(rng.choice(m, size=n_sub, replace=False)) if n_sub < m else np.arange(m)
    Xs, Ys = as_csr_buffers(Xb.matrix()[rows]), np.ascontiguousarray(Y[rows])
    rng_state = children[1].generate_state(4, dtype=np.uint64)
    # Four passes: shorter trials favour step sizes that are too small for a long run
    # (the paper's d = n = 5000 set-up and NCSGD: bench/results/csgd.md).
    T_trial = 4 * n_sub
    # The switch keeps its place relative to the data size.
    switch_trial = max(1, int(round(switch * n_sub / m)))
    Xs_matrix = Xs.matrix()
    sq_norms = np.asarray(Xs_matrix.multiply(Xs_matrix).sum(axis=1)).reshape(-1)
    mean_sq = float(np.mean(sq_norms)) + icpt * icpt
    if not math.isfinite(mean_sq):
        # (1 / inf would start the search at eta0 = 0 and blame that step size)
        raise ValueError("X's values are too large for CSGD: the rows' mean squared norm "
                         "overflows a double; scale X down")
    start = 1.0 / mean_sq if mean_sq > 0.0 else 1.0

    trials = {}

    def loss_at(eta):
        if eta not in trials:
            try:
                W = _solve(Xs, Ys, variant_id=variant_id, eta0=eta, switch=switch_trial,
                           icpt=icpt, average=average, rng_state=rng_state, T=T_trial,
                           permutation=permutation)
                Z = np.asarray(Xs_matrix @ W[:-1]) + icpt * W[-1]     # (W: n_cols x K)
                value = 0.5 * float(np.mean((Ys - Z) ** 2))
            except FloatingPointError:
                value = math.inf
            trials[eta] = value if math.isfinite(value) else math.inf
        return trials[eta]

    best = start
    up = start * AUTO_FACTOR
    if math.isfinite(loss_at(up)) and loss_at(up) <= loss_at(start):
        direction, best = AUTO_FACTOR, up
    else:
        direction = 1.0 / AUTO_FACTOR      # also when even the LMS scale diverges
    while len(trials) < AUTO_MAX_TRIALS:
        nxt = best * direction
        if not loss_at(nxt) < loss_at(best):
            break
        best = nxt
    return best, sorted(trials.items())


def _fit(X, Y, *, T, eta0, switch, variant, fit_intercept, iterate, seed, sampling="iid",
         fixed_rows=None, name="CSGD"):
    """Validate, pick eta0, run; Y is the (m, K) float64 target matrix (a test/bench hook).
    Returns (W, eta0_used, params), W of shape (n_features + 1, K), the intercepts last."""
    sampling = V.check_choice("sampling", sampling, ("iid", "permutation"))
    T = V.check_count("T", T, allow_none=True)
    eta0 = V.check_positive("eta0", eta0, allowed=("auto",))
    variant_id = check_variant(variant)
    fit_intercept = V.check_bool("fit_intercept", fit_intercept)
    iterate = V.check_choice("iterate", iterate, ("last", "average"))
    seq = seed_sequence(seed)
    Xb = as_csr_buffers(X)
    switch = _check_switch(switch, Xb.shape[0])
    if T is None:
        T = 10 * Xb.shape[0]                 # ten passes' worth of samples
    permutation = sampling == "permutation"
    if Y.shape[0] != Xb.shape[0]:
        raise ValueError(f"X has {Xb.shape[0]} rows but y has {Y.shape[0]} entries")
    icpt = 1.0 if fit_intercept else 0.0
    average = iterate == "average"
    if fixed_rows is not None:
        fixed_rows = np.asarray(fixed_rows, dtype=np.int64)
        if fixed_rows.ndim != 1 or fixed_rows.shape[0] < T:
            raise ValueError(f"fixed_rows must be 1-D with at least T={T} row indices")
    if eta0 == "auto":
        eta0_used, _ = auto_eta0(Xb, Y, variant_id=variant_id, switch=switch, icpt=icpt,
                                 average=average, seq=seq.spawn(1)[0], permutation=permutation)
    else:
        eta0_used = eta0
    rng_state = seq.generate_state(4, dtype=np.uint64)
    W = _solve(Xb, Y, variant_id=variant_id, eta0=eta0_used, switch=switch, icpt=icpt,
               average=average, rng_state=rng_state, T=T, fixed_rows=fixed_rows,
               permutation=permutation, name=name)
    params = dict(T=T, eta0=eta0, switch=switch, variant=VARIANT_NAMES[variant_id],
                  fit_intercept=fit_intercept, iterate=iterate, sampling=sampling, seed=seq.entropy)
    return W, eta0_used, params


@fill_doc("csgd")
def train_csgd(X, y, *, T=None, eta0="auto", switch="half", variant="csgd",
               fit_intercept=True, iterate="last", sampling="iid", seed=None):
    r"""Least-squares regression by Constrained SGD (Mu et al., KDD 2013).

    Minimises :math:`l(w) = \frac1m \sum_i \frac12 (y_i - \langle w, x_i\rangle - b)^2`
    by SGD on rows drawn i.i.d. uniformly, projecting every step onto the hyperplane
    :math:`\langle w, \bar x_t\rangle = \bar y_t` through the running mean of the rows
    seen (the optimum lies on the hyperplane through the data's mean, Theorem 2.1).
    Each step costs O(non-zeros of the row), not O(n_features).

    Parameters
    ----------
    {parameters}

    Returns
    -------
    CSGDModel
        With ``coef``, ``intercept``, ``eta0_``, ``predict``, ``objective``.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, naming the argument and the value.
    FloatingPointError
        If the run diverges (a user-given eta0 far too large).
    KeyboardInterrupt
        On Ctrl-C, within milliseconds (the kernel runs in chunks).

    References
    ----------
    Mu, Ding, Zhou, Tao, "Constrained Stochastic Gradient Descent for Large-scale
    Least Squares Problem", KDD 2013, Algorithm 1 and section 4.2.
    """
    Xb = as_csr_buffers(X)
    y_kernel, _ = kernel_targets(y, Xb.shape[0], "squared")
    W, eta0_used, params = _fit(
        Xb, np.ascontiguousarray(y_kernel).reshape(-1, 1), T=T, eta0=eta0, switch=switch,
        variant=variant, fit_intercept=fit_intercept, iterate=iterate, sampling=sampling,
        seed=seed)
    return CSGDModel(coef=W[:-1, 0].copy(), intercept=W[-1, 0] if fit_intercept else 0.0,
                     T=params["T"], eta0_=eta0_used, params=params)


def class_indicators(y, n_samples):
    """Validate class labels; return (classes, Y) with Y the (m, n_classes) 0/1 targets."""
    y = check_y_shape(y, n_samples)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity")
    try:
        classes, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"y's labels cannot be compared: {exc}") from None
    if classes.shape[0] < 2:
        raise ValueError(f"y has {classes.shape[0]} class(es); C-Adaline needs at least two")
    Y = np.zeros((n_samples, classes.shape[0]))
    Y[np.arange(n_samples), codes.reshape(-1)] = 1.0
    return classes, Y


@fill_doc("csgd")
def train_cadaline(X, y, *, T=None, eta0="auto", switch="half", variant="csgd",
                   fit_intercept=True, iterate="last", sampling="iid", seed=None):
    """Multiclass classification by C-Adaline: one CSGD regressor per class, argmax.

    Output k is trained on the 0/1 indicator of class k; all outputs see the same rows in
    one pass (the paper's Algorithm 2), so a step costs O(non-zeros * n_classes).

    Parameters
    ----------
    {parameters}

    Returns
    -------
    CAdalineModel
        With ``coef`` (n_classes, n_features), ``intercept``, ``classes``,
        ``decision_function`` (n_samples, n_classes), ``predict``, ``eta0_``.

    References
    ----------
    Mu, Ding, Zhou, Tao, KDD 2013, section 5.2 and Algorithm 2.
    """
    Xb = as_csr_buffers(X)
    classes, Y = class_indicators(y, Xb.shape[0])
    W, eta0_used, params = _fit(
        Xb, Y, T=T, eta0=eta0, switch=switch, variant=variant, fit_intercept=fit_intercept,
        iterate=iterate, sampling=sampling, seed=seed, name="C-Adaline")
    intercept = W[-1].copy() if fit_intercept else np.zeros(W.shape[1])
    return CAdalineModel(coef=np.ascontiguousarray(W[:-1].T), intercept=intercept,
                         classes=classes, T=params["T"], eta0_=eta0_used, params=params)
