"""Memory: what `train` allocates on top of X, and the iterate taken in place (Solver.take)."""

import numpy as np
import paper
import pytest
import scipy.sparse as sp
from tracing import traced_peak

import pgs
import pgs.engine.solver
from pgs.rules.data import as_csr_buffers

N_WIDE = 1_000_000      # one float64 vector of n_features: 8 MB


def _wide(m=300, nnz=30, seed=0):
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.integers(0, N_WIDE, size=(m, nnz)), axis=1).reshape(-1)
    X = sp.csr_matrix((rng.random(m * nnz), indices, np.arange(0, m * nnz + 1, nnz)),
                      shape=(m, N_WIDE))
    X.sum_duplicates()
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


@pytest.mark.parametrize("iterate", ["last", "random", "average"])
@pytest.mark.parametrize("k", [1, 64])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.7, 1.1])
def test_train_holds_at_most_four_vectors(p, k, iterate):
    """The budget, 4 x n_features x 8 bytes + 20 MB, checked without its 20 MB: on a
    million features every configuration keeps at most four vectors of n_features
    (state and the returned iterate included), plus 1 MB for the rest. The 20 MB would
    hide a fifth vector below 2.6 million features. (p < 2 keeps lam and u in one
    buffer of two vectors; p < 1.2 with the average keeps two more, its spans.)"""
    X, y = _wide()
    vector = 8 * (N_WIDE + 1)
    paper.train(X, y, T=2, k=k, p=p, iterate=iterate)      # first-call costs
    peak, model = traced_peak(lambda: paper.train(X, y, loss="logistic", T=40, k=k, p=p,
                                                 iterate=iterate, seed=3))
    assert np.all(np.isfinite(model.coef)) and np.any(model.coef != 0.0)
    assert peak <= 4 * vector + 2**20, (peak / vector, "vectors")


@pytest.mark.parametrize("which", ["last", "average", "pick"])
@pytest.mark.parametrize("k", [1, 32])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.7, 1.1])
def test_take_is_the_iterate_in_place(p, k, which):
    """Solver.take gives the bits of last() / average() / w_pick, in one of the solver's
    own buffers (but p < 2's last iterate, whose u is a strided view: a new array); the
    solver then refuses to run or hand out its state until set_state."""
    X, y = _wide(m=200, nnz=20)
    b = as_csr_buffers(X)
    seq = np.random.SeedSequence(5)
    args = (N_WIDE, pgs.LOSS_NAMES.index("hinge"), p, 1e-3, 0.0, 1.0, 0.0, k, 30, True)
    s = pgs.engine.solver.Solver(*args, seq.generate_state(4, dtype=np.uint64))
    assert s.run(50, b.data, b.indices, b.indptr, y) == 0
    expected = {"last": s.last, "average": s.average, "pick": s.w_pick.copy}[which]()
    state = s.get_state()
    # (only an average kept by spans, p < 1.2, has clast; the others' iterate lands in
    # wsum: see pgs/_dual.pxd)
    own = {"last": s.u if p == 2.0 else None, "average": s.clast if p < 1.2 else s.wsum,
           "pick": s.w_pick}[which]
    w = s.take(which)
    assert w is own or own is None
    np.testing.assert_array_equal(w, expected)
    for call in (lambda: s.run(60, b.data, b.indices, b.indptr, y), s.get_state,
                 lambda: s.take(which), lambda: s.iterate(which), s.last):
        with pytest.raises(RuntimeError, match="take"):
            call()

    # Restored, it runs on exactly as an untouched copy of it does.
    s.set_state(state)
    twin = pgs.engine.solver.Solver(*args, seq.generate_state(4, dtype=np.uint64))
    twin.set_state(state)
    assert s.run(80, b.data, b.indices, b.indptr, y) == 0
    assert twin.run(80, b.data, b.indices, b.indptr, y) == 0
    np.testing.assert_array_equal(s.last(), twin.last())
    np.testing.assert_array_equal(s.average(), twin.average())


@pytest.mark.parametrize("p", [2.0, 1.8])
def test_finished_solver_hands_over_its_state(p):
    """finish() stops runs; iterates and the state can still be read, and get_state(copy=False)
    is the solver's own buffers (p = 2: lam once, u is lam). set_state makes it run on
    exactly as an unfinished twin."""
    X, y = _wide(m=200, nnz=20)
    b = as_csr_buffers(X)
    seq = np.random.SeedSequence(9)
    args = (N_WIDE, pgs.LOSS_NAMES.index("logistic"), p, 1e-3, 0.0, 1.0, 0.0, 1, 30, False)
    s = pgs.engine.solver.Solver(*args, seq.generate_state(4, dtype=np.uint64))
    twin = pgs.engine.solver.Solver(*args, seq.generate_state(4, dtype=np.uint64))
    for solver in (s, twin):
        assert solver.run(50, b.data, b.indices, b.indptr, y) == 0
    s.finish()
    with pytest.raises(RuntimeError, match="finished"):
        s.run(60, b.data, b.indices, b.indptr, y)
    np.testing.assert_array_equal(s.iterate("last"), twin.last())
    np.testing.assert_array_equal(s.iterate("pick"), twin.w_pick)
    state = s.get_state(copy=False)
    assert state["lam"] is s.lam and state["w_pick"] is s.w_pick
    assert (state["u"] is None) == (p == 2.0)
    with pytest.raises(RuntimeError, match="handed"):
        s.take("last")               # (it would overwrite the state handed over)
    np.testing.assert_array_equal(s.iterate("last"), twin.last())
    s.set_state({key: (v.copy() if isinstance(v, np.ndarray) else v)
                 for key, v in state.items()})
    assert s.run(90, b.data, b.indices, b.indptr, y) == 0
    assert twin.run(90, b.data, b.indices, b.indptr, y) == 0
    np.testing.assert_array_equal(s.last(), twin.last())


def test_take_rejects_what_the_solver_does_not_keep():
    s = pgs.engine.solver.Solver(10, 0, 2.0, 1e-3, 0.0, 1.0, 0.0, 1, 0, False,
                         np.ones(4, dtype=np.uint64))
    with pytest.raises(ValueError, match="average"):
        s.take("average")
    with pytest.raises(ValueError, match="picked"):
        s.take("pick")
    with pytest.raises(ValueError, match="which"):
        s.take("best")


def test_keep_state_model_is_unaffected_by_take():
    """keep_state copies the state before the iterate is taken from it: a warm start
    from it continues the run bit for bit."""
    X, y = _wide(m=200, nnz=20)
    one = paper.train(X, y, T=60, p=1.8, iterate="average", seed=2)
    part = paper.train(X, y, T=25, p=1.8, iterate="average", seed=2, keep_state=True)
    two = paper.train(X, y, T=35, p=1.8, iterate="average", seed=2, warm_start=part)
    np.testing.assert_array_equal(one.coef, two.coef)
    assert one.intercept == two.intercept


@pytest.mark.parametrize("p", [2.0, 1.8, 1.5])
def test_estimators_hold_at_most_four_vectors(p):
    """The estimators keep the solver's state for partial_fit and warm starts (the
    solver's own buffers, handed over) and expose coef_ without a copy of the model's:
    on a million features a binary fit stays within four vectors, the regressor's
    too. (At a fixed sigma: sigma="auto" runs its grid's solvers at once.)"""
    from pgs.estimators import PGSClassifier, PGSRegressor

    X, y = _wide()
    vector = 8 * (N_WIDE + 1)
    for est, target in ((PGSClassifier, y), (PGSRegressor, y * 0.5)):
        est(T=2, p=p, sigma=1e-4).fit(X, target)
        peak, fitted = traced_peak(lambda est=est, target=target: est(
            T=40, p=p, sigma=1e-4, random_state=0).fit(X, target))
        assert np.any(fitted.coef_ != 0.0)
        assert peak <= 4 * vector + 2**20, (est, peak / vector)


def test_multiclass_coef_is_the_models_coef():
    """A one-vs-rest fit keeps one copy of its K coefficient vectors: coef_'s rows are
    the models' coef (which warm starts and partial_fit go on from), not copies."""
    from pgs.estimators import PGSClassifier

    X, _ = _wide(m=300, nnz=20)
    labels = np.arange(300) % 3
    est = PGSClassifier(T=50, random_state=0).fit(X, labels)
    assert est.coef_.shape == (3, N_WIDE)
    for row, model in zip(est.coef_, est._models, strict=True):
        assert np.shares_memory(row, model.coef)
        assert np.any(row != 0.0)
    est.partial_fit(X, labels)
    assert all(np.shares_memory(row, m.coef)
               for row, m in zip(est.coef_, est._models, strict=True))


@pytest.mark.parametrize("block", [True, False])
@pytest.mark.parametrize("iterate", ["last", "average"])
@pytest.mark.parametrize("loss", ["multinomial", "crammer_singer", "hinge", "logistic"])
def test_k_class_fit_holds_its_block_and_the_coef(loss, iterate, block, monkeypatch):
    """A K-class fit (K outputs, or K one-vs-rest problems: on a block, or each with its
    own vectors) keeps its K dual vectors (and the average's with
    iterate="average"), the (K, n_features) coef and one vector at a time besides: the K
    iterates are written into the coef as they are taken, not stacked or copied from K
    new vectors (that held one more block)."""
    from pgs.estimators import PGSClassifier
    from pgs.rules import defaults as D

    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 2 if block else 100)

    K = 4
    X, _ = _wide(m=300, nnz=20)
    labels = np.arange(300) % K
    block = K * 8 * (N_WIDE + 1)
    PGSClassifier(loss=loss, T=2, sigma=1e-4).fit(X, labels)
    peak, est = traced_peak(lambda: PGSClassifier(loss=loss, T=40, sigma=1e-4,
                                                  iterate=iterate, random_state=0).fit(X, labels))
    assert np.any(est.coef_ != 0.0)
    state = est._models[0]._state
    lam = (state.get("outputs") or [state])[0]["lam"]    # (a block's: a strided view)
    assert lam.flags["C_CONTIGUOUS"] != block
    blocks = 2 if iterate == "last" else 3
    assert peak <= blocks * block + 8 * (N_WIDE + 1) + 2**20, (peak / block, "blocks")


@pytest.mark.parametrize("which", ["last", "average"])
@pytest.mark.parametrize("block", [False, True])
def test_take_of_r_outputs(which, block):
    """R outputs: `take` gives `iterate`'s (R, n_cols) bits, output-major in the solver's
    own buffer (each output's row contiguous), a block (feature-major, rows strided) in a
    new array."""
    X, y = _wide(m=200, nnz=20)
    b = as_csr_buffers(X)
    Y = np.stack([y, -y, np.where(np.arange(200) % 3 == 0, 1.0, -1.0)], axis=1)
    s = pgs.engine.solver.Solver(N_WIDE, pgs.LOSS_NAMES.index("hinge"), 2.0, 1e-3, 0.0, 1.0,
                                 0.0, 1, 0, True, np.arange(1, 5, dtype=np.uint64),
                                 n_out=3, block=block)
    assert s.run(50, b.data, b.indices, b.indptr, Y) == 0
    expected = s.iterate(which)
    own = s.lam if which == "last" else s.wsum
    w = s.take(which)
    np.testing.assert_array_equal(w, expected)
    assert w.shape == (3, N_WIDE + 1) and np.shares_memory(w, own) != block


def test_problems_of_their_own_hand_their_buffers_over():
    """Without keep_state, one-vs-rest problems with vectors of their own (fewer than
    `BLOCK_MIN_OUTPUTS` a thread: output-major) take each iterate in one of their buffers:
    no (K, n_features) matrix on top of them."""
    from pgs.training.fit import fit_many

    X, _ = _wide(m=300, nnz=20)
    ys = np.stack([np.where(np.arange(300) % 3 == c, 1.0, -1.0) for c in range(3)], axis=1)
    vector = 8 * (N_WIDE + 1)
    kw = dict(loss="hinge", sigma=1e-4, iterate="average", n_jobs=2, seed=0)
    fit_many(X, ys, T=2, **kw)
    peak, models = traced_peak(lambda: fit_many(X, ys, T=40, **kw))
    assert all(np.any(m.coef != 0.0) for m in models)
    assert peak <= 3 * 2 * vector + 2**20, (peak / vector, "vectors")


def test_one_vs_rest_targets_are_held_once():
    """The K one-vs-rest problems' targets on many rows: the estimator's (m, K) array,
    which a block reads in place (their copy side by side held them twice: 2.2 K m)."""
    from pgs.estimators import PGSClassifier

    m, K = 50_000, 10
    rng = np.random.default_rng(0)
    X = sp.csr_matrix((rng.random(2 * m), rng.integers(0, 8, 2 * m),
                       np.arange(0, 2 * m + 1, 2)), shape=(m, 8))
    labels = np.arange(m) % K
    PGSClassifier(loss="hinge", T=2, sigma=1e-4).fit(X, labels)
    peak, est = traced_peak(lambda: PGSClassifier(loss="hinge", T=400, sigma=1e-4,
                                                  random_state=0).fit(X, labels))
    assert est.coef_.shape == (K, 8) and np.any(est.coef_ != 0.0)
    targets = 8 * m * K
    assert peak <= 1.5 * targets, (peak / targets, "K m")
