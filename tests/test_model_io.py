"""Model.save / pgs.load_model: a portable, pickle-free format; models also pickle."""

import io
import json
import pickle
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import pgs
from pgs import _model_io


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
                    lambda h: h.update(format_version=_model_io.FORMAT_VERSION + 1))
    newer = _model_io.FORMAT_VERSION + 1
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


def test_file_without_kind_loads_as_model(tmp_path):
    """Files written before the kind field (format version 1) still load as pgs.Model."""
    X, y = small_problem(7)
    model = pgs.train(X, y, loss="squared", sigma=1e-3, seed=2)
    model.save(tmp_path / "m.npz")

    def version_1(header):
        del header["kind"], header["attributes"]
        header["format_version"] = 1

    _rewrite_header(tmp_path / "m.npz", tmp_path / "old.npz", version_1)
    loaded = pgs.load_model(tmp_path / "old.npz")
    assert type(loaded) is pgs.Model
    assert_same_model(model, loaded, X)
    assert repr(loaded) == repr(model)


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
    with pytest.raises(ValueError, match="damaged: coef has shape"):
        pgs.load_model(tmp_path / "ndim.npz")


def test_saving_needs_a_registered_kind(tmp_path):
    from pgs._model_base import LinearModel

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

    monkeypatch.setattr(_model_io.np, "savez", broken_savez)
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
