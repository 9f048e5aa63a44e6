"""pgs.load_svmlight / dump_svmlight: agreement with scikit-learn, malformed input, fuzzing."""

import bz2
import gzip
import io
import lzma
import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
from pgs.io import svmlight as svmlight_io

sk_datasets = pytest.importorskip("sklearn.datasets")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def shared_data():
    here = Path(__file__).resolve().parents[2] / "shared" / "data"
    if here.is_dir():
        return here
    env = os.environ.get("PGS_SHARED_DATA")
    if env and Path(env).is_dir():
        return Path(env)
    return None


SHARED_FILES = [
    ("a9a/a9a", None),
    ("a9a/a9a.t", 123),
    ("mushrooms/mushrooms", None),
    ("rcv1_vw_small/rcv1_small_train.svm", 47236),
    ("rcv1_vw_small/rcv1_small_test.svm", 47236),
]


def sk_load(f, **kw):
    if isinstance(f, bytes):
        f = io.BytesIO(f)
    out = sk_datasets.load_svmlight_file(f, **kw)
    return (sp.csr_matrix(out[0]),) + tuple(out[1:])


def pgs_load(f, **kw):
    if isinstance(f, bytes):
        f = io.BytesIO(f)
    return pgs.load_svmlight(f, **kw)


def assert_same(ours, ref):
    X, y = ours[0], ours[1]
    A, b = ref[0], ref[1]
    assert isinstance(X, sp.csr_matrix)
    assert X.shape == A.shape
    assert X.has_sorted_indices
    np.testing.assert_array_equal(X.indptr, A.indptr)
    np.testing.assert_array_equal(X.indices, A.indices)
    assert X.data.dtype == A.data.dtype
    # bit-identical values (this also distinguishes -0.0 from 0.0)
    assert X.data.tobytes() == np.ascontiguousarray(A.data).tobytes()
    if isinstance(b, list):
        assert y == b
    else:
        assert np.asarray(y).tobytes() == np.asarray(b, dtype=np.float64).tobytes()
    for a, c in zip(ours[2:], ref[2:], strict=True):
        np.testing.assert_array_equal(a, c)


# ----------------------------------------------------------------- real files


@pytest.mark.parametrize("name,n_features", SHARED_FILES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shared_files_match_sklearn(name, n_features, dtype):
    root = shared_data()
    if root is None or not (root / name).exists():
        pytest.skip("shared data not available (set PGS_SHARED_DATA)")
    path = root / name
    ours = pgs.load_svmlight(path, n_features=n_features, dtype=dtype)
    assert_same(ours, sk_load(str(path), n_features=n_features, dtype=dtype))
    assert ours[0].indices.dtype == np.int32 and ours[0].indptr.dtype == np.int32


def test_shared_pair_same_n_features():
    root = shared_data()
    if root is None or not (root / "a9a" / "a9a.t").exists():
        pytest.skip("shared data not available")
    X1, y1, X2, y2 = pgs.load_svmlight_files([root / "a9a" / "a9a", root / "a9a" / "a9a.t"])
    assert X1.shape[1] == X2.shape[1] == 123
    ref = sk_datasets.load_svmlight_files([str(root / "a9a" / "a9a"),
                                           str(root / "a9a" / "a9a.t")])
    assert_same((X2, y2), (sp.csr_matrix(ref[2]), ref[3]))


# ----------------------------------------------------------------- generated files


def random_problem(seed, m=300, n=50, density=0.2):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.standard_normal(k) * 10.0 ** rng.integers(-12, 12, k))
    y = rng.integers(-1, 2, m).astype(np.float64) * rng.random(m)
    return X, y


@pytest.mark.parametrize("zero_based", [True, False])
def test_generated_file_round_trip_and_sklearn(tmp_path, zero_based):
    X, y = random_problem(0)
    path = tmp_path / "gen.svm"
    pgs.dump_svmlight(X, y, path, zero_based=zero_based)
    ours = pgs.load_svmlight(path, n_features=X.shape[1], zero_based=zero_based)
    assert (ours[0] != X).nnz == 0
    assert ours[0].data.tobytes() == X.data.tobytes()
    assert ours[1].tobytes() == y.tobytes()
    assert_same(ours, sk_load(str(path), n_features=X.shape[1], zero_based=zero_based))
    # a file written by scikit-learn (%.16g values) reads identically too
    sk_path = tmp_path / "sk.svm"
    sk_datasets.dump_svmlight_file(X, y, str(sk_path), zero_based=zero_based)
    assert_same(pgs.load_svmlight(sk_path, n_features=X.shape[1], zero_based=zero_based),
                sk_load(str(sk_path), n_features=X.shape[1], zero_based=zero_based))


def test_many_blocks_and_threads_agree(tmp_path, monkeypatch):
    X, y = random_problem(1, m=3000, n=400, density=0.05)
    path = tmp_path / "gen.svm"
    pgs.dump_svmlight(X, y, path)
    ref = pgs.load_svmlight(path, n_threads=1)
    monkeypatch.setattr(svmlight_io, "_MAX_BLOCK", 4096)
    monkeypatch.setattr(svmlight_io, "_MIN_BLOCK", 4096)
    for threads in (1, 2, 3):
        got = pgs.load_svmlight(path, n_threads=threads)
        assert_same(got, ref)
        with open(path, "rb") as fh:  # the stream path
            assert_same(pgs.load_svmlight(fh, n_threads=threads), ref)
    # an error deep in the file reports its true line number from any block
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2500] = b"1 3:x\n"
    bad = tmp_path / "bad.svm"
    bad.write_bytes(b"".join(lines))
    for threads in (1, 2):
        with pytest.raises(ValueError, match=r"line 2501\b"):
            pgs.load_svmlight(bad, n_threads=threads)


def test_long_line_longer_than_a_block(tmp_path, monkeypatch):
    monkeypatch.setattr(svmlight_io, "_MAX_BLOCK", 64)
    monkeypatch.setattr(svmlight_io, "_MIN_BLOCK", 64)
    text = b"1 " + b" ".join(b"%d:%d.5" % (i, i) for i in range(1, 200)) + b"\n-1 2:3\n"
    p = tmp_path / "long.svm"
    p.write_bytes(text)
    assert_same(pgs.load_svmlight(p), sk_load(text))


@pytest.mark.parametrize("ext,opener", [(".gz", gzip.open), (".bz2", bz2.open),
                                        (".xz", lzma.open)])
def test_compressed(tmp_path, ext, opener):
    X, y = random_problem(2)
    plain = tmp_path / "d.svm"
    pgs.dump_svmlight(X, y, plain)
    comp = tmp_path / ("d.svm" + ext)
    with opener(comp, "wb") as fh:
        fh.write(plain.read_bytes())
    assert_same(pgs.load_svmlight(comp), pgs.load_svmlight(plain))
    # dump_svmlight compresses by extension too
    comp2 = tmp_path / ("e.svm" + ext)
    pgs.dump_svmlight(X, y, comp2)
    assert_same(pgs.load_svmlight(comp2), pgs.load_svmlight(plain))


# ----------------------------------------------------------------- format details


def test_format_features():
    text = (b"# a comment line\n"
            b"\n"
            b"+1 3:1.5e2\t1:-2.5E-3   7:0 # trailing comment 9:9\r\n"
            b"   \t \r\n"
            b"-1\t2:.5 4:5. \r\n"
            b"0 qid:4 1:1\n"
            b"2.5\n"
            b"1e1 5:+3")
    X, y = pgs.load_svmlight(io.BytesIO(text), zero_based=True)
    assert y.tolist() == [1.0, -1.0, 0.0, 2.5, 10.0]
    assert X.shape == (5, 8)
    assert X.indptr.tolist() == [0, 3, 5, 6, 6, 7]
    assert X.indices.tolist() == [1, 3, 7, 2, 4, 1, 5]  # row 0 sorted
    assert X.data.tolist() == [-2.5e-3, 150.0, 0.0, 0.5, 5.0, 1.0, 3.0]


def test_zero_based_auto_like_sklearn():
    one = b"1 1:1 3:2\n-1 2:1\n"
    zero = b"1 0:1 3:2\n-1 2:1\n"
    for text in (one, zero, b"1\n-1\n", b""):
        for zb in ("auto", True):
            assert_same(pgs_load(text, zero_based=zb), sk_load(text, zero_based=zb))
    assert_same(pgs_load(one, zero_based=False), sk_load(one, zero_based=False))
    X, _ = pgs_load(one)
    assert X.shape == (2, 3) and X.indices.tolist() == [0, 2, 1]
    # one file with an index 0 makes all files zero-based, as in scikit-learn
    ours = pgs.load_svmlight_files([io.BytesIO(one), io.BytesIO(zero)])
    ref = sk_datasets.load_svmlight_files([io.BytesIO(one), io.BytesIO(zero)])
    assert_same(ours[:2], (sp.csr_matrix(ref[0]), ref[1]))
    assert ours[0].shape == ours[2].shape == (2, 4)


def test_query_id_and_multilabel_like_sklearn():
    text = b"3 qid:1 1:0.5 2:1\n1 qid:1 2:2\n2 qid:-7 1:1\n"
    assert_same(pgs_load(text, query_id=True), sk_load(text, query_id=True))
    ml = b"1,3,7 1:1\n2 2:1\n 3:1\n2,1 1:1 3:2\n"
    assert_same(pgs_load(ml, multilabel=True), sk_load(ml, multilabel=True))
    _, y = pgs_load(ml, multilabel=True)
    assert y == [(1.0, 3.0, 7.0), (2.0,), (), (1.0, 2.0)]


def test_n_features():
    text = b"1 1:1 5:2\n"
    assert pgs_load(text, n_features=10)[0].shape == (1, 10)
    with pytest.raises(ValueError, match="n_features was set to 3"):
        pgs_load(text, n_features=3)


LIMIT_MSG = r"is too large: at most 2\*\*31 - 1 = 2147483647 features"


def test_largest_feature_index_is_accepted():
    """At most 2**31 - 1 columns (int32 indices): the largest index of each base reads."""
    X, _ = pgs_load(b"1 1:1 2147483647:2\n-1 2:1\n")
    assert X.indices.dtype == np.int32 and X.shape == (2, 2147483647)
    assert X.indices.tolist() == [0, 2147483646, 1]
    X, _ = pgs_load(b"1 0:1 2147483646:2\n", zero_based=True)
    assert X.shape == (1, 2147483647)
    X, _ = pgs_load(b"1 1:1 2147483647:2\n", zero_based=False)
    assert X.shape == (1, 2147483647)


@pytest.mark.parametrize("text,kw", [
    (b"1 1:1\n-1 2:1 2147483648:2\n", {}),
    (b"1 1:1\n-1 2:1 9223372036854775807:2\n", {}),  # 2**63 - 1 was accepted
    (b"1 1:1\n-1 2:1 9223372036854775808:2\n", dict(zero_based=True)),  # OverflowError
    (b"1 1:1\n-1 2:1 4000000000:2\n", dict(zero_based=True)),
    (b"1 1:1\n-1 2:1 2147483647:2\n", dict(zero_based=True)),
    (b"1 1:1\n-1 2:1 2147483648:2\n", dict(zero_based=False)),
    (b"1 1:1\n-1 2:1 000000000000000000000000000000000002147483648:2\n", {}),
    (b"1 0:1\n-1 2:1 2147483647:2\n", {}),  # zero-based by "auto": one index too many
])
def test_feature_index_beyond_the_limit(text, kw):
    with pytest.raises(ValueError, match=r"^<file object>, line 2, column 8: feature index "
                       r"in '[^']+' " + LIMIT_MSG):
        pgs_load(text, **kw)


def test_feature_index_beyond_the_limit_deep_in_a_plain_file(tmp_path, monkeypatch):
    """The largest index of a file that "auto" then reads as zero-based: the error names
    its line in a later block, from any number of threads."""
    monkeypatch.setattr(svmlight_io, "_MAX_BLOCK", 256)
    monkeypatch.setattr(svmlight_io, "_MIN_BLOCK", 256)
    text = b"".join(b"%d 1:%d 7:0.5\n" % (i % 2, i) for i in range(200))
    text += b"1 2:1 2147483647:2\n1 0:1\n"
    path = tmp_path / "wide.svm"
    path.write_bytes(text)
    for threads in (1, 2):
        with pytest.raises(ValueError, match=rf"{path}, line 201, column 7: .*{LIMIT_MSG}"):
            pgs.load_svmlight(path, n_threads=threads)
    with pytest.raises(ValueError, match=rf"{path}, line 202, column 3: feature index 0"):
        pgs.load_svmlight(path, zero_based=False)
    fd = os.open(path, os.O_RDONLY)  # a file descriptor is read from its position
    try:
        os.lseek(fd, len(text.split(b"\n")[0]) + 1, os.SEEK_SET)
        with pytest.raises(ValueError, match=r"line 200, column 7: .*too large"):
            pgs.load_svmlight(fd)
    finally:
        os.close(fd)


def test_n_features_beyond_the_limit():
    with pytest.raises(ValueError, match=r"n_features must be in \[1, 2\*\*31 - 1"):
        pgs_load(b"1 1:1\n", n_features=2**31)
    assert pgs_load(b"1 1:1\n", n_features=2**31 - 1)[0].shape == (1, 2**31 - 1)


def test_float32_matches_sklearn():
    text = b"1 1:0.1 2:3.4028235e38 3:1e-45\n"
    assert_same(pgs_load(text, dtype=np.float32), sk_load(text, dtype=np.float32))


def test_float_parsing_is_correctly_rounded():
    rng = np.random.default_rng(5)
    vals = np.concatenate([rng.random(2000), rng.standard_normal(2000) * 1e-300,
                           rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 40, 2000)])
    strs = [repr(v) for v in vals.tolist()] + [f"{v:.7e}" for v in vals.tolist()]
    strs += [f"{v:.25e}" for v in vals.tolist()[:500]]
    strs += ["9007199254740993", "2.2250738585072011e-308", "4.9e-324", "1e-400",
             "0.1000000000000000055511151231257827", "-0", "-0.0e5", "1e22", "1e23",
             "123456789012345678901234567890", "0.000000000000000000000000000001"]
    text = "".join(f"{s} 1:{s}\n" for s in strs).encode()
    X, y = pgs_load(text)
    ref = np.array([float(s) for s in strs])
    assert y.tobytes() == ref.tobytes()
    np.testing.assert_array_equal(X.indptr, np.arange(len(strs) + 1))
    assert X.data.tobytes() == ref.tobytes()


def test_locale_does_not_change_parsing():
    import locale

    old = locale.setlocale(locale.LC_NUMERIC)
    try:
        for name in ("de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "de_DE"):
            try:
                locale.setlocale(locale.LC_NUMERIC, name)
                break
            except locale.Error:
                continue
        if locale.localeconv()["decimal_point"] != ",":
            pytest.skip("no comma-decimal locale installed")
        # 23 significant digits: the strtod path, which follows LC_NUMERIC unless pinned
        text = b"1 1:0.12345678901234567890123 2:1.5\n"
        X, _ = pgs_load(text)
        assert X.data.tolist() == [float("0.12345678901234567890123"), 1.5]
    finally:
        locale.setlocale(locale.LC_NUMERIC, old)


def test_dump_multilabel_and_qid_round_trip(tmp_path):
    X = sp.csr_matrix(np.array([[0.0, 1.5, -0.0], [2.0, 0.0, 1e-310]]))
    buf = io.BytesIO()
    pgs.dump_svmlight(X, [(1, 3), ()], buf, query_id=[5, 6])
    X2, y2, q2 = pgs.load_svmlight(io.BytesIO(buf.getvalue()), multilabel=True,
                                   query_id=True, zero_based=True, n_features=3)
    assert y2 == [(1.0, 3.0), ()]
    assert q2.tolist() == [5, 6]
    assert X2.data.tobytes() == X.data.tobytes()
    with pytest.raises(ValueError, match="inf or nan"):
        pgs.dump_svmlight(np.array([[np.inf]]), [1.0], io.BytesIO())


# ----------------------------------------------------------------- malformed input

MALFORMED = [
    (b"1 1:2\n2 3:x\n", 2, "invalid feature value"),
    (b"1 1:inf\n", 1, "not a finite number"),
    (b"1 1:nan\n", 1, "not a finite number"),
    (b"1 1:1e999\n", 1, "not a finite number"),
    (b"\n\ninf 1:2\n", 3, "not a finite number"),
    (b"NaN 1:2\n", 1, "not a finite number"),
    (b"abc 1:2\n", 1, "invalid target"),
    (b"1:2 3:4\n", 1, "invalid target"),
    (b"1 1:2 3\n", 1, "expected index:value"),
    (b"1 a:2\n", 1, "invalid feature index"),
    (b"1 -1:2\n", 1, "invalid feature index"),
    (b"1 :2\n", 1, "invalid feature index"),
    (b"1 99999999999999999999:2\n", 1, "is too large"),
    (b"1 1:\n", 1, "invalid feature value"),
    (b"1 1:2:3\n", 1, "invalid feature value"),
    (b"1 1:1_0\n", 1, "invalid feature value"),
    (b"1 1:0x10\n", 1, "invalid feature value"),
    (b"1 3:1 3:2\n", 1, "duplicate feature index 3"),
    (b"# c\r\n1 5:1 2:1 5:3\r\n", 2, "duplicate feature index 5"),
    (b"1 qid:x 1:2\n", 1, "invalid query id"),
    (b"1 1:2 qid:3\n", 1, "invalid feature index"),
    (b"1 1:\x002\n", 1, "invalid feature value"),
]


@pytest.mark.parametrize("text,line,what", MALFORMED)
def test_malformed_lines(tmp_path, text, line, what):
    path = tmp_path / "bad.svm"
    path.write_bytes(text)
    with pytest.raises(ValueError) as err:
        pgs.load_svmlight(path)
    msg = str(err.value)
    # the column (in bytes) of the offending token, when the error is about one
    assert re.match(rf"{re.escape(str(path))}, line {line}(, column \d+)?: ", msg), msg
    assert what in msg
    assert "the line reads" in msg


def test_zero_index_with_zero_based_false():
    with pytest.raises(ValueError, match=r"line 2, column 3: feature index 0 .*zero_based=False"):
        pgs_load(b"1 1:1\n1 0:1\n", zero_based=False)


def test_missing_qid_with_query_id():
    with pytest.raises(ValueError, match="line 2: no qid"):
        pgs_load(b"1 qid:1 1:1\n1 1:1\n", query_id=True)


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="binary mode"):
        pgs.load_svmlight(io.StringIO("1 1:1\n"))
    with pytest.raises(TypeError, match="dtype"):
        pgs_load(b"1 1:1\n", dtype=np.int32)
    with pytest.raises(ValueError, match="zero_based"):
        pgs_load(b"1 1:1\n", zero_based="yes")
    with pytest.raises(ValueError, match="n_features"):
        pgs_load(b"1 1:1\n", n_features=0)
    with pytest.raises(FileNotFoundError):
        pgs.load_svmlight(tmp_path / "missing.svm")


# ----------------------------------------------------------------- fuzzing

_digits = st.text(alphabet="0123456789", max_size=24)
_number = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.integers(-10**6, 10**6).map(str),
    st.builds(lambda s, a, b, e: s + a + b + e,
              st.sampled_from(["", "+", "-"]), _digits,
              st.one_of(st.just(""), _digits.map(lambda d: "." + d)),
              st.one_of(st.just(""), st.builds(lambda c, s, d: c + s + d,
                                               st.sampled_from("eE"),
                                               st.sampled_from(["", "+", "-"]),
                                               _digits))),
    st.sampled_from(["inf", "nan", "-Infinity", "1_0", "", ".", "e5", "0x10", "+", "1e",
                     "1.5e-320", "1e308", "1e309", "-0", "00.5"]),
)
_index = st.one_of(st.integers(0, 40).map(str),
                   st.sampled_from(["-1", "+2", "a", "", "007", "99999999999", "0"]))
_feature = st.one_of(
    st.builds(lambda i, v: f"{i}:{v}", _index, _number),
    st.sampled_from(["qid:3", "qid:-2", "qid:x", "junk", "1:2:3", ":", "qidx:1"]),
)
_sep = st.sampled_from([" ", "\t", "  ", " \t ", "\x0b", "\x0c"])


@st.composite
def _lines(draw):
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(st.text(alphabet=" \t#:,.+-019eEaqid\r\x00", max_size=20)))
            continue
        target = draw(_number)
        if draw(st.booleans()):
            target = ",".join([target] + draw(st.lists(_number, max_size=2)))
        feats = draw(st.lists(_feature, max_size=6))
        if draw(st.booleans()):
            feats = sorted(set(feats), key=lambda f: (len(f), f))
        parts = [target] + feats
        text = "".join(p + draw(_sep) for p in parts[:-1]) + parts[-1]
        if draw(st.booleans()):
            text += " # " + draw(st.text(alphabet="ab:1 #", max_size=5))
        lines.append(text + draw(st.sampled_from(["", "\r"])))
    return ("\n".join(lines) + draw(st.sampled_from(["", "\n"]))).encode("utf-8")


def _try(fn, *a, **kw):
    try:
        return fn(*a, **kw), None
    except ValueError as exc:
        return None, exc


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=_lines(), zero_based=st.sampled_from(["auto", True, False]),
       multilabel=st.booleans(), query_id=st.booleans())
def test_fuzz_against_sklearn(text, zero_based, multilabel, query_id):
    kw = dict(zero_based=zero_based, multilabel=multilabel, query_id=query_id)
    ours, err = _try(pgs_load, text, **kw)  # anything but ValueError fails the test
    if err is not None:
        assert re.match(r"<file object>, line \d+(, column \d+)?: |n_features was set",
                        str(err)), err
    try:
        ref = sk_load(text, **kw)
    except Exception:  # scikit-learn rejects it (any error type): nothing to compare
        return
    if ours is None:
        return
    if query_id and len(ref[2]) != ref[0].shape[0]:
        return  # scikit-learn silently misaligns qid when some lines lack one
    assert_same(ours, ref)


@pytest.mark.parametrize("ext", [".gz", ".bz2", ".xz"])
def test_damaged_compressed_files_raise_value_error(tmp_path, ext):
    """A truncated or corrupted compressed file is bad input: a ValueError naming the
    file, not EOFError, zlib.error, lzma.LZMAError or OSError."""
    rng = np.random.default_rng(0)
    X = sp.random(400, 30, density=0.3, random_state=1, format="csr")
    y = np.where(rng.random(400) < 0.5, -1.0, 1.0)
    good = tmp_path / f"good.svm{ext}"
    pgs.dump_svmlight(X, y, good)
    raw = good.read_bytes()
    truncated = tmp_path / f"truncated.svm{ext}"
    truncated.write_bytes(raw[: len(raw) // 2])
    corrupt = tmp_path / f"corrupt.svm{ext}"
    mid = len(raw) // 2
    corrupt.write_bytes(raw[:mid] + bytes(b ^ 0xFF for b in raw[mid:mid + 64]) + raw[mid + 64:])
    for bad in (truncated, corrupt):
        with pytest.raises(ValueError, match=bad.name):
            pgs.load_svmlight(bad)
    np.testing.assert_array_equal(pgs.load_svmlight(good)[1], y)
