"""The on-disk model format: a portable, pickle-free ``.npz`` of plain numpy arrays,
readable with ``numpy.load(path, allow_pickle=False)`` (format version 2):

``header``
    0-d unicode array holding a JSON object: ``format`` ("pgs-model"), ``format_version``,
    ``kind`` ("pgs": `pgs.Model`; "multiclass": `pgs.MulticlassModel`; "csgd", "cadaline":
    `train_csgd`'s and `train_cadaline`'s models; "ovr": a saved estimator's),
    ``pgs_version``, ``intercept`` (a number, or one per output when ``coef`` is 2-D),
    ``iteration``, ``T``, ``n_features``, ``classes_kind`` ("none", "number", "string" or
    "bytes"), ``params`` (the training arguments; ``params_not_stored`` names those without
    a JSON form, restored as None) and ``attributes`` (what the kind keeps beyond these,
    e.g. ``eta0_``).
``coef``
    float64, shape (n_features,), or (n_outputs, n_features) for the kinds of several
    outputs ("cadaline", "multiclass", "ovr").
``classes``
    Classifiers only: the labels, as a numeric, unicode or bytes array.

``format_version`` is the oldest version whose readers load the file right: 1 for a
`pgs.Model` (version-1 readers ignore ``kind`` and ``attributes``), 2 for the other kinds.
Newer versions are refused. The models import this module and pgs/models/__init__.py fills
`MODEL_KINDS`, never the other way round.
"""

import json
import lzma
import math
import os
import zipfile
import zlib

import numpy as np

from pgs._version import __version__
from pgs.io import write_atomic
from pgs.rules.validation import is_int, is_real

FORMAT_NAME = "pgs-model"
#: The newest format version this pgs reads and writes.
FORMAT_VERSION = 2
#: The format version each kind needs; kinds not listed need `FORMAT_VERSION`.
_KIND_VERSIONS = {"pgs": 1}

#: kind -> model class (every kind: pgs/models/__init__.py fills it).
MODEL_KINDS = {}


def _json_value(v):
    """`v` as a JSON-compatible value, or raise TypeError."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}  # (JSON has no inf/nan)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    raise TypeError(type(v).__name__)


def _saved_float(obj):
    """`_json_value`'s stand-in for inf or nan, read back as the float (json.loads' hook)."""
    if set(obj) == {"float"} and obj["float"] in ("inf", "-inf", "nan"):
        return float(obj["float"])
    return obj


def _classes_array(classes):
    """`classes` as a numeric, unicode or bytes array, and its ``classes_kind``."""
    arr = np.asarray(classes)
    if arr.dtype.kind == "O":       # (Python labels: numpy finds their common dtype)
        arr = np.array(arr.tolist())
    for kind, dtype_kinds in _CLASSES_DTYPE_KINDS.items():
        if arr.dtype.kind in dtype_kinds:
            return arr, kind
    raise TypeError(f"cannot save classes of dtype {arr.dtype} without pickle: "
                    f"{classes!r} (use numbers or strings)")


def save_model(model, path):
    """Write `model` (of a registered kind) to `path`, as given (no ``.npz`` suffix added),
    in the format described in this module's docstring."""
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
    header = {
        "format": FORMAT_NAME, "format_version": _KIND_VERSIONS.get(kind, FORMAT_VERSION),
        "kind": kind, "pgs_version": __version__,
        "intercept": _json_value(np.asarray(model.intercept).tolist()),
        "iteration": int(model.iteration), "T": int(model.T), "n_features": int(coef.shape[-1]),
        "classes_kind": classes_kind, "params": params, "params_not_stored": not_stored,
        "attributes": {k: _json_value(getattr(model, k)) for k in model._saved_attributes},
    }
    arrays["header"] = np.array(json.dumps(header, sort_keys=True))
    if hasattr(path, "write"):
        np.savez(path, **arrays)
        return
    # Atomic: an interrupted or failed save never leaves a truncated model nor destroys
    # the one already there.
    write_atomic(os.fspath(path), lambda fh: np.savez(fh, **arrays))


def load_model(path):
    """Read a model written by `pgs.Model.save` (or another pgs model's ``save``).

    Every array is checked against the header (shape, dtype, finite values), and read
    once, straight into the array the model keeps.

    Parameters
    ----------
    path : str or path-like or binary file object

    Returns
    -------
    pgs.Model, MulticlassModel, OneVsRestModel, CSGDModel or CAdalineModel
        The class that was saved.

    Raises
    ------
    ValueError
        When the file is not a pgs model, is damaged or inconsistent (the message names
        the file and the fault), or holds an unknown kind or a newer format version.
    OSError
        When `path` is missing or cannot be read.
    """
    if hasattr(path, "read"):
        return _load(path, getattr(path, "name", "<file object>"))
    if not isinstance(path, (str, bytes, os.PathLike)):   # (open would take an int, True
        # too, as a file descriptor, and close it: stdout, or a file of the caller's)
        raise TypeError(f"path must be a path or a binary file object, got path={path!r}")
    with open(path, "rb") as fh:            # (a missing or unreadable path: OSError)
        return _load(fh, os.fspath(path))


class _Damaged(ValueError):
    """A file that is not a pgs model, or a damaged one (the message names the file)."""


def _load(fh, name):
    try:
        with zipfile.ZipFile(fh) as zf:
            return _load_archive(zf, name)
    except _Damaged as exc:
        raise ValueError(str(exc)) from None       # (a plain ValueError for the caller)
    except (OSError, EOFError, RuntimeError, zipfile.BadZipFile, NotImplementedError,
            zlib.error, lzma.LZMAError, ValueError, OverflowError) as exc:
        # (a damaged zip directory or member: bad CRC, truncated or corrupt compressed
        # data, an unknown compression method, an "encrypted" flag, a seek before 0)
        raise ValueError(f"{name} is not a pgs model file, or is damaged "
                         f"({type(exc).__name__}: {exc})") from None


def _load_archive(zf, name):
    """The model in an open zip archive (see the module docstring for the layout)."""
    members = {info.filename: info for info in zf.infolist()}
    if "header.npy" not in members or "coef.npy" not in members:
        raise _Damaged(f"{name} is not a pgs model file (no header/coef arrays)")
    text = _read_member(zf, members["header.npy"], name, "header", kinds="U", shape=(),
                        max_items=MAX_HEADER_CHARS)[()]
    try:
        header = json.loads(str(text), object_hook=_saved_float)
    except ValueError as exc:
        raise _Damaged(f"{name} is not a pgs model file (header is not JSON: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise _Damaged(f"{name} is not a pgs model file (format {header.get('format')!r})"
                       if isinstance(header, dict) else f"{name} is not a pgs model file")
    version = header.get("format_version")
    if not is_int(version) or version < 1 or version > FORMAT_VERSION:
        raise _Damaged(f"{name} uses model format version {version!r} (written by pgs "
                       f"{header.get('pgs_version')}), but this pgs {__version__} reads "
                       f"versions 1 to {FORMAT_VERSION}; upgrade pgs to load it")
    kind = header.get("kind")
    cls = MODEL_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise _Damaged(f"{name} holds a model of kind {kind!r}, which this pgs "
                       f"{__version__} does not know (it knows {', '.join(MODEL_KINDS)})")
    fields = _check_header(header, name, cls._coef_ndim)

    # The shapes each array must have, from the header, checked before reading the data.
    classes_kind = fields["classes_kind"]
    if (classes_kind == "none") != ("classes.npy" not in members):
        raise _Damaged(f"{name} is damaged: the header says classes_kind={classes_kind!r} but "
                       f"the file {'has' if 'classes.npy' in members else 'has no'} classes array")
    intercept = fields["intercept"]
    coef_shape = (*np.shape(intercept), fields["n_features"])
    coef = _read_member(zf, members["coef.npy"], name, "coef", kinds="f", shape=coef_shape)
    classes = None
    if classes_kind != "none":
        # (one output, or a 1-D coef: two classes, -1/+1; else one output per class)
        n_classes = max(np.size(intercept), 2)
        classes = _read_member(zf, members["classes.npy"], name, "classes",
                               kinds=_CLASSES_DTYPE_KINDS[classes_kind], shape=(n_classes,))
        if not np.all(classes[1:] > classes[:-1]):
            raise _Damaged(f"{name} is damaged: classes must be distinct and sorted, "
                           f"got {classes!r}")
    try:
        return cls._from_saved(coef=coef, intercept=intercept, iteration=fields["iteration"],
                               T=fields["T"], classes=classes, params=fields["params"],
                               attributes=fields["attributes"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        # (the checks of _from_saved, and a safety net for the fields they convert)
        raise _Damaged(f"{name} is damaged: {exc}") from None


#: Largest header (characters of JSON) `load_model` reads.
MAX_HEADER_CHARS = 2**24
#: The dtype kinds of `classes` for each ``classes_kind``.
_CLASSES_DTYPE_KINDS = {"number": "biuf", "string": "U", "bytes": "S"}
#: The names of those dtype kinds (and coef's) in messages.
_DTYPE_NAMES = {"biuf": "numbers", "U": "unicode", "S": "bytes", "f": "float64"}


_MAX_FLOAT = float(np.finfo(np.float64).max)


def _check_header(header, name, coef_ndim):
    """The header's fields, typed and checked (a _Damaged error naming a bad one); the
    intercept is one float, or an array of one per output when `coef_ndim` is 2."""
    def bad(field, expected):
        value = header.get(field, "<missing>")
        raise _Damaged(f"{name} is damaged: header field {field!r} must be {expected}, "
                       f"got {value!r}")

    fields = {}
    for field in ("n_features", "iteration", "T"):
        value = header.get(field)
        if not is_int(value) or value < 0 or value > 2**62:
            bad(field, "an integer >= 0")
        fields[field] = value
    if fields["n_features"] < 1:
        bad("n_features", "an integer >= 1")
    if fields["iteration"] > fields["T"]:
        bad("iteration", f"an integer <= T={fields['T']}")
    intercept = header.get("intercept")
    numbers = intercept if coef_ndim == 2 else [intercept]
    if not (isinstance(numbers, list) and numbers
            and all(is_real(v) and abs(v) <= _MAX_FLOAT for v in numbers)):
        bad("intercept", "a list of finite numbers, one per output" if coef_ndim == 2
            else "a finite number")
    fields["intercept"] = (np.array(numbers, dtype=np.float64) if coef_ndim == 2
                           else float(intercept))
    classes_kind = header.get("classes_kind")
    if classes_kind not in ("none", *_CLASSES_DTYPE_KINDS):
        bad("classes_kind", "one of 'none', 'number', 'string', 'bytes'")
    fields["classes_kind"] = classes_kind
    for field in ("params", "attributes"):
        value = header.get(field, {})
        if not isinstance(value, dict):
            bad(field, "an object")
        fields[field] = value
    return fields


def _read_member(zf, info, name, what, *, kinds, shape, max_items=None):
    """Array `what` of the archive, read by numpy (no pickle) after its npy header is
    checked: dtype kind in `kinds` (native or byte-swapped), the given shape; so a header
    cannot make it allocate an array the file's header does not describe. Floats must be
    finite."""
    def damaged(fault):
        return _Damaged(f"{name} is damaged: {what} {fault}")

    with zf.open(info) as fp:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            got_shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            got_shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise damaged(f"is stored in npy format version {version}, which pgs does not read")
        # (object, structured and sub-array dtypes are of kind "O" or "V")
        if dtype.kind not in kinds or (kinds == "f" and dtype.itemsize != 8):
            raise damaged(f"has dtype {dtype}, expected {_DTYPE_NAMES[kinds]}")
        if tuple(got_shape) != tuple(shape):
            raise damaged(f"has shape {tuple(got_shape)}, the header says {tuple(shape)}")
        if max_items is not None and dtype.itemsize > 4 * max_items:
            raise damaged(f"is too long ({dtype})")
        fp.seek(0)
        # (read in blocks into the array it returns: a model loads in one array's memory)
        arr = np.lib.format.read_array(fp, allow_pickle=False)
        if fp.read(1):          # (also reads to the end, where zipfile checks the CRC)
            raise damaged(f"holds more data than its shape {tuple(shape)}")
    if not arr.dtype.isnative:
        arr = arr.byteswap(inplace=True).view(arr.dtype.newbyteorder("="))
    # (min and max: no temporary as large as the array)
    if arr.dtype.kind == "f" and not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        raise damaged("holds NaN or infinity")
    return arr
