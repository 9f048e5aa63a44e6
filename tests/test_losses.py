"""The compiled losses (`pgs._core.py_loss`, `py_dloss`, `mean_loss`) against Python.

Three independent checks per loss: a table of hand-computed values, the vectorised
formulas of tests/reference.py, and central finite differences of the compiled value
(away from kinks; at kinks the derivative must be a subgradient).
"""

import math

import numpy as np
import pytest
from reference import dloss as ref_dloss
from reference import loss_value as ref_loss

import pgs
from pgs._core import mean_loss, py_dloss, py_loss
from pgs._validation import CLASSIFICATION_LOSSES, DEFAULT_EPSILON

LOSSES = pgs.LOSS_NAMES
ID = {name: i for i, name in enumerate(LOSSES)}


def _eps_values(loss):
    return [DEFAULT_EPSILON[loss], 0.25, 2.0] if loss in DEFAULT_EPSILON else [0.0]


def _ys(loss):
    return [-1.0, 1.0] if loss in CLASSIFICATION_LOSSES else [-1.7, 0.0, 0.3, 2.5]


def _kinks(loss, y, eps):
    """Margins z where the loss is not twice differentiable (finite differences avoid them)."""
    if loss in CLASSIFICATION_LOSSES:
        m = {"hinge": [1.0], "logistic": [], "squared_hinge": [1.0],
             "smooth_hinge": [1.0, 1.0 - eps], "modified_huber": [1.0, -1.0]}[loss]
        return [mi * y for mi in m]                # z = m / y with y = +-1
    r = {"squared": [], "huber": [eps, -eps], "epsilon_insensitive": [eps, -eps],
         "absolute": [0.0]}[loss]
    return [y + ri for ri in r]


Z = np.concatenate([np.linspace(-4.0, 4.0, 161), [-1.0, 1.0, 0.0, 0.5, -0.5, 1e-9, -37.0, 52.0]])

# (loss, z, y, eps, value, derivative), worked out by hand from DESIGN.md's table and the
# docstrings of pgs/_losses.pxd.
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
    assert len(set(LOSSES)) == len(LOSSES) == 9
    assert LOSSES.index("hinge") == 0 and LOSSES.index("absolute") == 8


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
