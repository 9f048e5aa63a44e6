"""Seeds: bit-identical reruns, distinct streams, recorded entropy; and the drift of Q."""

import numpy as np
import paper
import pytest
import scipy.sparse as sp

import pgs
from pgs.engine.solver import Solver
from pgs.rules.data import as_csr_buffers

ITERATES = ("random", "last", "average")


def _data(seed=0, m=80, n=20):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.3)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


def _same(a, b):
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept
    assert a.iteration == b.iteration
    assert a.params == b.params


@pytest.mark.parametrize("iterate", ITERATES)
@pytest.mark.parametrize("p, k", [(2.0, 1), (1.5, 5), (1.25, 3)])
def test_same_seed_is_bit_identical(iterate, p, k):
    X, y = _data()
    for X_in in (X, sp.csr_matrix(X)):
        kw = dict(loss="logistic", p=p, k=k, T=1500, iterate=iterate, seed=1234)
        _same(paper.train(X_in, y, **kw), paper.train(X_in, y, **kw))
    # dense and CSR input are the same computation
    _same(paper.train(X, y, **kw), paper.train(sp.csr_matrix(X), y, **kw))


@pytest.mark.parametrize("iterate", ITERATES)
def test_different_seeds_differ(iterate):
    X, y = _data()
    models = [paper.train(X, y, T=1500, k=2, iterate=iterate, seed=s) for s in range(4)]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.array_equal(models[i].coef, models[j].coef)
    if iterate == "random":
        assert len({mdl.iteration for mdl in models}) > 1


@pytest.mark.parametrize("iterate", ITERATES)
def test_seed_none_records_reproducible_entropy(iterate):
    X, y = _data()
    a = paper.train(X, y, T=1000, iterate=iterate, seed=None)
    b = paper.train(X, y, T=1000, iterate=iterate, seed=None)
    entropy = a.params["seed"]
    assert isinstance(entropy, int) and entropy >= 0
    assert entropy != b.params["seed"]
    assert not np.array_equal(a.coef, b.coef)
    _same(a, paper.train(X, y, T=1000, iterate=iterate, seed=entropy))


@pytest.mark.parametrize("p, k", [(2.0, 1), (1.5, 3), (1.25, 2)])
def test_random_iterate_is_the_last_iterate_of_the_truncated_run(p, k):
    """iterate="random" returns w_t, t = model.iteration: a run of T = t iterations with the
    same seed draws the same rows, so its last iterate is bit-identical."""
    X, y = _data()
    for seed in range(5):
        rnd = paper.train(X, y, loss="logistic", p=p, k=k, T=3000, iterate="random", seed=seed)
        last = paper.train(X, y, loss="logistic", p=p, k=k, T=rnd.iteration, iterate="last",
                         seed=seed)
        np.testing.assert_array_equal(rnd.coef, last.coef)
        assert rnd.intercept == last.intercept


def test_integer_seed_is_recorded_as_given():
    X, y = _data()
    assert paper.train(X, y, T=10, seed=7).params["seed"] == 7


# ------------------------------------------------------------------------ Q drift

def _a9a_like(m=8000, n=123, per_row=14, seed=0):
    """Binary one-hot-like rows (a9a: 123 features, ~14 ones a row), noisy linear labels."""
    rng = np.random.default_rng(seed)
    indices = np.concatenate([np.sort(rng.choice(n, per_row, replace=False)) for _ in range(m)])
    indptr = np.arange(0, m * per_row + 1, per_row)
    X = sp.csr_matrix((np.ones(m * per_row), indices, indptr), shape=(m, n))
    w = rng.standard_normal(n)
    y = np.where(X @ w + rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _rcv1_like(m=2000, n=6000, per_row=30, seed=1):
    """More columns than the 4096-update recomputation floor, tf-idf-like positive values."""
    rng = np.random.default_rng(seed)
    indices = np.concatenate([np.sort(rng.choice(n, per_row, replace=False)) for _ in range(m)])
    indptr = np.arange(0, m * per_row + 1, per_row)
    data = rng.exponential(size=m * per_row)
    X = sp.csr_matrix((data, indices, indptr), shape=(m, n))
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.25])
@pytest.mark.parametrize("which", ["a9a_like", "rcv1_like"])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_maintained_Q_does_not_drift(p, which, loss):
    """After 200k iterations (checked at 40 uneven checkpoints, i.e. at varying distances from
    the last exact recomputation) the maintained Q = sum |lam_j|^q agrees with an exact
    recomputation, both the kernel's (`exact_Q`) and one from lam in NumPy, to 1e-10."""
    X, y = _a9a_like() if which == "a9a_like" else _rcv1_like()
    b = as_csr_buffers(X)
    s = Solver(X.shape[1], pgs.LOSS_NAMES.index(loss), p, 1e-5, 0.0, 1.0, 0.0, 2, 0, False,
               np.random.SeedSequence(3).generate_state(4, dtype=np.uint64))
    checkpoints = np.unique(np.geomspace(1, 100000, 40).astype(int)) * 2 + 1
    q = p / (p - 1)
    for t in checkpoints:
        assert s.run(int(t), b.data, b.indices, b.indptr, y) == 0
        exact = s.exact_Q()
        lam = np.asarray(s.lam)
        numpy_Q = np.sum(np.abs(lam / s.lam_scale) ** q)     # Q is kept for lam / lam_scale
        assert exact > 0
        assert abs(s.Q - exact) <= 1e-10 * exact, (t, s.Q, exact)
        assert abs(s.Q - numpy_Q) <= 1e-10 * numpy_Q, (t, s.Q, numpy_Q)
    # u is kept equal to sign(lam) |lam|^(q-1) (p = 1.5 computes it where it reads it)
    u = np.asarray(s.u if s.u is not None else s.last() / s.scale)
    np.testing.assert_allclose(u, np.sign(lam) * np.abs(lam / s.lam_scale) ** (q - 1),
                               rtol=1e-13, atol=0)
    assert s.t == checkpoints[-1] >= 200000
