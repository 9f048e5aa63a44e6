"""The row update of p = 1.8 and of general p four entries at a time (pgs/_rowpow.h)
against the staged path.

With AVX2 the kernel updates a row's entries, and its intercept, in 256-bit
registers; a group of four that repeats a column, a ratio past the parking bound, or a
CPU without AVX2 sends them through the staged path. Both must give the same bits,
whatever the row: sorted or not, with repeated columns, shorter than four entries,
empty, with or without an intercept.
"""
import itertools

import numpy as np
import pytest

from pgs._core import (
    LOSS_NAMES,
    SIMD_POWERS,
    Solver,
    _use_interleaved,
    _use_simd_powers,
    _use_simd_rows,
)


def _awkward_csr(rng, n_rows=300, n_features=40):
    """Rows of 0-12 entries in random column order, a third of them with a column
    repeated (next to its twin, or further on)."""
    indptr = [0]
    indices = []
    for r in range(n_rows):
        n = int(rng.integers(0, 13))
        cols = list(rng.choice(n_features, size=n, replace=False))
        if n >= 2 and r % 3 == 0:
            cols[int(rng.integers(1, n))] = cols[0]
        indices += cols
        indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    data = rng.standard_normal(len(indices)) / 3.0
    return data, indices, np.asarray(indptr, dtype=np.int64)


def _long_rows_csr(rng, n_rows=40, n_features=400):
    """Rows of 160-300 entries (more than a staging chunk of 128): every other one
    repeats a column within the group of entries 148-151 (the AVX2 path stops there and
    the staged path takes the rest), the others across groups (which the AVX2 path
    takes)."""
    indptr = [0]
    indices = []
    for r in range(n_rows):
        n = int(rng.integers(160, 301))
        cols = list(rng.choice(n_features, size=n, replace=False))
        if r % 2 == 0:
            cols[151] = cols[149]
        else:
            cols[int(rng.integers(129, n))] = cols[int(rng.integers(0, 129))]
        indices += cols
        indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    data = rng.standard_normal(len(indices)) / 30.0
    return data, indices, np.asarray(indptr, dtype=np.int64)


def _run(data, indices, indptr, y, n_features, loss, p, k, icpt, average, T):
    s = Solver(n_features, LOSS_NAMES.index(loss), p, 1e-2, 0.0, icpt, 0.0, k, 0,
               average, np.array([3, 1, 4, 1], dtype=np.uint64), 0)
    s.run(T, data, indices, indptr, y)
    if average:
        return np.array(s.lam), np.array(s.u), np.array(s.wsum), s.average()
    return np.array(s.lam), np.array(s.u)


# (p = 1.8 and general p: p = 2 and 1.5 have no AVX2 row update, so the switch would
# change nothing; the staged path, intercept included, is checked against the reference
# in test_kernel_reference.py)
ROW_PS = (1.8, 1.7)
CASES = list(itertools.product(
    ("logistic", "hinge", "squared"),
    (1, 5),
    (0.0, 1.0),
    (False, True),
))


@pytest.mark.skipif(not SIMD_POWERS, reason="the CPU has no AVX2 + FMA")
@pytest.mark.parametrize("dtypes", [(np.float64, np.int32), (np.float32, np.int64)])
@pytest.mark.parametrize("loss,k,icpt,average", CASES)
@pytest.mark.parametrize("p", ROW_PS)
def test_row_update_same_bits_as_staged(p, loss, k, icpt, average, dtypes):
    """Awkward rows (unsorted, repeated columns, 0-12 entries), with and without the
    intercept and the average: the AVX2 row update and the staged path give the same
    lam and u (and average)."""
    rng = np.random.default_rng(7)
    data, indices, indptr = _awkward_csr(rng)
    dt, it = dtypes
    data, indices, indptr = data.astype(dt), indices.astype(it), indptr.astype(it)
    y = np.where(rng.standard_normal(len(indptr) - 1) > 0, 1.0, -1.0)
    out = {}
    try:
        for rows in (True, False):
            _use_simd_rows(rows)
            out[rows] = _run(data, indices, indptr, y, 40, loss, p, k, icpt, average, 900)
    finally:
        _use_simd_rows(True)
    assert np.any(out[True][0] != 0.0)
    for a, b in zip(out[True], out[False], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.skipif(not SIMD_POWERS, reason="the CPU has no AVX2 + FMA")
@pytest.mark.parametrize("p", ROW_PS)
def test_long_rows_same_bits_as_staged(p):
    """Rows longer than a staging chunk (and than general p's AVX2 chunk, also 128
    entries), some leaving the AVX2 path half-way (a repeated column): the staged rest
    keeps every entry in its lane."""
    rng = np.random.default_rng(11)
    data, indices, indptr = _long_rows_csr(rng)
    y = np.where(rng.standard_normal(len(indptr) - 1) > 0, 1.0, -1.0)
    out = {}
    try:
        for rows in (True, False):
            _use_simd_rows(rows)
            _use_interleaved(rows)
            out[rows] = _run(data, indices, indptr, y, 400, "logistic", p, 1, 1.0,
                             False, 400)
    finally:
        _use_simd_rows(True)
        _use_interleaved(True)
    assert np.any(out[True][1] != 0.0)
    for a, b in zip(out[True], out[False], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.skipif(not SIMD_POWERS, reason="the CPU has no AVX2 + FMA")
def test_row_update_same_bits_as_libm_path():
    """p = 1.8 on a canonical CSR: AVX2 rows (sqrt is correctly rounded) against a run
    with no AVX2 at all, the same bits."""
    import scipy.sparse as sp

    X = sp.random(500, 80, density=0.15, random_state=3, format="csr")
    y = np.where(np.arange(500) % 3 == 0, 1.0, -1.0)
    out = {}
    try:
        for simd in (True, False):
            _use_simd_powers(simd)
            out[simd] = _run(X.data, X.indices, X.indptr, y, 80, "logistic", 1.8, 1, 1.0,
                             False, 1500)
    finally:
        _use_simd_powers(SIMD_POWERS)
    for a, b in zip(out[True], out[False], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.skipif(not SIMD_POWERS, reason="the CPU has no AVX2 + FMA")
@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("p", ROW_PS)
def test_row_update_parks_as_staged(p, average):
    """A step that takes |lam_j| / S past the parking bound 2^(900 / q): a first row of
    1e-200 makes S tiny (Q underflows, the kernel rescales), the second row's entries of
    1e100 then give ratios near 1e300. The group is parked by the staged path, Q turns
    NaN, the kernel rescales (on st.lu, unpacked and packed around it): the same bits
    as the staged path on two arrays, and a finite model."""
    data = np.array([1e-200] + [1e100, -2e100, 3e100, 1e100, 5e100, 1e100])
    indices = np.array([0, 1, 2, 3, 4, 5, 6], dtype=np.int32)
    indptr = np.array([0, 1, 7], dtype=np.int32)
    y = np.array([1.0, -1.0])
    out = {}
    try:
        for rows in (True, False):
            _use_simd_rows(rows)
            _use_interleaved(rows)
            # (no intercept: its lam would keep S near 1)
            s = Solver(7, LOSS_NAMES.index("hinge"), p, 1e-2, 0.0, 0.0, 0.0, 1, 0,
                       average, np.array([3, 1, 4, 1], dtype=np.uint64), 2)  # in order
            s.run(40, data, indices, indptr, y)
            out[rows] = (np.array(s.lam), np.array(s.u)) + (
                (np.array(s.wsum), s.average()) if average else ())
    finally:
        _use_simd_rows(True)
        _use_interleaved(True)
    assert np.all(np.isfinite(out[True][1])) and np.any(out[True][1] != 0.0)
    for a, b in zip(out[True], out[False], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("sampling", ["iid", "permutation", "cyclic"])
@pytest.mark.parametrize("loss,k,iterate", [("logistic", 1, "last"), ("hinge", 1, "last"),
                                            ("squared", 5, "last"), ("logistic", 1, "average"),
                                            ("hinge", 5, "average")])
@pytest.mark.parametrize("p", ROW_PS)
def test_interleaved_lam_u_same_bits(p, loss, k, iterate, sampling):
    """p = 1.8 and general p run on lam and u interleaved (st.lu) for the length of a
    run: the same bits as two arrays, for a split run (warm start) too, whatever the
    CPU."""
    import scipy.sparse as sp

    import pgs

    X = sp.random(600, 90, density=0.1, random_state=2, format="csr")
    y = np.where(np.arange(600) % 3 == 0, 1.0, -1.0)
    kw = dict(loss=loss, p=p, sigma=1e-3, k=k, iterate=iterate, sampling=sampling,
              seed=3)
    out = {}
    try:
        for on in (True, False):
            _use_interleaved(on)
            whole = pgs.train(X, y, T=2400, **kw)
            half = pgs.train(X, y, T=1200, keep_state=True, **kw)
            split = pgs.train(X, y, T=1200, warm_start=half, **kw)
            out[on] = (whole.full_weights(), split.full_weights())
    finally:
        _use_interleaved(True)
    assert np.any(out[True][0] != 0.0)
    assert np.array_equal(out[True][0], out[True][1])
    for a, b in zip(out[True], out[False], strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("p", ROW_PS)
def test_interleaved_lam_u_picked_iterate_same_bits(p):
    """iterate="random" keeps w at a drawn iteration, read from st.lu mid-run."""
    import scipy.sparse as sp

    import pgs

    X = sp.random(400, 50, density=0.15, random_state=4, format="csr")
    y = np.where(np.arange(400) % 2 == 0, 1.0, -1.0)
    out = {}
    try:
        for on in (True, False):
            _use_interleaved(on)
            out[on] = pgs.train(X, y, loss="logistic", p=p, sigma=1e-3, T=1500,
                                iterate="random", seed=8).full_weights()
    finally:
        _use_interleaved(True)
    assert np.any(out[True] != 0.0)
    assert np.array_equal(out[True], out[False])


@pytest.mark.parametrize("p", ROW_PS)
def test_interleaved_lam_u_lockstep_same_bits(p):
    """One-vs-rest in lock-step (short blocks of each problem in turn, st.lu packed
    once per call): the same coefficients as with two arrays."""
    from pgs.estimators import PGSClassifier

    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 12))
    y = rng.integers(0, 3, 300)
    coefs = {}
    try:
        for on in (True, False):
            _use_interleaved(on)
            clf = PGSClassifier("logistic", p=p, sigma=1e-2, T=2000, random_state=0)
            coefs[on] = clf.fit(X, y).coef_.copy()
    finally:
        _use_interleaved(True)
    assert np.array_equal(coefs[True], coefs[False])


@pytest.mark.parametrize("p,k,average,n_features,expected", [
    (1.8, 1, False, 1000, True),
    (1.8, 15, False, 1000, True),
    (1.8, 16, False, 1000, False),          # path chosen by the first run (test_paths)
    (1.8, 16, True, 1000, False),           # by column: the batch path stages its own
    (1.8, 1, True, 1000, True),             # the average's wsum beside st.lu
    (2.0, 1, False, 1000, False),
    (1.5, 1, False, 1000, False),
    (1.7, 1, False, 1000, True),            # general p too
    (1.7, 1, True, 1000, True),
    (1.1, 1, False, 1000, True),
    (1.1, 1, True, 1000, False),            # an average kept by spans: two arrays
    (1.8, 1, False, 2**21, False),          # past LU_MAX_COLS: the memory budget
    (1.7, 1, False, 2**21, False),
])
def test_interleaved_only_where_wanted(p, k, average, n_features, expected):
    s = Solver(n_features, LOSS_NAMES.index("hinge"), p, 1e-2, 0.0, 1.0, 0.0, k, 0,
               average, np.array([3, 1, 4, 1], dtype=np.uint64), 0)
    assert s.interleaved is expected


@pytest.mark.skipif(not SIMD_POWERS, reason="the CPU has no AVX2 + FMA")
@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("k", [16, 45])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
@pytest.mark.parametrize("p", ROW_PS)
def test_batch_update_same_bits_as_staged(p, loss, k, n_threads, average):
    """Batches of k >= 16 update each column once from the batch's sums; p = 1.8 and
    general p take them four at a time (`pgs_colspow`, last 1-3 masked): the same bits
    as staged, on one thread or two."""
    rng = np.random.default_rng(5)
    data, indices, indptr = _awkward_csr(rng)
    y = np.where(rng.standard_normal(len(indptr) - 1) > 0, 1.0, -1.0)
    out = {}
    try:
        for rows in (True, False):
            _use_simd_rows(rows)
            s = Solver(40, LOSS_NAMES.index(loss), p, 1e-2, 0.0, 1.0, 0.0, k, 0, average,
                       np.array([3, 1, 4, 1], dtype=np.uint64), 0, n_threads=n_threads)
            s._force_path(True)
            s.run(60, data, indices, indptr, y)
            out[rows] = (np.array(s.lam), np.array(s.u)) + (
                (np.array(s.wsum), s.average()) if average else ())
    finally:
        _use_simd_rows(True)
    assert np.any(out[True][1] != 0.0)
    for a, b in zip(out[True], out[False], strict=True):
        assert np.array_equal(a, b)
