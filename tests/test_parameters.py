"""The table of training parameters (`pgs.rules.parameters`): each kind's rule, and every
entry point (`pgs.train`, the estimators, the command line) reading the same entry."""

import argparse
import inspect

import numpy as np
import pytest

import pgs
from pgs.cli.main import _estimator_options
from pgs.estimators import PGSClassifier, PGSRegressor
from pgs.rules import parameters as P
from pgs.rules.params import check_args

#: Per kind: values its rule refuses, and values it takes with what they become.
BAD = {
    "loss": ["nope", 3],
    "p": [1.0, 2.5, float("nan"), "2"],
    "positive": [0.0, -1.0, float("inf"), float("nan"), "x", True],
    "nonneg": [-1.0, float("inf"), "x"],
    "count": [0, 1.5, True, 2**63],
    "choice": ["nope", 1],
    "bool": [1, "yes"],
    "epsilon": [-1.0, float("inf")],
    "fraction": [0.0, 1.0, "x"],
    "grid": [[], "x", [0.0], [1.0, -1.0]],
    "verbose": [-1, 1.5],
}
GOOD = {
    "p": [(1.5, 1.5), (2, 2.0)],
    "positive": [(3, 3.0), (1e-300, 1e-300)],
    "nonneg": [(0, 0.0), (2, 2.0)],
    "count": [(3, 3), (np.int64(2), 2)],
    "bool": [(np.bool_(False), False)],
    "fraction": [(0.25, 0.25)],
    "grid": [([1.0, 0.1, 1.0], [0.1, 1.0])],
    "verbose": [(True, 1), (2, 2)],
    "epsilon": [(0, 0.0)],
}

CASES = [(param.name, bad) for param in P.PARAMETERS for bad in BAD[param.kind]]
X = np.random.default_rng(0).standard_normal((12, 3))
Y = np.where(np.arange(12) % 2 == 0, -1.0, 1.0)


def test_every_default_passes_its_rule():
    for param in P.PARAMETERS:
        got = P.check(param.name, param.default, "hinge")
        assert got == param.default or (param.kind == "epsilon" and got == 0.0), param.name
    assert dict(P.DEFAULTS) == {p.name: p.default for p in P.PARAMETERS if p.name != "verbose"}
    assert pgs.DEFAULTS is P.DEFAULTS


@pytest.mark.parametrize("name, bad", CASES)
def test_a_bad_value_is_refused_by_name_everywhere(name, bad):
    """The rule refuses it naming the parameter, and so do `pgs.train` and the
    estimators, which read the same entry."""
    with pytest.raises((ValueError, TypeError), match=name if name != "p" else "p must"):
        P.check(name, bad, "huber")
    with pytest.raises((ValueError, TypeError), match=name if name != "p" else "p must"):
        pgs.train(X, Y if name != "epsilon" else Y * 2.0, T=3, seed=0,
                  **{name: bad, **({"loss": "huber"} if name == "epsilon" else {})})
    if name in ("loss", "verbose", "sigma"):
        return          # (the estimators' own loss lists, sigma's "auto"; verbose: below)
    est = PGSRegressor(**{name: bad}) if name == "epsilon" else PGSClassifier(**{name: bad})
    with pytest.raises((ValueError, TypeError), match=name if name != "p" else "p must"):
        est.fit(X, Y)


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_a_good_value_is_taken_normalised(kind):
    name = next(param.name for param in P.PARAMETERS if param.kind == kind)
    for value, want in GOOD[kind]:
        got = P.check(name, value)
        np.testing.assert_array_equal(got, want)
        assert type(np.asarray(got).ravel()[0].item()) is type(np.asarray(want).ravel()[0].item())


def test_specials_are_taken_as_they_are():
    assert P.check("B", None) is None and P.check("B", "auto") == "auto"
    assert P.check("T", None) is None and P.check("sigma_grid", None) is None
    assert P.check("validation_fraction", "auto") == "auto"
    with pytest.raises(ValueError, match="B must be None, 'auto' or a number > 0, got B='x'"):
        P.check("B", "x")
    with pytest.raises(TypeError, match="k must be an integer >= 1, got None"):
        P.check("k", None)      # (None is T's, not k's)
    assert P.check("epsilon", None, "huber") == 1.0     # (the loss's default)


def test_the_command_line_reads_the_table():
    """Each option of a table parameter has its help and its values: choices, or a type
    that applies the parameter's rule ('auto' where the entry takes it)."""
    options = {name: keywords for _, name, keywords in _estimator_options()}
    offered = [p for p in P.PARAMETERS if p.name in options]
    assert {p.name for p in P.PARAMETERS} - set(options) == {
        "sigma_grid", "validation_fraction", "verbose"}
    for param in offered:
        kw = options[param.name]
        if param.name == "fit_intercept":       # (--no-intercept)
            assert kw["action"] == "store_false"
            continue
        assert kw["help"].startswith(param.help), param.name
        if param.choices:
            assert tuple(kw["choices"]) == param.choices
            continue
        parse = kw["type"]
        numbers = [b for b in BAD[param.kind] if isinstance(b, (int, float))
                   and not isinstance(b, bool)]
        for bad in [*map(str, numbers), "x", "nan", "inf"]:
            with pytest.raises(argparse.ArgumentTypeError, match="must be"):
                parse(bad)
        if "auto" in param.special:
            assert parse("auto") == "auto"
        else:
            with pytest.raises(argparse.ArgumentTypeError, match="must be"):
                parse("auto")
        assert parse("2") == P.check(param.name, 2, "huber")


def test_check_args_takes_exactly_the_run_arguments():
    args = {name: P.DEFAULTS[name] for name in P.RUN_ARGS}
    assert check_args(**args)["epsilon"] == 0.0
    with pytest.raises(TypeError, match=r"unexpected or missing \['typo'\]"):
        check_args(**args, typo=1)
    del args["k"]
    with pytest.raises(TypeError, match=r"\['k'\]"):
        check_args(**args)
    # pgs.train's keywords are the table's (and what a call adds: data, seed, threads, ...)
    train = set(inspect.signature(pgs.train).parameters)
    assert {p.name for p in P.PARAMETERS} <= train
