"""pgs.dask: svmlight files read on the workers, and training on Dask equal to the threads
engine bit for bit (same partitioning, seed and merge_every)."""

import gzip
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.array")

import pgs  # noqa: E402
import pgs.dask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # Workers are threads of this process (fast to start); one test uses processes.
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        yield c


def _rows(m=300, n=40, seed=0, one_based_gap=True):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.15, format="csr", random_state=rng)
    X.data = np.round(X.data * 8 - 4, 3)
    if one_based_gap:                      # no feature 0: "auto" reads the file one-based
        X = X[:, 1:]
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return X.tocsr(), y


def _same_csr(A, B):
    A, B = A.tocsr(), B.tocsr()
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)
    assert A.data.dtype == B.data.dtype


@pytest.mark.parametrize("zero_based", ["auto", True])
def test_read_svmlight_small_blocks_equal_load_svmlight(tmp_path, client, zero_based):
    X, y = _rows()
    path = tmp_path / "a.svm"
    pgs.dump_svmlight(X, y, path, zero_based=False)
    Xd, yd = pgs.dask.read_svmlight(path, blocksize=700, client=client,
                                    zero_based=zero_based)
    assert Xd.numblocks[0] > 10                    # lines were cut across blocks
    assert Xd.chunks[0] == yd.chunks[0]
    X_ref, y_ref = pgs.load_svmlight(path, zero_based=zero_based)
    _same_csr(client.compute(Xd).result(), X_ref)
    np.testing.assert_array_equal(client.compute(yd).result(), y_ref)
    assert all(sp.issparse(b) and b.format == "csr" for b in client.gather(
        client.compute(list(Xd.to_delayed().ravel()))))


def test_read_svmlight_gz_and_glob(tmp_path, client):
    parts = [_rows(m=120, seed=s) for s in range(3)]
    for i, (X, y) in enumerate(parts):
        pgs.dump_svmlight(X, y, tmp_path / f"part-{i}.svm", zero_based=False)
    with open(tmp_path / "part-1.svm", "rb") as src, gzip.open(tmp_path / "part-1.svm.gz",
                                                                 "wb") as dst:
        shutil.copyfileobj(src, dst)
    (tmp_path / "part-1.svm").unlink()
    files = [tmp_path / "part-0.svm", tmp_path / "part-1.svm.gz", tmp_path / "part-2.svm"]
    Xd, yd = pgs.dask.read_svmlight(str(tmp_path / "part-*"), blocksize=1000,
                                    n_features=60, dtype=np.float32, client=client)
    ref = pgs.load_svmlight_files(files, n_features=60, dtype=np.float32)
    _same_csr(client.compute(Xd).result(), sp.vstack(ref[0::2], format="csr"))
    np.testing.assert_array_equal(client.compute(yd).result(), np.concatenate(ref[1::2]))
    gz_rows = parts[1][0].shape[0]
    assert gz_rows in Xd.chunks[0]                 # the .gz file is one block


def test_read_svmlight_malformed_block_is_a_value_error(tmp_path, client):
    X, y = _rows()
    path = tmp_path / "bad.svm"
    pgs.dump_svmlight(X, y, path, zero_based=False)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[200] = b"1 3:x 7:1\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(ValueError, match=r"bad\.svm \(block .*invalid feature value"):
        pgs.dask.read_svmlight(path, blocksize=2000, client=client)
    # The cluster is not stuck: the next call works.
    Xd, _ = pgs.dask.read_svmlight(_good(tmp_path), client=client)
    assert Xd.shape[0] == 300


def _good(tmp_path):
    X, y = _rows()
    path = tmp_path / "good.svm"
    pgs.dump_svmlight(X, y, path, zero_based=False)
    return path


def test_read_svmlight_arguments(tmp_path, client):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        pgs.dask.read_svmlight(str(tmp_path / "none-*.svm"), client=client)
    path = _good(tmp_path)
    with pytest.raises(ValueError, match="n_features was set to 5"):
        pgs.dask.read_svmlight(path, n_features=5, client=client)
    with pytest.raises(ValueError, match="blocksize"):
        pgs.dask.read_svmlight(path, blocksize=0, client=client)


def _outcome(read, path, kw):
    try:
        X, y = read(path, **kw)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)
    return X.shape, None


@pytest.mark.parametrize("lines, kw", [
    (None, dict(dtype=np.int32)),
    (None, dict(dtype="no such dtype")),
    (None, dict(dtype=np.float16)),
    (None, dict(n_features=0)),
    (None, dict(n_features=2**31)),
    (None, dict(n_features=2.5)),
    (None, dict(n_features=True)),
    (None, dict(n_features=5)),
    (None, dict(zero_based="yes")),
    (None, dict(zero_based=None)),
    ("missing", {}),
    (b"1 1:1 2147483648:2\n", {}),                         # over the limit, one-based
    (b"1 1:1 2147483647:2\n", dict(zero_based=True)),      # over the limit, zero-based
    (b"1 0:1\n-1 2147483647:2\n", {}),                    # "auto" decides zero-based
    (b"1 0:1 3:2\n", dict(zero_based=False)),
    (b"1 3:2\n-1 4:x\n", {}),
    (b"1 1:1 2147483647:2\n", {}),                         # the largest one-based: fine
])
def test_read_svmlight_checks_as_load_svmlight(tmp_path, client, lines, kw):
    """One front end: pgs.dask.read_svmlight raises what pgs.load_svmlight raises on the
    same file and arguments, with the same message (a one-block file's lines are the
    file's), and reads the same shape where it reads."""
    path = tmp_path / "f.svm"
    if lines is None:
        pgs.dump_svmlight(*_rows(m=20), path, zero_based=False)
    elif lines != "missing":
        path.write_bytes(lines)
    path = str(path)
    ref = _outcome(pgs.load_svmlight, path, kw)
    got = _outcome(lambda p, **k: pgs.dask.read_svmlight(p, client=client, **k), path, kw)
    assert got == ref


# ---------------------------------------------------------------- training

def _problem(m=1200, n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.25, format="csr", random_state=rng)
    y = np.where(X @ rng.standard_normal(n) + 0.1 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _chunks(m, W):
    """The row chunks of pgs.train(n_jobs=W)'s shards."""
    from pgs.engine.rounds import partition_rows
    return tuple(hi - lo for lo, hi in partition_rows(m, W))


def _dask(X, chunks):
    import dask.array as da
    return da.from_array(X, chunks=(chunks, X.shape[1]), asarray=False)


def _same_model(a, b):
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept and a.iteration == b.iteration and a.T == b.T
    assert a.params == b.params


def _same_state(a, b):
    assert a.keys() == b.keys()
    for key, v in a.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(v, b[key], err_msg=key)
        elif isinstance(v, dict):                      # (a delta's sampler state)
            _same_state(v, b[key])
        elif key == "workers" and v is not None:       # the workers' sampler states
            assert len(v) == len(b[key])
            for s, t in zip(v, b[key], strict=True):
                _same_state(s, t)
        else:
            assert v == b[key], key


@pytest.mark.parametrize("iterate", ["random", "last", "average"])
def test_one_shard_is_plain_pgs_train(client, iterate):
    X, y = _problem()
    kw = dict(loss="logistic", sigma=1e-3, T=2000, seed=4, iterate=iterate, merge_every=300)
    ref = pgs.train(X, y, **{k: v for k, v in kw.items() if k != "merge_every"})
    _same_model(pgs.dask.train(_dask(X, (1200,)), y, client=client, **kw), ref)


@pytest.mark.parametrize("kw", [
    dict(iterate="random"),
    dict(iterate="last", p=1.8, k=3, sampling="cyclic", t_offset="auto"),
    dict(iterate="average", p=1.5, loss="squared_hinge", sampling="permutation"),
    dict(iterate="average", loss="huber", sampling="permutation", weights=True),
    dict(iterate="average", l1=0.1),
    dict(iterate="last", p=1.3, l1=0.1, schedule="pgs"),
])
def test_dask_equals_threads_bit_for_bit(client, kw):
    X, y = _problem()
    kw = dict(kw)
    if kw.pop("weights", False):
        kw["sample_weight"] = np.random.default_rng(1).random(X.shape[0]) * 2
    kw = dict(dict(loss="logistic", sigma=1e-3, T=3000, seed=7, merge_every=111), **kw)
    ref = pgs.train(X, y, n_jobs=3, keep_state=True, **kw)
    got = pgs.dask.train(_dask(X, _chunks(1200, 3)), y, client=client, keep_state=True, **kw)
    _same_model(got, ref)
    _same_state(got._state, ref._state)
    # Continued by a warm start, on other chunks re-cut by n_jobs: still the same.
    ref2 = pgs.train(X, y, n_jobs=3, warm_start=ref, **kw)
    got2 = pgs.dask.train(_dask(X, (500, 500, 200)), y, n_jobs=3, client=client,
                          warm_start=got, **kw)
    _same_model(got2, ref2)


def test_dask_warm_start_is_bit_for_bit_where_a_round_ends(client):
    """pgs.dask.train continued by a warm start that ends a round (a multiple of W *
    merge_every iterations) equals the unsplit run, bit for bit, as the threads do."""
    X, y = _problem()
    kw = dict(loss="logistic", sigma=1e-3, seed=7, merge_every=111)
    Xd = _dask(X, _chunks(1200, 3))
    whole = pgs.dask.train(Xd, y, client=client, T=1500, **kw)
    first = pgs.dask.train(Xd, y, client=client, T=666, keep_state=True, **kw)
    _same_model(pgs.dask.train(Xd, y, client=client, T=834, warm_start=first, **kw), whole)


def test_dense_chunks_dask_targets_and_callback(client):
    import dask.array as da
    X, y = _problem()
    seen, seen_ref = [], []
    kw = dict(sigma=1e-3, T=2500, seed=2, merge_every=200, callback_every=600)
    ref = pgs.train(X, y, n_jobs=4, callback=seen_ref.append, **kw)
    got = pgs.dask.train(da.from_array(X.toarray(), chunks=(_chunks(1200, 4), 30)),
                         da.from_array(y, chunks=300), client=client,
                         callback=seen.append, **kw)
    _same_model(got, ref)
    assert [(p.t, p.loss_estimate, p.objective_estimate) for p in seen] == \
        [(p.t, p.loss_estimate, p.objective_estimate) for p in seen_ref]


def test_repeated_runs_are_identical(client):
    X, y = _problem(seed=3)
    Xd = _dask(X, (400, 300, 500))
    kw = dict(loss="hinge", sigma=1e-3, T=4000, seed=11, iterate="average", merge_every=50)
    first = pgs.dask.train(Xd, y, client=client, **kw)
    for _ in range(2):
        _same_model(pgs.dask.train(Xd, y, client=client, **kw), first)
    # Each fit's shard actors are gone once it returns (nothing kept between fits).
    import time

    def actors(dask_scheduler):
        return [str(k) for k in dask_scheduler.tasks if "_ShardActor" in str(k)]

    deadline = time.monotonic() + 30
    while (client.run_on_scheduler(actors) or any(client.run(
            lambda dask_worker: list(dask_worker.state.actors)).values())) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.run_on_scheduler(actors) == []
    assert not any(client.run(lambda dask_worker: list(dask_worker.state.actors)).values())


def test_read_svmlight_then_train(tmp_path, client):
    X, y = _problem(m=900, n=25, seed=5)
    path = tmp_path / "train.svm"
    pgs.dump_svmlight(X, y, path)
    Xd, yd = pgs.dask.read_svmlight(path, blocksize=4000, n_features=25, client=client)
    assert Xd.numblocks[0] > 3
    kw = dict(loss="logistic", sigma=1e-3, T=2000, seed=1, merge_every=100)
    X_ref, y_ref = pgs.load_svmlight(path, n_features=25)
    _same_model(pgs.dask.train(Xd, yd, n_jobs=2, client=client, **kw),
                pgs.train(X_ref, y_ref, n_jobs=2, **kw))


def test_bad_chunk_is_a_value_error_and_the_cluster_goes_on(client):
    X, y = _problem()
    bad = X.copy()
    bad.data[bad.indptr[1000]] = np.nan          # row 1000: in the third of three shards
    with pytest.raises(ValueError, match=r"partition 2 \(rows 800\.\.1199\).*non-finite"):
        pgs.dask.train(_dask(bad, (400, 400, 400)), y, client=client, T=1500, seed=0,
                       sampling="cyclic", sigma=1e-3)
    with pytest.raises(ValueError, match="n_jobs=2000 exceeds the number of samples"):
        pgs.dask.train(_dask(X, (600, 600)), y, n_jobs=2000, client=client, sigma=1e-3)
    with pytest.raises(TypeError, match="X must be a dask array"):
        pgs.dask.train(X, y, client=client, sigma=1e-3)
    # Nothing is left running: the next call works.
    got = pgs.dask.train(_dask(X, (400, 400, 400)), y, client=client, T=500, seed=0,
                         merge_every=100, sigma=1e-3)
    _same_model(got, pgs.train(X, y, n_jobs=3, T=500, seed=0, merge_every=100, sigma=1e-3))


def test_actor_calls_go_straight_to_the_workers_or_through_the_scheduler(client,
                                                                        monkeypatch):
    """The fixture's client sends through the scheduler (direct_to_workers=False); the
    shard actors' calls go straight to their workers, and through the scheduler's proxy
    when the client cannot reach the workers: the same model either way."""
    from pgs.dask import training
    scheduler = client.cluster.scheduler
    proxied, proxy = [], scheduler.handlers["proxy"]

    async def counted(**kw):
        proxied.append(kw["msg"]["op"])
        return await proxy(**kw)

    monkeypatch.setitem(scheduler.handlers, "proxy", counted)
    X, y = _problem(m=600)
    kw = dict(loss="logistic", sigma=1e-3, T=1500, seed=9, merge_every=150)
    ref = pgs.train(X, y, n_jobs=2, **kw)
    _same_model(pgs.dask.train(_dask(X, _chunks(600, 2)), y, client=client, **kw), ref)
    assert not client.direct_to_workers and proxied == []

    def unreachable(self):
        raise OSError("no route to the worker (test)")

    monkeypatch.setattr(training._DirectActor, "_worker_rpc", property(unreachable))
    _same_model(pgs.dask.train(_dask(X, _chunks(600, 2)), y, client=client, **kw), ref)
    assert proxied.count("actor_execute") >= 2 * 5      # (5 rounds, the set-up calls)


def test_worker_processes():
    X, y = _problem(m=600)
    kw = dict(loss="logistic", sigma=1e-3, T=1500, seed=9, iterate="average", merge_every=150)
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        got = pgs.dask.train(_dask(X, _chunks(600, 2)), y, client=c, **kw)
    _same_model(got, pgs.train(X, y, n_jobs=2, **kw))


def test_missing_dask_says_how_to_install(monkeypatch):
    import importlib
    import sys
    monkeypatch.setitem(sys.modules, "distributed", None)
    monkeypatch.delitem(sys.modules, "pgs.dask")
    with pytest.raises(ImportError, match=r'pip install "pgs\[dask\]"'):
        importlib.import_module("pgs.dask")


def test_estimators_take_dask_arrays(client):
    pytest.importorskip("sklearn")
    from sklearn.base import clone

    X, y = _problem(m=900, n=20, seed=6)
    y3 = np.random.default_rng(0).integers(0, 3, 900)
    one = _dask(X, (900,))
    with client.as_current():
        # One chunk is the in-memory estimator's run, bit for bit (binary and 3 classes).
        for labels in (y, y3):
            ref = pgs.PGSClassifier(random_state=3, T=2000, sigma=1e-4).fit(X, labels)
            got = pgs.dask.PGSClassifier(random_state=3, T=2000, sigma=1e-4,
                                         merge_every=2000).fit(
                one, labels)
            np.testing.assert_array_equal(got.coef_, ref.coef_)
            np.testing.assert_array_equal(got.intercept_, ref.intercept_)
        reg = pgs.dask.PGSRegressor(random_state=0, T=1000, sigma=1e-4,
                                    merge_every=1000).fit(one, X @ np.ones(20))
        np.testing.assert_array_equal(reg.coef_, pgs.PGSRegressor(
            random_state=0, T=1000, sigma=1e-4).fit(X, X @ np.ones(20)).coef_)
        # Three chunks: each problem is pgs.dask.train's on those shards.
        est = clone(pgs.dask.PGSClassifier(loss="logistic", merge_every=100, random_state=1,
                                           sampling="iid", t_offset=0, intercept_scaling=1.0,
                                           T=900, sigma=1e-4, iterate="last"))
        est.fit(_dask(X, (300, 300, 300)), y)
        model = pgs.dask.train(_dask(X, (300, 300, 300)), y, loss="logistic", seed=1,
                               merge_every=100, iterate="last", T=900, sigma=1e-4,
                               sampling="iid", t_offset=0, intercept_scaling=1.0)
        np.testing.assert_array_equal(est.coef_[0], model.coef)
        assert est.get_params()["merge_every"] == 100
        # Three classes on three chunks: one solver's outputs, each pgs.dask.train's
        est.fit(_dask(X, (300, 300, 300)), y3)
        for c in range(3):
            model = pgs.dask.train(_dask(X, (300, 300, 300)), np.where(y3 == c, 1.0, -1.0),
                                   loss="logistic", seed=1, merge_every=100, iterate="last",
                                   T=900, sigma=1e-4, sampling="iid", t_offset=0,
                                   intercept_scaling=1.0)
            np.testing.assert_array_equal(est.coef_[c], model.coef)
            assert est.intercept_[c] == model.intercept
        # A warm start continues every problem from its state; one chunk: the in-memory
        # estimator's
        kw = dict(random_state=3, T=600, sigma=1e-4, warm_start=True)
        got = pgs.dask.PGSClassifier(merge_every=600, **kw).fit(one, y3).fit(one, y3)
        want = pgs.PGSClassifier(**kw).fit(X, y3).fit(X, y3)
        assert not np.array_equal(want.coef_, pgs.PGSClassifier(**kw).fit(X, y3).coef_)
        np.testing.assert_array_equal(got.coef_, want.coef_)
        np.testing.assert_array_equal(got.intercept_, want.intercept_)


def test_sampled_q_norms_are_the_same_rows_on_the_shards(client):
    """p < 2 past 2 Q_SAMPLE_ROWS rows: the "auto" step reads every stride-th row's q-norm,
    counted in the whole X, whichever shard holds it: eta0 and the model are pgs.train's."""
    X, y = _problem(m=25_000, n=30, seed=9)
    kw = dict(p=1.7, sigma=1e-4, T=3000, seed=2, merge_every=500)
    got = pgs.dask.train(_dask(X, (7001, 9000, 8999)), y, client=client, n_jobs=3, **kw)
    want = pgs.train(X, y, n_jobs=3, **kw)
    assert got.params["eta0"] == want.params["eta0"]
    _same_model(got, want)


def test_sigma_auto_on_the_shards_is_the_in_memory_search(client):
    """sigma="auto" (halving and the stopping rule) on a dask X: with one chunk,
    pgs.train's model bit for bit; with n_jobs=W, pgs.train(n_jobs=W)'s on the same
    training shards (both split the training rows alike)."""
    X, y = _problem(m=3000, seed=7)
    kw = dict(seed=3, loss="logistic")
    _same_model(pgs.dask.train(_dask(X, 3000), y, client=client, **kw), pgs.train(X, y, **kw))
    got = pgs.dask.train(_dask(X, (1000, 1000, 1000)), y, client=client, n_jobs=2,
                         merge_every=120, **kw)
    want = pgs.train(X, y, n_jobs=2, merge_every=120, **kw)
    _same_model(got, want)
    np.testing.assert_array_equal(got.sigma_scores, want.sigma_scores)
    assert got.params["passes"] == want.params["passes"]
    given = pgs.dask.train(_dask(X, 3000), y, client=client, T=2345, p=1.7, **kw)
    _same_model(given, pgs.train(X, y, T=2345, p=1.7, **kw))


def test_after_the_search_each_chunks_rows_keep_their_targets(client, monkeypatch):
    """A shard a chunk (no n_jobs): after the search each chunk's training rows, then its
    held-out rows that join them, are its shard, and the targets follow the rows: a run
    from the switch on, on rows whose targets were shuffled, would learn nothing."""
    from pgs.training import sigma_auto as SA
    X, y = _problem(m=3000, seed=9)
    seen = {}
    every_row = pgs.dask.training.DaskRows.every_row

    def recorded(self):
        seen["Xb"], seen["order"] = every_row(self)
        return seen["Xb"], seen["order"]

    monkeypatch.setattr(pgs.dask.training.DaskRows, "every_row", recorded)
    got = pgs.dask.train(_dask(X, (700, 1300, 1000)), y, client=client, seed=2)
    train, val = SA.validation_split(3000, 0.2, 2, y)
    joined = np.setdiff1d(val, val[SA._stop_rows(val, y, 2)])
    chunk = np.searchsorted([700, 2000], seen["order"], side="right")
    assert np.all(np.diff(chunk) >= 0)                  # (chunk by chunk, in order)
    for c in range(3):
        rows = seen["order"][chunk == c]
        n_train = np.count_nonzero(np.isin(rows, train))
        np.testing.assert_array_equal(rows[:n_train], np.sort(rows[:n_train]))
        assert np.all(np.isin(rows[n_train:], joined))
    assert np.array_equal(np.sort(seen["order"]), np.union1d(train, joined))
    assert np.mean(got.predict(X) == y) > 0.9


def test_default_round_is_half_a_pass(client):
    """pgs.dask.train's rounds are DASK_ROUND_PASSES = 1/2 of a pass by default (a round's
    hand-offs cost milliseconds: twice the threads engine's quarter pass), with or
    without sigma="auto": pgs.train(n_jobs=W) with merge_every = m // (2 W k)."""
    from pgs.rules.defaults import DASK_ROUND_PASSES
    assert DASK_ROUND_PASSES == 0.5
    X, y = _problem(m=3000, seed=5)
    kw = dict(loss="logistic", sigma=1e-3, T=7000, k=2, seed=6)
    got = pgs.dask.train(_dask(X, 3000), y, client=client, n_jobs=2, **kw)
    _same_model(got, pgs.train(X, y, n_jobs=2, merge_every=3000 // (2 * 2 * 2), **kw))
    assert not np.array_equal(got.coef, pgs.train(X, y, n_jobs=2, **kw).coef)
    auto = pgs.dask.train(_dask(X, 3000), y, client=client, n_jobs=2, seed=6)
    m_train = 3000 - 600     # (validation_fraction "auto": a fifth held out)
    # The search's rounds are half a pass of the training rows, the winner's then half a
    # pass of every row: a chain of warm starts (each advance starts its rounds afresh) on
    # the training split to the rungs (7 values, 4, then the last two at 10,000 iterations:
    # 2 passes), then on the rows trained on (all but the held-out ones the stop reads) to
    # each held-out check (every 10,000 rows: CHECK_ROWS).
    from pgs.training.sigma_auto import validation_split
    train, _ = validation_split(3000, 0.2, 6, np.where(y == np.max(y), 1.0, -1.0))
    assert train.shape[0] == m_train
    np.testing.assert_array_equal(auto.sigma_scores, pgs.train(
        X, y, n_jobs=2, merge_every=m_train // 4, seed=6).sigma_scores)
    trained = _trained_rows(3000, 6, y)
    chain, t = None, 0
    for b in [2_500, 5_000, 10_000] + list(range(20_000, auto.T, 10_000)) + [auto.T]:
        rows, every = (train, m_train // 4) if b <= 10_000 else \
            (trained, trained.shape[0] // 4)
        chain = pgs.train(X[rows], y[rows], n_jobs=2, seed=6, sigma=auto.params["sigma"],
                          merge_every=every, T=b - t, warm_start=chain, keep_state=True)
        t = b
    _same_model(auto, chain)


def test_estimators_check_a_dask_fit_as_an_in_memory_one(client):
    """A dask X is checked by its shape (it stays on the cluster), y as in memory."""
    pytest.importorskip("sklearn")
    X, y = _problem(m=300, n=20, seed=2)
    one = _dask(X, (300,))
    with client.as_current():
        est = pgs.dask.PGSRegressor(T=300, sigma=1e-3, random_state=0)
        with pytest.raises(ValueError, match="inconsistent numbers of samples"):
            est.fit(one, y[:-1])
        with pytest.raises(ValueError, match="y contains NaN"):
            est.fit(one, np.where(np.arange(300) == 7, np.nan, y))
        with pytest.raises(ValueError, match="classes"):
            pgs.dask.PGSClassifier(T=300, sigma=1e-3).fit(one, np.linspace(0, 1, 300))
        est.fit(one, y)
        assert est.n_features_in_ == 20
        with pytest.raises(ValueError, match="X has 19 features"):
            est.set_params(warm_start=True).fit(_dask(X[:, :19], (300,)), y)


@pytest.mark.parametrize("n_classes, loss", [(2, "auto"), (3, "auto"), (8, "auto"), (3, "squared")])
def test_estimators_with_every_default_are_the_in_memory_ones(client, n_classes, loss):
    """PGSClassifier() (one-vs-rest and Crammer-Singer compared; its one-vs-rest problems
    one solver's outputs, a block from 8; "squared": each output its own radius B) and
    PGSRegressor() on a one-chunk dask X: the in-memory estimators' fits, sigma search and
    stopping rule included."""
    X, _ = _problem(m=2400, n=20, seed=8)
    y = np.random.default_rng(1).integers(0, n_classes, 2400)
    z = X @ np.ones(20) + 0.1 * np.random.default_rng(2).standard_normal(2400)
    with client.as_current():
        got = pgs.dask.PGSClassifier(loss=loss, random_state=4).fit(_dask(X, 2400), y)
        reg = pgs.dask.PGSRegressor(random_state=5).fit(_dask(X, 2400), z)
    want = pgs.PGSClassifier(loss=loss, random_state=4).fit(X, y)
    np.testing.assert_array_equal(got.coef_, want.coef_)
    np.testing.assert_array_equal(got.intercept_, want.intercept_)
    assert got.sigma_ == want.sigma_ and got.n_iter_ == want.n_iter_
    assert got.loss_ == want.loss_
    if loss == "squared":       # (the outputs' radii differ: the test tests them)
        assert len(set(want.params_["B"])) == n_classes
    np.testing.assert_array_equal(reg.coef_, pgs.PGSRegressor(random_state=5).fit(X, z).coef_)


def test_get_client_takes_the_current_client(client):
    with client.as_current():
        assert pgs.dask.get_client() is client
    assert pgs.dask.get_client(client) is client
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        pgs.dask.get_client("tcp://scheduler:8786")


def test_a_callback_needs_a_fixed_sigma_on_dask_too(client):
    X, y = _problem(m=600, seed=4)
    with pytest.raises(ValueError, match="callback needs a fixed sigma"):
        pgs.dask.train(_dask(X, 600), y, client=client, callback=print)


def _trained_rows(m, seed, y):
    """The rows ``sigma="auto"`` trains on after its search, in order: the training split,
    then the held-out rows that join it (pgs.training.sigma_auto)."""
    from pgs.rules import defaults as D
    from pgs.training.sigma_auto import _stop_rows, validation_split
    strata = np.where(y == np.max(y), 1.0, -1.0)
    train, val = validation_split(m, D.auto_validation_fraction(m), seed, strata)
    return np.concatenate([train, np.delete(val, _stop_rows(val, strata, seed))])


@pytest.mark.parametrize("sigma", [1e-3, "auto"])
def test_dask_null_model_check_reads_the_shards(client, sigma):
    """At p < 2 the null model's check multiplies X^T v over the shards (the client holds X's
    shape only): from l1_max on pgs.dask gives (0, b0), below it the run's own model; with
    a fixed sigma the threads' bits."""
    from pgs.sparse import l1_max
    X, y = _problem()
    top = l1_max(X, y, "logistic")
    # (sigma="auto": the bias of the rows trained on, all but the held-out ones it stops on)
    rows = slice(None) if sigma != "auto" else _trained_rows(X.shape[0], 7, y)
    b0 = np.log(np.sum(y[rows] > 0) / np.sum(y[rows] < 0))
    for l1, null in ((1.5 * top, True), (0.05 * top, False)):
        kw = dict(loss="logistic", p=1.5, sigma=sigma, l1=l1, seed=7, max_passes=2,
                  merge_every=111)
        got = pgs.dask.train(_dask(X, _chunks(1200, 3)), y, client=client, **kw)
        assert (np.count_nonzero(got.coef) == 0) == null
        if null:
            assert got.intercept == pytest.approx(b0, abs=1e-12)
        if sigma != "auto":
            _same_model(got, pgs.train(X, y, n_jobs=3, **kw))


@pytest.mark.parametrize("loss, sigma", [("hinge", 1e-3), ("auto", "auto")])
def test_labels_of_many_classes_train_as_the_dask_estimator_does(client, loss, sigma):
    """pgs.dask.train on 3 classes: one problem a class on X's shards (one-vs-rest), or
    loss="auto"'s choice, the weights of pgs.dask.PGSClassifier with the same arguments;
    a warm start continues each problem."""
    pytest.importorskip("sklearn")
    from pgs.estimators import _base_entropy

    X, _ = _problem(m=900, n=20, seed=3)
    y = np.random.default_rng(0).integers(0, 3, 900)
    Xd = _dask(X, (300, 300, 300))
    with client.as_current():
        est = pgs.dask.PGSClassifier(loss=loss, sigma=sigma, random_state=1,
                                     merge_every=100).fit(Xd, y)
    model = pgs.dask.train(Xd, y, loss=loss, sigma=sigma, seed=_base_entropy(1),
                           merge_every=100, client=client, keep_state=True)
    np.testing.assert_array_equal(est.coef_, model.coef)
    np.testing.assert_array_equal(est.intercept_, model.intercept)
    assert est.loss_ == model.params["loss"]
    if isinstance(model, pgs.OneVsRestModel):
        # (a batch of two of the three classes, classes= naming all three: one chunk, the
        # in-memory model of every problem, the absent class's too)
        kw = dict(classes=[0, 1, 2], loss=loss, T=100, seed=5, sigma=1e-3)
        first = pgs.dask.train(_dask(X[y < 2], int(np.sum(y < 2))), y[y < 2], merge_every=100,
                               client=client, **kw)
        np.testing.assert_array_equal(first.coef, pgs.train(X[y < 2], y[y < 2], **kw).coef)
        assert first.coef.shape[0] == 3
        more = pgs.dask.train(Xd, y, loss=loss, warm_start=model, T=300, merge_every=100,
                              client=client)
        assert more.T == model.T + 300
        for c in range(3):
            alone = pgs.dask.train(Xd, np.where(y == c, 1.0, -1.0), loss="hinge", T=300,
                                   warm_start=model.problems[c], merge_every=100,
                                   client=client)
            np.testing.assert_array_equal(more.coef[c], alone.coef)
