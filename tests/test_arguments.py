"""Argument validation: k against the rows, and a fuzz of every argument of `pgs.train`,
`train_csgd`, `train_cadaline` and the estimators (only success, or a ValueError or
TypeError naming the argument; or, for a valid value so extreme that the run overflows,
a FloatingPointError naming it)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
from pgs.estimators import PGSClassifier, PGSRegressor

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

M = 30
X = sp.random(M, 5, density=0.5, random_state=0, format="csr")
Z = X @ np.arange(1.0, 6.0)
Y = np.where(np.arange(M) % 2 == 0, -1.0, 1.0)
LABELS = np.arange(M) % 3


# ----------------------------------------------------------------- k and the rows


def test_k_above_the_rows_is_refused_by_train_and_fit_unless_T_is_given():
    """Passes of a batch larger than the rows are almost surely a mistake: refused; with T
    given (a stream's small batch, continued by a warm start) a warning, and it runs."""
    with pytest.raises(ValueError, match=rf"k must be at most the number of rows of X, "
                                         rf"got k={M + 1} for {M} rows"):
        pgs.train(X, Y, k=M + 1)
    pgs.train(X, Y, k=M, T=3)                         # k = m is a full batch
    for est, y in ((PGSClassifier(k=M + 1), LABELS), (PGSRegressor(k=M + 1), Z)):
        with pytest.raises(ValueError, match=rf"k={M + 1} for {M} rows"):
            est.fit(X, y)
    model = pgs.train(X, Y, k=4, T=5, keep_state=True, seed=0)
    with pytest.raises(ValueError, match="k=4 for 3 rows"):
        pgs.train(X[:3], Y[:3], k=4, warm_start=model, seed=0)
    with pytest.warns(UserWarning, match="the batch has 3 rows, fewer than k=4"):
        more = pgs.train(X[:3], Y[:3], k=4, T=5, warm_start=model, seed=0)
    assert more.T == 10


@pytest.mark.parametrize("make", [lambda: PGSClassifier(k=8, random_state=0),
                                  lambda: PGSRegressor(k=8, random_state=0)])
def test_partial_fit_batch_smaller_than_k_warns_and_runs(make):
    """A stream's batch may be smaller than k (its last one): one iteration of k draws
    from it, with a warning; a batch of k rows or more does not warn."""
    est = make()
    y = LABELS if isinstance(est, PGSClassifier) else Z
    extra = dict(classes=[0, 1, 2]) if isinstance(est, PGSClassifier) else {}
    est.partial_fit(X[:16], y[:16], **extra)
    with pytest.warns(UserWarning, match="the batch has 3 rows, fewer than k=8"):
        est.partial_fit(X[16:19], y[16:19])
    assert est.t_ == 16 // 8 + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.partial_fit(X[19:27], y[19:27])


# ----------------------------------------------------------------- argument fuzz

#: Values of every kind a wrong argument could take. Counts stay small (or beyond the
#: limit) so that a valid draw runs in milliseconds.
_VALUES = st.one_of(
    st.none(), st.booleans(),
    st.integers(-3, 40),
    st.sampled_from([2**62 + 1, 2**63, -(2**63), 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=1e-6, max_value=1e6),
    st.sampled_from(["", "auto", "half", "hinge", "squared", "logistic", "huber", "iid",
                     "permutation", "cyclic", "last", "average", "random", "csgd",
                     "sgd", "balanced", "nope", "1.5", "10"]),
    st.sampled_from([np.float32(1.5), np.int8(3), np.int64(-2), np.bool_(True),
                     np.array(2.0), np.array([1.0, 2.0]), np.zeros((2, 2)), 1 + 2j,
                     [1, 2], (1,), {"a": 1}, b"hinge", object(), np.nan,
                     np.ones(M), -np.ones(M), np.full(M, np.inf), np.arange(M),
                     np.array(["a"] * M), {0: 2.0}, {5: 1.0}]),
)

#: (name, call, the arguments fuzzed) of each public entry point.
_TARGETS = {
    "train": (lambda **kw: pgs.train(X, Y, **{"T": 20, **kw}),
              ["loss", "p", "sigma", "T", "k", "B", "iterate", "fit_intercept",
               "intercept_scaling", "seed", "epsilon", "sample_weight", "sampling",
               "callback", "callback_every", "keep_state", "warm_start",
               "t_offset", "n_jobs", "merge_every"]),
    "train_regression": (lambda **kw: pgs.train(X, Z, **{"T": 20, "loss": "huber", **kw}),
                         ["p", "sigma", "B", "epsilon", "intercept_scaling", "t_offset"]),
    "train_csgd": (lambda **kw: pgs.train_csgd(X, Z, **{"T": 20, **kw}),
                   ["T", "eta0", "switch", "variant", "fit_intercept", "iterate",
                    "sampling", "seed"]),
    "train_cadaline": (lambda **kw: pgs.train_cadaline(X, LABELS, **{"T": 20, **kw}),
                       ["T", "eta0", "switch", "variant", "fit_intercept", "iterate",
                        "sampling", "seed"]),
    "PGSClassifier": (lambda **kw: PGSClassifier(**{"T": 20, **kw}).fit(X, LABELS),
                      ["loss", "p", "sigma", "T", "k", "B", "iterate", "fit_intercept",
                       "intercept_scaling", "epsilon", "sampling", "t_offset",
                       "random_state", "n_jobs", "class_weight", "warm_start"]),
    "fit_sample_weight": (
        lambda **kw: (PGSClassifier(T=20).fit(X, LABELS, **kw),
                      PGSRegressor(T=20).fit(X, Z, **kw)),
        ["sample_weight"]),
    "PGSRegressor": (lambda **kw: PGSRegressor(**{"T": 20, **kw}).fit(X, Z),
                     ["loss", "p", "sigma", "T", "k", "B", "iterate", "fit_intercept",
                      "intercept_scaling", "epsilon", "sampling", "t_offset",
                      "random_state", "n_jobs", "warm_start"]),
}


def _call(target, name, value):
    call, _ = _TARGETS[target]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(**{name: value})
        except (ValueError, TypeError, FloatingPointError) as exc:
            # (FloatingPointError: a valid value so extreme that the run overflows, e.g.
            # intercept_scaling=1e152; its message names what sets the scale)
            assert name in str(exc), f"{target}({name}={value!r}): {exc!r}"


@pytest.mark.parametrize("target", list(_TARGETS))
@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_arguments_succeed_or_name_the_argument(target, data):
    name = data.draw(st.sampled_from(_TARGETS[target][1]), label="argument")
    value = data.draw(_VALUES, label="value")
    _call(target, name, value)


@pytest.mark.parametrize("name, value, error", [
    ("n_jobs", "a", TypeError), ("n_jobs", 0, ValueError), ("merge_every", "x", TypeError),
    ("callback_every", 0, ValueError), ("keep_state", np.ones(2), TypeError)])
def test_the_default_sigma_search_checks_the_run_arguments(name, value, error):
    """sigma="auto" (the default) checks the arguments it hands on as a fixed sigma does."""
    with pytest.raises(error, match=name):
        pgs.train(X, Y, T=20, **{name: value})
