"""`pgs.train`: the public entry point (a fixed sigma, or the sigma search)."""

import functools

from pgs.rules import defaults as D
from pgs.rules.data import as_csr_buffers
from pgs.rules.docstrings import fill_doc
from pgs.rules.params import KEEP
from pgs.training import sigma_auto
from pgs.training.classes import check_classes, route, train_one_vs_rest
from pgs.training.fit import check_reports, fit, fit_many


@fill_doc()
def train(X, y, *, loss=D.DEFAULTS["loss"], p=D.DEFAULTS["p"], sigma=D.DEFAULTS["sigma"],
          T=D.DEFAULTS["T"], k=D.DEFAULTS["k"], B=D.DEFAULTS["B"], schedule=D.DEFAULTS["schedule"],
          eta0=D.DEFAULTS["eta0"], iterate=D.DEFAULTS["iterate"],
          fit_intercept=D.DEFAULTS["fit_intercept"], intercept=D.DEFAULTS["intercept"],
          intercept_scaling=D.DEFAULTS["intercept_scaling"], seed=None,
          epsilon=D.DEFAULTS["epsilon"], sample_weight=None, classes=None,
          sampling=D.DEFAULTS["sampling"],
          callback=None, callback_every=None, keep_state=False, warm_start=None,
          t_offset=D.DEFAULTS["t_offset"], sigma_grid=D.DEFAULTS["sigma_grid"],
          validation_fraction=D.DEFAULTS["validation_fraction"], n_jobs=1, merge_every=None,
          max_passes=D.DEFAULTS["max_passes"], l1=D.DEFAULTS["l1"], verbose=0):
    r"""Train a linear model with the Primal Gradient Solver.

    Minimises :math:`F(w, b) = \sigma \|w\|_p^2 / (2(p-1)) + l_1 \|w\|_1 + \frac1m
    \sum_i s_i \ell(\langle w, x_i\rangle + b, y_i)` (weights :math:`s_i = 1` and
    :math:`l_1 = 0` by default; the bias b is free, or with ``intercept="column"`` the
    weight of a constant column, inside w and its norm) by stochastic mirror descent on the
    dual of the :math:`\ell_p` regulariser (Zhu et al. 2009, Figure 1; docs/design.md 6c).
    Each iteration costs O(non-zeros of the batch), for every p.

    The defaults (`pgs.DEFAULTS`, shared with `PGSClassifier` and `PGSRegressor`) are the
    fastest accurate set-up measured in bench/; the paper's set-up is the preset
    `pgs.PAPER`: ``pgs.train(X, y, sigma=1e-4, **pgs.PAPER)``. The user guide's
    docs/guide/train.md explains the arguments by topic.

    Parameters
    ----------
    {parameters}

    Returns
    -------
    Model, MulticlassModel or OneVsRestModel
        With ``coef``, ``intercept``, ``iteration``, ``T``, ``classes`` and
        ``decision_function``, ``predict``, ``objective`` (a `MulticlassModel` for the
        K-output losses, a `OneVsRestModel` for more than two classes with a binary loss:
        ``coef`` of shape (K, n_features)).

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
    kwargs["classes"] = check_classes(classes, loss)
    auto = sigma_auto.is_auto(kwargs.pop("sigma"))
    if auto and warm_start is None:
        return sigma_auto.train_auto(X, y, **kwargs)
    sigma_auto.check_search(kwargs.pop("sigma_grid"), kwargs.pop("validation_fraction"),
                            kwargs.pop("verbose"))     # (unused here, checked all the same)
    sigma = KEEP if auto else sigma                 # (a warm start keeps its)
    ovr, kwargs["loss"] = route(loss, y, kwargs["classes"], warm_start, callback)
    if ovr:
        return _one_vs_rest(X, y, sigma=sigma, **kwargs)
    return fit(X, y, sigma=sigma, known_classes=kwargs.pop("classes"), **kwargs)


def _one_vs_rest(X, y, *, callback, callback_every, merge_every, n_jobs, **kwargs):
    """`train` at a fixed sigma of labels of more than two classes with a binary loss (or
    continuing a `OneVsRestModel`): `train_one_vs_rest` on one solver's outputs for each
    of `n_jobs` threads (`fit_many`)."""
    check_reports(callback, callback_every, merge_every)  # (merge_every: rows split)
    Xb = as_csr_buffers(X, check_entries=False)
    return train_one_vs_rest(functools.partial(fit_many, Xb, n_jobs=n_jobs), Xb.shape[0], y,
                             **kwargs)
