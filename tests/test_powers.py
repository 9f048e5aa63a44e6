"""The kernel's powers a^(q-1) (pgs/_powers.h): accuracy against numpy, special
values, and the same bits whichever path asks for a value."""

import numpy as np
import pytest

from pgs._core import SIMD_POWERS, _use_simd_powers, powers

PATHS = [pytest.param(False, id="libm"),
         pytest.param(True, id="avx2", marks=pytest.mark.skipif(
             not SIMD_POWERS, reason="the CPU has no AVX2 + FMA"))]


@pytest.fixture(params=PATHS)
def path(request):
    """Run the test with the powers of one path, then restore the machine's own."""
    _use_simd_powers(request.param)
    yield request.param
    _use_simd_powers(SIMD_POWERS)

# q - 1 = 1 / (p - 1) for p = 1.25, 1.5, 1.7, 1.8 (roots), 1.9, 1.99, and two others
EXPONENTS = (4.0, 2.0, 1.0 / 0.7, 1.25, 1.0 / 0.9, 1.0 / 0.99, 0.3, 7.5)


def _values(rng, n):
    """Positive values over most of the double range, subnormals included."""
    return np.ldexp(rng.uniform(0.5, 1.0, n), rng.integers(-1070, 200, n))


@pytest.mark.parametrize("e", EXPONENTS)
def test_powers_accuracy(e, path):
    rng = np.random.default_rng(7)
    a = _values(rng, 20_003)
    got = powers(a, e)
    with np.errstate(under="ignore", over="ignore"):
        ref = a ** e
    big = np.isinf(ref)
    assert np.all(got[big] == np.inf)
    a, got, ref = a[~big], got[~big], ref[~big]
    y = np.abs(e * np.log2(a))
    # relative to the result, or to the smallest normal for subnormal results
    err = np.abs(got - ref) / np.maximum(ref, np.finfo(float).tiny)
    assert np.all(err <= 1e-15 * (1.0 + y)), (a[np.argmax(err / (1 + y))], e)


@pytest.mark.parametrize("e", EXPONENTS)
def test_powers_special_values(e, path):
    a = np.array([0.0, 1.0, np.inf, np.nan, 5e-324, 2.0 ** -1022, 4.0])
    got = powers(a, e)
    assert got[0] == 0.0
    assert got[1] == 1.0
    assert got[2] == np.inf
    assert np.isnan(got[3])
    with np.errstate(under="ignore"):
        expected = a[4:] ** e
    y = np.abs(e * np.log2(a[4:]))
    err = np.abs(got[4:] - expected) / np.maximum(expected, np.finfo(float).tiny)
    assert np.all(err <= 1e-15 * (1.0 + y))


@pytest.mark.parametrize("e", (1.25, 1.0 / 0.7))
def test_powers_same_bits_for_any_length(e, path):
    """A value's power does not depend on how many values are taken with it (the
    vector path pads a tail of fewer than four): one at a time, in the middle of a
    long call, or at any place of a tail give the same bits."""
    rng = np.random.default_rng(3)
    a = _values(rng, 61)
    whole = powers(a, e)
    singles = np.array([powers(a[i:i + 1], e)[0] for i in range(a.size)])
    assert np.array_equal(whole, singles)
    for start in range(4):
        assert np.array_equal(powers(a[start:start + 7], e), whole[start:start + 7])
    assert powers(a[:0], e).shape == (0,)


@pytest.mark.skipif(not SIMD_POWERS, reason="the CPU has no AVX2 + FMA")
@pytest.mark.parametrize("p", (1.8, 1.7))
def test_training_agrees_across_power_paths(p):
    """A run whose powers come from libm and one whose powers come from AVX2 differ
    only by rounding (p = 1.7; p = 1.8 not at all): the same model to 1e-9, each path
    deterministic."""
    import scipy.sparse as sp

    import pgs

    rng = np.random.default_rng(0)
    X = sp.random(400, 60, density=0.2, random_state=1, format="csr")
    y = np.where(X @ rng.standard_normal(60) > 0, 1.0, -1.0)
    fits = {}
    try:
        for simd in (False, True, False):
            _use_simd_powers(simd)
            model = pgs.train(X, y, loss="logistic", p=p, sigma=1e-2, T=3000, k=1,
                              iterate="average", seed=5)
            fits.setdefault(simd, []).append(np.asarray(model.coef).ravel())
    finally:
        _use_simd_powers(SIMD_POWERS)
    assert np.array_equal(fits[False][0], fits[False][1])
    if p == 1.8:
        # (square roots are correctly rounded on either path: the same bits)
        assert np.array_equal(fits[True][0], fits[False][0])
    np.testing.assert_allclose(fits[True][0], fits[False][0], rtol=1e-9,
                               atol=1e-12 * np.abs(fits[False][0]).max())


@pytest.mark.parametrize("odd", (0.0, 5e-324, 1e-310, np.inf, np.nan, 1e300))
def test_powers_lane_mates_do_not_matter(odd, path):
    """A special value (or a result past 2^1020) sends its whole group of four to the
    general variant; the other values' powers keep their bits."""
    e = 1.0 / 0.3
    a = np.array([0.37, 1.9, 1234.5, 1e-30])
    alone = powers(a, e)
    for slot in range(4):
        mixed = a.copy()
        mixed[slot] = odd
        got = powers(mixed, e)
        keep = np.arange(4) != slot
        assert np.array_equal(got[keep], alone[keep])
