"""Several problems over one X (`fit_many`: the outputs of one solver, a thread's slice of
them, or one after another): exactly the separate runs, bit for bit."""

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
import pgs.training.fit as F
from pgs._core import SAMPLING_MODES
from pgs.engine import chunks
from pgs.engine.solver import Solver
from pgs.rules import defaults as D
from pgs.rules.losses import LOSS_NAMES
from pgs.training.fit import fit, fit_many


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    """These few problems share a block, as a many-class fit's do."""
    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 2)


def _problems(n_classes=4, m=300, n=40, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.2, format="csr", random_state=seed, dtype=dtype)
    labels = rng.integers(n_classes, size=m)
    ys = [np.where(labels == c, 1.0, -1.0) for c in range(n_classes)]
    return X, ys


def _solver(n, *, loss="logistic", p=2.0, k=1, sampling="iid", seed=0, average=False,
            t_offset=0.0):
    state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
    return Solver(n, LOSS_NAMES.index(loss), p, 1e-3, 0.0, 0.5, 0.0, k, 0, average, state,
                  SAMPLING_MODES.index(sampling), False, t_offset)


def _assert_same_state(a, b):
    sa, sb = a.get_state(), b.get_state()
    for key, value in sa.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, sb[key], err_msg=key)
        else:
            assert value == sb[key], key


def test_a_run_reads_y_where_it_lies_and_checks_it():
    """`Solver.run` reads a strided y in place (the estimators' (m, R) targets' columns):
    the bits of a contiguous copy; a y or weights of another length change nothing."""
    X, ys = _problems(n_classes=2)
    Y = np.column_stack(ys)
    a, b = _solver(X.shape[1], seed=3), _solver(X.shape[1], seed=3)
    assert a.run(300, X.data, X.indices, X.indptr, Y[:, 1]) == 0
    assert b.run(300, X.data, X.indices, X.indptr, np.ascontiguousarray(Y[:, 1])) == 0
    _assert_same_state(a, b)
    s = _solver(X.shape[1])
    with pytest.raises(ValueError, match=r"y has shape \(299, 1\), not \(300, 1\)"):
        s.run(10, X.data, X.indices, X.indptr, ys[1][:-1])
    with pytest.raises(ValueError, match="sample_weight and indptr disagree"):
        s.run(10, X.data, X.indices, X.indptr, ys[0], np.ones(3))
    assert s.t == 0


def test_a_run_stops_before_a_bad_row():
    X, ys = _problems(n_classes=1)
    X = X.copy()
    X.data[X.indptr[7]] = np.nan            # row 7: the solver fails on drawing it
    s = _solver(X.shape[1], sampling="cyclic")
    assert s.run(40, X.data, X.indices, X.indptr, ys[0]) == 1
    assert s.t == 7                         # (rows in order: stopped before row 7's update)


@pytest.mark.parametrize("n_jobs", [1, 2, 3, 8])
@pytest.mark.parametrize("iterate", ["last", "average", "random"])
@pytest.mark.parametrize("chunk, block_min", [(None, 2), (2**8, 2), (None, 100)])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_fit_many_is_fit_per_problem(n_jobs, iterate, chunk, block_min, loss, monkeypatch):
    """fit_many's problems (one solver a thread's slice: a block, or below block_min each
    output's own vectors; a slice of one: a solver of its own), in chunks of any size, are
    each `fit`'s, bit for bit, warm starts too."""
    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", block_min)
    if chunk is not None:
        monkeypatch.setattr(chunks, "CHUNK_WORK", chunk)
    X, ys = _problems(n_classes=5, dtype=np.float32)
    kw = dict(loss=loss, p=1.8, sigma=1e-3, T=700, k=2, iterate=iterate,
              sampling="permutation", t_offset="auto")
    many = fit_many(X, np.column_stack(ys), n_jobs=n_jobs, seed=9, keep_state=True, **kw)
    for y, model in zip(ys, many, strict=True):
        ref = fit(X, y, seed=9, keep_state=True, **kw)
        np.testing.assert_array_equal(model.coef, ref.coef)
        assert model.intercept == ref.intercept
        assert model.iteration == ref.iteration
        assert model.params == ref.params
    # ... and a warm start of all of them is each one's warm start.
    more = fit_many(X, np.column_stack(ys), n_jobs=n_jobs, seed=10, warm_starts=many, **kw)
    for y, warm, model in zip(ys, many, more, strict=True):
        ref = fit(X, y, seed=10, warm_start=warm, **kw)
        np.testing.assert_array_equal(model.coef, ref.coef)
        assert model.T == 1400


def test_targets_are_read_in_place():
    """An (m, R) C-ordered float64 array of targets (the estimators'): each solver reads its
    slice of columns in place (a thread's classes 3..5 read rows of stride 6), with the
    bits of separate vectors; other layouts and dtypes are stacked anew, with the same
    models."""
    X, ys = _problems(n_classes=6)
    Y = np.column_stack(ys)
    runs = F.prepare_many(X, Y, 2, loss="hinge", sigma=1e-3, T=10, seed=0)
    assert [run.columns for run in runs] == [slice(0, 3), slice(3, 6)]
    assert all(np.shares_memory(run.y_kernel, Y) for run in runs)
    for other in (np.asfortranarray(Y), Y.astype(np.float32)):
        runs = F.prepare_many(X, other, 2, loss="hinge", sigma=1e-3, T=10, seed=0)
        assert not any(np.shares_memory(run.y_kernel, other) for run in runs)
        np.testing.assert_array_equal(runs[1].y_kernel, Y[:, 3:])
    for loss, p, n_jobs in (("hinge", 2.0, 1), ("logistic", 1.8, 2)):
        kw = dict(loss=loss, p=p, sigma=1e-3, T=500, iterate="average", seed=4)
        in_place = fit_many(X, Y, n_jobs=n_jobs, **kw)
        stacked = fit_many(X, np.asfortranarray(Y), n_jobs=n_jobs, **kw)
        for y, one, two in zip(ys, in_place, stacked, strict=True):
            ref = fit(X, y, **kw)
            np.testing.assert_array_equal(one.coef, ref.coef)
            np.testing.assert_array_equal(two.coef, ref.coef)
            assert one.intercept == two.intercept == ref.intercept


def test_fit_many_seed_none_shares_one_fresh_seed():
    X, ys = _problems(n_classes=3)
    models = fit_many(X, np.column_stack(ys), sigma=1e-4, T=300, iterate="last",
                      sampling="iid")
    seeds = {m.params["seed"] for m in models}
    assert len(seeds) == 1
    ref = pgs.train(X, ys[2], sigma=1e-4, T=300, iterate="last", sampling="iid",
                    seed=seeds.pop())
    np.testing.assert_array_equal(models[2].coef, ref.coef)


def test_fit_many_names_a_bad_entry():
    X, ys = _problems(n_classes=3)
    X = X.copy()
    X.indices[X.indptr[4] + 1] = X.shape[1] + 3
    with pytest.raises(ValueError, match="column index"):
        fit_many(X, np.column_stack(ys), n_jobs=2, sigma=1e-4, T=2000, seed=0,
                 sampling="cyclic")


def test_fit_many_continues_problems_at_different_iterations():
    """Warm starts of different lengths: each problem runs to its own end, and equals its
    own `fit`."""
    X, ys = _problems(n_classes=3)
    kw = dict(loss="logistic", sigma=1e-3, iterate="last", sampling="iid")
    warm = [fit(X, y, T=T, seed=4, keep_state=True, **kw)
            for y, T in zip(ys, (100, 250, 100), strict=True)]
    more = fit_many(X, np.column_stack(ys), n_jobs=2, T=200, seed=4, warm_starts=warm, **kw)
    for y, w, model in zip(ys, warm, more, strict=True):
        ref = fit(X, y, T=200, seed=4, warm_start=w, **kw)
        np.testing.assert_array_equal(model.coef, ref.coef)
        assert model.T == w.T + 200


@pytest.mark.parametrize("p", [2.0, 1.5, 1.3])
def test_block_of_binary_problems(p):
    """`prepare_many` puts K binary problems on one solver (a block: each feature's K
    coordinates adjacent) that runs as one problem with each row's K targets, on threads
    one a thread's slice (a K-output loss's problem on threads: its own); a row whose
    hinge loss is flat for every output leaves the block's dual vectors as they were, bit
    for bit."""
    X, ys = _problems(n_classes=3)
    Y = np.column_stack(ys)
    on_threads = F.prepare_many(X, Y, 2, loss="hinge", sigma=1e-3, T=10, seed=0)
    assert [run.solver.n_out for run in on_threads] == [1, 2]     # (slices of 1 and 2)
    assert on_threads[1].solver.block and on_threads[1].each is not None
    assert [run.columns for run in on_threads] == [0, slice(1, 3)]
    labels = np.argmax(Y, axis=1).astype(np.float64)
    apart = F.prepare_many(X, labels, 2, loss="multinomial", sigma=1e-3, T=10)
    assert len(apart) == 1 and apart[0].solver.n_out == 3 and not apart[0].solver.block
    with pytest.raises(ValueError, match=r"class indices \(m,\), got targets of shape"):
        F.prepare_many(X, np.column_stack([labels, labels]), 1, loss="multinomial", T=10)
    runs = F.prepare_many(X, Y, 1, loss="hinge", p=p, sigma=1e-3, T=400, seed=4,
                          iterate="last", fit_intercept=False)
    assert len(runs) == 1 and len(runs[0].each) == 3
    multi = runs[0].solver
    F.run_many_to(runs, 400)
    before = multi.get_state()
    # One row scaled up: every output's margin is far past the hinge's kink, |z| > 10
    W = multi.iterate("last")
    x = X[0].toarray().ravel()
    z = W[:, :-1] @ x
    scale = 10.0 / max(np.min(np.abs(z)), 1e-12) + 1.0
    Xr = sp.csr_matrix(x * scale)
    y = np.sign(W[:, :-1] @ x)
    assert np.all(np.abs(W[:, :-1] @ (x * scale)) > 10.0)
    status = multi.run(410, Xr.data, Xr.indices, Xr.indptr, y[None, :])
    assert status == 0 and multi.t == 410
    for name in ("lam", "u"):
        if before[name] is not None:
            np.testing.assert_array_equal(getattr(multi, name), before[name])


@pytest.mark.parametrize("block", [True, False])
def test_k_outputs_draw_with_one_sampler(block, monkeypatch):
    """A problem's K outputs (one-vs-rest on a block, a K-output loss's classes on a block
    or apart) are one state: one sampler, one permutation, in its state and taken back
    from it."""
    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 2 if block else 100)
    X, ys = _problems(n_classes=3)
    labels = np.argmax(np.stack(ys), axis=0).astype(np.float64)
    kw = dict(sigma=1e-3, T=700, seed=0, sampling="permutation")
    runs = [F.prepare(X, labels, loss="multinomial", **kw)]
    F.run_many_to(runs, 700)
    if block:       # (below BLOCK_MIN_OUTPUTS one-vs-rest problems are apart)
        ovr = F.prepare_many(X, np.column_stack(ys), 1, loss="hinge", **kw)
        F.run_many_to(ovr, 700)
        runs.append(ovr[0])
    for run in runs:
        solver = run.solver
        assert solver.block == block and solver.n_out == 3
        state = solver.get_state()
        assert state["perm"].shape == (X.shape[0],) and np.ndim(state["b"]) == 1
        solver.set_state(state)
        np.testing.assert_array_equal(solver.perm, state["perm"])


def test_few_outputs_keep_their_own_vectors(monkeypatch):
    """One-vs-rest problems and a K-output problem's classes are the outputs of one solver;
    below `BLOCK_MIN_OUTPUTS` each output's vector is its own (output-major: a block's
    loops over so few coordinates cost more than they save), from it on they share a
    block (feature-major)."""
    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 4)
    X, ys = _problems(n_classes=4)
    for n, shared in ((2, False), (3, False), (4, True)):
        runs = F.prepare_many(X, np.column_stack(ys[:n]), 1, loss="hinge", sigma=1e-3, T=10,
                              seed=0)
        labels = np.argmax(np.stack(ys[:n]), axis=0).astype(np.float64)
        multi = F.prepare(X, labels, loss="multinomial", sigma=1e-3, T=10).solver
        for solver in (runs[0].solver, multi):
            assert solver.n_out == n and solver.block == shared
            # (each feature's n coordinates adjacent, or each output's vector)
            assert solver.lam.strides == ((8 * n, 8) if shared else (8, 8 * 41))
        assert len(runs) == 1 and len(runs[0].each) == n


def test_problems_differing_in_B_alone_share_a_block():
    """One-vs-rest squared loss on 0/1 targets: each problem resolves its own "auto" B (the
    loss at 0 is half its class's share) and agrees in the rest: they share a block, each
    output projected on its own B (which binds here: the paper's first steps are long),
    with the bits of each problem's own fit."""
    X, ys = _problems(n_classes=4)
    ys = [(y > 0).astype(np.float64) for y in ys]
    kw = dict(loss="squared", sigma=1e-3, T=600, seed=3, schedule="pgs", t_offset=0.0,
              iterate="average")
    runs = F.prepare_many(X, np.column_stack(ys), 1, **kw)
    assert len(runs) == 1 and len({params.B for params in runs[0].each}) == 4
    for y, model in zip(ys, fit_many(X, np.column_stack(ys), **kw), strict=True):
        ref = fit(X, y, **kw)
        np.testing.assert_array_equal(model.coef, ref.coef)
        assert model.intercept == ref.intercept


def test_problems_that_disagree_keep_their_own_vectors():
    """prepare_many's problems share a block only where their arguments agree: warm starts
    at different iterations each keep vectors of their own (and their own run's bits)."""
    X, ys = _problems(n_classes=2)
    kw = dict(loss="logistic", sigma=1e-3, seed=3, keep_state=True)
    warm = [fit(X, y, T=t, **kw) for y, t in zip(ys, (100, 200), strict=True)]
    runs = F.prepare_many(X, np.column_stack(ys), 1, warm_starts=warm, loss="logistic",
                          sigma=1e-3, T=50, seed=3)
    assert len(runs) == 2 and all(run.solver.n_out == 1 for run in runs)
    more = fit_many(X, np.column_stack(ys), warm_starts=warm, loss="logistic", sigma=1e-3,
                    T=50, seed=3)
    for y, w, model in zip(ys, warm, more, strict=True):
        ref = fit(X, y, warm_start=w, loss="logistic", sigma=1e-3, T=50, seed=3)
        np.testing.assert_array_equal(model.coef, ref.coef)
