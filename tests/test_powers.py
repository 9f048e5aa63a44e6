"""General p's powers a^(q-1) (pgs/_powers.h): accuracy against numpy, special values,
and the same bits however many values are taken together. They run on the build's own
path: AVX2 where the CPU has it, libm in a build with -Dsimd=disabled (CI tests both)."""

import numpy as np
import pytest

from pgs._core import powers

# q - 1 = 1 / (p - 1) for p = 1.25, 1.5, 1.7, 1.8, 1.9, 1.99, and two others
EXPONENTS = (4.0, 2.0, 1.0 / 0.7, 1.25, 1.0 / 0.9, 1.0 / 0.99, 0.3, 7.5)


def _values(rng, n):
    """Positive values over most of the double range, subnormals included."""
    return np.ldexp(rng.uniform(0.5, 1.0, n), rng.integers(-1070, 200, n))


@pytest.mark.parametrize("e", EXPONENTS)
def test_powers_accuracy(e):
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
def test_powers_special_values(e):
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
def test_powers_same_bits_for_any_length(e):
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


@pytest.mark.parametrize("odd", (0.0, 5e-324, 1e-310, np.inf, np.nan, 1e300))
def test_powers_lane_mates_do_not_matter(odd):
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
