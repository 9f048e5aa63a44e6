"""`pgs.train`: validate, hand the CSR buffers to the compiled solver, return the iterate."""

import math

import numpy as np

from pgs import _validation as V
from pgs._core import LOSS_NAMES, Solver, mean_loss
from pgs._data import as_csr_buffers, check_targets
from pgs._model import Model

_STATUS_MESSAGES = {
    1: "a margin or the iterate became infinite or NaN at iteration {t}; rescale X or "
    "bound the domain with B",
    2: "fixed_rows holds a row index outside [0, n_samples)",
}


def default_T(n_samples, k):
    """The default number of iterations: 10 passes' worth of samples, ceil(10 m / k)."""
    return max(1, math.ceil(10 * n_samples / k))


def auto_B(y_kernel, loss, p, sigma, epsilon):
    """The radius sqrt(2 (p-1) F(0) / sigma) that always contains the optimum (DESIGN.md 2)."""
    zeros = np.zeros_like(y_kernel)
    f0 = mean_loss(zeros, y_kernel, LOSS_NAMES.index(loss), epsilon)
    if f0 <= 0.0:
        # w = 0 is optimal; any positive radius keeps it inside.
        return 1.0
    return math.sqrt(2.0 * (p - 1.0) * f0 / sigma)


def train(X, y, *, loss="hinge", p=2.0, sigma=1e-4, T=None, k=1, B=None, iterate="random",
          fit_intercept=True, intercept_scaling=1.0, seed=None, epsilon=None):
    r"""Train a linear model with the Primal Gradient Solver.

    Minimises :math:`F(w) = \sigma \|w\|_p^2 / (2(p-1)) + \frac1m \sum_i \ell(\langle w,
    x_i\rangle, y_i)` by stochastic dual averaging with the mirror map of the
    :math:`\ell_p` regulariser (Zhu et al. 2009, Figure 1). Each iteration costs
    O(non-zeros of the batch), for every p.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix/array, shape (m, n_features)
        Training rows. CSR with float32/float64 data and int32/int64 indices is
        read in place (no copy); anything else is converted once to CSR.
    y : array_like, shape (m,)
        For classification losses any two distinct labels (the smaller one is
        mapped to -1, the larger to +1); for regression losses real targets.
    loss : str, default "hinge"
        Classification: "hinge", "logistic", "squared_hinge", "smooth_hinge",
        "modified_huber". Regression: "squared", "huber", "epsilon_insensitive",
        "absolute".
    p : float in (1, 2], default 2.0
        Norm of the regulariser. p = 2 is Pegasos; p = 1.5 and p = 1.8 have
        pow-free fast paths.
    sigma : float > 0, default 1e-4
        Regularisation strength (Pegasos' lambda).
    T : int >= 1, optional
        Number of iterations; default ``ceil(10 m / k)`` (ten passes' worth of samples).
    k : int >= 1, default 1
        Mini-batch size; all k margins are taken at the previous iterate.
    B : None, "auto" or float > 0, default None
        Radius of the domain :math:`\|w\|_p \le B` (projection by rescaling).
        "auto" uses :math:`\sqrt{2(p-1)F(0)/\sigma}`, which always contains the
        optimum. None leaves Lipschitz losses unbounded; for the losses whose
        gradient is unbounded ("squared", "squared_hinge", "modified_huber") None
        means "auto", which the convergence theory requires and which keeps the
        iterates finite.
    iterate : {"random", "last", "average"}, default "random"
        Which iterate to return: the paper's, drawn uniformly from 1..T by the
        seed; the last one; or the average of w_1..w_T.
    fit_intercept : bool, default True
        Append a constant column of value `intercept_scaling`, regularised like
        the rest (paper section VII; as LIBLINEAR). X is not copied for this.
    intercept_scaling : float > 0, default 1.0
        Value of the constant column.
    seed : None or int >= 0, default None
        Seeds row sampling and the random iterate. The same seed gives a
        bit-identical model. None draws fresh entropy, recorded in
        ``model.params["seed"]``.
    epsilon : float, optional
        Shape parameter of "huber" (delta, default 1.0), "epsilon_insensitive"
        (tube width, default 0.1) and "smooth_hinge" (smoothing width, default 1.0).

    Returns
    -------
    Model
        With ``coef``, ``intercept``, ``iteration``, ``T``, ``classes`` and
        ``decision_function``, ``predict``, ``objective``.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, naming the argument and the value.
    FloatingPointError
        If the iterate overflows (only possible with huge feature values).

    References
    ----------
    Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex
    Regularized Learning", ICDM 2009, Figure 1 and section VII.
    """
    return _fit(X, y, loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, iterate=iterate,
                fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, seed=seed,
                epsilon=epsilon)


def _fit(X, y, *, loss="hinge", p=2.0, sigma=1e-4, T=None, k=1, B=None, iterate="random",
         fit_intercept=True, intercept_scaling=1.0, seed=None, epsilon=None, fixed_rows=None):
    """`train` with a test hook: `fixed_rows` replaces the PRNG's row draws."""
    loss_id = V.check_loss(loss)
    p = V.check_p(p)
    sigma = V.check_positive("sigma", sigma)
    T = V.check_count("T", T, allow_none=True)
    k = V.check_count("k", k)
    B = V.check_B(B)
    iterate = V.check_iterate(iterate)
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise TypeError(f"fit_intercept must be a bool, got {fit_intercept!r}")
    intercept_scaling = V.check_positive("intercept_scaling", intercept_scaling)
    seed = V.check_seed(seed)
    epsilon = V.check_epsilon(loss, epsilon)

    Xb = as_csr_buffers(X)
    m, n_features = Xb.shape
    classification = loss in V.CLASSIFICATION_LOSSES
    y_kernel, classes = check_targets(y, m, classification=classification)
    if T is None:
        T = default_T(m, k)

    if B == "auto" or (B is None and loss in V.UNBOUNDED_GRADIENT_LOSSES):
        B = auto_B(y_kernel, loss, p, sigma, epsilon)

    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rng_state = seq.generate_state(4, dtype=np.uint64)
    t_pick = 0
    if iterate == "random":
        t_pick = int(np.random.default_rng(seq.spawn(1)[0]).integers(1, T + 1))

    icpt = intercept_scaling if fit_intercept else 0.0
    solver = Solver(n_features, loss_id, p, sigma, B if B is not None else 0.0, icpt, epsilon,
                    k, t_pick, iterate == "average", rng_state)
    status = solver.run(T, Xb.data, Xb.indices, Xb.indptr, y_kernel, fixed_rows)
    if status != 0:
        msg = _STATUS_MESSAGES.get(status, "solver failed with status {status}")
        raise FloatingPointError(msg.format(t=solver.t + 1, status=status))

    if iterate == "random":
        w, iteration = solver.w_pick.copy(), t_pick
    elif iterate == "last":
        w, iteration = solver.last(), T
    else:
        w, iteration = solver.average(), T

    params = dict(loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, iterate=iterate,
                  fit_intercept=bool(fit_intercept), intercept_scaling=intercept_scaling,
                  seed=seq.entropy, epsilon=epsilon)
    model = Model(coef=w[:n_features].copy(),
                  intercept=w[n_features] * intercept_scaling if fit_intercept else 0.0,
                  iteration=iteration, T=T, classes=classes, params=params)
    return model
