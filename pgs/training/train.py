"""`pgs.train`: the public entry point (a fixed sigma, or the sigma search)."""

from pgs.rules import defaults as D
from pgs.rules import validation as V
from pgs.training import sigma_auto
from pgs.training.fit import fit


def train(X, y, *, loss=D.DEFAULTS["loss"], p=D.DEFAULTS["p"], sigma=D.DEFAULTS["sigma"],
          T=D.DEFAULTS["T"], k=D.DEFAULTS["k"], B=D.DEFAULTS["B"], schedule=D.DEFAULTS["schedule"],
          eta0=D.DEFAULTS["eta0"], iterate=D.DEFAULTS["iterate"],
          fit_intercept=D.DEFAULTS["fit_intercept"], intercept=D.DEFAULTS["intercept"],
          intercept_scaling=D.DEFAULTS["intercept_scaling"], seed=None,
          epsilon=D.DEFAULTS["epsilon"], sample_weight=None, sampling=D.DEFAULTS["sampling"],
          callback=None, callback_every=None, keep_state=False, warm_start=None, n_threads=None,
          t_offset=D.DEFAULTS["t_offset"], sigma_grid=D.DEFAULTS["sigma_grid"],
          validation_fraction=D.DEFAULTS["validation_fraction"], n_jobs=1, merge_every=None,
          max_passes=D.DEFAULTS["max_passes"], verbose=0):
    r"""Train a linear model with the Primal Gradient Solver.

    Minimises :math:`F(w, b) = \sigma \|w\|_p^2 / (2(p-1)) + \frac1m \sum_i s_i
    \ell(\langle w, x_i\rangle + b, y_i)` (weights :math:`s_i = 1` by default; the bias
    b is free, or with ``intercept="column"`` the weight of a constant column, inside w
    and its norm) by stochastic mirror descent on the dual of the :math:`\ell_p`
    regulariser (Zhu et al. 2009, Figure 1; docs/design.md 6c). Each iteration costs
    O(non-zeros of the batch), for every p.

    The defaults (`pgs.DEFAULTS`, shared with `PGSClassifier` and `PGSRegressor`) are the
    fastest accurate set-up measured in bench/; the paper's set-up is the preset
    `pgs.PAPER`: ``pgs.train(X, y, sigma=1e-4, **pgs.PAPER)``. README.md ("`pgs.train`
    arguments") explains every argument at more length.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix/array, shape (m, n_features)
        Training rows. CSR with float32/float64 data and int32/int64 indices is read in
        place (no copy); anything else is converted once to CSR.
    y : array_like, shape (m,)
        For classification losses any two distinct labels (the smaller one is mapped to
        -1, the larger to +1); for "multinomial" and "crammer_singer" any number of
        labels (two or more); for regression losses real targets.
    loss : str, default "hinge"
        Classification: "hinge", "logistic", "squared_hinge", "smooth_hinge",
        "modified_huber"; with K classes as one problem (docs/design.md 6d, a
        `MulticlassModel` of K rows, one dual vector per class): "multinomial" (softmax
        cross-entropy, ``predict_proba``) and "crammer_singer" (the multiclass hinge).
        Regression: "squared", "huber", "epsilon_insensitive", "absolute".
    p : float in (1, 2], default 2.0
        Norm of the regulariser. p = 2 is Pegasos; p = 1.5 has a pow-free fast path.
    sigma : float > 0 or "auto", default "auto"
        Regularisation strength (Pegasos' lambda). "auto" holds out `validation_fraction`
        of the rows and chooses among `sigma_grid` by successive halving: every value runs
        a quarter pass over the other rows, the better half of them (by held-out accuracy,
        R^2 for regression) twice as long, and so on; of the last two, the larger sigma
        unless the other scores better by more than the standard error of the difference.
        The winner's run then continues (it is not refitted) until its held-out score has
        not improved for two passes, or `max_passes` (the grid, each value's last score:
        ``model.sigma_grid``, ``model.sigma_scores``). The model is trained on the rows not
        held out. A warm start keeps its model's sigma.
    T : int >= 1, optional
        Number of iterations (with `warm_start`, further ones), exactly; default
        ``ceil(max_passes m / k)`` for a fixed sigma, and the held-out stopping rule for
        ``sigma="auto"``.
    k : int >= 1, default 1
        Mini-batch size, at most m; all k margins are taken at the previous iterate.
    B : None, "auto" or float > 0, default None
        Radius of the domain :math:`\|w\|_p \le B` (projection by rescaling). "auto" is
        :math:`\sqrt{2(p-1)F(0)/\sigma}`, which always contains the optimum. None leaves
        Lipschitz losses unbounded, and means "auto" for the losses whose gradient is
        unbounded ("squared", "squared_hinge", "modified_huber").
    schedule : {"asgd", "pgs"}, default "asgd"
        The step size :math:`\eta_t` of the mirror descent (docs/design.md 6c): averaged SGD's
        :math:`\eta_0 (1 + \sigma \eta_0 t)^{-3/4}` (Xu 2011), or the paper's
        :math:`1 / (\sigma (t + t_0))`.
    eta0 : float > 0 or "auto", default "auto"
        The "asgd" schedule's first step (below 1 / sigma); "auto" is ``2 / (L R^2)``, L
        the Lipschitz constant of the loss's derivative and R^2 the rows' mean squared dual
        norm (`pgs.rules.defaults.auto_eta0`). Ignored by "pgs".
    iterate : {"average", "last", "random"}, default "average"
        The iterate returned: the average (weighted by t under "asgd", uniform under
        "pgs"), the last one, or the paper's, drawn uniformly from 1..T by the seed (its
        guarantee holds in expectation only: a9a, 40 seeds, test accuracy 72.1-84.6%).
    fit_intercept : bool, default True
        Fit a bias b (`intercept`).
    intercept : {"free", "column"}, default "free"
        "free": b is not regularised and moves by plain SGD steps
        :math:`0.01 \bar R^2 \eta_t \ell'`; "column": the paper's section VII, a constant
        column of value `intercept_scaling`, regularised like the rest (X is not copied).
    intercept_scaling : float > 0 or "auto", default "auto"
        Value s of the constant column (``intercept="column"``); "auto" is 0.3 times the
        root-mean-square row norm. The bias is penalised by :math:`\sigma b^2 / (2 s^2)`.
    seed : None or int >= 0, default None
        Seeds row sampling and the random iterate; the same seed gives a bit-identical
        model. None draws fresh entropy, recorded in ``model.params["seed"]``.
    epsilon : float, optional
        Shape parameter of "huber" (delta, default 1.0), "epsilon_insensitive" (tube
        width, default 0.1) and "smooth_hinge" (smoothing width, default 1.0).
    sample_weight : array_like of shape (m,), optional
        Non-negative weights s_i. With ``sampling="iid"`` rows are drawn in proportion to
        weight and the gradient is scaled by the mean weight; otherwise each row's
        gradient is scaled by its weight.
    sampling : {"auto", "iid", "permutation", "cyclic"}, default "auto"
        How rows are drawn: i.i.d. uniformly (the paper's), a fresh random order every
        pass, or in the given order. "auto" is "permutation", or "iid" with weights.
    callback : callable, optional
        Called as ``callback(progress)`` with a `Progress` every `callback_every`
        iterations of the final fit (bit-identical to an unsplit run); returning
        ``False`` stops training, and the model holds the iterations done.
    callback_every : int >= 1, optional
        Iterations between callback calls; default ``min(max(T // 100, 1), 10**6)``.
    keep_state : bool, default False
        Keep the solver's state on the model (1-4 arrays of n_features floats) so that
        it can be continued with `warm_start`.
    warm_start : Model, optional
        A model trained with ``keep_state=True`` with the same arguments (but `T`) on data
        of the same width: runs `T` more iterations of its state and PRNG stream. For
        "last" and "average", T1 then T2 iterations equal T1 + T2 at once, bit for bit.
    n_threads : None
        Deprecated, no effect (passing it warns): the mini-batch threads were removed.
    t_offset : float >= 0 or "auto", default "auto"
        The "pgs" schedule's offset t0 (ignored by "asgd"): steps :math:`1/(\sigma(t + t_0))`,
        dual averaging with the proximal term :math:`t_0 \sigma r(w)` (Xiao 2010), whose
        random or average iterate has :math:`E F(\bar w) - F^* \le (t_0 F(0) + G^2
        \ln((T + t_0)/t_0) / (2\sigma)) / T`. 0 is the paper's Figure 1; "auto"
        (`auto_t_offset`) minimises this bound for large T, capped at m. The value used is
        ``model.params["t_offset"]``.
    sigma_grid : sequence of float > 0, optional
        The values ``sigma="auto"`` tries; default 7 values, ``10**[-2, -1.5, ..., 1]``
        times ``mean_i ||x_i||^2 / m``.
    validation_fraction : float in (0, 1) or "auto", default "auto"
        Share of the rows ``sigma="auto"`` holds out (stratified for classification);
        "auto" is 0.2, at most 10,000 rows.
    n_jobs : int >= 1, default 1
        Threads. W > 1 splits the rows into W shards, one per thread, and runs rounds of
        ``W * merge_every`` iterations, merging the states after each (docs/parallel.md):
        the model depends on (seed, W, merge_every) only.
    merge_every : int >= 1, optional
        Iterations per thread per round (with ``n_jobs > 1``); default
        ``max(1, m // (4 W k))``: a round covers a quarter of a pass.
    max_passes : float > 0, default 10
        Passes over the rows when T is None: exactly this many for a fixed sigma, at most
        this many for ``sigma="auto"`` (whose held-out score stops the run sooner).
    verbose : int >= 0, default 0
        With ``sigma="auto"``, print each halving rung's scores and each later pass's
        held-out score, the elapsed time and a bound on the time left.

    Returns
    -------
    Model or MulticlassModel
        With ``coef``, ``intercept``, ``iteration``, ``T``, ``classes`` and
        ``decision_function``, ``predict``, ``objective`` (a `MulticlassModel` for the
        K-output losses: ``coef`` of shape (K, n_features)).

    Raises
    ------
    ValueError, TypeError
        For invalid arguments or data, naming the argument and the value. A CSR ``X``'s
        entries are checked by the solver as it reads each row (a bad row stops training
        before it changes the model); other input is converted and then checked in full.
    DivergedError
        If the iterate overflows (huge feature values, intercept_scaling or 1/sigma): a
        `FloatingPointError` and a `ValueError` naming what sets the scale.
    KeyboardInterrupt
        On Ctrl-C, within milliseconds (the kernel runs in chunks); nothing the caller
        holds is changed.

    References
    ----------
    Zhu, Chen, Zhu, Wang, Wang, Chen, "Inverse Time Dependency in Convex
    Regularized Learning", ICDM 2009, Figure 1 and section VII.
    """
    kwargs = {name: value for name, value in locals().items() if name not in ("X", "y")}
    kwargs.update(sigma_grid=sigma_auto.check_sigma_grid(sigma_grid),
                  max_passes=V.check_positive("max_passes", max_passes),
                  verbose=V.check_verbose(verbose),
                  validation_fraction=sigma_auto.check_validation_fraction(validation_fraction))
    if sigma_auto.is_auto(kwargs.pop("sigma")) and warm_start is None:
        return sigma_auto.train_auto(X, y, **kwargs)
    for name in ("sigma_grid", "validation_fraction", "verbose"):
        del kwargs[name]
    return fit(X, y, sigma=sigma, **kwargs)       # (a warm start keeps its sigma)
