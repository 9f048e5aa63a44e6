"""Model.save / pgs.load_model: a portable, pickle-free format; models also pickle."""

import io
import json
import os
import pickle
import re
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
from pgs.models import file_format


def small_problem(seed=0, m=200, n=30):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.3, format="csr", random_state=seed)
    w = rng.standard_normal(n)
    return X, X @ w + 0.1 * rng.standard_normal(m)


def assert_same_model(a, b, X):
    assert a.coef.tobytes() == b.coef.tobytes()
    assert a.intercept == b.intercept
    assert a.iteration == b.iteration and a.T == b.T
    assert a.params == b.params
    if a.classes is None:
        assert b.classes is None
    else:
        np.testing.assert_array_equal(a.classes, b.classes)
        assert a.classes.dtype == b.classes.dtype
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("labels", [(-1.0, 1.0), (1, 2), ("spam", "ham"), (b"no", b"yes")])
def test_classifier_round_trip(tmp_path, labels):
    X, z = small_problem()
    y = np.where(z > 0, labels[1], labels[0])
    model = pgs.train(X, y, loss="logistic", p=1.8, sigma=1e-3, seed=3, k=4)
    path = tmp_path / "model.pgs"  # kept as given: no ".npz" appended
    model.save(path)
    assert path.exists()
    loaded = pgs.load_model(path)
    assert_same_model(model, loaded, X)
    # plain numpy reads every member without pickle
    with np.load(path, allow_pickle=False) as z:
        assert set(z.files) == {"header", "coef", "classes"}
        header = json.loads(str(z["header"][()]))
    # a pgs.Model needs nothing a version-1 reader lacks, so older pgs still reads it
    assert header["format"] == "pgs-model" and header["format_version"] == 1
    assert header["kind"] == "pgs"
    assert header["pgs_version"] == pgs.__version__
    assert header["params"]["loss"] == "logistic" and header["params"]["seed"] == 3


def test_regressor_round_trip_file_object():
    X, y = small_problem(1)
    model = pgs.train(X, y, loss="squared", sigma=1e-3, seed=1, iterate="average")
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    loaded = pgs.load_model(buf)
    assert_same_model(model, loaded, X)
    assert loaded.params["B"] == model.params["B"] and loaded.params["B"] is not None


def test_non_json_params_are_listed(tmp_path):
    X, y = small_problem(2)
    model = pgs.train(X, np.sign(y), seed=0)
    model.params["callback"] = print  # what a future argument without JSON form looks like
    model.params["scale"] = float("inf")
    model.save(tmp_path / "m.npz")
    loaded = pgs.load_model(tmp_path / "m.npz")
    assert loaded.params["callback"] is None
    assert loaded.params["scale"] == float("inf")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        assert json.loads(str(z["header"][()]))["params_not_stored"] == ["callback"]


def _rewrite_header(src, dst, change):
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(str(arrays["header"][()]))
    change(header)
    arrays["header"] = np.array(json.dumps(header))
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)


def test_newer_format_version_is_refused(tmp_path):
    X, y = small_problem(3)
    pgs.train(X, np.sign(y), seed=0).save(tmp_path / "m.npz")
    _rewrite_header(tmp_path / "m.npz", tmp_path / "new.npz",
                    lambda h: h.update(format_version=file_format.FORMAT_VERSION + 1))
    newer = file_format.FORMAT_VERSION + 1
    with pytest.raises(ValueError, match=rf"format version {newer} .* upgrade pgs"):
        pgs.load_model(tmp_path / "new.npz")


def test_not_a_model(tmp_path):
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not a pgs model"):
        pgs.load_model(tmp_path / "other.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="not a"):
        pgs.load_model(tmp_path / "text.npz")
    with zipfile.ZipFile(tmp_path / "obj.npz", "w") as zf:  # an object array needs pickle
        with zf.open("header.npy", "w") as fh:
            np.lib.format.write_array(fh, np.array([{"a": 1}], dtype=object),
                                      allow_pickle=True)
        with zf.open("coef.npy", "w") as fh:
            np.lib.format.write_array(fh, np.zeros(3))
    with pytest.raises(ValueError):
        pgs.load_model(tmp_path / "obj.npz")


def test_object_classes_are_stored_without_pickle(tmp_path):
    X, z = small_problem(4)
    y = np.array(["b" if v > 0 else "a" for v in z], dtype=object)
    model = pgs.train(X, y, seed=0)
    model.save(tmp_path / "m.npz")
    loaded = pgs.load_model(tmp_path / "m.npz")
    assert loaded.classes.dtype.kind == "U"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_model_pickles():
    X, y = small_problem(5)
    model = pgs.train(X, np.sign(y), loss="hinge", seed=7)
    clone = pickle.loads(pickle.dumps(model))
    assert_same_model(model, clone, X)


def _fit_kind(kind):
    """A small model of each kind `pgs.load_model` must give back (X, y, model)."""
    X, y = small_problem(6)
    if kind == "train":
        return X, np.sign(y), pgs.train(X, np.sign(y), loss="logistic", seed=0)
    if kind == "train_csgd":
        return X, y, pgs.train_csgd(X, y, T=2000, seed=0)
    labels = np.array(["low", "mid", "high"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    return X, labels, pgs.train_cadaline(X, labels, T=2000, seed=0)


@pytest.mark.parametrize("kind", ["train", "train_csgd", "train_cadaline"])
def test_every_model_kind_round_trips(tmp_path, kind):
    X, y, model = _fit_kind(kind)
    model.save(tmp_path / "m.npz")
    loaded = pgs.load_model(tmp_path / "m.npz")
    assert type(loaded) is type(model)
    assert repr(loaded) == repr(model)
    assert loaded.coef.tobytes() == model.coef.tobytes()
    assert np.array_equal(loaded.intercept, model.intercept)
    assert loaded.iteration == model.iteration and loaded.T == model.T
    assert loaded.params == model.params
    assert getattr(loaded, "eta0_", None) == getattr(model, "eta0_", None)
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.objective(X, y) == model.objective(X, y)


@pytest.mark.parametrize("kind", ["train_csgd", "train_cadaline"])
def test_other_kinds_need_format_version_2(tmp_path, kind):
    """A version-1 reader would load them as a pgs.Model; version 2 makes it refuse."""
    _, _, model = _fit_kind(kind)
    model.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        header = json.loads(str(z["header"][()]))
    assert header["format_version"] == 2
    assert header["kind"] == {"train_csgd": "csgd", "train_cadaline": "cadaline"}[kind]
    assert header["attributes"] == {"eta0_": model.eta0_}


def test_unknown_kind_and_damaged_fields(tmp_path):
    X, y = small_problem(8)
    pgs.train_csgd(X, y, T=500, seed=0).save(tmp_path / "m.npz")
    _rewrite_header(tmp_path / "m.npz", tmp_path / "unknown.npz",
                    lambda h: h.update(kind="quantum"))
    with pytest.raises(ValueError, match="kind 'quantum'"):
        pgs.load_model(tmp_path / "unknown.npz")
    _rewrite_header(tmp_path / "m.npz", tmp_path / "noeta.npz",
                    lambda h: h.update(attributes={}))
    with pytest.raises(ValueError, match="damaged.*eta0_"):
        pgs.load_model(tmp_path / "noeta.npz")
    # a 1-D coef cannot be a C-Adaline model
    _rewrite_header(tmp_path / "m.npz", tmp_path / "ndim.npz",
                    lambda h: h.update(kind="cadaline"))
    with pytest.raises(ValueError, match="damaged: header field 'intercept' must be a list"):
        pgs.load_model(tmp_path / "ndim.npz")


def test_saving_needs_a_registered_kind(tmp_path):
    from pgs.models.base import LinearModel

    bare = LinearModel(coef=np.zeros(3), intercept=0.0, iteration=1, T=1, classes=None,
                       params={})
    with pytest.raises(TypeError, match="model must be a pgs model"):
        bare.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_save_is_atomic(tmp_path, monkeypatch):
    """A save that fails half-way leaves the model already at `path` intact and no
    temporary file behind; a save that succeeds replaces it."""
    X = sp.random(40, 5, density=0.5, random_state=0, format="csr")
    y = np.where(np.arange(40) % 2 == 0, -1.0, 1.0)
    old = pgs.train(X, y, T=50, seed=0)
    new = pgs.train(X, y, T=80, seed=1)
    path = tmp_path / "model.npz"
    old.save(path)
    before = path.read_bytes()

    def broken_savez(fh, **arrays):
        fh.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(file_format.np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        new.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]
    new.save(path)
    np.testing.assert_array_equal(pgs.load_model(path).coef, new.coef)


def test_damaged_model_files_raise_value_error():
    """Truncated and bit-flipped model files: a ValueError naming the file, or a model
    that works (a flip inside a coefficient), never BadZipFile, NotImplementedError,
    KeyError or the like."""
    import random

    X = sp.random(40, 6, density=0.5, random_state=0, format="csr")
    y = np.where(np.arange(40) % 2 == 0, "a", "b")
    buf = io.BytesIO()
    pgs.train(X, y, T=50, seed=0).save(buf)
    raw = buf.getvalue()
    rng = random.Random(0)
    for case in range(600):
        damaged = bytearray(raw)
        if case % 2:
            damaged = damaged[: rng.randrange(len(damaged))]
        else:
            for _ in range(rng.randrange(1, 4)):
                damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        f = io.BytesIO(bytes(damaged))
        f.name = "damaged.npz"
        try:
            model = pgs.load_model(f)
        except ValueError as exc:
            assert "damaged.npz" in str(exc)
            continue
        model.predict(X)
        repr(model)


def _rewrite_members(src, dst, **changes):
    """Copy a model file, replacing (array) or dropping (None) members."""
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    with open(dst, "wb") as fh:
        np.savez(fh, **{k: v for k, v in arrays.items() if v is not None})


def _header_of(path):
    with np.load(path, allow_pickle=False) as z:
        return json.loads(str(z["header"][()]))


def _edits(kind):
    """(label, change to the header or None, member changes) a hand-edited file can
    hold; every one makes the file inconsistent."""
    yield "2-D classes", None, dict(classes=np.array([["a", "b"]]))
    yield "classes of the wrong dtype", None, dict(classes=np.array([0.5, 1.5]))
    yield "classes not sorted", None, dict(classes=np.array(["b", "a"]))
    yield "three classes", None, dict(classes=np.array(["a", "b", "c"]))
    yield "no classes", None, dict(classes=None)
    yield "float32 coef", None, dict(coef=np.zeros(6, dtype=np.float32))
    yield "int coef", None, dict(coef=np.zeros(6, dtype=np.int64))
    yield "2-D coef", None, dict(coef=np.zeros((1, 6)))
    yield "short coef", None, dict(coef=np.zeros(5))
    yield "NaN coef", None, dict(coef=np.full(6, np.nan))
    yield "string coef", None, dict(coef=np.array(["x"] * 6))
    yield "header not a string", None, dict(header=np.arange(3))
    yield "header not JSON", None, dict(header=np.array("{nope"))
    yield "header a JSON list", None, dict(header=np.array("[1, 2]"))
    for key in ("n_features", "iteration", "T", "intercept", "classes_kind", "params"):
        yield f"no {key}", lambda h, key=key: h.pop(key), {}
        yield f"{key} a string", lambda h, key=key: h.update({key: "x"}), {}
    yield "n_features 0", lambda h: h.update(n_features=0), {}
    yield "n_features 7", lambda h: h.update(n_features=7), {}
    yield "n_features huge", lambda h: h.update(n_features=2**70), {}
    yield "iteration > T", lambda h: h.update(iteration=h["T"] + 1), {}
    yield "T a bool", lambda h: h.update(T=True), {}
    yield "intercept NaN", lambda h: h.update(intercept={"float": "nan"}), {}
    yield "intercept bad float", lambda h: h.update(intercept={"float": [1]}), {}
    yield "intercept a list", lambda h: h.update(intercept=[1.0, 2.0]), {}
    yield "intercept 10**400", lambda h: h.update(intercept=10**400), {}
    yield "classes_kind none", lambda h: h.update(classes_kind="none"), {}
    yield "classes_kind bytes", lambda h: h.update(classes_kind="bytes"), {}
    yield "params a list", lambda h: h.update(params=[1]), {}
    yield "attributes a list", lambda h: h.update(attributes=[1]), {}
    yield "kind a list", lambda h: h.update(kind=[1]), {}
    yield "format_version 0", lambda h: h.update(format_version=0), {}
    yield "format_version a string", lambda h: h.update(format_version="1"), {}
    for key in ("loss", "p", "sigma", "fit_intercept", "intercept_scaling", "epsilon"):
        yield f"params without {key}", lambda h, key=key: h["params"].pop(key), {}
        yield f"params.{key} a list", lambda h, key=key: h["params"].update({key: [1]}), {}
    yield "regression loss", lambda h: h["params"].update(loss="squared"), {}
    yield "unknown loss", lambda h: h["params"].update(loss="nope"), {}
    yield "p = 3", lambda h: h["params"].update(p=3.0), {}


@pytest.mark.parametrize("label,change,members", list(_edits("pgs")),
                         ids=[e[0] for e in _edits("pgs")])
def test_hand_edited_files_raise_value_error_at_load(tmp_path, label, change, members):
    """Every inconsistent edit of a model file is a ValueError naming the file at
    load time (not a KeyError, TypeError or AttributeError, nor a model that fails in
    predict or repr)."""
    X = sp.random(40, 6, density=0.5, random_state=0, format="csr")
    y = np.where(np.arange(40) % 2 == 0, "a", "b")
    pgs.train(X, y, loss="logistic", T=50, seed=0).save(tmp_path / "m.npz")
    edited = tmp_path / "edited.npz"
    if change is not None:
        header = _header_of(tmp_path / "m.npz")
        change(header)
        members = dict(members, header=np.array(json.dumps(header)))
    _rewrite_members(tmp_path / "m.npz", edited, **members)
    with pytest.raises(ValueError, match=r"edited\.npz") as info:
        pgs.load_model(edited)
    assert type(info.value) is ValueError          # (no private subclass in tracebacks)


@pytest.mark.parametrize("kind", ["train_csgd", "train_cadaline"])
def test_hand_edited_csgd_files(tmp_path, kind):
    _, _, model = _fit_kind(kind)
    model.save(tmp_path / "m.npz")
    header = _header_of(tmp_path / "m.npz")
    edits = [dict(attributes={"eta0_": -1.0}), dict(attributes={"eta0_": "x"}),
             dict(params={**header["params"], "variant": "nope"}),
             dict(params={k: v for k, v in header["params"].items() if k != "variant"})]
    for i, edit in enumerate(edits):
        path = tmp_path / f"edit{i}.npz"
        _rewrite_members(tmp_path / "m.npz", path,
                         header=np.array(json.dumps({**header, **edit})))
        with pytest.raises(ValueError, match=rf"edit{i}\.npz is damaged"):
            pgs.load_model(path)
    n_out = 3 if kind == "train_cadaline" else None
    bad = (dict(classes=np.array(["high", "low"]))              # one class too few
           if n_out else dict(classes=np.array([1.0, 2.0])))    # CSGD has none
    _rewrite_members(tmp_path / "m.npz", tmp_path / "cls.npz", **bad)
    with pytest.raises(ValueError, match=r"cls\.npz is damaged"):
        pgs.load_model(tmp_path / "cls.npz")


@pytest.mark.parametrize("edit", [dict(l1=-0.5), dict(l1={"float": "nan"}), dict(l1="x"),
                                  dict(sigma=-1.0), dict(p=3.0), dict(loss="nope")],
                         ids=["l1<0", "l1 NaN", "l1 'x'", "sigma<0", "p=3", "loss"])
def test_hand_edited_one_vs_rest_files(tmp_path, edit):
    """A saved one-vs-rest classifier's training arguments are checked at load, as a
    pgs.Model's are (they loaded silently)."""
    from pgs import PGSClassifier
    from pgs.models.ovr import model_from_estimator

    X, y = small_problem(4)
    y3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    est = PGSClassifier(sigma=0.1, T=100, random_state=0).fit(X, y3)
    model_from_estimator(est).save(tmp_path / "m.npz")
    assert type(pgs.load_model(tmp_path / "m.npz")).__name__ == "OneVsRestModel"
    header = _header_of(tmp_path / "m.npz")
    header["params"].update(edit)
    _rewrite_members(tmp_path / "m.npz", tmp_path / "e.npz", header=np.array(json.dumps(header)))
    with pytest.raises(ValueError, match=rf"e\.npz is damaged.*{next(iter(edit))}"):
        pgs.load_model(tmp_path / "e.npz")
    _rewrite_members(tmp_path / "m.npz", tmp_path / "nc.npz", classes=None,
                     header=np.array(json.dumps({**_header_of(tmp_path / "m.npz"),
                                                 "classes_kind": "none"})))
    with pytest.raises(ValueError, match=r"nc\.npz is damaged.*needs classes"):
        pgs.load_model(tmp_path / "nc.npz")


@pytest.mark.parametrize("path", [True, 1, 2.5, None, ["m.npz"]])
def test_load_model_path_of_another_type_is_a_type_error(path):
    """A number is no path: open() took True or 1 as a file descriptor (stdout) and closed
    it."""
    with pytest.raises(TypeError, match=rf"path must be a path.*path={re.escape(repr(path))}"):
        pgs.load_model(path)
    os.fstat(1)                 # (stdout still open)


def test_missing_file_is_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        pgs.load_model(tmp_path / "absent.npz")
    with pytest.raises(IsADirectoryError):
        pgs.load_model(tmp_path)


def test_big_endian_and_fortran_arrays_load(tmp_path):
    """Valid npy variants a hand-written file may use still load, to the same model."""
    _, _, model = _fit_kind("train_cadaline")
    model.save(tmp_path / "m.npz")
    _rewrite_members(tmp_path / "m.npz", tmp_path / "be.npz",
                     coef=np.asfortranarray(model.coef.astype(">f8")))
    loaded = pgs.load_model(tmp_path / "be.npz")
    np.testing.assert_array_equal(loaded.coef, model.coef)
    assert loaded.coef.dtype == np.float64 and loaded.coef.dtype.isnative


def test_loading_a_large_model_needs_the_array_once(tmp_path):
    """A compressed model of 20M coefficients (160 MB as float64) loads with a peak of
    about one array's memory: each array is read once, straight into the array kept
    (numpy's own load then copy needed twice that)."""
    import tracemalloc

    n = 20_000_000
    model = pgs.Model(coef=np.zeros(n), intercept=0.5, iteration=1, T=1, classes=None,
                      params=dict(loss="squared", p=2.0, sigma=1e-4, epsilon=0.0,
                                  fit_intercept=True, intercept_scaling=1.0,
                                  intercept="column", schedule="pgs"))
    model.coef[::1000] = 1.5
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        header = z["header"]
    del model
    with open(tmp_path / "big.npz", "wb") as fh:
        coef = np.zeros(n)
        coef[::1000] = 1.5
        np.savez_compressed(fh, header=header, coef=coef)
        del coef
    tracemalloc.start()
    try:
        loaded = pgs.load_model(tmp_path / "big.npz")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loaded.coef.shape == (n,) and loaded.coef[1000] == 1.5
    print(f"peak {peak / 8 / n:.3f}x the array")
    assert peak <= 1.2 * 8 * n, f"peak {peak / 8 / n:.2f}x the array"


# ---------------------------------------------------------------- load_model fuzz

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


def _fuzz_bases():
    """Small models of each kind (pgs with string labels, regression, CSGD, C-Adaline)
    and their arrays; X to predict with."""
    X = sp.random(30, 4, density=0.6, random_state=0, format="csr")
    z = X @ np.arange(1.0, 5.0)
    models = [pgs.train(X, np.where(z > 1, "yes", "no"), loss="logistic", T=30, seed=0),
              pgs.train(X, z, loss="huber", T=30, seed=0),
              pgs.train_csgd(X, z, T=30, eta0=0.01, seed=0),
              pgs.train_cadaline(X, np.digitize(z, [1, 2]), T=30, eta0=0.01, seed=0)]
    bases = []
    for model in models:
        buf = io.BytesIO()
        model.save(buf)
        buf.seek(0)
        with np.load(buf, allow_pickle=False) as zf:
            bases.append({k: zf[k] for k in zf.files})
    return X, bases


_FUZZ_X, _FUZZ_BASES = _fuzz_bases()

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6)
    | st.sampled_from([{"float": "nan"}, {"float": "inf"}, {"float": "x"}]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                               max_size=3),
    max_leaves=6)

_ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.bool_, ">f8", "<U3",
                           "S2", np.complex128]),
    shape=hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))


def _write(arrays, compressed):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return bytearray(buf.getvalue())


def _check_outcome(raw):
    """load_model of `raw`: a ValueError naming the file, or a model that works."""
    f = io.BytesIO(bytes(raw))
    f.name = "fuzzed.npz"
    try:
        model = pgs.load_model(f)
    except ValueError as exc:
        assert "fuzzed.npz" in str(exc), repr(exc)
        return
    X = _FUZZ_X[:, :model.n_features] if model.n_features <= 4 else \
        sp.random(3, model.n_features, density=0.5, random_state=0, format="csr")
    labels = model.predict(X)
    model.decision_function(X)
    repr(model)
    model.objective(X, labels)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_model_files_load_or_name_the_file(data):
    """Edited headers and members (keys dropped, replaced by any JSON value, arrays of
    any dtype and shape, extra members), written plain or compressed, then truncated
    or bit-flipped: load_model gives a ValueError naming the file or a working model."""
    arrays = dict(data.draw(st.sampled_from(_FUZZ_BASES), label="base"))
    header = json.loads(str(arrays["header"][()]))
    for _ in range(data.draw(st.integers(0, 3), label="header edits")):
        where = header.get(data.draw(st.sampled_from(["", "params", "attributes"])))
        where = where if isinstance(where, dict) else header
        key = data.draw(st.sampled_from(sorted(where) + ["extra"]), label="key")
        if data.draw(st.booleans(), label="drop"):
            where.pop(key, None)
        else:
            where[key] = data.draw(_JSON, label="value")
    arrays["header"] = np.array(json.dumps(header))
    for _ in range(data.draw(st.integers(0, 2), label="member edits")):
        member = data.draw(st.sampled_from(["header", "coef", "classes", "extra"]))
        if data.draw(st.booleans(), label="drop"):
            arrays.pop(member, None)
        else:
            arrays[member] = data.draw(_ARRAYS, label="array")
    raw = _write(arrays, data.draw(st.booleans(), label="compressed"))
    damage = data.draw(st.sampled_from(["none", "truncate", "flip"]), label="damage")
    if damage == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1), label="length")]
    elif damage == "flip":
        for pos in data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=3)):
            raw[pos] ^= 1 << data.draw(st.integers(0, 7))
    _check_outcome(raw)
