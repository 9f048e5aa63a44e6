"""K-output losses ("multinomial", "crammer_singer"; docs/design.md 6d): the kernel's one loop
against a NumPy transcription of the K-output mirror-descent step, the losses against
finite differences, K = 2 against binary logistic, exact resume, model files."""

import numpy as np
import pytest
import scipy.sparse as sp
from reference import (
    asgd_step,
    multiclass_dloss,
    multiclass_reference,
    multiclass_rounds_reference,
    weighted_average,
)

import pgs
from pgs._core import py_multi_loss
from pgs.engine.rounds import _worker_delta
from pgs.engine.solver import Solver, output_state, solver_of, stacked
from pgs.models import MulticlassModel
from pgs.rules import defaults as D
from pgs.rules.losses import LOSS_NAMES
from pgs.training.fit import finish, prepare, run_many_to

K_LOSSES = ("multinomial", "crammer_singer")
M, N, K = 40, 9, 4


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    """These K = 4 problems run on a block, as the bench's many-class ones do."""
    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 2)


def _problem(seed=0, m=M, n=N, k_classes=K):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.6)
    W = rng.normal(size=(k_classes, n))
    y = np.argmax(X @ W.T + 0.5 * rng.normal(size=(m, k_classes)), axis=1)
    return X, y


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("loss", K_LOSSES)
@pytest.mark.parametrize("p", [2.0, 1.5, 1.3, 1.1])
@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
@pytest.mark.parametrize("k, weighted, intercept", [(1, False, "free"), (3, True, "free"),
                                                    (2, False, "column"), (1, True, None)])
def test_kernel_matches_k_output_reference(loss, p, schedule, k, weighted, intercept):
    """Every iterate's W and b, the last and the average, against the NumPy step."""
    X, y = _problem()
    T, sigma = 30, 0.05
    weights = np.random.default_rng(1).uniform(0.2, 2.0, M) if weighted else None
    common = dict(loss=loss, p=p, sigma=sigma, T=T, k=k, schedule=schedule, seed=0,
                  sampling="cyclic", sample_weight=weights, fit_intercept=intercept is not None,
                  intercept=intercept or "free", intercept_scaling=0.7, t_offset=3.0,
                  B=0.8 if p == 1.3 else None, eta0=0.5)
    seen = []
    last = pgs.train(X, y, iterate="last", callback=seen.append, callback_every=T, **common)
    avg = pgs.train(X, y, iterate="average", **common)
    assert isinstance(last, MulticlassModel) and last.coef.shape == (K, N)
    step = (asgd_step(0.5, sigma) if schedule == "asgd"
            else (lambda t: 1.0 / (sigma * (t + 1 + 3.0))))
    its = multiclass_reference(X, y, K, loss=loss, p=p, sigma=sigma, T=T, k=k,
                               rows=np.arange(T * k) % M, step=step, B=common["B"],
                               icpt=0.7 if intercept == "column" else 0.0,
                               bias_rate=last.params["intercept_rate"] or 0.0,
                               weights=weights)
    W_T, b_T = its[-1]
    # the sampled losses, each at the iterate before its update (progressive validation)
    rows, before = np.arange(T * k) % M, [(np.zeros((K, N + 1)), np.zeros(K))] + its[:-1]
    Xa = np.hstack([X, np.full((M, 1), 0.7 if intercept == "column" else 0.0)])
    sampled = [multiclass_dloss(loss, Wb[0] @ Xa[i] + Wb[1], y[i])[0]
               * (1.0 if weights is None else weights[i])
               for t, Wb in enumerate(before) for i in rows[t * k:(t + 1) * k]]
    assert seen[-1].loss_estimate == pytest.approx(np.mean(sampled), rel=1e-10)
    assert _rel(last.full_weights()[:, :N], W_T[:, :N]) < 1e-11
    ref_b = b_T if intercept != "column" else W_T[:, N] * 0.7
    np.testing.assert_allclose(last.intercept, ref_b, rtol=1e-10, atol=1e-12)
    W_avg, b_avg = weighted_average(its, (lambda t: t) if schedule == "asgd" else (lambda t: 1))
    assert _rel(avg.coef, W_avg[:, :N]) < 1e-11
    if intercept == "free":
        np.testing.assert_allclose(avg.intercept, b_avg, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", K_LOSSES)
def test_compiled_losses_match_their_definitions(loss):
    rng = np.random.default_rng(0)
    for _ in range(200):
        kk = int(rng.integers(2, 7))
        z, y = rng.normal(size=kk) * 3.0, int(rng.integers(kk))
        v, g = py_multi_loss(LOSS_NAMES.index(loss), z, y)
        rv, rg = multiclass_dloss(loss, z, y)
        assert v == pytest.approx(rv, rel=1e-13, abs=1e-14)
        np.testing.assert_allclose(g, rg, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("loss", K_LOSSES)
def test_gradients_match_finite_differences(loss):
    rng = np.random.default_rng(2)
    lid, h = LOSS_NAMES.index(loss), 1e-6
    for _ in range(100):
        z, y = rng.normal(size=5) * 2.0, int(rng.integers(5))
        if loss == "crammer_singer":
            top = np.sort(np.delete(z, y))
            if abs(1.0 + top[-1] - z[y]) < 1e-3 or top[-1] - top[-2] < 1e-3:
                continue                                    # (a kink)
        _, g = py_multi_loss(lid, z, y)
        fd = np.array([(py_multi_loss(lid, z + h * e, y)[0] - py_multi_loss(lid, z - h * e, y)[0])
                       / (2 * h) for e in np.eye(5)])
        np.testing.assert_allclose(g, fd, atol=1e-7)
    if loss == "multinomial":
        assert np.sum(g) == pytest.approx(0.0, abs=1e-15)


def test_softmax_is_stable_at_large_margins():
    lid = LOSS_NAMES.index("multinomial")
    for z, y in [([1e3, -1e3, 0.0], 0), ([1e3, -1e3, 0.0], 1), ([-1e3, -1e3, -1e3], 2),
                 ([1e3, 1e3 - 1e-9, -1e3], 1)]:
        v, g = py_multi_loss(lid, np.array(z), y)
        rv, rg = multiclass_dloss("multinomial", z, y)
        assert np.isfinite(v) and np.all(np.isfinite(g))
        assert v == pytest.approx(rv, rel=1e-12, abs=1e-300)
        np.testing.assert_allclose(g, rg, atol=1e-15)
    # a confident right answer: g_y = -(sum of the others' softmax), not 1 - 1 = 0
    v, g = py_multi_loss(lid, np.array([40.0, 0.0, 0.0]), 0)
    assert g[0] == pytest.approx(-2.0 * np.exp(-40.0), rel=1e-12) and v == pytest.approx(
        2.0 * np.exp(-40.0), rel=1e-12)
    # training where margins reach 1e3: finite, and the softmax probabilities finite
    X, y = _problem()
    model = pgs.train(X * 1e3, y, loss="multinomial", sigma=1e-6, T=200, seed=0, eta0=1e-3)
    proba = model.predict_proba(X * 1e3)
    assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
@pytest.mark.parametrize("intercept", ["free", "column"])
def test_two_class_multinomial_is_binary_logistic(schedule, intercept):
    """K = 2: w_1 - w_0 follows binary logistic on z_1 - z_0 with sigma / 2 and twice the
    step (eta0, or the paper's 1 / (sigma t))."""
    X, y = _problem(k_classes=2)
    common = dict(p=2.0, T=200, seed=3, intercept=intercept, intercept_scaling=0.5,
                  iterate="average", t_offset=2.0)
    multi = pgs.train(X, y, loss="multinomial", sigma=0.02, eta0=0.3, schedule=schedule,
                      **common)
    binary = pgs.train(X, y, loss="logistic", sigma=0.01, eta0=0.6, schedule=schedule,
                       **common)
    np.testing.assert_allclose(multi.coef[1] - multi.coef[0], binary.coef, rtol=1e-12,
                               atol=1e-14)
    assert multi.intercept[1] - multi.intercept[0] == pytest.approx(binary.intercept,
                                                                   rel=1e-11, abs=1e-14)
    np.testing.assert_array_equal(multi.predict(X), binary.predict(X))


@pytest.mark.parametrize("loss", K_LOSSES)
@pytest.mark.parametrize("iterate", ["last", "average"])
@pytest.mark.parametrize("p", [2.0, 1.3])
def test_exact_resume(loss, iterate, p):
    """T1 then T2 (warm start), and a run in callback chunks, equal T1 + T2 bit for bit."""
    X, y = _problem(4, m=60)
    Xs = sp.csr_matrix(X)
    common = dict(loss=loss, p=p, sigma=0.01, iterate=iterate, seed=5)
    whole = pgs.train(Xs, y, T=150, **common)
    first = pgs.train(Xs, y, T=70, keep_state=True, **common)
    resumed = pgs.train(Xs, y, T=80, warm_start=first, **common)
    np.testing.assert_array_equal(whole.coef, resumed.coef)
    np.testing.assert_array_equal(whole.intercept, resumed.intercept)
    seen = []
    chunked = pgs.train(Xs, y, T=150, callback=seen.append, callback_every=11, **common)
    np.testing.assert_array_equal(whole.coef, chunked.coef)
    assert len(seen) == 14 and all(np.isfinite(r.loss_estimate) for r in seen)


@pytest.mark.parametrize("loss", K_LOSSES)
@pytest.mark.parametrize("p", [2.0, 1.5, 1.3, 1.1])
@pytest.mark.parametrize("l1", [0.0, 0.02])
def test_block_of_k_outputs_equals_k_separate_vectors(loss, p, l1):
    """The K classes' vectors in one block (each feature's K coordinates adjacent: views at
    stride K of shared buffers) give the bits of K vectors of their own run by the same
    loop: every class reads and writes its own coordinates, and only them."""
    X, y = _problem(7, m=60)
    for iterate, k in (("average", 2), ("last", 1)):
        run = prepare(X, y, loss=loss, p=p, l1=l1, sigma=0.01, T=150, k=k, seed=3,
                      iterate=iterate)
        block = run.solver
        s = 1 if block.u is None or block.u is block.lam else 2     # (u interleaved: 2)
        assert block.block and block.lam.strides == (8 * K * s, 8 * s)
        apart = solver_of(run.params, N, block.rng_state, n_out=K, block=False)
        assert not apart.block and apart.lam.strides == (8 * s, 8 * s * (N + 1))
        for solver in (block, apart):
            assert solver.run(150, run.Xb.data, run.Xb.indices, run.Xb.indptr,
                              run.y_kernel) == 0
        np.testing.assert_array_equal(block.iterate("last"), apart.iterate("last"))
        for name in ("lam", "u", "wsum", "clast", "paid"):
            if getattr(block, name) is not None:
                np.testing.assert_array_equal(getattr(block, name), getattr(apart, name))
        if block.wsum is not None:      # (l1 at p = 2 returns the last iterate: no average)
            np.testing.assert_array_equal(block.iterate("average"), apart.iterate("average"))


def test_outputs_are_checked():
    """A state holds one output or more; a K-output loss's loop refuses one output; a state
    resumes only on a solver of as many outputs; R binary problems read R targets a row."""
    X, y = _problem(8)
    run = prepare(X, y, loss="multinomial", sigma=0.01, T=10, seed=0)
    rng = np.ones(4, dtype=np.uint64)
    with pytest.raises(ValueError, match="n_out must be >= 1"):
        Solver(N, 9, 2.0, 0.01, 0.0, 1.0, 0.0, 1, 0, True, rng, n_out=0)
    one = Solver(N, 9, 2.0, 0.01, 0.0, 1.0, 0.0, 1, 0, True, rng, n_out=1)
    assert one.run(5, run.Xb.data, run.Xb.indices, run.Xb.indptr, run.y_kernel) == -1
    with pytest.raises(ValueError, match="another number of features or outputs"):
        solver_of(run.params, N, rng, n_out=K - 1).set_state(run.solver.get_state())
    hinge = solver_of(prepare(X, np.where(y == 0, 1.0, -1.0), sigma=0.01, T=10).params, N,
                      rng, n_out=2)
    with pytest.raises(ValueError, match=r"not \(40, 2\)"):
        hinge.run(5, run.Xb.data, run.Xb.indices, run.Xb.indptr, np.ones(X.shape[0]))


def test_run_with_other_problems_changes_no_bit():
    """A K-output problem run with others (a sigma grid) equals its own run."""
    X, y = _problem(6, m=80)
    alone = [pgs.train(X, y, loss="multinomial", sigma=s, T=300, seed=2) for s in (0.1, 0.01)]
    runs = [prepare(X, y, seed=2, T=300, loss="multinomial", sigma=s) for s in (0.1, 0.01)]
    run_many_to(runs, 300)
    together = [finish(run, False, False) for run in runs]
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_array_equal(a.coef, b.coef)


@pytest.mark.parametrize("loss", K_LOSSES)
def test_model_files_round_trip(loss, tmp_path):
    X, y = _problem()
    labels = np.array(["ant", "bee", "cat", "dog"])[y]
    model = pgs.train(X, labels, loss=loss, sigma=0.01, T=100, seed=0)
    model.save(tmp_path / "m.npz")
    back = pgs.load_model(tmp_path / "m.npz")
    assert type(back) is MulticlassModel and back.params["loss"] == loss
    np.testing.assert_array_equal(back.coef, model.coef)
    np.testing.assert_array_equal(back.classes, model.classes)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    assert set(back.predict(X)) <= set(labels)
    assert back.objective(X, labels) == model.objective(X, labels)


def test_estimator_and_its_saved_model_agree(tmp_path):
    pytest.importorskip("sklearn")
    from pgs.estimators import PGSClassifier
    from pgs.models.ovr import model_from_estimator

    X, y = _problem(m=120)
    clf = PGSClassifier(loss="multinomial", sigma=0.01, random_state=0).fit(X, y)
    assert clf.coef_.shape == (K, N)
    model_from_estimator(clf).save(tmp_path / "c.npz")
    back = pgs.load_model(tmp_path / "c.npz")
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    # partial_fit on batches that miss classes; warm start continues the K outputs
    part = PGSClassifier(loss="multinomial", sigma=0.01, random_state=0)
    part.partial_fit(X[:30][y[:30] != 0], y[:30][y[:30] != 0], classes=np.arange(K))
    part.partial_fit(X[30:], y[30:])
    assert part.coef_.shape == (K, N) and part.score(X, y) > 0.5


def test_objective_and_validation():
    X, y = _problem()
    model = pgs.train(X, y, loss="crammer_singer", sigma=0.01, T=400, seed=0)
    zero = MulticlassModel(coef=np.zeros((K, N)), intercept=np.zeros(K), iteration=1, T=1,
                           classes=np.arange(K), params=model.params)
    assert zero.objective(X, y) == 1.0
    assert model.objective(X, y) < 1.0
    with pytest.raises(ValueError, match="probabilities need a probabilistic loss"):
        model.predict_proba(X)
    with pytest.raises(ValueError, match="other than the model's classes"):
        model.objective(X, y + 10)
    # weights: s_i times each row's loss, averaged over the m rows; one per row, no broadcast
    w = np.arange(M) % 3
    assert zero.objective(X, y, sample_weight=w) == pytest.approx(np.mean(w))
    with pytest.raises(ValueError, match="sample_weight has shape"):
        model.objective(X, y, sample_weight=[2.0])
    with pytest.raises(ValueError, match="single class|needs two"):
        pgs.train(X, np.zeros(M), loss="multinomial", sigma=0.1)
    warm = pgs.train(X, y, loss="multinomial", sigma=0.1, T=5, keep_state=True)
    with pytest.raises(ValueError, match="other than the known classes"):
        pgs.train(X, y + 7, loss="multinomial", sigma=0.1, T=5, warm_start=warm)
    # (the loss not repeated: its mismatch is the error, before y is read by the default's)
    with pytest.raises(ValueError, match="trained with loss='multinomial', this call has "
                                         "loss='hinge'"):
        pgs.train(X, y, T=5, warm_start=warm)


def test_sigma_auto_takes_one_sigma_for_the_classes():
    X, y = _problem(m=400)
    model = pgs.train(X, y, loss="multinomial", seed=0)
    assert isinstance(model, MulticlassModel) and model.sigma_grid is not None
    assert model.params["sigma"] in model.sigma_grid
    assert np.mean(model.predict(X) == y) > 0.6


@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
def test_threads_merge_per_class(schedule):
    """n_jobs threads split the rows and merge each class's dual vector: W = 1 in rounds is
    the plain run, bit for bit; W > 1 is deterministic, resumes exactly, and as accurate."""
    from pgs.engine import threads

    X, y = _problem(7, m=900, n=12)
    common = dict(loss="multinomial", sigma=1e-3, seed=1, schedule=schedule, T=2000)
    plain = pgs.train(X, y, **common)
    run = prepare(X, y, **common)
    threads.run_split(run, 1, 300, None, None, 0.0)
    np.testing.assert_array_equal(finish(run, False, False).coef, plain.coef)
    par = dict(n_jobs=2, merge_every=250)     # (rounds of 500: T1 = 1000 ends one)
    two = pgs.train(X, y, **par, **common)
    np.testing.assert_array_equal(two.coef, pgs.train(X, y, **par, **common).coef)
    assert np.mean(two.predict(X) == y) > np.mean(plain.predict(X) == y) - 0.05
    first = pgs.train(X, y, keep_state=True, **par, **dict(common, T=1000))
    np.testing.assert_array_equal(pgs.train(X, y, warm_start=first, **par,
                                            **dict(common, T=1000)).coef, two.coef)


@pytest.mark.parametrize("loss", K_LOSSES)
@pytest.mark.parametrize("p", [2.0, 1.5, 1.3, 1.1])
@pytest.mark.parametrize("W, tau, block", [(2, 7, True), (3, 5, True), (2, 7, False)])
def test_threads_rounds_match_numpy_reference(loss, p, W, tau, block, monkeypatch):
    """A K-output run split between threads (each worker's classes on one block, or
    below `BLOCK_MIN_OUTPUTS` on vectors of their own; the state merged as
    (n_features + 1, K) arrays) against the NumPy rounds of the K-output step: the last
    iterate, the average (one pass over the block for every class) and a random iterate."""
    import paper

    from pgs.engine import rounds as P

    monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 2 if block else 100)
    seen = []
    monkeypatch.setattr(P, "_worker_delta", lambda solver, *a: seen.append(
        solver.block) or _worker_delta(solver, *a))

    X, y = _problem(5, m=60, n=8)
    kw = dict(loss=loss, p=p, sigma=0.05, T=101, B=3.0, t_offset=2.5)
    ref_w, ref_its = multiclass_rounds_reference(X, y, K, bounds=P.partition_rows(60, W),
                                                 tau=tau, icpt=1.0, **kw)
    common = dict(n_jobs=W, merge_every=tau, sampling="cyclic", **kw)
    for iterate, seed, want in [("last", 0, ref_w), ("average", 0, np.mean(ref_its, axis=0)),
                                ("random", 3, None)]:
        model = paper.train(X, y, iterate=iterate, seed=seed, **common)
        if want is None:
            want = ref_its[model.iteration - 1]
        np.testing.assert_allclose(np.c_[model.coef, model.intercept], want, rtol=1e-9,
                                   atol=1e-12)
    assert seen and set(seen) == {block}


@pytest.mark.parametrize("loss", K_LOSSES)
@pytest.mark.parametrize("p, l1", [(2.0, 0.0), (1.5, 0.0), (1.1, 0.0), (2.0, 1e-3), (1.3, 1e-3)])
def test_threads_give_the_same_bits_on_a_block(loss, p, l1, monkeypatch):
    """A K-output run on threads gives the same model, bit for bit, and reports the same
    progress (the merged state's norm over the classes, `pgs.engine.threads._norm_w`) on
    a block as with the classes apart, for both iterates."""
    X, y = _problem(7, m=600, n=10)
    got = {}
    for block in (True, False):
        monkeypatch.setattr(D, "BLOCK_MIN_OUTPUTS", 2 if block else 100)
        seen = []
        common = dict(loss=loss, p=p, l1=l1, sigma=1e-3, seed=0, T=1200, n_jobs=2,
                      merge_every=100)
        avg = pgs.train(X, y, callback=seen.append, callback_every=300, **common)
        last = pgs.train(X, y, iterate="last", **common)
        got[block] = ([(r.t, r.loss_estimate, r.objective_estimate) for r in seen],
                      avg.coef, avg.intercept, last.coef, last.intercept)
    assert len(got[True][0]) == 3 and all(np.isfinite(r[2]) for r in got[True][0])
    assert got[True][0] == got[False][0]
    for a, b in zip(got[True][1:], got[False][1:], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_state_of_k_outputs_reads_each_class_at_its_column():
    """Class c's coordinate j of every vector is at [j, c] (lam interleaved with u at p =
    1.3), whatever the layout: the average is each class's closed form (C u - wsum) / rho,
    or (wsum + u (C - clast)) / rho with spans (p = 1.1), the last iterate c u, taken in
    one pass into any strides; `output_state` and `stacked` move the state between the
    classes' and the block's forms value for value; the threads' reports' norm of the
    state is the solver's."""
    from pgs.engine.threads import _norm_w

    X, y = _problem(6, m=120, n=7)
    for p, block in ((2.0, True), (1.3, True), (1.1, False), (1.3, False)):
        run = prepare(X, y, loss="multinomial", p=p, sigma=1e-2, T=300, seed=1)
        s = solver_of(run.params, 7, run.rng, n_out=K, block=block)
        s.run(300, run.Xb.data, run.Xb.indices, run.Xb.indptr, run.y_kernel)
        sc = s._scalars()
        u = s.u                         # (p = 2: lam itself)
        if s.clast is None:
            want = (sc["C"] * u - s.wsum) / sc["rho_sum"]
        else:
            want = (s.wsum + u * (sc["C"] - s.clast)) / sc["rho_sum"]
        out = np.empty((8, K))
        s._iterate_to(out, True)
        np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-15)
        rows = np.empty((K, 8))
        s._iterate_to(rows.T, False)
        np.testing.assert_array_equal(rows, sc["c"][:, None] * u.T)
        with pytest.raises(ValueError, match="out must have shape"):
            s._iterate_to(np.empty((7, K)), True)
        state = s.get_state()
        classes = [output_state(state, c) for c in range(K)]
        assert classes[1]["lam"].shape == (8,) and isinstance(classes[1]["b"], float)
        back = stacked(classes)
        for key, value in state.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(back[key], value)
            else:
                assert back[key] == value, key
        # (the threads' progress reports: the norm over the classes, from the state)
        assert _norm_w(state, run.params) == pytest.approx(s.norm_w, rel=1e-12)


def test_a_k_output_state_of_the_classes_form_resumes():
    """The state of a K-output run that pgs kept before one state held the classes (each
    class's own state under "outputs", the permutation class 0's) resumes it bit for
    bit: a warm start of an estimator pickled then."""
    X, y = _problem(7, m=80)
    kw = dict(loss="crammer_singer", p=1.5, sigma=1e-2, seed=2, sampling="permutation")
    whole = prepare(X, y, T=400, **kw)
    whole.solver.run(400, whole.Xb.data, whole.Xb.indices, whole.Xb.indptr, whole.y_kernel)
    half = prepare(X, y, T=200, **kw)
    half.solver.run(200, half.Xb.data, half.Xb.indices, half.Xb.indptr, half.y_kernel)
    state = half.solver.get_state()
    classes = [dict(output_state(state, c), perm=state["perm"] if c == 0 else None,
                    loss_sum=state["loss_sum"] if c == 0 else 0.0) for c in range(K)]
    old = dict(outputs=classes, **{key: state[key] for key in (
        "t", "t_pick", "wsum", "w_pick", "zs", "loss_sum", "workers")})
    again = prepare(X, y, T=400, **kw).solver
    again.set_state(old)
    again.run(400, whole.Xb.data, whole.Xb.indices, whole.Xb.indptr, whole.y_kernel)
    for name in ("lam", "wsum", "perm"):
        np.testing.assert_array_equal(getattr(again, name), getattr(whole.solver, name))


def test_dask_gives_the_threads_bits():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    import pgs.dask

    X, y = _problem(8, m=600, n=10)
    common = dict(loss="crammer_singer", sigma=1e-3, seed=2, T=1500, n_jobs=2, merge_every=100)
    ref = pgs.train(X, y, **common)
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        got = pgs.dask.train(da.from_array(X, chunks=(300, 10)), y, client=client, **common)
        # sigma="auto": the candidates' K-output runs on the shards, as on the threads
        auto = dict(loss="multinomial", seed=3, n_jobs=2, max_passes=2, merge_every=60)
        searched = pgs.dask.train(da.from_array(X, chunks=(300, 10)), y, client=client, **auto)
    np.testing.assert_array_equal(searched.coef, pgs.train(X, y, **auto).coef)
    assert isinstance(got, MulticlassModel)
    np.testing.assert_array_equal(got.coef, ref.coef)
    np.testing.assert_array_equal(got.intercept, ref.intercept)


def test_command_line_trains_and_predicts(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from pgs.cli.main import main

    X, y = _problem(m=200)
    pgs.dump_svmlight(X, y, tmp_path / "d.svm")
    assert main(["train", str(tmp_path / "d.svm"), "--loss", "multinomial", "--sigma", "0.01",
                 "--model-out", str(tmp_path / "m.npz"), "--seed", "0"]) == 0
    assert "one problem of 4 outputs" in capsys.readouterr().out
    model = pgs.load_model(tmp_path / "m.npz")
    assert isinstance(model, MulticlassModel) and model.coef.shape == (K, N)
    assert main(["predict", str(tmp_path / "m.npz"), str(tmp_path / "d.svm"), "--proba"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "labels 0 1 2 3" and len(lines) == 201
