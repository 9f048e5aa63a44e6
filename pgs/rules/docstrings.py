r"""The one description of every training parameter, for the docstrings of `pgs.train`, the
estimators, `pgs.dask` and CSGD (numpydoc entries that `fill_doc` puts in place): `ENTRIES`
has a list per context, [common] `pgs.train`'s and the others what differs there; ``+name``
appends its lines to the entry a later context gives (a remark on `pgs.train`'s)."""

import inspect
import re

ENTRIES = r"""
[common]
X : array_like or scipy.sparse matrix/array, shape (m, n_features)
    Training rows: CSR with float32/float64 data and int32/int64 indices is read in place,
    anything else converted once to CSR. A bad entry (NaN, inf, an index out of range) is a
    ValueError naming it, raised before it changes the model.
y : array_like, shape (m,)
    For classification losses any labels, two or more: for a binary loss two are mapped to -1
    (the smaller) and +1, and more than two train one problem a class against the rest (a
    `OneVsRestModel`, its problems the outputs of one solver; one sigma for all with
    ``sigma="auto"``, scored on the class they predict together); for regression losses
    real targets.
loss : str, default "hinge"
    Classification: "hinge", "logistic", "squared_hinge", "smooth_hinge", "modified_huber"; with
    K classes as one problem (docs/multiclass.md, a `MulticlassModel` of K rows, one dual vector
    per class): "multinomial" (softmax cross-entropy, ``predict_proba``) and "crammer_singer"
    (the multiclass hinge); "auto": hinge, and for more than two classes with ``sigma="auto"``
    one-vs-rest hinge or Crammer-Singer, whichever scores better on the held-out rows
    (``model.params["loss"]`` says which; docs/defaults.md 9). Regression: "squared", "huber",
    "epsilon_insensitive", "absolute".
p : float in (1, 2], default 2.0
    Norm of the regulariser: p = 2 is Pegasos; every p costs O(non-zeros) a row.
sigma : float > 0 or "auto", default "auto"
    Regularisation strength (Pegasos' lambda, scikit-learn's alpha). "auto" holds out
    `validation_fraction` of the rows and chooses among `sigma_grid` by successive halving:
    every value runs a quarter pass over the other rows, the better half of them (by held-out
    accuracy, R^2 for regression) twice as long, and so on; of the last two, the larger sigma
    unless the other scores better by more than the standard error of the difference; the
    search spends at most half of the iterations. The winner's run then continues (it is not
    refitted) on every row but half the held-out ones (at most 5,000), until its score on
    those, which it never trains on, has not improved for three passes, or `max_passes` (the
    grid, each value's last score: ``model.sigma_grid``, ``model.sigma_scores``;
    docs/defaults.md). The final model has learned from nearly every row, as scikit-learn's
    ``LogisticRegressionCV(refit=True)``'s. A warm start keeps its model's sigma.
T : int >= 1 or None, default None
    Number of iterations (with `warm_start`, further ones), exactly; None is ``ceil(max_passes m
    / k)`` for a fixed sigma, and the held-out stopping rule for ``sigma="auto"``.
k : int >= 1, default 1
    Mini-batch size, at most m; all k margins are taken at the previous iterate.
B : None, "auto" or float > 0, default None
    Radius of the domain :math:`\|w\|_p \le B` (projection by rescaling). "auto" is
    :math:`\sqrt{2(p-1)F(0)/\sigma}`, which always contains the optimum. None leaves Lipschitz
    losses unbounded, and means "auto" for the losses whose gradient is unbounded ("squared",
    "squared_hinge", "modified_huber"); ``model.params["B"]``.
schedule : {"asgd", "pgs"}, default "asgd"
    The step size :math:`\eta_t` of the mirror descent (docs/design.md 6c): averaged SGD's
    :math:`\eta_0 (1 + \sigma \eta_0 t)^{-3/4}` (Xu 2011), or the paper's :math:`1 / (\sigma (t
    + t_0))`.
eta0 : float > 0 or "auto", default "auto"
    The "asgd" schedule's first step (below 1 / sigma); "auto" is ``2 / (L R^2)``, L the
    Lipschitz constant of the loss's derivative and R^2 the rows' mean squared dual norm
    (`pgs.rules.defaults.auto_eta0`). Ignored by "pgs".
iterate : {"average", "last", "random"}, default "average"
    The iterate returned: the average (weighted by t under "asgd", uniform under "pgs"), the
    last one, or the paper's, drawn uniformly from 1..T by the seed (its guarantee holds in
    expectation only: a9a, 40 seeds, test accuracy 72.1-84.6%).
fit_intercept : bool, default True
    Fit a bias b (see `intercept`).
intercept : {"free", "column"}, default "free"
    "free": b is not regularised and moves by plain SGD steps :math:`0.01 \bar R^2 \eta_t \ell'`
    (as scikit-learn's SGD); "column": the paper's section VII, a constant column of value
    `intercept_scaling`, regularised like the rest (never materialised: X is not copied).
intercept_scaling : float > 0 or "auto", default "auto"
    Value s of the constant column (``intercept="column"``); "auto" is 0.3 times the
    root-mean-square row norm. The bias is penalised by :math:`\sigma b^2 / (2 s^2)`.
seed : None or int >= 0, default None
    Seeds row sampling, the random iterate and CSGD's eta0 search; the same seed gives a
    bit-identical model. None draws fresh entropy, recorded in ``model.params["seed"]``.
epsilon : float or None, default None
    Shape parameter of "huber" (delta, default 1.0), "epsilon_insensitive" (tube width, default
    0.1) and "smooth_hinge" (smoothing width, default 1.0).
sample_weight : array_like of shape (m,), optional
    Non-negative weights s_i of the empirical risk. With ``sampling="iid"`` rows are drawn in
    proportion to weight (an alias table) and the gradient is scaled by the mean weight;
    otherwise each row's gradient is scaled by its weight.
classes : array_like, optional
    Every label y may hold, for a batch that holds some of them (a stream's, continued by
    `warm_start`): a binary loss's two, or the classes of one-vs-rest and the K-output losses
    (None: y's own; with `warm_start`, the model's). With ``loss="squared"`` y's labels are
    classes: least squares on each class's 0/1 indicator (C-Adaline's targets; two classes:
    one problem, of the second, predicted above 1/2), a `OneVsRestModel`.
sampling : {"auto", "iid", "permutation", "cyclic"}, default "auto"
    How rows are drawn: i.i.d. uniformly (the paper's), a fresh random order every pass, or in
    the given order (fastest, for data already shuffled). "auto" is "permutation", or "iid" with
    weights.
callback : callable, optional
    Called as ``callback(progress)`` with a `Progress` every `callback_every` iterations of a
    fit at a fixed sigma (bit-identical to an unsplit run); returning ``False`` stops training,
    and the model holds the iterations done. ``sigma="auto"`` refuses it (a ValueError): it
    runs several candidates, and ``verbose`` reports them and each pass.
callback_every : int >= 1, optional
    Iterations between callback calls; default ``min(max(T // 100, 1), 10**6)``.
keep_state : bool, default False
    Keep the solver's state on the model (1-4 arrays of n_features floats) so that it can be
    continued with `warm_start`.
warm_start : Model, MulticlassModel or OneVsRestModel, optional
    A model trained with ``keep_state=True`` with the same arguments (but `T`) on data of the
    same width: runs `T` more iterations of its state and PRNG stream (a `OneVsRestModel`: of
    each of its problems). For "last" and "average", T1 then T2 iterations equal T1 + T2 at
    once, bit for bit; with W > 1 workers (`n_jobs`, `pgs.dask`) when T1 is a multiple of a
    round, ``W * merge_every`` iterations (a run that ends inside a round merges there). Its
    "auto" values (eta0, intercept_scaling, t_offset) are kept: no row is scanned.
t_offset : float >= 0 or "auto", default "auto"
    The "pgs" schedule's offset t0 (ignored by "asgd"): steps :math:`1/(\sigma(t + t_0))`, dual
    averaging with the proximal term :math:`t_0 \sigma r(w)` (Xiao 2010), whose random or
    average iterate has :math:`E F(\bar w) - F^* \le (t_0 F(0) + G^2 \ln((T + t_0)/t_0) /
    (2\sigma)) / T`. 0 is the paper's Figure 1; "auto" (`auto_t_offset`) minimises this bound
    for large T, capped at m. The value used is ``model.params["t_offset"]``.
sigma_grid : sequence of float > 0 or None, default None
    The values ``sigma="auto"`` tries; None: 7 values, ``10**[-2, -1.5, ..., 1]`` times ``mean_i
    ||x_i||^2 / m``.
validation_fraction : float in (0, 1) or "auto", default "auto"
    Share of the rows ``sigma="auto"`` holds out (stratified for classification: at least one
    row of every class that has two); "auto" is 0.2, at most 10,000 rows.
n_jobs : int >= 1, default 1
    Threads. W > 1 splits the rows into W contiguous shards, one per thread, and runs rounds of
    ``W * merge_every`` iterations, merging the states after each (docs/parallel.md): the model
    depends on (seed, W, merge_every) only.
merge_every : int >= 1, optional
    Iterations per worker (thread or Dask shard) per round, with W workers; default ``max(1, m
    // (4 W k))``: a round covers a quarter of a pass.
max_passes : float > 0, default 10
    Passes over the rows when T is None: exactly this many for a fixed sigma, at most this many
    for ``sigma="auto"`` (of the rows it trains on; its held-out score stops the run sooner);
    at most 2**62 iterations.
l1 : float >= 0, default 0
    Weight of an :math:`\ell_1` term :math:`l_1 \|w\|_1` over the features (not the intercept),
    which makes the model sparse, in O(non-zeros) an iteration. At p = 2 the model is dual
    averaging's iterate (RDA: the dual vector read truncated towards 0; ``iterate="average"``
    resolves to "last"); at p < 2 the dual vector itself is truncated (SMIDAS, debts carried
    past 0) and ``iterate="average"`` keeps the average's values on the last iterate's support.
    `pgs.sparse.l1_max` is the smallest l1 that gives w = 0, `pgs.sparse.l1_path` a path of
    models (docs/sparse.md). Not with ``iterate="random"``.
verbose : int >= 0 or callable, default 0
    With ``sigma="auto"``, print each halving rung's scores and each later pass's held-out
    score, the elapsed time and a bound on the time left; a callable receives the bound and
    the line (the command line's progress display).
[estimator]
+sigma
    `PGSClassifier` chooses one sigma for all its one-vs-rest problems, scored on their argmax
    prediction; `partial_fit` chooses it on its first batch.
+T
    In the estimators: per binary problem and per `fit`; ignored by `partial_fit`.
+k
    A `partial_fit` batch of fewer rows than k runs one iteration that draws k rows from it
    (with a warning).
random_state : None, int >= 0 or numpy RandomState, default None
    Seeds row sampling: problem ``c`` equals ``pgs.train(X, y == classes_[c],
    seed=random_state)`` (a regressor ``pgs.train(X, y, seed=random_state)``); the problems draw
    the same rows, as the outputs of one solver.
n_jobs : int or None, default None
    Threads (None: 1, -1: all cores). Several one-vs-rest problems are shared out in groups (the
    results do not depend on `n_jobs`); with two classes, a regression or a K-output loss's one
    problem, the threads split the rows instead (merging the states), as ``pgs.train(...,
    n_jobs=n_jobs)`` (deterministic for a given `n_jobs`).
class_weight : None, "balanced" or dict, default None
    Weight of each class, multiplied into `sample_weight`. "balanced" uses ``n_samples /
    (n_classes * bincount(y))`` (refused by `partial_fit`).
warm_start : bool, default False
    When True, `fit` continues the previous fit's solver state: `T` more iterations (for "last"
    or "average", bit for bit one fit of both Ts), keeping the values the first fit resolved (as
    `partial_fit` does). New classes start afresh; changed features or hyper-parameters raise.
[classifier]
loss : str, default "auto"
    "auto": hinge; for more than two classes with ``sigma="auto"``, one-vs-rest hinge or
    Crammer-Singer, whichever scores better on the held-out rows, compared at each rung of
    the σ search until one leads by more than the paired standard error (a tie at the last
    rung: hinge); ``loss_`` says which (docs/defaults.md 9). Or
    "hinge", "logistic", "squared_hinge", "smooth_hinge", "modified_huber", "multinomial",
    "crammer_singer" or "squared": the loss of every binary problem (+1 for the class, -1 for
    the rest). "squared" is least squares on one-hot 0/1 targets with argmax prediction
    (C-Adaline; for two classes, on the indicator of ``classes_[1]`` with 0.5 subtracted from
    the intercept). "multinomial" (softmax cross-entropy) and "crammer_singer" (the multiclass
    hinge) train one problem of K outputs; with two classes ``coef_`` and ``intercept_`` hold
    class 1's minus class 0's.
[regressor]
loss : {"squared", "huber", "epsilon_insensitive", "absolute"}, default "squared"
    "squared" is :math:`(z - y)^2` (no 1/2); its gradient is unbounded, so `B`'s default None
    means the automatic radius.
[dask]
X : dask.array.Array, shape (n_samples, n_features)
    Rows, chunked by rows; chunks are scipy.sparse matrices (CSR is used in place) or NumPy
    arrays (converted once, on their worker). Column chunks are joined.
+y
    A dask array or in memory (gathered to the client once: O(n_samples)).
client : distributed.Client, optional
    See `pgs.dask.get_client`: by default the current client, else a `LocalCluster` of the
    machine's cores.
n_jobs : int >= 1, optional
    Number of shards W: X is re-chunked into W contiguous near-equal row ranges, those of
    ``pgs.train(n_jobs=W)``. By default each row-chunk of X is a shard.
merge_every : int >= 1, optional
    Iterations per shard per round (for unequal shards a round runs ``W * merge_every``
    iterations split in proportion to the shards' sizes); default ``max(1, m // (2 W k))``: a
    round covers half a pass (`DASK_ROUND_PASSES`), as a round's hand-offs cost milliseconds
    (docs/parallel.md, section 4).
+sample_weight
    A dask array or in memory (gathered to the client once, then sent to the shards).
+callback
    Called on the client between rounds.
timeout : float, optional
    Seconds any one wait may last: a round (with the shards of a lost worker rebuilt), the
    targets' computation. Default ``pgs.dask.client.DEFAULT_TIMEOUT`` (600).
**kwargs
    The other arguments of `pgs.train`, with the same meaning and defaults:
[dask_estimator]
+n_jobs
    Not used with dask input: there each row-chunk of X is a shard.
+merge_every
    Read with dask input only.
[csgd]
y : array_like, shape (m,)
    Real targets (`train_csgd`); class labels, at least two distinct values of any sortable type
    (`train_cadaline`: one regressor per class on its 0/1 indicator).
T : int >= 1, optional
    Number of steps (samples drawn); default ``10 * m`` (ten passes' worth).
eta0 : "auto" or float > 0, default "auto"
    Base step size. "auto" picks it by short trial runs of the same variant on at most 1000 rows
    (`auto_eta0`; for C-Adaline one step size for all classes, from the mean loss over them);
    the value used is ``model.eta0_``.
switch : "half" or int >= 1, default "half"
    m_switch of CSGD's 2-phase step size, :math:`\eta_0/\sqrt t` before it and :math:`\eta_0
    \sqrt{m_{switch}}/t` after; "half" is ``m // 2`` (the paper's). Only "csgd" reads it.
variant : {"csgd", "ncsgd", "sgd"}, default "csgd"
    "csgd": projection and the 2-phase step size; "ncsgd": projection and :math:`\eta_0/\sqrt
    t`; "sgd": plain SGD (LMS) with :math:`\eta_0/\sqrt t`.
fit_intercept : bool, default True
    Give the rows an implicit constant 1 (the paper's bias feature). Without it the projected
    variants find the least-squares fit only if X's columns span the constants.
iterate : {"last", "average"}, default "last"
    Return the last iterate or the average of the iterates after steps 1..T (Polyak-Ruppert;
    "sgd" with "average" is ASGD).
sampling : {"iid", "permutation"}, default "iid"
    Draw every row uniformly with replacement (the paper's set-up), or visit every row once per
    epoch in a fresh random order.
"""

#: {context: {name, "+name" or "**kwargs": (its first line, the description's lines)}}
CONTEXTS = {context: {item.partition(" : ")[0].partition("\n")[0]: (item.split("\n")[0],
                                                                  item.split("\n")[1:])
                      for item in re.split(r"\n(?=\S)", block.strip("\n"))}
            for context, block in re.findall(r"^\[(\w+)\]\n(.*?)(?=^\[|\Z)", ENTRIES,
                                             re.S | re.M)}


def entry(name, contexts=()):
    """The numpydoc entry of parameter `name` (its lines) in the first of `contexts` (then
    "common") that describes it, with the remarks of the contexts before it."""
    remarks = []
    for table in (CONTEXTS[context] for context in (*contexts, "common")):
        if name in table:
            return [table[name][0], *table[name][1], *remarks]
        remarks = table.get("+" + name, ("", []))[1] + remarks
    raise KeyError(f"no description of the parameter {name!r} in {contexts}")


def fill_doc(*contexts, kwargs_of=None):
    """Decorator: the docstring line ``{parameters}`` becomes the entries of the function's
    (or class's ``__init__``'s) parameters; ``**kwargs`` stands for the keyword parameters
    of `kwargs_of` that the signature lacks, each described too."""
    def decorate(obj):
        params = inspect.signature(obj.__init__ if isinstance(obj, type) else obj).parameters
        names = [str(par) if par.kind == par.VAR_KEYWORD else name
                 for name, par in params.items() if name != "self"]
        names += [name for name in (inspect.signature(kwargs_of).parameters if kwargs_of else ())
                  if name not in params]
        if obj.__doc__:         # (not under python -OO)
            indent = re.search(r"^( *)\{parameters\}$", obj.__doc__, re.M).group(1)
            obj.__doc__ = obj.__doc__.replace(indent + "{parameters}", "\n".join(
                indent + line for name in names for line in entry(name, contexts)), 1)
        return obj
    return decorate
