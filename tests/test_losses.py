"""The compiled losses (`pgs._core.py_loss`, its derivative, `mean_loss`) against Python.

Three independent checks per loss: a table of hand-computed values, the vectorised
formulas of tests/reference.py, and central finite differences of the compiled value
(away from kinks; at kinks the derivative must be a subgradient). Then every row of
the loss table (pgs/rules/losses.py) against the compiled kernel.
"""

import math

import numpy as np
import pytest
from reference import dloss as ref_dloss
from reference import loss_value as ref_loss

import pgs
import pgs._core
import pgs.rules.losses
from pgs._core import mean_loss, py_loss
from pgs.rules.losses import LOSSES as LOSS_TABLE
from pgs.rules.validation import CLASSIFICATION_LOSSES, check_epsilon, check_loss

LOSSES = pgs.LOSS_NAMES
ID = {name: i for i, name in enumerate(LOSSES)}


def py_dloss(loss_id, z, y, eps):
    return py_loss(loss_id, z, y, eps, deriv=True)


def _eps_values(loss):
    default = pgs.rules.losses.loss_spec(loss).default_epsilon
    return [0.0] if default is None else [default, 0.25, 2.0]


def _ys(loss):
    return [-1.0, 1.0] if loss in CLASSIFICATION_LOSSES else [-1.7, 0.0, 0.3, 2.5]


def _kinks(loss, y, eps):
    """Margins z where the loss is not twice differentiable (finite differences avoid them)."""
    if loss in CLASSIFICATION_LOSSES:
        m = {"hinge": [1.0], "logistic": [], "squared_hinge": [1.0],
             "smooth_hinge": [1.0, 1.0 - eps], "modified_huber": [1.0, -1.0],
             "multinomial": [], "crammer_singer": [1.0]}[loss]     # (their K = 2 twins)
        return [mi * y for mi in m]                # z = m / y with y = +-1
    r = {"squared": [], "huber": [eps, -eps], "epsilon_insensitive": [eps, -eps],
         "absolute": [0.0]}[loss]
    return [y + ri for ri in r]


Z = np.concatenate([np.linspace(-4.0, 4.0, 161), [-1.0, 1.0, 0.0, 0.5, -0.5, 1e-9, -37.0, 52.0]])

# (loss, z, y, eps, value, derivative), worked out by hand from the loss table of
# pgs/rules/losses.py and the docstrings of pgs/_losses.pxd.
HAND = [
    ("hinge", 0.5, 1.0, 0.0, 0.5, -1.0),
    ("hinge", 2.0, 1.0, 0.0, 0.0, 0.0),
    ("hinge", 0.5, -1.0, 0.0, 1.5, 1.0),
    ("logistic", 0.0, 1.0, 0.0, math.log(2.0), -0.5),
    ("logistic", 2.0, -1.0, 0.0, math.log1p(math.exp(2.0)), 1.0 / (1.0 + math.exp(-2.0))),
    ("squared", 3.0, 1.0, 0.0, 4.0, 4.0),
    ("squared_hinge", -1.0, 1.0, 0.0, 4.0, -4.0),
    ("squared_hinge", 1.5, 1.0, 0.0, 0.0, 0.0),
    ("smooth_hinge", 0.5, 1.0, 1.0, 0.125, -0.5),
    ("smooth_hinge", -2.0, 1.0, 1.0, 2.5, -1.0),
    ("modified_huber", 0.0, 1.0, 0.0, 1.0, -2.0),
    ("modified_huber", -3.0, 1.0, 0.0, 12.0, -4.0),
    ("modified_huber", 3.0, -1.0, 0.0, 12.0, 4.0),
    ("huber", 1.5, 1.0, 1.0, 0.125, 0.5),
    ("huber", 4.0, 1.0, 1.0, 2.5, 1.0),
    ("huber", -4.0, 1.0, 1.0, 4.5, -1.0),
    ("epsilon_insensitive", 1.05, 1.0, 0.1, 0.0, 0.0),
    ("epsilon_insensitive", 2.0, 1.0, 0.1, 0.9, 1.0),
    ("epsilon_insensitive", 0.0, 1.0, 0.1, 0.9, -1.0),
    ("absolute", -2.0, 1.0, 0.0, 3.0, -1.0),
]


def test_loss_ids_follow_loss_names():
    assert len(set(LOSSES)) == len(LOSSES) == 11
    assert LOSSES.index("hinge") == 0 and LOSSES.index("absolute") == 8
    assert LOSSES.index("crammer_singer") == 10


@pytest.mark.parametrize("loss, z, y, eps, value, deriv", HAND)
def test_hand_computed_values(loss, z, y, eps, value, deriv):
    assert py_loss(ID[loss], z, y, eps) == pytest.approx(value, rel=1e-15, abs=1e-15)
    assert py_dloss(ID[loss], z, y, eps) == pytest.approx(deriv, rel=1e-15, abs=1e-15)


@pytest.mark.parametrize("loss", LOSSES)
def test_values_and_derivatives_match_python_formulas(loss):
    for y in _ys(loss):
        for eps in _eps_values(loss):
            got = np.array([py_loss(ID[loss], z, y, eps) for z in Z])
            np.testing.assert_allclose(got, ref_loss(loss, Z, y, eps), rtol=1e-14, atol=1e-15)
            got_d = np.array([py_dloss(ID[loss], z, y, eps) for z in Z])
            want_d = np.array([ref_dloss(loss, z, y, eps) for z in Z])
            np.testing.assert_allclose(got_d, want_d, rtol=1e-14, atol=1e-15)
            # mean_loss (used by Model.objective) is the mean of the same values
            assert mean_loss(Z, np.full(Z.shape, y), ID[loss], eps) == pytest.approx(
                got.mean(), rel=1e-14)


@pytest.mark.parametrize("loss", LOSSES)
def test_derivative_matches_finite_differences(loss):
    h = 1e-6
    for y in _ys(loss):
        for eps in _eps_values(loss):
            kinks = _kinks(loss, y, eps)
            for z in Z:
                if any(abs(z - kz) < 1e-3 for kz in kinks):
                    continue
                fd = (py_loss(ID[loss], z + h, y, eps) - py_loss(ID[loss], z - h, y, eps)) / (2 * h)
                d = py_dloss(ID[loss], z, y, eps)
                assert d == pytest.approx(fd, rel=1e-6, abs=1e-7), (loss, z, y, eps)


@pytest.mark.parametrize("loss", LOSSES)
def test_derivative_is_a_subgradient_at_kinks_and_monotone(loss):
    """Every loss is convex in z: at a kink, dloss lies between the one-sided slopes, and
    dloss is non-decreasing in z everywhere."""
    h = 1e-7
    for y in _ys(loss):
        for eps in _eps_values(loss):
            for kz in _kinks(loss, y, eps):
                left = (py_loss(ID[loss], kz, y, eps) - py_loss(ID[loss], kz - h, y, eps)) / h
                right = (py_loss(ID[loss], kz + h, y, eps) - py_loss(ID[loss], kz, y, eps)) / h
                d = py_dloss(ID[loss], kz, y, eps)
                assert min(left, right) - 1e-6 <= d <= max(left, right) + 1e-6, (loss, kz, y)
            zs = np.sort(Z)
            d = np.array([py_dloss(ID[loss], z, y, eps) for z in zs])
            assert np.all(np.diff(d) >= 0), (loss, y, eps)


HUGE = [1e300, -1e300, 1e200, -1e200, 1e10, -1e10, 745.0, -745.0, 710.0, -710.0, 40.0, -40.0]


@pytest.mark.parametrize("y", [-1.0, 1.0])
@pytest.mark.parametrize("z", HUGE)
def test_logistic_is_stable_for_huge_margins(z, y):
    """log(1 + exp(-yz)) and its derivative never overflow; they reach their limits."""
    m = y * z
    value = py_loss(ID["logistic"], z, y, 0.0)
    deriv = py_dloss(ID["logistic"], z, y, 0.0)
    assert math.isfinite(value) and math.isfinite(deriv)
    assert value >= 0.0
    if m > 0:
        # log1p(exp(-m)) ~ exp(-m): tiny or exactly 0; derivative -y exp(-m) -> 0
        assert value == pytest.approx(math.exp(-m) if m < 700 else 0.0, rel=1e-12, abs=1e-300)
        assert abs(deriv) <= math.exp(-min(m, 700.0)) * 1.000001
    else:
        # -m + log1p(exp(m)) -> -m; derivative -> -y
        assert value == pytest.approx(-m, rel=1e-15)
        assert deriv == pytest.approx(-y, rel=1e-15)
        assert math.copysign(1.0, deriv) == -y


@pytest.mark.parametrize("loss", LOSSES)
def test_no_nan_at_huge_margins(loss):
    """No NaN anywhere; losses that grow at most linearly stay finite up to |z| = 1e300."""
    linear = loss not in ("squared", "squared_hinge")
    for y in _ys(loss):
        for eps in _eps_values(loss):
            for z in HUGE:
                v = py_loss(ID[loss], z, y, eps)
                d = py_dloss(ID[loss], z, y, eps)
                assert not math.isnan(v) and not math.isnan(d), (loss, z, y)
                assert math.isfinite(d) or not linear
                if linear:
                    assert math.isfinite(v), (loss, z, y, v)


# ------------------------------------------------------------- the loss table (one row each)
#
# pgs/rules/losses.py declares every loss once; the checks below hold each row to the
# compiled kernel: its id selects the formula of its name, and its flags (task,
# derivative bound, Lipschitz constant of the derivative, epsilon) are true of the
# compiled functions, numerically.

SPECS = pytest.mark.parametrize("spec", LOSS_TABLE, ids=lambda spec: spec.name)
GRID = np.linspace(-6.0, 6.0, 2401)               # spacing 0.005, holds 0, +-1, +-eps
WIDE = np.concatenate([GRID, np.geomspace(6.0, 1e6, 60), -np.geomspace(6.0, 1e6, 60)])


def _spec_eps(spec):
    return [spec.default_epsilon, 0.25, 2.0] if spec.has_epsilon else [0.0]


def _spec_ys(spec):
    return [-1.0, 1.0] if spec.is_classification else [-1.7, 0.0, 0.3, 2.5]


def _dloss(spec, zs, y, eps):
    return np.array([py_dloss(spec.id, z, y, eps) for z in zs])


def test_table_names_and_ids_are_the_kernels():
    """The ids are positions: pgs/_core.pyx dispatches on them, `check_loss` returns them."""
    assert pgs.rules.losses.LOSS_NAMES == pgs.LOSS_NAMES
    assert [spec.id for spec in LOSS_TABLE] == list(range(len(LOSS_TABLE)))
    assert tuple(spec.name for spec in LOSS_TABLE) == pgs.rules.losses.LOSS_NAMES
    for spec in LOSS_TABLE:
        assert pgs.rules.losses.loss_spec(spec.name) is spec
        assert check_loss(spec.name) == spec.id
    with pytest.raises(ValueError, match="is not one of hinge, logistic"):
        pgs.rules.losses.loss_spec("hinge2")


@SPECS
def test_table_id_selects_the_formula_of_its_name(spec):
    """py_loss(spec.id, ...) is the Python formula called spec.name (tests/reference.py)."""
    for y in _spec_ys(spec):
        for eps in _spec_eps(spec):
            got = np.array([py_loss(spec.id, z, y, eps) for z in Z])
            np.testing.assert_allclose(got, ref_loss(spec.name, Z, y, eps), rtol=1e-14,
                                       atol=1e-15)
            want_d = np.array([ref_dloss(spec.name, z, y, eps) for z in Z])
            np.testing.assert_allclose(_dloss(spec, Z, y, eps), want_d, rtol=1e-14, atol=1e-15)


@SPECS
def test_table_task(spec):
    """Classification losses are functions of y z; regression losses of z - y."""
    assert spec.task in ("classification", "regression")
    if spec.is_classification:
        pairs = [((z, 1.0), (-z, -1.0)) for z in Z]
    else:
        pairs = [((z, y), (z + c, y + c)) for z in Z for y in (-1.7, 0.3) for c in (-2.0, 3.0)]
    for eps in _spec_eps(spec):
        for (z1, y1), (z2, y2) in pairs:
            assert py_loss(spec.id, z1, y1, eps) == pytest.approx(
                py_loss(spec.id, z2, y2, eps), rel=1e-12, abs=1e-12), (spec.name, z1, y1, z2)


@SPECS
def test_table_derivative_bound(spec):
    """A bounded |loss'| stays below the stated bound and reaches it; an unbounded one does
    not stay below any bound, vanishes at z = y and obeys `dloss_bound_on` on |z| <= R."""
    for eps in _spec_eps(spec):
        ys = _spec_ys(spec)
        d = np.concatenate([np.abs(_dloss(spec, WIDE, y, eps)) for y in ys])
        bound = spec.max_dloss(eps)
        if bound is not None:
            assert d.max() <= bound * (1 + 1e-15), (spec.name, eps, d.max(), bound)
            assert d.max() >= bound * (1 - 1e-9), (spec.name, eps, "bound not tight")
            assert spec.dloss_bound_on(None, max(map(abs, ys)), eps) == bound
            continue
        assert spec.lipschitz(eps) is not None and spec.auto_radius
        assert d.max() > 1e5
        for y in ys:
            assert py_dloss(spec.id, y, y, eps) == 0.0
        for R in (0.5, 3.0, 40.0):
            zs = np.linspace(-R, R, 401)
            y_max = max(map(abs, ys))
            on_domain = max(np.abs(_dloss(spec, zs, y, eps)).max() for y in ys)
            assert on_domain <= spec.dloss_bound_on(R, y_max, eps) * (1 + 1e-15)


@SPECS
def test_table_smoothness(spec):
    """A smooth loss's derivative is Lipschitz with the stated constant (and no smaller
    one); a loss flagged not smooth has a jump in its derivative."""
    rng = np.random.default_rng(0)
    for y in _spec_ys(spec):
        for eps in _spec_eps(spec):
            z = GRID * max(1.0, eps) + y          # around the kinks at y and y +- eps
            d = _dloss(spec, z, y, eps)
            slopes = np.abs(np.diff(d)) / np.diff(z)
            if spec.lipschitz(eps) is None:
                assert slopes.max() > 100.0, (spec.name, y, eps)
                continue
            L = spec.lipschitz(eps)
            if spec.multiclass:
                # (the table's 1/2 bounds the K outputs' Hessian diag(pi) - pi pi^T; the
                # K = 2 twin's, in z = z_1 - z_0, is pi_0 pi_1 <= 1/4)
                L /= 2.0
            assert slopes.max() <= L * (1 + 1e-9), (spec.name, y, eps, slopes.max(), L)
            assert slopes.max() >= L * (1 - 1e-3), (spec.name, y, eps, "constant not tight")
            # random pairs, not only neighbours
            a, b = rng.uniform(-8.0, 8.0, (2, 500))
            da, db = _dloss(spec, a, y, eps), _dloss(spec, b, y, eps)
            assert np.all(np.abs(da - db) <= L * np.abs(a - b) * (1 + 1e-9) + 1e-15)


@SPECS
def test_table_epsilon(spec):
    """A loss has a default epsilon exactly when its values depend on epsilon."""
    depends = any(py_loss(spec.id, z, y, 0.5) != py_loss(spec.id, z, y, 1.5)
                  for z in Z for y in _spec_ys(spec))
    assert depends == spec.has_epsilon
    assert spec.has_epsilon or not spec.epsilon_positive
    assert check_epsilon(spec.name, None) == (spec.default_epsilon if spec.has_epsilon else 0.0)
    if spec.epsilon_positive:
        with pytest.raises(ValueError, match=f"epsilon must be > 0 for loss='{spec.name}'"):
            check_epsilon(spec.name, 0.0)
    else:
        assert check_epsilon(spec.name, 0.0) == 0.0


@SPECS
def test_table_auto_radius(spec):
    """B=None means "auto" exactly for the rows flagged so (and pgs.train records it)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    y = np.sign(X[:, 0] + 0.1) if spec.is_classification else X[:, 0] + 0.5
    model = pgs.train(X, y, loss=spec.name, T=20, seed=0)
    assert (model.params["B"] is not None) == spec.auto_radius
    assert model.is_classifier == spec.is_classification


@pytest.mark.parametrize("spec", [spec for spec in LOSS_TABLE if spec.probabilistic],
                         ids=lambda spec: spec.name)
def test_table_probability_link(spec):
    """A probabilistic loss maps margins to [0, 1], monotonically, with P = 1/2 at 0."""
    assert spec.is_classification
    s = np.concatenate([GRID, [-1e300, 1e300, -800.0, 800.0]])
    prob = spec.proba(np.sort(s))
    assert np.all((prob >= 0.0) & (prob <= 1.0)) and np.all(np.diff(prob) >= 0.0)
    assert spec.proba(np.array([0.0]))[0] == 0.5


def test_layers_read_the_table():
    """The historical names of the other layers are views of the table (same contents)."""
    cls = {"hinge", "logistic", "squared_hinge", "smooth_hinge", "modified_huber",
           "multinomial", "crammer_singer"}
    assert CLASSIFICATION_LOSSES == cls
    assert set(pgs.rules.losses.loss_names("regression")) == {"squared", "huber",
                                                              "epsilon_insensitive", "absolute"}
    pytest.importorskip("sklearn")
    from pgs import estimators

    assert estimators.CLASSIFIER_LOSSES == ("hinge", "logistic", "squared_hinge",
                                            "smooth_hinge", "modified_huber", "multinomial",
                                            "crammer_singer", "squared", "auto")
    assert estimators.REGRESSOR_LOSSES == ("squared", "huber", "epsilon_insensitive",
                                           "absolute")
    assert estimators.PROBABILISTIC_LOSSES == ("logistic", "modified_huber", "multinomial")
