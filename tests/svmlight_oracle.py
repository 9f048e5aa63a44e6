"""Fuzzing `pgs.load_svmlight` against scikit-learn: random svmlight files, mutations, and
the check that every input is either read as scikit-learn reads it or rejected by the
error contract. Shared by tests/test_svmlight_fuzz.py (hypothesis) and tests/fuzz_svmlight.py
(100,000+ cases in subprocesses)."""

import bz2
import contextlib
import gzip
import io
import lzma
import re
import zlib

import numpy as np
import scipy.sparse as sp

import pgs
from pgs.io import svmlight as svmlight_io

COMPRESSORS = {"": None, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
# Bytes that matter to the grammar, for mutations to favour.
SPECIAL = b" \t\n\r:#,.+-eE0123456789qid\x00\x0b\xff"


@contextlib.contextmanager
def block_size(n):
    """Make the reader cut its input into blocks of `n` bytes (None: its own choice)."""
    old = svmlight_io._MIN_BLOCK, svmlight_io._MAX_BLOCK
    if n is not None:
        svmlight_io._MIN_BLOCK = svmlight_io._MAX_BLOCK = n
    try:
        yield
    finally:
        svmlight_io._MIN_BLOCK, svmlight_io._MAX_BLOCK = old


# ------------------------------------------------------------ random inputs

def _number(rng):
    r = rng.random()
    if r < 0.9:  # most numbers are well formed: a line holds many of them
        r = rng.random() * 0.8
    if r < 0.4:
        return repr(rng.uniform(-1e3, 1e3) * 10.0 ** rng.randint(-30, 30))
    if r < 0.6:
        return str(rng.randint(-10**6, 10**6))
    if r < 0.7:
        return f"{rng.gauss(0, 1):.7e}"
    if r < 0.8:
        return rng.choice(["+1", "-1", "0", "-0", "00.5", ".5", "5.", "1e5", "1E-5",
                           "+.5e+2", "0.000", "1e308", "2.2250738585072014e-308",
                           "4.9e-324", "1.7976931348623157e308"])
    if r < 0.82:
        return rng.choice(["inf", "-inf", "nan", "NaN", "Infinity", "1e309", "1e", "e5", ".",
                           "", "+", "1_0", "0x10", "1.5.2", "1,5", "--1"])
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30))) + \
        rng.choice(["", "." + "".join(rng.choice("0123456789")
                                      for _ in range(rng.randint(0, 30)))]) + \
        rng.choice(["", f"e{rng.randint(-400, 400)}"])


def _index(rng, hi):
    r = rng.random()
    if r < 0.9:
        return str(rng.randint(0, hi))
    return rng.choice(["2147483646", "2147483647", "2147483648", "4000000000",
                       "9223372036854775807", "9223372036854775808", "0007", "+3", "-1",
                       "99999999999999999999999999", "1.0", ""])


def random_text(rng):
    """A random svmlight text (mostly well formed) and the keyword arguments to read it."""
    multilabel = rng.random() < 0.1
    query_id = rng.random() < 0.1
    hi = rng.choice([5, 50, 1000])
    lines = []
    for _ in range(rng.randint(0, 25)):
        r = rng.random()
        if r < 0.05:
            lines.append(rng.choice(["", "   ", "# a comment", "\t# c: 1:2"]))
            continue
        if multilabel:
            target = ",".join(str(rng.randint(0, 9)) for _ in range(rng.randint(0, 3)))
        else:
            target = _number(rng) if rng.random() < 0.3 else rng.choice(["1", "-1", "0", "2"])
        parts = [target]
        if query_id or rng.random() < 0.05:
            parts.append(f"qid:{rng.randint(-5, 99)}")
        idx = sorted(rng.sample(range(hi + 1), min(hi + 1, rng.randint(0, 12))))
        if rng.random() < 0.05:  # scikit-learn rejects these; pgs sorts them
            rng.shuffle(idx)
        feats = [f"{i}:{_number(rng) if rng.random() < 0.5 else rng.randint(-3, 3)}"
                 for i in idx]
        if rng.random() < 0.05:
            feats.append(f"{_index(rng, hi)}:{_number(rng)}")
        parts += feats
        seps = [rng.choice([" ", " ", " ", "\t", "  ", " \t", "\x0b", "\x0c"])
                for _ in parts]
        line = "".join(p + s for p, s in zip(parts, seps, strict=True)).rstrip(" \t\x0b\x0c")
        if rng.random() < 0.1:
            line += " # " + rng.choice(["c", "1:2", "#", ""])
        if rng.random() < 0.05:
            line += "\r"
        lines.append(line)
    text = "\n".join(lines) + rng.choice(["\n", "\n", ""])
    kw = dict(zero_based=rng.choice(["auto", "auto", True, False]), query_id=query_id,
              multilabel=multilabel, n_threads=rng.choice([1, 1, 2, 3]))
    return text.encode("ascii"), kw


def mutate(rng, data, n_ops):
    """`data` with `n_ops` random byte flips, insertions, deletions, duplications or a
    truncation."""
    data = bytearray(data)
    for _ in range(n_ops):
        op = rng.random()
        pos = rng.randint(0, len(data))
        if op < 0.35 and data:  # replace a byte
            pos = min(pos, len(data) - 1)
            data[pos] = rng.choice(SPECIAL) if rng.random() < 0.7 else rng.randrange(256)
        elif op < 0.55:  # insert bytes
            data[pos:pos] = bytes(rng.choice(SPECIAL) if rng.random() < 0.7 else
                                  rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op < 0.75:  # delete a range
            del data[pos:pos + rng.randint(1, 8)]
        elif op < 0.9:  # duplicate a range
            data[pos:pos] = data[pos:pos + rng.randint(1, 16)]
        else:  # truncate
            del data[pos:]
    return bytes(data)


def random_case(rng, ext=None, size=False):
    """(file bytes, extension, text the file decompresses to or None, reader kwargs,
    block size); `ext` and `size` force the compression and the block size."""
    text, kw = random_text(rng)
    if rng.random() < 0.7:
        text = mutate(rng, text, rng.randint(1, 3))
    if ext is None:
        ext = rng.choice(["", "", "", ".gz", ".bz2", ".xz"])
    raw = COMPRESSORS[ext](text) if ext else text
    if ext and rng.random() < 0.3:  # a damaged compressed stream
        raw = mutate(rng, raw, rng.randint(1, 3))
        text = decompressed(raw, ext)
    if size is False:
        size = rng.choice([None, None, None, 1, 3, 7, 16, 64, 256, 4096])
    return raw, ext, text, kw, size


def decompressed(raw, ext):
    """The decompressed bytes, or None when Python's own file reader cannot read the
    stream (stricter than its decompress(): an empty .bz2 or .xz file is an error)."""
    try:
        if not ext:
            return raw
        with OPENERS[ext](io.BytesIO(raw)) as fh:
            return fh.read()
    except (EOFError, OSError, ValueError, zlib.error, lzma.LZMAError):
        return None


# ------------------------------------------------------------ the check

class ContractError(AssertionError):
    """pgs broke its error contract (a wrong exception type or message)."""


def sk_load(text, kw):
    from sklearn.datasets import load_svmlight_file
    out = load_svmlight_file(io.BytesIO(text), zero_based=kw["zero_based"],
                             query_id=kw["query_id"], multilabel=kw["multilabel"])
    return (sp.csr_matrix(out[0]),) + tuple(out[1:])


def sorted_lines(text, multilabel):
    """`text` with each line's features sorted by index, as scikit-learn splits a line
    (pgs sorts them; scikit-learn rejects a line whose indices do not increase)."""
    out = []
    for line in text.split(b"\n"):
        parts = line.split(b"#", 1)[0].split()
        head, feats = parts[:1], parts[1:]
        if multilabel and parts and b":" in parts[0]:  # a line without labels
            head, feats = [], parts
        if feats and feats[0].startswith(b"qid"):
            head, feats = head + feats[:1], feats[1:]
        try:
            feats.sort(key=lambda f: int(f.split(b":", 1)[0]))
        except ValueError:
            return None
        out.append(b" ".join(head + feats))
    return b"\n".join(out)


def _canonical(X):
    X = sp.csr_matrix(X, copy=True)
    X.sort_indices()
    return X


def differences(ours, ref, kw):
    """What differs between two (X, y[, qid]) results: [] when identical to the bit."""
    X, A = ours[0], _canonical(ref[0])
    out = []
    if X.shape != A.shape:
        return [f"shape {X.shape} vs {A.shape}"]
    if not (np.array_equal(X.indptr, A.indptr) and np.array_equal(X.indices, A.indices)):
        out.append("sparsity pattern")
    elif X.data.tobytes() != A.data.astype(X.data.dtype).tobytes():
        out.append("values")
    if kw["multilabel"]:
        if list(ours[1]) != [tuple(t) for t in ref[1]]:
            out.append("labels")
    elif np.asarray(ours[1]).tobytes() != np.asarray(ref[1], dtype=np.float64).tobytes():
        out.append("targets")
    if kw["query_id"] and not np.array_equal(ours[2], ref[2]):
        out.append("qid")
    return out


def check(path, ext, text, kw, size=None):
    """Read `path` with pgs and compare with scikit-learn reading `text`.

    Returns ``(outcome, detail)``: outcome is "same", "both reject", "pgs rejects"
    (detail: pgs's message), "damaged stream" (a compressed stream Python cannot read,
    rejected), or a mismatch: "only pgs accepts" (detail: scikit-learn's error),
    "different" (detail: what differs). Raises ContractError if pgs raises anything
    but ValueError / OSError, or a message that does not name the file (and the line,
    for a parse error).
    """
    try:
        with block_size(size):
            ours, err = pgs.load_svmlight(path, **kw), None
    except (ValueError, OSError) as exc:
        ours, err = None, exc
    except Exception as exc:  # noqa: BLE001 - any other type breaks the contract
        raise ContractError(f"{type(exc).__name__}: {exc}") from exc
    if err is not None:
        msg = str(err)
        if not msg.startswith(f"{path}"):
            raise ContractError(f"message does not name the file: {msg}")
        damaged = ext and "compressed data is truncated or corrupt" in msg
        if not damaged and not re.match(rf"{re.escape(str(path))}, line \d+(, column \d+)?: ",
                                        msg):
            raise ContractError(f"message does not name the line: {msg}")
        if damaged and text is not None:
            return "only pgs rejects a stream", msg
    if text is None:
        if ours is not None:
            return "only pgs reads a damaged stream", ""
        return "damaged stream", ""
    try:
        ref, ref_err = sk_load(text, kw), None
    except Exception as exc:  # noqa: BLE001 - scikit-learn's errors are of many types
        ref, ref_err = None, exc
    if ours is None:
        return ("both reject", "") if ref is None else ("pgs rejects", str(err))
    resorted = sorted_lines(text, kw["multilabel"]) if ref is None else None
    if resorted and "sorted and unique" in str(ref_err):
        # pgs sorts each line's features: compare with the sorted text
        try:
            ref = sk_load(resorted, kw)
        except Exception:  # noqa: BLE001, S110 - reported below as scikit-learn's error
            pass
    if ref is None:
        return "only pgs accepts", f"{type(ref_err).__name__}: {ref_err}"
    diff = differences(ours, ref, kw)
    return ("different", ", ".join(diff)) if diff else ("same", "")


def reason(outcome, detail):
    """A short category for a pgs rejection or a mismatch (for counting)."""
    if outcome == "pgs rejects":
        detail = detail.split(": ", 1)[-1].split(";")[0]
    detail = re.sub(r"'[^']*'", "'...'", detail)
    return re.sub(r"(index|value|line|column) -?\d+", r"\1 N", detail)[:100]
