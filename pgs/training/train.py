"""`pgs.train`: the public entry point (a fixed sigma, or the sigma search)."""

from pgs.rules import defaults as D
from pgs.training import sigma_auto
from pgs.training.fit import fit


def train(X, y, *, loss=D.DEFAULTS["loss"], p=D.DEFAULTS["p"], sigma=D.DEFAULTS["sigma"],
          T=D.DEFAULTS["T"], k=D.DEFAULTS["k"], B=D.DEFAULTS["B"],
          schedule=D.DEFAULTS["schedule"], eta0=D.DEFAULTS["eta0"],
          iterate=D.DEFAULTS["iterate"], fit_intercept=D.DEFAULTS["fit_intercept"],
          intercept=D.DEFAULTS["intercept"], intercept_scaling=D.DEFAULTS["intercept_scaling"],
          seed=None, epsilon=D.DEFAULTS["epsilon"], sample_weight=None,
          sampling=D.DEFAULTS["sampling"], callback=None, callback_every=None,
          keep_state=False, warm_start=None, n_threads=None, t_offset=D.DEFAULTS["t_offset"],
          sigma_grid=D.DEFAULTS["sigma_grid"],
          validation_fraction=D.DEFAULTS["validation_fraction"], n_jobs=1, merge_every=None):
    r"""Train a linear model with the Primal Gradient Solver.

    Minimises :math:`F(w, b) = \sigma \|w\|_p^2 / (2(p-1)) + \frac1m \sum_i s_i
    \ell(\langle w, x_i\rangle + b, y_i)` (weights :math:`s_i = 1` by default; the bias
    b is free, or with ``intercept="column"`` the weight of a constant column, inside w
    and its norm) by stochastic mirror descent on the dual of the :math:`\ell_p`
    regulariser (Zhu et al. 2009, Figure 1; DESIGN.md 6c). Each iteration costs
    O(non-zeros of the batch), for every p.

    The defaults (`pgs.DEFAULTS`, shared with `PGSClassifier` and `PGSRegressor`) are the
    fastest accurate set-up measured in bench/: the averaged-SGD schedule, the average
    weighted by t, a free bias, a permutation per pass and sigma chosen on held-out
    rows. The paper's set-up is the preset `pgs.PAPER`:
    ``pgs.train(X, y, sigma=1e-4, **pgs.PAPER)``.

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
        Norm of the regulariser. p = 2 is Pegasos; p = 1.5 has a pow-free fast path.
    sigma : float > 0 or "auto", default "auto"
        Regularisation strength (Pegasos' lambda). "auto" holds out
        `validation_fraction` of the rows (stratified for classification), trains every
        value of `sigma_grid` on the rest, takes the largest sigma whose held-out accuracy
        (R^2 for regression) is within one standard error of the best, and returns the
        plain fit at that sigma on all the rows (``model.params["sigma"]``; the grid and
        its scores are ``model.sigma_grid`` and ``model.sigma_scores``). The grid runs
        take `GRID_T_FRACTION` of the final fit's passes (pgs/training/sigma_auto.py), one
        value per thread at a time (no more state than the fit's), deterministic for a
        seed; `callback` sees the final fit only. A warm start keeps its model's sigma.
    T : int >= 1, optional
        Number of iterations; default ``ceil(10 m / k)`` (ten passes' worth of
        samples). With `warm_start`, the number of further iterations.
    k : int >= 1, default 1
        Mini-batch size; all k margins are taken at the previous iterate. At most
        the number of rows of X (larger is a ValueError).
    B : None, "auto" or float > 0, default None
        Radius of the domain :math:`\|w\|_p \le B` (projection by rescaling).
        "auto" uses :math:`\sqrt{2(p-1)F(0)/\sigma}`, which always contains the
        optimum. None leaves Lipschitz losses unbounded; for the losses whose
        gradient is unbounded ("squared", "squared_hinge", "modified_huber") None
        means "auto", which the convergence theory requires and which keeps the
        iterates finite.
    schedule : {"asgd", "pgs"}, default "asgd"
        The step size :math:`\eta_t` of the mirror descent :math:`z_t = (1 - \sigma
        \eta_t) z_{t-1} - \eta_t g_t`, :math:`w_t = \nabla r^*(z_t)` (DESIGN.md 6c).
        "pgs" is the paper's, :math:`\eta_t = 1 / (\sigma (t + t_0))` (Figure 1: the
        dual average of the subgradients), whose first passes at small sigma are spent
        getting out of its start. "asgd" is averaged SGD's, :math:`\eta_t = \eta_0 (1 +
        \sigma \eta_0 t)^{-3/4}` (Xu 2011; Bottou's svmasgd): a nearly constant step
        for the first :math:`1/(\sigma \eta_0)` iterations, whose noise the average
        removes. On the hard RCV1-like and dense sets it needs 0.14-0.33x the passes of
        scikit-learn's averaged SGD (bench/results/passes.md).
    eta0 : float > 0 or "auto", default "auto"
        The "asgd" schedule's first step (below 1 / sigma). "auto" is
        ``2 / (L R^2)``: L the Lipschitz constant of the loss's derivative (1 for
        the losses with a kink), R^2 the mean squared dual norm of the rows, the bias
        included (`pgs.rules.defaults.auto_eta0`; O(nnz) once). Ignored by "pgs".
    iterate : {"average", "last", "random"}, default "average"
        Which iterate to return: the average of the iterates, weighted by t under
        "asgd" (Lacoste-Julien, Schmidt & Bach 2012: it forgets the start, as the
        uniform average does not) and uniform under "pgs"; the last one; or the
        paper's, drawn uniformly from 1..T by the seed. The paper's guarantee holds in
        expectation over that draw, which is a lottery for one model (a9a, 40 seeds:
        test accuracy 72.1-84.6%, objective up to 4.5x the median's). The last iterate
        keeps a guarantee without it: for p = 2, k = 1 (SGD with steps
        :math:`1/(\sigma t)`) :math:`E F(w_T) - F^* = O(\log T / (\sigma T))` (Shamir &
        Zhang, ICML 2013).
    fit_intercept : bool, default True
        Fit a bias b (`intercept`).
    intercept : {"free", "column"}, default "free"
        "free": b is not regularised and moves by plain SGD steps,
        :math:`b \leftarrow b - 0.01 \bar R^2 \eta_t \ell'` (:math:`\bar R^2` the mean
        squared row norm: as a free column of value :math:`0.1 \bar R` would; scikit-
        learn's SGD and svmasgd take 0.01 eta_t on sparse data). "column": the paper's
        section VII (and LIBLINEAR's): a constant column of value `intercept_scaling`,
        regularised like the rest, :math:`b = s w_b`. X is not copied for either.
    intercept_scaling : float > 0 or "auto", default "auto"
        Value s of the constant column (``intercept="column"``). "auto" is 0.3 times
        the root-mean-square row norm. The bias is penalised by
        :math:`\sigma b^2 / (2 s^2)` and moves by :math:`s^2 |\ell'| \eta_t` per
        sampled row, while the convergence bound grows with
        :math:`G^2 = \max_i \|x_i\|^2 + s^2`. So s much larger than the rows' norm
        makes the bias far noisier than the optimum's scale (hinge under "pgs": b lies
        on a grid of step :math:`s^2 / (\sigma (t + t_0))`, 5 at s = 10, sigma = 1e-4,
        t = 2e5) and the model can collapse until T is well beyond
        :math:`s^2 / (\sigma |b^*|)`.
    seed : None or int >= 0, default None
        Seeds row sampling and the random iterate. The same seed gives a
        bit-identical model. None draws fresh entropy, recorded in
        ``model.params["seed"]``.
    epsilon : float, optional
        Shape parameter of "huber" (delta, default 1.0), "epsilon_insensitive"
        (tube width, default 0.1) and "smooth_hinge" (smoothing width, default 1.0).
    sample_weight : array_like of shape (m,), optional
        Non-negative weights s_i of the empirical risk. With ``sampling="iid"``
        rows are drawn with probability proportional to weight (Vose's alias
        table, built once) and the gradient is scaled by the mean weight, so an
        iteration stays O(k d); with the other modes each row's gradient is
        scaled by its weight.
    sampling : {"auto", "iid", "permutation", "cyclic"}, default "auto"
        How rows are drawn: i.i.d. uniformly with replacement (the paper's, what
        its guarantees assume); a fresh random order every pass (without
        replacement: usually as good in practice, and faster); or the rows in
        the given order (fastest, for data that is already shuffled; the i.i.d.
        analysis does not cover it, and sorted data makes it fail). "auto" is
        "permutation", or "iid" with weights (a permutation would scale each row's
        gradient by its own weight, whose spread can be huge).
    callback : callable, optional
        Called as ``callback(progress)`` with a `Progress` every `callback_every`
        iterations (the kernel runs in chunks between calls and resumes exactly:
        the model is bit-identical to an unsplit run). Returning ``False`` stops
        training; the model then holds the iterations done (`T` is that count,
        and a random iterate not yet reached falls back to the last one).
        A KeyboardInterrupt raised between chunks propagates.
    callback_every : int >= 1, optional
        Iterations between callback calls; default ``min(max(T // 100, 1), 10**6)``.
    keep_state : bool, default False
        Keep the solver's state on the model (1-4 arrays of n_features floats:
        the finished solver's own, not copies) so that it can be continued with
        `warm_start`.
    warm_start : Model, optional
        A model trained with ``keep_state=True`` on data with the same number of
        features and the same loss, p, sigma, k, B, schedule, eta0, fit_intercept,
        intercept, intercept_scaling, epsilon and sampling: runs `T` more iterations,
        continuing its dual accumulator and its PRNG stream. For iterate "last"
        and "average", T1 iterations then T2 more equal T1 + T2 at once, bit for
        bit. For "random", the returned iterate is uniform over all iterations
        (kept from the earlier run with probability T1 / (T1 + T2)).
    n_threads : None
        Deprecated, no effect: the mini-batch threads were removed (on two cores they
        never beat one thread, as every batch's update shares cache lines between
        them). Passing it warns; it will be removed.
    t_offset : float >= 0 or "auto", default "auto"
        The "pgs" schedule's iteration offset t0 (ignored by "asgd"): the iterate is
        :math:`w_t = \nabla r^*(\lambda_t / ((t + t_0)\sigma))`, i.e. the first steps are
        :math:`1/(\sigma(t + t_0))` instead of Pegasos' :math:`1/(\sigma t)`, which at
        small sigma throw the
        first iterates far outside the ball that holds the optimum. This is dual
        averaging with the extra proximal term :math:`t_0 \sigma r(w)` (Xiao 2010;
        for p = 2 and k = 1 it is SGD with step :math:`1/(\sigma(t + t_0))`, scikit-
        learn's "optimal" schedule). Its regret bound gains :math:`t_0 \sigma r(w^*)
        \le t_0 F(0)` and its sum of steps shrinks to :math:`\ln((T + t_0)/t_0)`, so
        the :math:`O(\log T / (\sigma T))` rate of the random and average iterates
        holds, plus :math:`t_0 F(0) / T`: with G a bound on the sampled gradients'
        dual norm, the random or average iterate has
        :math:`E F(\bar w) - F^* \le (t_0 F(0) + G^2 \ln((T + t_0)/t_0) / (2\sigma)) / T`
        (for t0 > 0; t0 = 0 gives Pegasos' :math:`G^2 (1 + \ln T) / (2 \sigma T)`).
        0 is the paper's Figure 1. "auto" takes :math:`t_0 = G^2 / (2\sigma F(0))`,
        which minimises this bound for large T, capped at m (one pass's worth of
        data), with G from the largest row norm (intercept column included), the
        loss's derivative bound and the weights (`auto_t_offset`; O(nnz) once). A warm
        start keeps its model's t0. The value used is ``model.params["t_offset"]``.
    sigma_grid : sequence of float > 0, optional
        The values ``sigma="auto"`` tries; default 7 values, ``10**[-2, -1.5, ..., 1]``
        times ``mean_i ||x_i||^2 / m`` (the best sigma scales as the squared row norm
        and, for a fixed task, shrinks as 1/m).
    validation_fraction : float in (0, 1), default 0.2
        Share of the rows ``sigma="auto"`` holds out to score the grid.
    n_jobs : int >= 1, default 1
        Threads. 1 is the plain run above. W > 1 splits the rows into W contiguous
        shards, one per thread, and runs rounds: each thread runs its share of
        ``W * merge_every`` iterations of PGS on its shard from the common state (its
        own random stream), then the states are merged by adding the dual
        accumulators (docs/parallel.md). The model is a function of (seed, W,
        merge_every) only: bit-identical run to run, whatever the thread scheduling,
        but not equal to the run with another W.
    merge_every : int >= 1, optional
        Iterations per thread per round (with ``n_jobs > 1``); default
        ``max(1, m // (4 W k))``: a round covers a quarter of a pass.

    Returns
    -------
    Model
        With ``coef``, ``intercept``, ``iteration``, ``T``, ``classes`` and
        ``decision_function``, ``predict``, ``objective``.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, naming the argument and the value. A CSR
        ``X`` (used in place) has its index pointer checked up front and its
        entries (column indices in range, finite values) checked by the solver
        as it reads each row: a bad row stops training before it changes the
        model, and rows that are never drawn are not inspected. A full scan up
        front would cost as much as a pass with ``sampling="cyclic"``. Other
        input is converted and then checked in full.
    DivergedError
        If the iterate overflows (huge feature values, intercept_scaling or 1/sigma): a
        `FloatingPointError` and a `ValueError` naming what sets the scale.
    KeyboardInterrupt
        On Ctrl-C, within milliseconds: the kernel runs in chunks (`pgs.engine.chunks`), and
        nothing the caller holds is changed.

    References
    ----------
    Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex
    Regularized Learning", ICDM 2009, Figure 1 and section VII.
    """
    sigma_grid = sigma_auto.check_sigma_grid(sigma_grid)
    validation_fraction = sigma_auto.check_validation_fraction(validation_fraction)
    if sigma_auto.is_auto(sigma):
        return sigma_auto.train_auto(
            X, y, sigma_grid=sigma_grid, validation_fraction=validation_fraction, seed=seed,
            warm_start=warm_start, loss=loss, p=p, T=T, k=k, B=B, schedule=schedule,
            eta0=eta0, iterate=iterate, fit_intercept=fit_intercept, intercept=intercept,
            intercept_scaling=intercept_scaling,
            epsilon=epsilon, sample_weight=sample_weight, sampling=sampling,
            callback=callback, callback_every=callback_every, keep_state=keep_state,
            n_threads=n_threads, t_offset=t_offset, n_jobs=n_jobs, merge_every=merge_every)
    return fit(X, y, loss=loss, p=p, sigma=sigma, T=T, k=k, B=B, schedule=schedule,
                eta0=eta0, iterate=iterate, fit_intercept=fit_intercept, intercept=intercept,
                intercept_scaling=intercept_scaling, seed=seed,
                epsilon=epsilon, sample_weight=sample_weight, sampling=sampling,
                callback=callback, callback_every=callback_every, keep_state=keep_state,
                warm_start=warm_start, n_threads=n_threads, t_offset=t_offset, n_jobs=n_jobs,
                merge_every=merge_every)
