"""The on-disk model format: a portable, pickle-free ``.npz``.

Layout (format version 1), every member a plain numpy array readable with
``numpy.load(path, allow_pickle=False)``:

``header``
    0-d unicode array holding a JSON object: ``format`` ("pgs-model"),
    ``format_version`` (int), ``pgs_version``, ``intercept``, ``iteration``,
    ``T``, ``n_features``, ``classes_kind`` ("none", "number", "string" or
    "bytes"), ``params`` (every training argument, from ``Model.params``) and
    ``params_not_stored`` (names of arguments that have no JSON form, such as a
    callback; they are restored as None).
``coef``
    float64 array of shape (n_features,).
``classes``
    Only for classifiers: the two original labels, as a numeric, unicode or
    bytes array (never an object array).

A reader refuses files whose ``format_version`` is newer than it knows.
"""

import json
import math
import os
import zipfile

import numpy as np

FORMAT_NAME = "pgs-model"
FORMAT_VERSION = 1


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
    model : pgs.Model
    path : str or path-like or binary file object
        Written as given (no ``.npz`` suffix is added).
    """
    from pgs import __version__

    params, not_stored = {}, []
    for key, value in model.params.items():
        try:
            params[key] = _json_value(value)
        except TypeError:
            params[key] = None
            not_stored.append(key)
    arrays = {"coef": np.ascontiguousarray(model.coef, dtype=np.float64)}
    kind = "none"
    if model.classes is not None:
        arrays["classes"], kind = _classes_array(model.classes)
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "pgs_version": __version__,
        "intercept": _json_value(model.intercept),
        "iteration": int(model.iteration),
        "T": int(model.T),
        "n_features": int(model.coef.shape[0]),
        "classes_kind": kind,
        "params": params,
        "params_not_stored": not_stored,
    }
    arrays["header"] = np.array(json.dumps(header, sort_keys=True))
    if hasattr(path, "write"):
        np.savez(path, **arrays)
        return
    with open(os.fspath(path), "wb") as fh:
        np.savez(fh, **arrays)


def load_model(path):
    """Read a model written by `pgs.Model.save`.

    Parameters
    ----------
    path : str or path-like or binary file object

    Returns
    -------
    pgs.Model

    Raises
    ------
    ValueError
        When the file is not a pgs model, is damaged, or was written in a newer
        format version than this pgs reads.
    """
    from pgs import __version__
    from pgs._model import Model

    name = path if not hasattr(path, "read") else getattr(path, "name", "<file object>")
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as exc:  # not an npz (numpy then refuses to unpickle)
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
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
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
    params = {k: _from_json_value(v) for k, v in header["params"].items()}
    if coef.ndim != 1 or coef.shape[0] != header["n_features"]:
        raise ValueError(f"{name} is damaged: coef has shape {coef.shape}, the header says "
                         f"{header['n_features']} features")
    return Model(coef=coef, intercept=_from_json_value(header["intercept"]),
                 iteration=header["iteration"], T=header["T"], classes=classes,
                 params=params)
