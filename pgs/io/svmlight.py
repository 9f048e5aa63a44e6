"""Read and write svmlight / libsvm text files.

The reader parses recycled blocks of whole lines on several threads without the GIL
(`pgs._svmlight.parse_block`) into output arrays filled in file order: for a plain file
reserved up front (untouched pages cost no memory) then shrunk in place, else grown; the
peak memory is about the matrix plus a few blocks. Plain files are read with ``readinto``,
not memory-mapped: a file truncated meanwhile is an ``OSError``, not a SIGBUS.
"""

import bz2
import contextlib
import gzip
import io
import itertools
import lzma
import math
import os
import stat
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from pgs import _svmlight

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}
_MAX_BLOCK = 16 << 20
_MIN_BLOCK = 1 << 20
_INT32_MAX = np.iinfo(np.int32).max
# At most 2**31 - 1 columns: int32 feature indices, as LIBSVM, LIBLINEAR and scipy store
# them, and a model's dense coefficients stay allocatable. An index as written must be
# <= MAX_FEATURES (one-based files) or <= MAX_FEATURES - 1 (zero-based).
MAX_FEATURES = _svmlight.MAX_INDEX

# Messages for parse_block's status codes (pgs/_svmlight.pyx).
_MESSAGES = {
    1: "invalid target {token!r} (expected a number such as +1, -1, 0 or 2.5)",
    2: "target {token!r} is not a finite number (inf and nan are not allowed)",
    3: "expected index:value, got {token!r}",
    4: "invalid feature index in {token!r} (expected digits before the ':')",
    5: "feature index {value} in {token!r}, but zero_based=False (indices start at 1)",
    6: "invalid feature value in {token!r}",
    7: "feature value in {token!r} is not a finite number (inf, nan and values beyond "
    "the double range are not allowed)",
    8: "duplicate feature index {value}",
    9: "invalid query id {token!r} (expected qid:<integer> right after the target)",
    10: "no qid: on this line, but query_id=True",
    11: "feature index in {token!r} is too large: at most 2**31 - 1 = 2147483647 features "
    "are supported, so an index must be <= 2147483647 (one-based) or <= 2147483646 "
    "(zero-based)",
    12: "out of memory while sorting a line's features",
}


def usable_cpus():
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class _Source:
    """An opened input: a binary file object, a display name (`name` if given) and, for plain
    files, a size."""

    def __init__(self, f, name=None):
        self.owned, self.compressed, self.size, self.stat = True, False, None, None
        if isinstance(f, int) and not isinstance(f, bool):
            self.name = f"<file descriptor {f}>"
            self.fileobj = open(f, "rb", buffering=0, closefd=False)  # noqa: SIM115
        elif isinstance(f, (str, bytes, os.PathLike)):
            self.name = os.fsdecode(os.fspath(f))
            opener = _OPENERS.get(os.path.splitext(self.name)[1].lower())
            self.compressed = opener is not None
            self.fileobj = opener(self.name, "rb") if opener else open(  # noqa: SIM115
                self.name, "rb", buffering=0)
        elif hasattr(f, "readinto"):
            own = getattr(f, "name", None)
            self.name = os.fsdecode(own) if isinstance(own, (str, bytes)) else "<file object>"
            self.fileobj, self.owned = f, False
        else:  # (a text file has no readinto)
            raise TypeError(f"f must be a path, a file descriptor or a file object opened in "
                            f"binary mode ('rb'), got {type(f).__name__}")
        self.name = name or self.name
        if self.owned and not self.compressed:
            with contextlib.suppress(OSError, io.UnsupportedOperation):
                st = os.fstat(self.fileobj.fileno())
                if stat.S_ISREG(st.st_mode):
                    self.size, self.stat = st.st_size, st
        # A regular file read from its start: `size` bytes expected (a descriptor is read
        # from its current position).
        self.whole_file = self.stat is not None and not isinstance(f, int)

    def changed(self, detail):
        return OSError(f"{self.name}: the file changed while being read ({detail}); "
                       f"read it again once it is complete")

    def check_unchanged(self):
        """Raise OSError if the file's size or modification time moved since it was opened."""
        st = os.fstat(self.fileobj.fileno())
        if st.st_size != self.size:
            raise self.changed(f"{self.size} bytes when opened, {st.st_size} now")
        if st.st_mtime_ns != self.stat.st_mtime_ns:
            raise self.changed("it was written to")

    def close(self):
        if self.owned:
            self.fileobj.close()


def _read_into(fileobj, view):
    """Fill `view` from `fileobj` until it is full or the input ends; bytes read."""
    got = 0
    while got < len(view):
        k = fileobj.readinto(view[got:])
        if not k:
            break
        got += k
    return got


def _buffers(free, n):
    """Buffers for a block of up to `n` bytes, recycled from the list `free` (fresh memory
    costs a page fault per page): its text, and parse_block's scratch values and indices."""
    for i, bufs in enumerate(free):
        if len(bufs[0]) >= n:
            return free.pop(i)
    n += n >> 4  # slack, so that the next block (with another carried-over partial line) fits
    return (np.empty(n, dtype=np.uint8), np.empty(n // 4 + 2, dtype=np.float64),
            np.empty(n // 4 + 2, dtype=np.int32))


def _line_blocks(src, block_size, free):
    """Yield (text, bufs): `text` a uint8 array of whole lines (the last may lack a final
    newline) in the buffers `bufs` (see `_buffers`); a whole file that ends early or whose
    size or time stamp moved is an OSError."""
    carry = np.empty(0, dtype=np.uint8)
    left = src.size if src.whole_file else None
    while True:
        bufs = _buffers(free, len(carry) + block_size)
        buf = bufs[0]
        buf[:len(carry)] = carry
        want = block_size if left is None else min(block_size, left)
        got = _read_into(src.fileobj, memoryview(buf)[len(carry):len(carry) + want])
        n = len(carry) + got
        if left is not None:
            left -= got
            if got < want:
                raise src.changed(f"{src.size} bytes when opened, it ended after "
                                  f"{src.size - left}")
        if got == 0:
            if left is not None:
                src.check_unchanged()
            if n:
                yield buf[:n], bufs
            return
        cut = _svmlight.last_newline(buf, n)
        if cut < 0:
            carry = buf[:n]  # a line longer than a block: read on
            continue
        carry = buf[cut + 1:n].copy()
        yield buf[:cut + 1], bufs


class _Assembler:
    """Collect block results in file order into the output arrays."""

    def __init__(self, name, dtype, nnz_bound, args):
        self.name = name
        self.args = args  # parse_block's multilabel, require_qid, min_index, max_index
        self.multilabel = args[0]
        try:
            self.data = np.empty(nnz_bound or 0, dtype=dtype)
            self.indices = np.empty(nnz_bound or 0, dtype=np.int32)
        except MemoryError:  # no overcommit: grow as the stream path does
            self.data, self.indices = np.empty(0, dtype=dtype), np.empty(0, dtype=np.int32)
        self.nnz = 0
        self.n_lines = 0  # newlines before the next block, for error line numbers
        # the blocks' pieces, after an empty one each
        self.y, self.qid = [np.empty(0)], [np.empty(0, dtype=np.int64)]
        self.indptr, self.labels, self.label_ptr = [np.zeros(1, dtype=np.int64)], [np.empty(0)], []
        self.min_index, self.max_index = math.inf, -1  # (of the blocks with features)
        # where the file holds index MAX_FEATURES, too large if it turns out zero-based
        self.at_limit = None

    def add(self, buf, res):
        if res["status"] != 0:
            self._raise(buf, res)
        nnz = res["nnz"]
        if res["max_index"] == MAX_FEATURES and self.at_limit is None:
            # Parse again one below the limit: the error names the line and column.
            args = self.args[:3] + (MAX_FEATURES - 1,)
            try:
                self._raise(buf, _svmlight.parse_block(buf, *args, None, None))
            except ValueError as exc:
                self.at_limit = exc
        if self.nnz + nnz > len(self.data):
            # Streams only (plain files are reserved at a bound up front); resize() grows in
            # place (realloc) instead of holding two copies.
            new = max(self.nnz + nnz, int(len(self.data) * 1.5), 1 << 16)
            self.data.resize(new, refcheck=False)
            self.indices.resize(new, refcheck=False)
        self.data[self.nnz:self.nnz + nnz] = res["data"]
        self.indices[self.nnz:self.nnz + nnz] = res["indices"]
        self.indptr.append(res["indptr"][1:] + self.nnz)
        self.nnz += nnz
        self.y.append(res["y"])
        self.qid.append(res["qid"])
        if self.multilabel:
            base = sum(len(a) for a in self.labels)
            self.labels.append(res["labels"])
            self.label_ptr.append(res["label_ptr"][1:] + base)
        if nnz:
            self.min_index = min(self.min_index, res["min_index"])
            self.max_index = max(self.max_index, res["max_index"])
        self.n_lines += res["n_lines"]

    def _raise(self, buf, res):
        start = res["line_start"]
        line_no = self.n_lines + _svmlight.count_lines(buf, start) + 1
        view = bytes(buf[start:start + 4096])
        nl = view.find(b"\n")
        line = (view if nl < 0 else view[:nl]).rstrip(b"\r")
        token = bytes(buf[res["token_start"]:res["token_end"]])
        template = _MESSAGES.get(res["status"], "malformed line (status {status})")
        msg = template.format(token=_excerpt(token, 40), value=res["value"], status=res["status"])
        where = f"line {line_no}"
        if res["status"] not in (8, 10, 12):  # errors about a token: its column (bytes)
            where += f", column {res['token_start'] - start + 1}"
        raise ValueError(f"{self.name}, {where}: {msg}; the line reads {_excerpt(line, 80)!r}")

    def finish(self):
        nnz = self.nnz
        # Shrinking in place releases the untouched tail of the reservation.
        self.data.resize(nnz, refcheck=False)
        self.indices.resize(nnz, refcheck=False)
        indptr = np.concatenate(self.indptr)
        n_rows = len(indptr) - 1
        y = np.concatenate(self.y)
        qid = np.concatenate(self.qid)
        if self.multilabel:
            labels = np.concatenate(self.labels).tolist()
            ptr = np.concatenate([[0]] + self.label_ptr).tolist()
            y = [tuple(labels[ptr[i]:ptr[i + 1]]) for i in range(n_rows)]
        return SimpleNamespace(data=self.data, indices=self.indices, indptr=indptr, y=y, qid=qid,
                               nnz=nnz, n_rows=n_rows, min_index=self.min_index,
                               max_index=self.max_index, at_limit=self.at_limit)


def _excerpt(raw, limit):
    text = raw.decode("utf-8", errors="backslashreplace")
    return text if len(text) <= limit else text[:limit] + "..."


def _run_in_order(items, work, done, n_threads):
    """``work(item)`` on `n_threads` threads (on this one for one thread or one item),
    ``done(item, result)`` in the items' order, with at most n_threads + 1 items in flight
    (bounded memory)."""
    head = list(itertools.islice(items, 2))
    items = itertools.chain(head, items)
    if n_threads == 1 or len(head) < 2:
        for item in items:
            done(item, work(item))
        return
    pool = ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="pgs-svmlight")
    pending = deque()
    try:
        for item in items:
            pending.append((item, pool.submit(work, item)))
            if len(pending) > n_threads:
                item, fut = pending.popleft()
                done(item, fut.result())
        while pending:
            item, fut = pending.popleft()
            done(item, fut.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        pending.clear()


def _parse_file(f, *, dtype, multilabel, require_qid, min_index, max_index, n_threads,
                name=None):
    """One file's parse (named `name` in errors, if given): its CSR pieces with the feature
    indices as written, and the summary `columns` reads."""
    src = _Source(f, name)
    try:
        # Each feature needs "i:v" and a separator: at most size // 4 + 1 of them.
        bound = src.size // 4 + 2 if src.size is not None else None
        args = (multilabel, require_qid, min_index, max_index)
        out = _Assembler(src.name, dtype, bound, args)
        free = []  # the buffers of the blocks done
        # Enough blocks for every thread to have work, without tiny blocks.
        block_size = _MAX_BLOCK if src.size is None else min(
            _MAX_BLOCK, max(_MIN_BLOCK, src.size // (4 * n_threads) + 1))

        def work(block):
            text, bufs = block
            return _svmlight.parse_block(text, *args, *bufs[1:])

        def done(block, res):
            out.add(block[0], res)
            free.append(block[1])

        _run_in_order(_line_blocks(src, block_size, free), work, done, n_threads)
        return out.finish()
    except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        # A truncated or damaged .gz / .bz2 / .xz file is bad input, like a bad line
        # (gzip and bz2 report a damaged stream as OSError: plain files' errors stay).
        if not src.compressed or (type(exc) is OSError and exc.errno is not None):
            raise
        raise ValueError(f"{src.name}: the compressed data is truncated or corrupt "
                         f"({type(exc).__name__}: {exc})") from exc
    finally:
        src.close()


def check_format_args(n_features, dtype, zero_based):
    """The checks of every svmlight reader of pgs (`load_svmlight_files`, `pgs.dask`):
    (dtype, min_index, max_index), the feature indices a line may hold as written."""
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
            raise TypeError(f"n_features must be None or an int, got {n_features!r}")
        if not 1 <= n_features <= MAX_FEATURES:
            raise ValueError(f"n_features must be in [1, 2**31 - 1 = {MAX_FEATURES}], "
                             f"got {n_features}")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dt not in (np.float32, np.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}")
    if zero_based not in (True, False, "auto") or isinstance(zero_based, np.ndarray):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    min_index = 1 if zero_based is False else 0
    max_index = MAX_FEATURES - 1 if zero_based is True else MAX_FEATURES
    return dt, min_index, max_index


def columns(files, zero_based, n_features):
    """Every svmlight reader's indexing rule (`load_svmlight_files`, `pgs.dask`): whether the
    files read as one-based, and the matrices' columns (by default the ones the data needs).
    `files` holds, per file, its parts' summaries (nnz, min_index, max_index, at_limit)."""
    parts = [part for file in files for part in file if part.nnz]
    if zero_based == "auto":  # (scikit-learn's rule: every file holds a feature, none index 0)
        one_based = bool(files) and all(any(part.nnz for part in file) for file in files) \
            and all(part.min_index > 0 for part in parts)
    else:
        one_based = zero_based is False
    for part in parts:
        if not one_based and part.at_limit is not None:  # index MAX_FEATURES, zero-based
            raise part.at_limit
    needed = max([part.max_index - one_based for part in parts] + [0]) + 1
    if n_features is None:
        return one_based, needed
    if n_features < needed:
        raise ValueError(f"n_features was set to {n_features}, but the data holds feature "
                         f"index {needed - 1} (it needs n_features >= {needed})")
    return one_based, int(n_features)


def load_svmlight_files(files, *, n_features=None, dtype=np.float64, zero_based="auto",
                        query_id=False, multilabel=False, n_threads=None):
    """Load several svmlight / libsvm files with the same number of features.

    Parameters
    ----------
    files : sequence of path or binary file object
        As `f` of `load_svmlight`.
    n_features, dtype, zero_based, query_id, multilabel, n_threads
        As for `load_svmlight`, over all the files: `n_features` defaults to the largest
        index in any file plus one; "auto" `zero_based` reads them as one-based when every
        file holds a feature and none holds index 0.

    Returns
    -------
    list
        ``[X1, y1, X2, y2, ...]``, with ``qid1`` after ``y1`` and so on when
        `query_id` is true.

    Raises
    ------
    ValueError, OSError, TypeError
        As `load_svmlight`.
    """
    dt, min_index, max_index = check_format_args(n_features, dtype, zero_based)
    for name, v in (("query_id", query_id), ("multilabel", multilabel)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {v!r}")
    if n_threads is None:
        n_threads = min(usable_cpus(), 8)
    elif isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) \
            or n_threads < 1:
        raise ValueError(f"n_threads must be None or an int >= 1, got {n_threads!r}")
    if isinstance(files, (str, bytes, os.PathLike)) or hasattr(files, "read"):
        raise TypeError("files must be a sequence of paths or file objects; "
                        "use load_svmlight for a single file")
    parsed = [_parse_file(f, dtype=dt, multilabel=bool(multilabel), require_qid=bool(query_id),
                          min_index=min_index, max_index=max_index, n_threads=int(n_threads))
              for f in files]
    one_based, n_features = columns([[p] for p in parsed], zero_based, n_features)
    result = []
    for p in parsed:
        if one_based:
            np.subtract(p.indices, 1, out=p.indices)
        result += [_to_csr(p, n_features), p.y] + ([p.qid] if query_id else [])
    return result


def _to_csr(p, n_features):
    """The CSR matrix of a parse `p` (its data, indices, indptr and n_rows)."""
    idx_dtype = np.int32 if max(n_features, len(p.data)) <= _INT32_MAX else np.int64
    indices = p.indices if p.indices.dtype == idx_dtype else p.indices.astype(idx_dtype)
    indptr = p.indptr.astype(idx_dtype, copy=False)
    X = sp.csr_matrix((p.data, indices, indptr), shape=(p.n_rows, n_features), copy=False)
    X.has_canonical_format = True  # the parser sorts every row and rejects duplicates
    return X


def load_svmlight(f, *, n_features=None, dtype=np.float64, zero_based="auto", query_id=False,
                  multilabel=False, n_threads=None):
    """Load a svmlight / libsvm text file into a CSR matrix and a target vector.

    Each line is ``<target> [qid:<int>] <index>:<value> ...`` with an optional
    ``# comment``; blank lines, CRLF endings, tabs and repeated spaces are
    accepted and features may come in any order (they are sorted).

    Parameters
    ----------
    f : str, path-like, int or binary file object
        A path (``.gz``, ``.bz2``, ``.xz`` are decompressed as they are read), a file
        descriptor or a file object opened in binary mode.
    n_features : int, optional
        Number of columns (at most `MAX_FEATURES` = 2**31 - 1); by default the largest
        feature index plus one.
    dtype : {numpy.float64, numpy.float32}
        dtype of X's values, parsed as correctly rounded float64 (as Python's ``float``), then cast.
    zero_based : bool or "auto", default "auto"
        Whether feature indices start at 0. "auto" (scikit-learn's rule) reads the file as
        one-based when it holds a feature and no index 0.
    query_id : bool, default False
        Also return the ``qid:`` of every line (every line must have one).
    multilabel : bool, default False
        Targets are comma-separated label lists (``1,3,7``); y is then a list of sorted
        tuples of floats.
    n_threads : int, optional
        Parser threads (default: the usable CPUs, at most 8).

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (n_samples, n_features)
        Canonical CSR (sorted indices, no duplicates); int32 indices when they fit.
    y : ndarray of float64, shape (n_samples,), or list of tuples
    qid : ndarray of int64, shape (n_samples,)
        Only when `query_id` is true.

    Raises
    ------
    ValueError
        For a malformed line or an index beyond `MAX_FEATURES` (naming the file, the line,
        the byte column and an excerpt), a damaged compressed file, too small an `n_features`.
    OSError
        For a missing or unreadable file, or a plain file that changed while read.
    TypeError
        For a text-mode file object or arguments of the wrong type.
    """
    return tuple(load_svmlight_files([f], n_features=n_features, dtype=dtype, zero_based=zero_based,
                                     query_id=query_id, multilabel=multilabel, n_threads=n_threads))


def _fmt(v):
    """Shortest text that parses back to exactly `v` (integral values without '.0')."""
    if v.is_integer() and v != 0.0 and abs(v) < 2.0**53:
        return str(int(v))
    if v == 0.0 and math.copysign(1.0, v) > 0:
        return "0"
    return repr(v)


def dump_svmlight(X, y, f, *, zero_based=True, query_id=None):
    """Write `X` and `y` as svmlight / libsvm text that `load_svmlight` reads back exactly
    (floats as Python's shortest round-tripping ``repr``).

    Parameters
    ----------
    X : array_like or sparse matrix, shape (n_samples, n_features)
        Finite values: a sparse matrix's stored entries (explicit zeros included), a dense
        array's non-zeros.
    y : array_like of shape (n_samples,), or sequence of sequences
        Targets; a sequence of label sequences writes multilabel targets (``1,3,7``).
    f : str, path-like or binary file object
        Destination; ``.gz``, ``.bz2`` and ``.xz`` paths are compressed.
    zero_based : bool, default True
        Write feature indices starting at 0 (True) or at 1 (False, libsvm's convention).
    query_id : array_like of int, shape (n_samples,), optional
        Written as ``qid:<int>`` after each target.

    Raises
    ------
    ValueError
        For mismatched lengths or non-finite values.
    """
    if not sp.issparse(X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if X.dtype.kind not in "fiub":
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()  # (and sorts the indices)
    if not np.all(np.isfinite(X.data)):
        raise ValueError("X holds inf or nan, which svmlight text cannot represent")
    m = X.shape[0]
    multilabel = not isinstance(y, np.ndarray) and len(y) > 0 and \
        isinstance(y[0], (list, tuple, np.ndarray))
    if multilabel:
        targets = [",".join(_fmt(float(v)) for v in row) for row in y]
    else:
        yv = np.asarray(y, dtype=np.float64)
        if yv.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {yv.shape}")
        if not np.all(np.isfinite(yv)):
            raise ValueError("y holds inf or nan, which svmlight text cannot represent")
        targets = [_fmt(v) for v in yv.tolist()]
    if len(targets) != m:
        raise ValueError(f"y has {len(targets)} entries, X has {m} rows")
    if query_id is not None:
        query_id = np.asarray(query_id, dtype=np.int64).reshape(-1)
        if len(query_id) != m:
            raise ValueError(f"query_id has {len(query_id)} entries, X has {m} rows")
        targets = [f"{t} qid:{q}" for t, q in zip(targets, query_id.tolist(), strict=True)]

    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(f))
        out = _OPENERS.get(os.path.splitext(path)[1].lower(), open)(path, "wb")
    elif hasattr(f, "write"):
        out = contextlib.nullcontext(f)
    else:
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    with out as fh:
        for start in range(0, m, 4096):  # (a block of rows at a time: bounded memory)
            rows = X[start:start + 4096]
            indices = (rows.indices.astype(np.int64) + (0 if zero_based else 1)).tolist()
            pairs = [f" {j}:{_fmt(v)}" for j, v in zip(indices, rows.data.tolist(), strict=True)]
            lines = [target + "".join(pairs[a:b]) + "\n" for target, (a, b) in zip(
                targets[start:start + 4096], itertools.pairwise(rows.indptr.tolist()), strict=True)]
            fh.write("".join(lines).encode("ascii"))
