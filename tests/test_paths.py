"""The batches' two update paths (row by row, or summed per column) and how a Solver
chooses between them: the same algorithm either way (Figure 1 to 1e-10), one path per
solver for the length of its runs, the same bits on any number of threads."""

import numpy as np
import pytest
import scipy.sparse as sp
from reference import pgs_reference

import pgs
from pgs._core import Solver, batch_distinct_fraction
from pgs._data import as_csr_buffers
from pgs._train import _fit

SEED = np.array([3, 1, 4, 1], dtype=np.uint64)
LOGISTIC = pgs.LOSS_NAMES.index("logistic")


def _wide(m=200, n=3000, nnz=12, seed=0):
    """Rows of `nnz` columns out of `n`: a batch of 64 repeats almost none."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=nnz / n, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.nnz)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


def _narrow(m=200, n=9, seed=0):
    """Nine columns: a batch of 16 rows repeats each many times."""
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.6))
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


def _solver(n_features, p, k, average=False, n_threads=1):
    return Solver(n_features, LOGISTIC, p, 1e-2, 0.0, 1.0, 0.0, k, 0, average, SEED.copy(),
                  n_threads=n_threads)


def _reference_fraction(indices, indptr, n_features, k, icpt, consecutive, probes=4):
    n_rows = len(indptr) - 1
    n_ent = n_new = 0
    for b in range(probes):
        if consecutive:
            rows = [(b * n_rows // probes + r) % n_rows for r in range(k)]
        else:
            rows = [(r * probes + b) * n_rows // (probes * k) for r in range(k)]
        cols = np.concatenate([indices[indptr[i]:indptr[i + 1]] for i in rows])
        cols = cols[(cols >= 0) & (cols < n_features)]
        n_ent += cols.size + (k if icpt else 0)
        n_new += np.unique(cols).size + (1 if icpt else 0)
    return n_new / n_ent if n_ent else 1.0


@pytest.mark.parametrize("k", [1, 16, 64, 500])
@pytest.mark.parametrize("icpt", [True, False])
@pytest.mark.parametrize("consecutive", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_distinct_fraction_counts_the_probed_batches(k, icpt, consecutive, index_dtype):
    """Distinct columns over entries of PATH_PROBES batches of k rows spread evenly over
    the data, or of k consecutive rows (rows repeat when k exceeds them; a row may
    repeat a column; entries out of range are not counted), exactly."""
    rng = np.random.default_rng(k)
    n_rows, n = 150, 700
    lengths = rng.integers(0, 30, n_rows)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    indices = (rng.zipf(1.5, indptr[-1]) - 1).astype(index_dtype)   # some >= n
    indices[::50] = -3
    got = batch_distinct_fraction(indices, indptr, n, k, icpt, consecutive)
    assert got == _reference_fraction(indices, indptr, n, k, icpt, consecutive)
    assert 0.0 < got <= 1.0
    empty = np.zeros(n_rows + 1, dtype=index_dtype)
    assert batch_distinct_fraction(indices[:0], empty, n, k, False) == 1.0
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        batch_distinct_fraction(indices, indptr, n, 0)


@pytest.mark.parametrize("p,average", [(1.8, False), (1.7, False), (1.8, True),
                                       (1.5, True), (1.7, True)])
def test_path_chosen_from_the_data(p, average):
    """p = 1.8, general p (with the average: p >= 1.2) and p = 1.5 with the average,
    16 <= k < 2048: the first run picks row by row where batches repeat few columns
    (wide rows), by column where they repeat many (its sums save a power, or the
    average's update, per repeat); rows of p = 1.8 and general p then run on the
    interleaved lam and u. Elsewhere the path is fixed when the solver is made."""
    for data, by_column in ((_wide(), False), (_narrow(), True)):
        X, y = data
        b = as_csr_buffers(X)
        s = _solver(X.shape[1], p, 64, average)
        assert s.by_column is None and not s.interleaved
        assert s.run(5, b.data, b.indices, b.indptr, y) == 0
        assert s.by_column is by_column
        assert s.interleaved is (p != 1.5 and not by_column)
        # once chosen, kept for the solver's later runs whatever their data
        Xo, yo = _narrow() if not by_column else _wide()
        bo = as_csr_buffers(Xo[:, :X.shape[1]] if Xo.shape[1] > X.shape[1] else Xo)
        s2 = _solver(X.shape[1], p, 64, average)
        s2.run(5, b.data, b.indices, b.indptr, y)
        s2.run(10, bo.data, bo.indices, bo.indptr, yo)
        assert s2.by_column is by_column
    for p_, k, average, by_column in ((p, 15, False, False), (p, 2048, False, True),
                                      (1.8, 64, True, None), (1.8, 2048, True, True),
                                      (1.7, 64, True, None), (1.1, 64, True, True),
                                      (1.1, 64, False, None), (1.5, 64, False, False),
                                      (1.5, 1023, False, False), (1.5, 1024, False, True),
                                      (1.5, 16, True, None), (1.5, 1023, True, None),
                                      (1.5, 1024, True, True), (2.0, 64, True, False),
                                      (2.0, 2048, True, True)):
        assert _solver(3000, p_, k, average).by_column is by_column, (p_, k, average)


@pytest.mark.parametrize("iterate", ["last", "average", "random"])
@pytest.mark.parametrize("p", [1.8, 1.25, 1.5])
def test_rows_and_columns_both_match_reference(p, iterate):
    """Batches of k = 64 rows updated row by row and by column (forced, with or
    without the average): both Figure 1 to 1e-10, each the same bits on one and two
    threads, and not the same bits as each other (so both were run)."""
    X, y = _wide(m=150, n=400, nnz=10, seed=2)
    k, T_ = 64, 20
    rows = np.random.default_rng(3).integers(0, X.shape[0], T_ * k)
    fits = {}
    for force in (False, True):
        for nt in (1, 2):
            fits[(force, nt)] = _fit(X, y, loss="logistic", p=p, sigma=0.05, T=T_, k=k,
                                     iterate=iterate, fixed_rows=rows, n_threads=nt,
                                     seed=5, _force_by_column=force)
    ref = pgs_reference(X.toarray(), y, loss="logistic", p=p, sigma=0.05, T=T_, k=k,
                        rows=rows, B=fits[(False, 1)].params["B"], icpt=1.0)
    t_pick = fits[(False, 1)].iteration
    expected = {"last": ref[-1], "average": np.mean(ref, axis=0),
                "random": ref[t_pick - 1]}[iterate]
    for model in fits.values():
        assert np.abs(model.full_weights() - expected).max() < 1e-10 * np.abs(expected).max()
    for force in (False, True):
        np.testing.assert_array_equal(fits[(force, 2)].full_weights(),
                                      fits[(force, 1)].full_weights())
    assert not np.array_equal(fits[(False, 1)].full_weights(),
                              fits[(True, 1)].full_weights())


def test_cyclic_rows_probe_consecutive_batches():
    """Rows in file order (sampling="cyclic") are batched as they come: a file whose
    neighbouring rows share their columns (grouped by topic, say) goes by column there,
    and row by row with random draws, whose batches mix the groups."""
    rng = np.random.default_rng(6)
    n_groups, per_group, n = 40, 64, 4000
    rows = []
    for _group in range(n_groups):
        cols = rng.choice(n, 12, replace=False)      # each group's own 12 columns
        for _ in range(per_group):
            rows.append(rng.choice(cols, 6, replace=False))
    indices = np.concatenate(rows).astype(np.int64)
    indptr = np.arange(0, 6 * len(rows) + 1, 6, dtype=np.int64)
    X = sp.csr_matrix((rng.standard_normal(indices.size), indices, indptr),
                      shape=(len(rows), n))
    y = np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0)
    b = as_csr_buffers(X)
    assert batch_distinct_fraction(b.indices, b.indptr, n, 64, consecutive=True) < 0.1
    assert batch_distinct_fraction(b.indices, b.indptr, n, 64) > 0.5
    for sampling, by_column in ((2, True), (0, False), (1, False)):
        s = Solver(n, LOGISTIC, 1.8, 1e-2, 0.0, 1.0, 0.0, 64, 0, False, SEED.copy(),
                   sampling)
        assert s.run(3, b.data, b.indices, b.indptr, y) == 0
        assert s.by_column is by_column, sampling


def test_a_run_without_rows_leaves_the_path_open():
    """A run refused for having no rows does not fix the path from its empty X."""
    X, y = _wide()
    b = as_csr_buffers(X)
    s = _solver(X.shape[1], 1.8, 64)
    with pytest.raises(ValueError, match="no rows"):
        s.run(5, b.data[:0], b.indices[:0], b.indptr[:1], y[:0])
    assert s.by_column is None
    assert s.run(5, b.data, b.indices, b.indptr, y) == 0
    assert s.by_column is False


def test_state_carries_the_path():
    """A state resumes on the path its runs took, even one the data would not choose:
    a run split in two gives the unsplit run's bits."""
    X, y = _wide()
    b = as_csr_buffers(X)
    whole = _solver(X.shape[1], 1.8, 64)
    whole._force_path(True)
    whole.run(12, b.data, b.indices, b.indptr, y)
    first = _solver(X.shape[1], 1.8, 64)
    first._force_path(True)
    first.run(5, b.data, b.indices, b.indptr, y)
    state = first.get_state()
    assert state["by_column"] is True
    second = _solver(X.shape[1], 1.8, 64)
    second.set_state(state)
    assert second.by_column is True
    second.run(12, b.data, b.indices, b.indptr, y)
    np.testing.assert_array_equal(second.lam, whole.lam)
    np.testing.assert_array_equal(second.u, whole.u)
    with pytest.raises(RuntimeError, match="fixed once a solver has run"):
        second._force_path(False)


def test_state_of_another_average_form_is_refused():
    """p >= 1.2 keeps the average in one vector (C u - wsum), p < 1.2 in two (wsum and
    clast, spans): a state of the other form is refused, not misread."""
    X, y = _narrow()
    b = as_csr_buffers(X)
    spans = _solver(X.shape[1], 1.1, 1, average=True)
    spans.run(5, b.data, b.indices, b.indptr, y)
    state = spans.get_state()
    assert state["clast"] is not None
    with pytest.raises(ValueError, match="average in another form"):
        _solver(X.shape[1], 1.7, 1, average=True).set_state(state)
    state["clast"] = None
    with pytest.raises(ValueError, match="average in another form"):
        _solver(X.shape[1], 1.1, 1, average=True).set_state(state)


def test_train_split_run_same_bits_on_chosen_rows():
    """pgs.train on the row-by-row path, run whole and as a warm-started second half."""
    X, y = _wide(seed=4)
    kw = dict(loss="hinge", p=1.8, sigma=1e-3, k=32, seed=6, iterate="last")
    whole = pgs.train(X, y, T=40, **kw)
    half = pgs.train(X, y, T=20, keep_state=True, **kw)
    assert half._state["by_column"] is False
    split = pgs.train(X, y, T=20, warm_start=half, **kw)
    np.testing.assert_array_equal(split.full_weights(), whole.full_weights())
