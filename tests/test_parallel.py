"""Parallel PGS by merging dual states (pgs/engine/rounds.py, the threads engine
pgs/engine/threads.py): the rounds against a NumPy reference, W = 1 against the plain
run, determinism whatever the schedule, the partitioning, and the arguments."""

import threading
import time

import numpy as np
import paper
import pytest
import scipy.sparse as sp
from reference import pgs_rounds_reference
from sigint import CHILD_SIGINT

import pgs
from pgs.engine import rounds as P
from pgs.training.fit import finish


def _data(m=60, n=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.5)
    y = np.where(X @ rng.normal(size=n) + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    return X, y


def _sparse(m=3000, n=60, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.1, random_state=seed, format="csr")
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X, y


def _alone(state, params, map_fn, t_end, merge_every):
    """`P.run_rounds` of one run, `map_fn` taking and giving its tasks' list: the state reached."""
    runs = {0: [state, params]}
    P.run_rounds(runs, lambda plans: {0: map_fn(plans[0])}, t_end, merge_every)
    return runs[0][0]


def _rounds(X, y, bounds, merge_every, map_order=None, **kw):
    """pgs.train's arithmetic through the primitive, with shards `bounds` and the tasks
    of each round run in `map_order` (a function of the round's tasks)."""
    run = paper.prepare(X, y, **kw)
    Xb = run.Xb
    params, state = P.setup(run, [hi - lo for lo, hi in bounds])

    def map_fn(tasks):
        order = map_order(tasks) if map_order else tasks
        done = {t["worker"]: P.run_shard(t, params, Xb.data, Xb.indices,
                                         Xb.indptr[bounds[t["worker"]][0]:
                                                   bounds[t["worker"]][1] + 1],
                                         run.y_kernel[bounds[t["worker"]][0]:
                                                      bounds[t["worker"]][1]])
                for t in order}
        return [done[t["worker"]] for t in tasks]

    state = _alone(state, params, map_fn, run.t_total, merge_every)
    run.solver.set_state(P.final_solver_state(state))
    return finish(run, False, False)


# ------------------------------------------------------------------ the reference


@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.3])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("W, tau", [(2, 7), (3, 5)])
def test_rounds_match_numpy_reference(p, loss, W, tau):
    X, y = _data()
    kw = dict(loss=loss, p=p, sigma=0.05, T=101, B=3.0, t_offset=2.5)
    ref_w, ref_its = pgs_rounds_reference(X, y, bounds=P.partition_rows(60, W), tau=tau,
                                          icpt=1.0, **kw)
    last = paper.train(X, y, iterate="last", n_jobs=W, merge_every=tau, sampling="cyclic",
                     seed=0, **kw)
    np.testing.assert_allclose(np.r_[last.coef, last.intercept], ref_w, rtol=1e-9,
                               atol=1e-12)
    avg = paper.train(X, y, iterate="average", n_jobs=W, merge_every=tau, sampling="cyclic",
                    seed=0, **kw)
    np.testing.assert_allclose(np.r_[avg.coef, avg.intercept], np.mean(ref_its, axis=0),
                               rtol=1e-9, atol=1e-12)
    rnd = paper.train(X, y, iterate="random", n_jobs=W, merge_every=tau, sampling="cyclic",
                    seed=3, **kw)
    np.testing.assert_allclose(np.r_[rnd.coef, rnd.intercept], ref_its[rnd.iteration - 1],
                               rtol=1e-9, atol=1e-12)


def test_unequal_shards_match_the_reference():
    X, y = _data(m=50)
    bounds = [(0, 7), (7, 30), (30, 50)]
    kw = dict(loss="logistic", p=1.8, sigma=0.05, T=97, t_offset=1.0)
    ref_w, ref_its = pgs_rounds_reference(X, y, bounds=bounds, tau=9, icpt=1.0, **kw)
    model = _rounds(X, y, bounds, 9, iterate="average", sampling="cyclic", seed=0, **kw)
    np.testing.assert_allclose(np.r_[model.coef, model.intercept], np.mean(ref_its, axis=0),
                               rtol=1e-9, atol=1e-12)


# --------------------------------------------------------- W = 1, determinism


@pytest.mark.parametrize("iterate", ["last", "average", "random"])
@pytest.mark.parametrize("p", [2.0, 1.8, 1.5, 1.1])
def test_one_worker_is_the_plain_run(iterate, p):
    """W = 1 through the rounds (any merge_every) is the plain run bit for bit; and
    n_jobs=1 is the default."""
    X, y = _sparse(m=500)
    kw = dict(loss="logistic", p=p, sigma=1e-3, T=2000, iterate=iterate, seed=5,
              sampling="permutation")
    plain = paper.train(X, y, **kw)
    np.testing.assert_array_equal(paper.train(X, y, n_jobs=1, merge_every=7, **kw).coef,
                                  plain.coef)
    rounds = _rounds(X, y, [(0, 500)], 300, **kw)
    np.testing.assert_array_equal(rounds.coef, plain.coef)
    assert rounds.intercept == plain.intercept
    assert rounds.iteration == plain.iteration


@pytest.mark.parametrize("sampling", ["iid", "permutation", "cyclic"])
@pytest.mark.parametrize("iterate", ["last", "average", "random"])
def test_threads_are_deterministic_whatever_the_schedule(sampling, iterate):
    """Two runs of the threads engine, and the rounds run serially in reverse worker
    order: the same bits."""
    X, y = _sparse()
    kw = dict(loss="hinge", p=1.8, sigma=1e-3, T=5000, iterate=iterate, seed=2,
              sampling=sampling)
    one = paper.train(X, y, n_jobs=3, merge_every=300, **kw)
    two = paper.train(X, y, n_jobs=3, merge_every=300, **kw)
    rev = _rounds(X, y, P.partition_rows(3000, 3), 300, map_order=lambda t: t[::-1], **kw)
    for other in (two, rev):
        np.testing.assert_array_equal(other.coef, one.coef)
        assert other.intercept == one.intercept
        assert other.iteration == one.iteration


def test_deltas_are_merged_in_worker_order_not_completion_order():
    """Worker 0 is made the slowest: its delta still comes first (same bits as the
    threads engine)."""
    X, y = _sparse()
    kw = dict(loss="logistic", p=2.0, sigma=1e-3, T=3000, iterate="last", seed=4)
    ref = paper.train(X, y, n_jobs=2, merge_every=250, **kw)
    bounds = P.partition_rows(3000, 2)
    run = paper.prepare(X, y, **kw)
    params, state = P.setup(run, [hi - lo for lo, hi in bounds])
    Xb = run.Xb

    def job(task):
        if task["worker"] == 0:
            time.sleep(0.002)
        lo, hi = bounds[task["worker"]]
        return P.run_shard(task, params, Xb.data, Xb.indices, Xb.indptr[lo:hi + 1],
                           run.y_kernel[lo:hi])

    def map_fn(tasks):
        out = [None] * len(tasks)
        threads = [threading.Thread(target=lambda t=t: out.__setitem__(t["worker"], job(t)))
                   for t in tasks]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return out

    state = _alone(state, params, map_fn, run.t_total, 250)
    run.solver.set_state(P.final_solver_state(state))
    np.testing.assert_array_equal(finish(run, False, False).coef, ref.coef)


def test_more_workers_still_fit():
    """A sanity check of the algorithm, not of bits: W = 4 reaches an objective close to
    W = 1's on an easy problem."""
    X, y = _sparse(m=4000)
    kw = dict(loss="logistic", p=2.0, sigma=1e-2, T=40000, iterate="average", seed=0)
    one = paper.train(X, y, **kw).objective(X, y)
    four = paper.train(X, y, n_jobs=4, **kw).objective(X, y)
    assert abs(four - one) < 0.01 * one


# -------------------------------------------------------------- the primitive


def test_partition_rows():
    assert P.partition_rows(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert P.partition_rows(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert P.partition_rows(5, 1) == [(0, 5)]
    with pytest.raises(ValueError, match="non-empty"):
        P.partition_rows(2, 3)


@pytest.mark.parametrize("total", [0, 1, 5, 99, 1000])
def test_shard_steps_sum_and_proportion(total):
    sizes = [7, 23, 20]
    steps = P.shard_steps(total, sizes)
    assert steps.sum() == total
    exact = total * np.array(sizes) / sum(sizes)
    assert np.all(np.abs(steps - exact) < 1.0)
    np.testing.assert_array_equal(P.shard_steps(9, [3, 3, 3]), [3, 3, 3])
    np.testing.assert_array_equal(P.shard_steps(2, [3, 3, 3]), [1, 1, 0])


def test_merge_is_the_sum_of_the_deltas():
    """lam + sum of dlam, t + sum of steps, the iterates' sums added, u and the scale from
    the new lam (the kernel's own definition: w = c u = grad r*(lam / (t sigma)))."""
    X, y = _sparse(m=600)
    kw = dict(loss="hinge", p=1.8, sigma=1e-2, T=900, iterate="average", seed=1)
    run = paper.prepare(X, y, **kw)
    bounds = P.partition_rows(600, 3)
    params, state = P.setup(run, [hi - lo for lo, hi in bounds])
    Xb = run.Xb
    tasks = P.plan_round(state, run.t_total, 100)
    assert [t["steps"] for t in tasks] == [100, 100, 100]
    deltas = [P.run_shard(t, params, Xb.data, Xb.indices, Xb.indptr[lo:hi + 1],
                          run.y_kernel[lo:hi]) for t, (lo, hi) in zip(tasks, bounds, strict=True)]
    nxt = P.merge(state, deltas, params)
    k0, k1 = state["kernel"], nxt["kernel"]
    np.testing.assert_allclose(k1["lam"], k0["lam"] + sum(d["dlam"] for d in deltas),
                               rtol=0, atol=0)
    assert k1["t"] == k0["t"] + 300
    np.testing.assert_array_equal(k1["wsum"], -sum(d["avg_sum"] for d in deltas))
    # the merged state holds lam: setting it rebuilds u, S, Q and c (Solver.set_lam)
    assert "Q" not in k1 and "u" not in k1
    q = 1.8 / 0.8
    lam = k1["lam"]
    solver = run.solver
    solver.set_state(k1)
    np.testing.assert_allclose(solver.Q, np.sum((np.abs(lam) / solver.lam_scale) ** q),
                               rtol=1e-13)
    w_ref = (0.8 * np.sum(np.abs(lam) ** q) ** ((2 - q) / q) * np.sign(lam)
             * np.abs(lam) ** (q - 1) / (300 * 1e-2))
    np.testing.assert_allclose(solver.scale * solver.u, w_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(solver.last(), w_ref, rtol=1e-12, atol=1e-15)
    assert [s["rng"].tolist() for s in nxt["workers"]] == \
        [d["sampler"]["rng"].tolist() for d in deltas]
    # the input state is left as it was
    assert state["kernel"]["t"] == 0 and not np.any(state["kernel"]["lam"])
    with pytest.raises(ValueError, match="worker order"):
        P.merge(state, deltas[::-1], params)
    with pytest.raises(ValueError, match="3 workers but 2"):
        P.merge(state, deltas[:2], params)


def test_start_state_keeps_a_warm_average():
    """A warm start's average (C != 0) is brought to the merge's form without change."""
    X, y = _sparse(m=400)
    for p in (2.0, 1.8, 1.1):
        kw = dict(loss="hinge", p=p, sigma=1e-2, iterate="average", seed=1)
        warm = paper.train(X, y, T=333, keep_state=True, **kw)
        run = paper.prepare(X, y, T=10, warm_start=warm, **kw)
        before = run.solver.average()
        params, state = P.setup(run, [200, 200])
        assert state["kernel"]["C"] == 0.0
        run.solver.set_state(P.final_solver_state(state))
        np.testing.assert_allclose(run.solver.average(), before, rtol=1e-13, atol=1e-15)


def test_warm_start_and_keep_state_with_threads():
    X, y = _sparse()
    kw = dict(loss="logistic", p=1.8, sigma=1e-3, iterate="average", seed=3, n_jobs=2)
    first = paper.train(X, y, T=1500, keep_state=True, **kw)
    more = paper.train(X, y, T=1500, warm_start=first, **kw)
    assert more.T == 3000
    again = paper.train(X, y, T=1500, warm_start=first, **kw)
    np.testing.assert_array_equal(more.coef, again.coef)
    assert abs(more.objective(X, y) - paper.train(X, y, T=3000, **kw).objective(X, y)) < 0.02


def test_callback_with_threads_reports_and_stops():
    X, y = _sparse()
    seen = []

    def callback(progress):
        seen.append(progress)
        return len(seen) < 3

    model = paper.train(X, y, T=9000, n_jobs=2, merge_every=500, callback=callback,
                      callback_every=1000, iterate="last", seed=0)
    assert len(seen) == 3
    assert [s.t for s in seen] == [1000, 2000, 3000]
    assert all(np.isfinite(s.loss_estimate) for s in seen)
    assert all(type(s.objective_estimate) is float for s in seen)      # (as one thread's)
    assert model.T == 3000 and model.params["stopped_early"]


@pytest.mark.parametrize("schedule", ["asgd", "pgs"])
@pytest.mark.parametrize("W", [2, 3])
def test_a_worker_without_steps_adds_nothing_to_the_average(schedule, W):
    """A last round shorter than W gives some workers no step: their average is 0 / 0, and
    must not enter the merge (it made every weight NaN). The average of T iterates is then
    that of T - 1 moved by one iterate: within a few 1 / T of it."""
    X, y = _sparse(m=600)
    kw = dict(sigma=1e-3, n_jobs=W, merge_every=40, seed=3, iterate="average",
              schedule=schedule)
    T = 4 * W * 40 + 1
    model, before = (pgs.train(X, y, T=t, **kw) for t in (T, T - 1))
    assert np.all(np.isfinite(model.coef)) and np.isfinite(model.intercept)
    scale = np.abs(before.coef).max()
    np.testing.assert_allclose(model.coef, before.coef, atol=5 * scale / T)


@pytest.mark.parametrize("m, W, k", [(3000, 2, 1), (3000, 3, 4), (2001, 2, 5), (10, 2, 3)])
def test_default_round_is_a_quarter_pass(m, W, k):
    """merge_every=None is max(1, m // (4 W k)) (README, pgs.train's docstring): every
    round but the last (cut at T) runs W of those iterations, of k rows each, and the
    model is the explicit value's, bit for bit, not twice its."""
    X, y = _sparse(m=m)
    tau = max(1, m // (4 * W * k))
    T = 5 * W * tau + 1
    kw = dict(sigma=1e-3, T=T, k=k, n_jobs=W, seed=3, iterate="average")
    seen = []
    model = pgs.train(X, y, callback=lambda r: seen.append(r.t), callback_every=1, **kw)
    assert np.diff([0] + seen).tolist() == [W * tau] * 5 + [1]
    np.testing.assert_array_equal(model.coef, pgs.train(X, y, merge_every=tau, **kw).coef)
    assert not np.array_equal(model.coef, pgs.train(X, y, merge_every=2 * tau, **kw).coef)


def test_a_bad_entry_in_a_shard_is_named():
    X, y = _sparse()
    X = X.copy()
    X.data[X.indptr[2500] + 1] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        paper.train(X, y, T=100000, n_jobs=2, sampling="cyclic", seed=0)


# -------------------------------------------------------------------- arguments


@pytest.mark.parametrize("bad, error", [
    (dict(n_jobs=0), ValueError), (dict(n_jobs=-1), ValueError), (dict(n_jobs=1.5), TypeError),
    (dict(n_jobs=True), TypeError), (dict(n_jobs="2"), TypeError),
    (dict(n_jobs=2, merge_every=0), ValueError), (dict(n_jobs=2, merge_every=2.0), TypeError),
    (dict(n_jobs=61), ValueError),
])
def test_bad_n_jobs_and_merge_every(bad, error):
    X, y = _data()
    name = "n_jobs" if "merge_every" not in bad else "merge_every"
    with pytest.raises(error, match=name):
        paper.train(X, y, T=10, **bad)


def test_binary_estimator_splits_rows_between_threads():
    """A single problem's n_jobs threads split its rows (pgs.train's n_jobs); several
    problems are still split between the threads (n_jobs does not change them)."""
    pytest.importorskip("sklearn")
    X, y = _sparse()
    a = pgs.PGSClassifier(n_jobs=2, random_state=0, sampling="iid", t_offset=0,
                          intercept_scaling=1.0, T=4000).fit(X, y)
    b = pgs.PGSClassifier(n_jobs=2, random_state=0, sampling="iid", t_offset=0,
                          intercept_scaling=1.0, T=4000).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # (the estimators and pgs.train share their defaults)
    ref = pgs.train(X, y, n_jobs=2, T=4000, seed=0, sampling="iid", t_offset=0,
                    intercept_scaling=1.0)
    np.testing.assert_array_equal(a.coef_.ravel(), ref.coef)


def test_ctrl_c_stops_the_threads(tmp_path):
    """SIGINT during a threaded run of 10^12 iterations raises KeyboardInterrupt in the
    main thread, and the workers stop (the process would otherwise run until the
    timeout kills it and the test fails)."""
    import signal
    import subprocess
    import sys

    script = tmp_path / "long.py"
    script.write_text(
        CHILD_SIGINT
        + "import sys, time\nimport numpy as np\nimport scipy.sparse as sp\nimport pgs\n"
        "X = sp.random(2000, 50, density=0.2, random_state=0, format='csr')\n"
        "y = np.where(np.arange(2000) % 2 == 0, -1.0, 1.0)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    pgs.train(X, y, sigma=1e-4, T=10**12, iterate='last', n_jobs=2)\n"
        "except KeyboardInterrupt:\n"
        "    print(time.perf_counter(), flush=True)\n"
        "    sys.exit(42)\n")
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                          text=True) as proc:
        try:
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 42
        finally:
            proc.kill()


def test_runs_together_are_each_run_alone():
    """`run_rounds` of several runs (the sigma search's candidates on shards): every run's
    state has the bits of its own, whatever the others do (here another sigma,
    another loss, and one that stops sooner, at the end of a round)."""
    from pgs.training.fit import prepare
    rng = np.random.default_rng(3)
    X = sp.random(900, 25, density=0.2, format="csr", random_state=3)
    y = np.where(X @ rng.standard_normal(25) > 0, 1.0, -1.0)
    sizes, bounds = (450, 450), [(0, 450), (450, 900)]

    def started(sigma, loss):
        params, state = P.setup(prepare(X, y, sigma=sigma, loss=loss, T=1, seed=4), sizes)
        return [state, params]

    def on_shards(tasks, params):
        return [P.run_shard(task, params, X.data, X.indices, X.indptr[lo:hi + 1], y[lo:hi])
                for task, (lo, hi) in zip(tasks, bounds, strict=True)]

    specs = {"a": (1e-3, "hinge", 2000), "b": (1e-2, "logistic", 2000),
             "c": (1e-3, "logistic", 600)}      # (600: three rounds of 2 x 100)
    alone = {}
    for key, (sigma, loss, T) in specs.items():
        state, params = started(sigma, loss)
        alone[key] = _alone(state, params, lambda t, params=params: on_shards(t, params),
                            T, 100)
    runs = {key: started(sigma, loss) for key, (sigma, loss, _) in specs.items()}
    calls = []

    def map_fn(plans):
        calls.append(sorted(plans))
        return {key: on_shards(tasks, runs[key][1]) for key, tasks in plans.items()}

    P.run_rounds(runs, map_fn, 600, 100)
    P.run_rounds({key: runs[key] for key in "ab"}, map_fn, 2000, 100)
    assert calls[0] == ["a", "b", "c"] and calls[-1] == ["a", "b"] and len(calls) == 10
    for key, (_, _, T) in specs.items():
        np.testing.assert_array_equal(runs[key][0]["kernel"]["lam"], alone[key]["kernel"]["lam"])
        assert runs[key][0]["kernel"]["t"] == alone[key]["kernel"]["t"] == T


@pytest.mark.parametrize("iterate", ["last", "average"])
def test_warm_start_with_threads_is_bit_for_bit_where_a_round_ends(iterate):
    """With W > 1, T1 then T2 equals T1 + T2 at once, bit for bit, where T1 is a multiple
    of a round (W * merge_every iterations); a run that ends inside a round merges there,
    so its continuation is another run (the documented rule)."""
    X, y = _sparse()
    kw = dict(sigma=1e-3, n_jobs=2, seed=0, iterate=iterate, merge_every=37)
    whole = pgs.train(X, y, T=300, **kw)
    first = pgs.train(X, y, T=148, keep_state=True, **kw)
    np.testing.assert_array_equal(pgs.train(X, y, T=152, warm_start=first, **kw).coef,
                                  whole.coef)
    inside = pgs.train(X, y, T=150, keep_state=True, **kw)
    assert not np.array_equal(pgs.train(X, y, T=150, warm_start=inside, **kw).coef,
                              whole.coef)


@pytest.mark.parametrize("p", [1.5, 1.3])
def test_rounds_with_l1_below_p2_match_numpy_reference(p):
    """p < 2 with l1 on 2 threads: each worker truncates its dual vector (its debts start
    paid), the merge keeps a coordinate every worker zeroed at 0, and the merged state owes
    nothing: the eager reference's model within the lazy norm's documented difference
    (docs/sparse.md: 5% of the largest weight), with its zeros; a model with non-zeros
    (a merge that forgot the debts paid would owe all of U again, and be all zeros)."""
    from pgs.sparse import l1_max
    X, y = _data()
    kw = dict(loss="logistic", p=p, sigma=0.05, T=101, l1=0.3 * l1_max(X, y, "logistic"))
    ref_w, _ = pgs_rounds_reference(X, y, bounds=P.partition_rows(60, 2), tau=7, icpt=1.0,
                                    **kw)
    last = paper.train(X, y, iterate="last", n_jobs=2, merge_every=7, sampling="cyclic",
                       seed=0, **kw)
    got = np.r_[last.coef, last.intercept]
    assert 0 < np.count_nonzero(last.coef) < X.shape[1]
    np.testing.assert_array_equal(got == 0.0, ref_w == 0.0)
    assert np.max(np.abs(got - ref_w)) < 0.05 * np.max(np.abs(ref_w))
