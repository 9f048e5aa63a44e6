"""The on-disk model format: a portable, pickle-free ``.npz``.

Layout (format version 2), every member a plain numpy array readable with
``numpy.load(path, allow_pickle=False)``:

``header``
    0-d unicode array holding a JSON object: ``format`` ("pgs-model"),
    ``format_version`` (int), ``kind`` (the class of model: "pgs" for `pgs.Model`,
    "csgd" for `train_csgd`'s model, "cadaline" for `train_cadaline`'s),
    ``pgs_version``, ``intercept`` (a number, or one number per output when
    ``coef`` is 2-D), ``iteration``, ``T``, ``n_features``, ``classes_kind``
    ("none", "number", "string" or "bytes"), ``params`` (every training argument,
    from the model's ``params``), ``params_not_stored`` (names of arguments that
    have no JSON form, such as a callback; they are restored as None) and
    ``attributes`` (what the kind keeps beyond these, e.g. ``eta0_``).
``coef``
    float64 array of shape (n_features,), or (n_outputs, n_features) for C-Adaline.
``classes``
    Only for classifiers: the original labels, as a numeric, unicode or bytes
    array (never an object array).

``format_version`` is the oldest version whose readers load the file right: a
`pgs.Model` is written as version 1 (a version-1 reader ignores ``kind`` and
``attributes``), the other kinds as version 2, so that an older pgs refuses them
instead of loading them as a `pgs.Model`. A reader refuses files whose
``format_version`` is newer than it knows; a file without ``kind`` (written before
version 2) is a `pgs.Model`.

This module knows the format, not the model classes: each class registers its kind
here (`register_kind`, done by `pgs._model_base.LinearModel` for its subclasses), so
the models import this module and never the other way round.
"""

import json
import math
import os
import tempfile
import zipfile

import numpy as np

FORMAT_NAME = "pgs-model"
#: The newest format version this pgs reads and writes.
FORMAT_VERSION = 2
#: The kind of a file without a ``kind`` field (format version 1).
LEGACY_KIND = "pgs"
#: The format version each kind needs; kinds not listed need `FORMAT_VERSION`.
_KIND_VERSIONS = {"pgs": 1}

#: kind -> model class, filled by `register_kind` when the model modules are imported.
MODEL_KINDS = {}


def register_kind(kind, cls):
    """Make `load_model` return instances of `cls` for files of kind `kind`.

    Parameters
    ----------
    kind : str
        The name written in the file header.
    cls : type
        A subclass of `pgs._model_base.LinearModel` (it provides ``_from_saved``).
    """
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"kind must be a non-empty str, got kind={kind!r}")
    other = MODEL_KINDS.get(kind)
    # The same class registering again (a reloaded module) is not a clash.
    if other is not None and _class_name(other) != _class_name(cls):
        raise ValueError(f"kind={kind!r} is already registered for {_class_name(other)}")
    MODEL_KINDS[kind] = cls


def _class_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def _json_value(v):
    """`v` as a JSON-compatible value, or raise TypeError."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not math.isfinite(v):
            return {"float": repr(v)}  # JSON has no inf/nan
        return v
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    raise TypeError(type(v).__name__)


def _from_json_value(v):
    if isinstance(v, dict) and set(v) == {"float"}:
        return float(v["float"])
    if isinstance(v, list):
        return [_from_json_value(x) for x in v]
    return v


def _classes_array(classes):
    arr = np.asarray(classes)
    if arr.dtype.kind in "biuf":
        return arr, "number"
    if arr.dtype.kind == "U":
        return arr, "string"
    if arr.dtype.kind == "S":
        return arr, "bytes"
    if arr.dtype.kind == "O":
        items = list(arr.tolist())
        if all(isinstance(c, str) for c in items):
            return np.array(items, dtype=str), "string"
        if all(isinstance(c, bytes) for c in items):
            return np.array(items, dtype=bytes), "bytes"
        if all(isinstance(c, (int, float, np.number)) and not isinstance(c, bool)
               for c in items):
            return np.array(items), "number"
    raise TypeError(f"cannot save classes of dtype {arr.dtype} without pickle: "
                    f"{classes!r} (use numbers or strings)")


def save_model(model, path):
    """Write `model` to `path` in the format described in this module's docstring.

    Parameters
    ----------
    model : pgs.Model or another pgs model (a registered kind)
    path : str or path-like or binary file object
        Written as given (no ``.npz`` suffix is added).
    """
    from pgs import __version__

    kind = getattr(model, "_kind", None)
    if kind not in MODEL_KINDS:
        raise TypeError(f"model must be a pgs model of a registered kind, got "
                        f"{type(model).__name__} (kind {kind!r})")
    params, not_stored = {}, []
    for key, value in model.params.items():
        try:
            params[key] = _json_value(value)
        except TypeError:
            params[key] = None
            not_stored.append(key)
    coef = np.ascontiguousarray(model.coef, dtype=np.float64)
    arrays = {"coef": coef}
    classes_kind = "none"
    if model.classes is not None:
        arrays["classes"], classes_kind = _classes_array(model.classes)
    intercept = model.intercept if coef.ndim == 1 else np.asarray(model.intercept).tolist()
    header = {
        "format": FORMAT_NAME,
        "format_version": _KIND_VERSIONS.get(kind, FORMAT_VERSION),
        "kind": kind,
        "pgs_version": __version__,
        "intercept": _json_value(intercept),
        "iteration": int(model.iteration),
        "T": int(model.T),
        "n_features": int(coef.shape[-1]),
        "classes_kind": classes_kind,
        "params": params,
        "params_not_stored": not_stored,
        "attributes": {k: _json_value(v) for k, v in model._saved_attributes().items()},
    }
    arrays["header"] = np.array(json.dumps(header, sort_keys=True))
    if hasattr(path, "write"):
        np.savez(path, **arrays)
        return
    # Atomic: a temporary file in the same directory, flushed to disk, then renamed over
    # `path`, so that an interrupted or failed save never leaves a truncated model nor
    # destroys the one already there.
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".pgs-model-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load_model(path):
    """Read a model written by `pgs.Model.save` (or another pgs model's ``save``).

    Parameters
    ----------
    path : str or path-like or binary file object

    Returns
    -------
    pgs.Model, CSGDModel or CAdalineModel
        The class that was saved; `pgs.Model` for files without a ``kind``.

    Raises
    ------
    ValueError
        When the file is not a pgs model, is damaged, holds a kind of model this
        pgs does not know, or was written in a newer format version than this pgs
        reads.
    """
    from pgs import __version__

    name = path if not hasattr(path, "read") else getattr(path, "name", "<file object>")
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile, NotImplementedError) as exc:
        # (not an npz, numpy then refusing to unpickle; or a damaged zip directory)
        raise ValueError(f"{name} is not a pgs model file ({exc})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{name} is not a pgs model file (a single .npy array)")
    try:
        with z:
            files = set(z.files)
            if "header" not in files or "coef" not in files:
                raise ValueError(f"{name} is not a pgs model file (no header/coef arrays)")
            header = json.loads(str(z["header"][()]))
            coef = np.array(z["coef"], dtype=np.float64)
            classes = np.array(z["classes"]) if "classes" in files else None
    except (OSError, EOFError, zipfile.BadZipFile, NotImplementedError) as exc:
        raise ValueError(f"{name} is not a readable pgs model file: {exc}") from None
    except (json.JSONDecodeError, KeyError, ValueError) as exc:
        if str(exc).startswith(f"{name} is not"):
            raise
        raise ValueError(f"{name} is not a pgs model file ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ValueError(f"{name} is not a pgs model file (format {header.get('format')!r})"
                         if isinstance(header, dict) else f"{name} is not a pgs model file")
    version = header.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(
            f"{name} uses model format version {version} (written by pgs "
            f"{header.get('pgs_version')}), but this pgs {__version__} reads versions up to "
            f"{FORMAT_VERSION}; upgrade pgs to load it")
    kind = header.get("kind", LEGACY_KIND)
    cls = MODEL_KINDS.get(kind)
    if cls is None:
        raise ValueError(f"{name} holds a model of kind {kind!r}, which this pgs "
                         f"{__version__} does not know (it knows {', '.join(MODEL_KINDS)})")
    try:
        return _build(cls, header, coef, classes, name)
    except (KeyError, TypeError, ValueError) as exc:
        if str(exc).startswith(f"{name} is damaged"):
            raise
        raise ValueError(f"{name} is damaged: {type(exc).__name__}: {exc}") from None


def _build(cls, header, coef, classes, name):
    """The model of class `cls` from a file's header and arrays, after checking shapes."""
    if coef.ndim != cls._coef_ndim or coef.shape[-1] != header["n_features"]:
        raise ValueError(f"{name} is damaged: coef has shape {coef.shape}, the header says "
                         f"{header['n_features']} features and the kind "
                         f"{cls._coef_ndim}-D weights")
    intercept = _from_json_value(header["intercept"])
    if coef.ndim == 2:
        intercept = np.array(intercept, dtype=np.float64)
        if intercept.shape != coef.shape[:1]:
            raise ValueError(f"{name} is damaged: intercept has shape {intercept.shape}, "
                             f"coef {coef.shape}")
    params = {k: _from_json_value(v) for k, v in header["params"].items()}
    attributes = {k: _from_json_value(v) for k, v in header.get("attributes", {}).items()}
    return cls._from_saved(coef=coef, intercept=intercept, iteration=header["iteration"],
                           T=header["T"], classes=classes, params=params,
                           attributes=attributes)
