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
                                  dashboard_address=None) as cluster, \
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
