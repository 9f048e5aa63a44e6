"""The compiled svmlight/libsvm line parser behind `pgs.load_svmlight`.

`parse_block` parses a buffer of whole lines with the GIL released into exact
CSR pieces (targets, row pointers, sorted indices, values); `pgs.io.svmlight` cuts a
file into such blocks, parses them on several threads and stitches the pieces.

Floats are parsed exactly as a correctly rounded strtod would (bit-identical to
Python's ``float``): decimal mantissas of at most 19 significant digits that fit
in 53 bits with a power of ten in [-22, 22] (the common case) take Clinger's
fast path, one exact-operand IEEE multiply or divide, which is correctly
rounded; mantissas of up to 19 digits with a power of ten in [-27, 27] use one
x87 extended-precision operation whose result is provably rounded correctly
unless it lands on a double rounding midpoint (see _strtod_c.h); everything else
goes to the C library's strtod under the "C" locale.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t, INT64_MAX
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memchr, memcpy

import numpy as np

cdef extern from "_strtod_c.h" nogil:
    int pgs_strtod_init()
    double pgs_strtod_c(const char* s, char** end)
    int pgs_ext_scale(uint64_t m, int e, double* out)
    int pgs_eight_digits(const unsigned char* p, uint64_t* value)

if not pgs_strtod_init():
    raise ImportError("pgs._svmlight: could not create the C locale for strtod")

# Status codes of parse_block; pgs.io.svmlight turns them into messages.
cdef enum:
    OK = 0
    E_TARGET = 1
    E_TARGET_NONFINITE = 2
    E_TOKEN = 3
    E_INDEX = 4
    E_INDEX_BELOW_MIN = 5
    E_VALUE = 6
    E_VALUE_NONFINITE = 7
    E_DUPLICATE = 8
    E_QID = 9
    E_MISSING_QID = 10
    E_INDEX_TOO_LARGE = 11
    E_NOMEM = 12

# Results of _parse_real.
cdef enum:
    R_OK = 0
    R_MALFORMED = 1
    R_NONFINITE = 2   # an inf / nan literal
    R_OVERFLOW = 3    # a finite literal beyond the double range

cdef double[23] POW10 = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]
cdef uint64_t[16] IPOW10 = [
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
    1000000000, 10000000000, 100000000000, 1000000000000, 10000000000000,
    100000000000000, 1000000000000000,
]
cdef uint64_t TWO53 = 9007199254740992


ctypedef struct Entry:
    int64_t index
    double value


ctypedef struct BlockResult:
    Py_ssize_t n_rows
    Py_ssize_t nnz
    Py_ssize_t n_labels
    Py_ssize_t n_lines
    int64_t min_index
    int64_t max_index
    int status
    Py_ssize_t err_line_start
    Py_ssize_t err_token_start
    Py_ssize_t err_token_end
    int64_t err_value


# The largest feature index a file may hold: indices are stored as int32, as LIBSVM and
# LIBLINEAR do (their feature_node.index is an int) and as scipy does by default.
MAX_INDEX = 2147483647

cdef inline bint _is_space(unsigned char c) noexcept nogil:
    # The bytes Python's bytes.split() splits on: space, \t \n \v \f \r.
    return c == 32 or (c >= 9 and c <= 13)


cdef inline bint _is_digit(unsigned char c) noexcept nogil:
    return c >= 48 and c <= 57


cdef inline bint _lower_eq(const unsigned char* s, Py_ssize_t n, const char* word) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if word[i] == 0 or (s[i] | 0x20) != <unsigned char>word[i]:
            return False
    return word[n] == 0


cdef int _strtod_span(const unsigned char* s, const unsigned char* end,
                      double* out) noexcept nogil:
    """strtod (C locale) on the validated decimal span [s, end)."""
    cdef char[128] small
    cdef char* tmp = small
    cdef char* stop
    cdef Py_ssize_t n = end - s
    cdef double v
    if n >= 128:
        tmp = <char*>malloc(n + 1)
        if tmp == NULL:
            return R_MALFORMED
    memcpy(tmp, s, n)
    tmp[n] = 0
    v = pgs_strtod_c(tmp, &stop)
    cdef bint whole = (stop - tmp) == n
    if tmp != small:
        free(tmp)
    if not whole:
        return R_MALFORMED
    if v - v != 0.0:   # +-inf: the literal overflows a double
        return R_OVERFLOW
    out[0] = v
    return R_OK


cdef int _scan_real(const unsigned char* s, const unsigned char* end, double* out,
                    const unsigned char** stop) noexcept nogil:
    """Read ``[+-] digits [. digits] [(e|E) [+-] digits]`` from `s` (at most to `end`).

    Stops at the first byte that cannot continue the number and stores its
    position in `stop`; the caller decides whether that byte may follow a
    number. Returns R_OK and the correctly rounded double in `out`, or an R_*
    error (R_NONFINITE for an inf/infinity/nan word, `stop` after the word).
    """
    cdef const unsigned char* p = s
    cdef const unsigned char* w
    cdef bint neg = False, exp_neg = False
    cdef uint64_t mant = 0, chunk
    cdef int n_sig = 0          # significant digits seen (leading zeros excluded)
    cdef int n_digits = 0       # all mantissa digits seen
    cdef long exp10 = 0, e = 0
    cdef unsigned char c
    cdef double v
    cdef long shift

    stop[0] = s
    if p < end and (p[0] == 43 or p[0] == 45):   # '+' '-'
        neg = p[0] == 45
        p += 1
    if p == end:
        return R_MALFORMED
    c = p[0] | 0x20
    if c == 105 or c == 110:   # 'i' 'n': inf / infinity / nan
        w = p
        while w < end and ((w[0] | 0x20) >= 97 and (w[0] | 0x20) <= 122):
            w += 1
        stop[0] = w
        if (_lower_eq(p, w - p, "inf") or _lower_eq(p, w - p, "infinity")
                or _lower_eq(p, w - p, "nan")):
            return R_NONFINITE
        return R_MALFORMED

    while p < end and _is_digit(p[0]):
        n_digits += 1
        if mant != 0 or p[0] != 48:
            if n_sig < 19:
                mant = mant * 10 + (p[0] - 48)
            n_sig += 1
        p += 1
    if p < end and p[0] == 46:   # '.'
        p += 1
        while p < end and _is_digit(p[0]):
            if mant != 0 and n_sig <= 11 and end - p >= 8 and pgs_eight_digits(p, &chunk):
                mant = mant * 100000000 + chunk
                n_sig += 8
                n_digits += 8
                exp10 -= 8
                p += 8
                continue
            n_digits += 1
            if mant != 0 or p[0] != 48:
                if n_sig < 19:
                    mant = mant * 10 + (p[0] - 48)
                    exp10 -= 1
                n_sig += 1
            else:
                exp10 -= 1
            p += 1
    if n_digits == 0:
        return R_MALFORMED
    if p < end and (p[0] | 0x20) == 101:   # 'e'
        p += 1
        if p < end and (p[0] == 43 or p[0] == 45):
            exp_neg = p[0] == 45
            p += 1
        if p == end or not _is_digit(p[0]):
            return R_MALFORMED   # Python's float rejects "1e" and "1e+"
        while p < end and _is_digit(p[0]):
            if e < 100000000:
                e = e * 10 + (p[0] - 48)
            p += 1
        exp10 += -e if exp_neg else e
    stop[0] = p
    end = p

    if mant == 0:
        out[0] = -0.0 if neg else 0.0
        return R_OK
    if n_sig <= 19 and mant <= TWO53:
        # Clinger: both operands exact, so one IEEE operation rounds correctly.
        if 0 <= exp10 <= 22:
            v = <double>mant * POW10[exp10]
            out[0] = -v if neg else v
            return R_OK
        if -22 <= exp10 < 0:
            v = <double>mant / POW10[-exp10]
            out[0] = -v if neg else v
            return R_OK
        if 22 < exp10 <= 22 + 15:
            shift = exp10 - 22
            if mant <= TWO53 // IPOW10[shift]:
                v = <double>(mant * IPOW10[shift]) * 1e22
                out[0] = -v if neg else v
                return R_OK
    if n_sig <= 19 and -27 <= exp10 <= 27:
        # 17-digit round-trip output ("%.17g", repr) lands here.
        if pgs_ext_scale(mant, <int>exp10, &v):
            out[0] = -v if neg else v
            return R_OK
    return _strtod_span(s, end, out)


cdef int _parse_real(const unsigned char* s, const unsigned char* end,
                     double* out) noexcept nogil:
    """`_scan_real` that must consume all of [s, end)."""
    cdef const unsigned char* stop
    cdef int st = _scan_real(s, end, out, &stop)
    if st == R_OK and stop != end:
        return R_MALFORMED
    if st == R_NONFINITE and stop != end:
        return R_MALFORMED
    return st


cdef inline bint _ends_token(const unsigned char* q, const unsigned char* end) noexcept nogil:
    return q == end or _is_space(q[0])


cdef int _parse_uint(const unsigned char* s, const unsigned char* end,
                     int64_t* out) noexcept nogil:
    """Digits only, at least one, within int64: 0 on success."""
    cdef int64_t v = 0
    cdef int d
    if s == end:
        return 1
    while s < end:
        if not _is_digit(s[0]):
            return 1
        d = s[0] - 48
        if v > (INT64_MAX - d) // 10:
            return 2
        v = v * 10 + d
        s += 1
    out[0] = v
    return 0


cdef int _parse_int(const unsigned char* s, const unsigned char* end,
                    int64_t* out) noexcept nogil:
    """An optionally signed int64."""
    cdef bint neg = False
    cdef int st
    if s < end and (s[0] == 43 or s[0] == 45):
        neg = s[0] == 45
        s += 1
    st = _parse_uint(s, end, out)
    if st == 0 and neg:
        out[0] = -out[0]
    return st


cdef int _cmp_entry(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const Entry*>a).index
    cdef int64_t y = (<const Entry*>b).index
    return (x > y) - (x < y)


cdef int _sort_row(double* data, int32_t* indices, Py_ssize_t n) noexcept nogil:
    """Sort one row's (index, value) pairs by index; 0, or -1 when out of memory."""
    cdef Py_ssize_t i, j
    cdef int32_t ki
    cdef double kv
    cdef Entry* tmp
    if n <= 32:
        for i in range(1, n):
            ki = indices[i]
            kv = data[i]
            j = i - 1
            while j >= 0 and indices[j] > ki:
                indices[j + 1] = indices[j]
                data[j + 1] = data[j]
                j -= 1
            indices[j + 1] = ki
            data[j + 1] = kv
        return 0
    tmp = <Entry*>malloc(n * sizeof(Entry))
    if tmp == NULL:
        return -1
    for i in range(n):
        tmp[i].index = indices[i]
        tmp[i].value = data[i]
    qsort(tmp, n, sizeof(Entry), _cmp_entry)
    for i in range(n):
        indices[i] = <int32_t>tmp[i].index
        data[i] = tmp[i].value
    free(tmp)
    return 0


cdef inline Py_ssize_t _token_end(const unsigned char* buf, Py_ssize_t p,
                                  Py_ssize_t eff) noexcept nogil:
    while p < eff and not _is_space(buf[p]):
        p += 1
    return p


cdef inline void _fail(BlockResult* r, int status, Py_ssize_t line_start,
                       Py_ssize_t tok_start, Py_ssize_t tok_end,
                       int64_t value=0) noexcept nogil:
    r.status = status
    r.err_line_start = line_start
    r.err_token_start = tok_start
    r.err_token_end = tok_end
    r.err_value = value


cdef void _count_bytes(const unsigned char* buf, Py_ssize_t n, Py_ssize_t* newlines,
                       Py_ssize_t* colons, Py_ssize_t* commas) noexcept nogil:
    """Upper bounds for the output sizes: lines, index:value pairs, extra labels."""
    cdef Py_ssize_t i, nl = 0, co = 0, cm = 0
    cdef unsigned char c
    for i in range(n):
        c = buf[i]
        nl += c == 10
        co += c == 58
        cm += c == 44
    newlines[0] = nl
    colons[0] = co
    commas[0] = cm


cdef void _parse_lines(const unsigned char* buf, Py_ssize_t n, bint multilabel,
                       bint require_qid, int64_t min_index, int64_t max_index,
                       double* y, int64_t* qid, int64_t* indptr, double* data,
                       int32_t* indices, double* labels, int64_t* label_ptr,
                       BlockResult* r) noexcept nogil:
    """Parse whole lines of buf[0:n]; fill the outputs and `r` (stops at the first error)."""
    cdef Py_ssize_t pos = 0, line_start, line_end, eff, p, t, row = 0, nnz = 0, nlab = 0
    cdef Py_ssize_t row_nnz0, i, lab0, a, b
    cdef const unsigned char* hit
    cdef const unsigned char* stop
    cdef int st
    cdef double v
    cdef int64_t idx, prev, q
    cdef Py_ssize_t k, n_newlines = 0
    cdef bint in_order, first, has_qid, too_large
    cdef int64_t lo = INT64_MAX, hi = -1

    indptr[0] = 0
    if multilabel:
        label_ptr[0] = 0
    r.status = OK
    while pos < n:
        line_start = pos
        hit = <const unsigned char*>memchr(buf + pos, 10, n - pos)
        line_end = (hit - buf) if hit != NULL else n
        n_newlines += hit != NULL
        pos = line_end + 1
        hit = <const unsigned char*>memchr(buf + line_start, 35, line_end - line_start)
        eff = (hit - buf) if hit != NULL else line_end

        p = line_start
        while p < eff and _is_space(buf[p]):
            p += 1
        if p == eff:
            continue   # blank or comment-only line

        # -- target(s)
        if multilabel:
            t = _token_end(buf, p, eff)
            lab0 = nlab
            if memchr(buf + p, 58, t - p) == NULL:
                a = p
                while a <= t:
                    b = a
                    while b < t and buf[b] != 44:   # ','
                        b += 1
                    st = _parse_real(buf + a, buf + b, &v)
                    if st != R_OK:
                        _fail(r, E_TARGET_NONFINITE if st != R_MALFORMED else E_TARGET,
                              line_start, p, t)
                        return
                    # insertion keeps the row's labels sorted, as scikit-learn does
                    i = nlab
                    while i > lab0 and labels[i - 1] > v:
                        labels[i] = labels[i - 1]
                        i -= 1
                    labels[i] = v
                    nlab += 1
                    a = b + 1
                p = t
            # else: a line without labels; its first token is a feature
            label_ptr[row + 1] = nlab
        else:
            st = _scan_real(buf + p, buf + eff, &v, &stop)
            if st != R_OK or not _ends_token(stop, buf + eff):
                t = _token_end(buf, p, eff)
                _fail(r, E_TARGET_NONFINITE if st != R_MALFORMED and _ends_token(
                    stop, buf + eff) else E_TARGET, line_start, p, t)
                return
            y[row] = v
            p = stop - buf

        # -- qid and index:value pairs, read in one pass over the bytes
        row_nnz0 = nnz
        prev = -1
        in_order = True
        first = True
        has_qid = False
        while True:
            while p < eff and _is_space(buf[p]):
                p += 1
            if p == eff:
                break
            if first and buf[p] == 113:   # 'q': "qid:<int>" right after the target
                t = _token_end(buf, p, eff)
                if t - p >= 3 and buf[p + 1] == 105 and buf[p + 2] == 100:
                    # any token starting "qid" is a query id to scikit-learn
                    if (t - p < 4 or buf[p + 3] != 58
                            or _parse_int(buf + p + 4, buf + t, &q) != 0):
                        _fail(r, E_QID, line_start, p, t)
                        return
                    qid[row] = q
                    has_qid = True
                    first = False
                    p = t
                    continue
            first = False
            # index: digits up to the ':' (beyond max_index, the rest is only scanned)
            k = p
            idx = 0
            too_large = False
            while k < eff and _is_digit(buf[k]):
                if not too_large:
                    idx = idx * 10 + (buf[k] - 48)
                    too_large = idx > max_index
                k += 1
            if k == p or k == eff or buf[k] != 58:
                t = _token_end(buf, p, eff)
                _fail(r, E_INDEX if memchr(buf + p, 58, t - p) != NULL else E_TOKEN,
                      line_start, p, t)
                return
            if too_large:
                _fail(r, E_INDEX_TOO_LARGE, line_start, p, _token_end(buf, p, eff))
                return
            if idx < min_index:
                _fail(r, E_INDEX_BELOW_MIN, line_start, p, _token_end(buf, p, eff), idx)
                return
            st = _scan_real(buf + k + 1, buf + eff, &v, &stop)
            if st != R_OK or not _ends_token(stop, buf + eff):
                t = _token_end(buf, p, eff)
                _fail(r, E_VALUE_NONFINITE if st != R_MALFORMED and _ends_token(
                    stop, buf + eff) else E_VALUE, line_start, p, t)
                return
            indices[nnz] = <int32_t>idx
            data[nnz] = v
            nnz += 1
            if idx <= prev:
                in_order = False
            prev = idx
            if idx < lo:
                lo = idx
            if idx > hi:
                hi = idx
            p = stop - buf

        if require_qid and not has_qid:
            _fail(r, E_MISSING_QID, line_start, line_start, eff)
            return
        if not in_order:
            if _sort_row(data + row_nnz0, indices + row_nnz0, nnz - row_nnz0) != 0:
                _fail(r, E_NOMEM, line_start, line_start, eff)
                return
            for i in range(row_nnz0 + 1, nnz):
                if indices[i] == indices[i - 1]:
                    _fail(r, E_DUPLICATE, line_start, line_start, eff, indices[i])
                    return
        row += 1
        indptr[row] = nnz

    r.n_rows = row
    r.nnz = nnz
    r.n_lines = n_newlines
    r.n_labels = nlab
    r.min_index = lo
    r.max_index = hi


def count_lines(const unsigned char[::1] buf, Py_ssize_t end=-1):
    """Number of newline bytes in ``buf[:end]`` (all of it by default)."""
    cdef Py_ssize_t nl, co, cm
    if end < 0 or end > buf.shape[0]:
        end = buf.shape[0]
    if end == 0:
        return 0
    with nogil:
        _count_bytes(&buf[0], end, &nl, &co, &cm)
    return nl


def last_newline(const unsigned char[::1] buf, Py_ssize_t n):
    """Index of the last newline in ``buf[:n]``, or -1."""
    cdef Py_ssize_t i = min(n, buf.shape[0]) - 1
    with nogil:
        while i >= 0 and buf[i] != 10:
            i -= 1
    return i


cdef _scratch(arr, Py_ssize_t n, dtype):
    if (arr is not None and arr.dtype == dtype and arr.ndim == 1 and arr.shape[0] >= n
            and arr.flags.c_contiguous and arr.flags.writeable):
        return arr
    return np.empty(n, dtype=dtype)


def parse_block(const unsigned char[::1] buf, bint multilabel=False, bint require_qid=False,
                int64_t min_index=0, int64_t max_index=MAX_INDEX, data_buf=None,
                index_buf=None):
    """Parse a buffer of whole svmlight lines.

    Parameters
    ----------
    buf : contiguous uint8 buffer
        Whole lines (the last may lack its newline).
    multilabel : bool
        Targets are comma-separated label lists.
    require_qid : bool
        Every data line must carry ``qid:``.
    min_index, max_index : int
        Smallest and largest allowed feature index as written (min_index is 1 for
        one-based files, else 0; max_index at most `MAX_INDEX`, so that indices
        are stored as int32).
    data_buf, index_buf : ndarray, optional
        Scratch arrays to reuse for the values (float64) and the indices (int32)
        when at least ``len(buf) // 4 + 2`` long (reusing them spares the page
        faults of fresh memory); the returned ``data`` and ``indices`` are then
        views of them.

    Returns
    -------
    dict
        ``status`` (0 on success) and, on success, ``y``, ``qid``, ``indptr``,
        ``data``, ``indices``, ``labels``, ``label_ptr`` (exact-length arrays),
        ``n_rows``, ``nnz``, ``min_index``, ``max_index`` (-1 without features),
        ``n_lines`` (newline count); on failure ``line_start``, ``token_start``,
        ``token_end`` (byte offsets in `buf`) and ``value``.
    """
    if not 0 <= min_index <= max_index <= MAX_INDEX:
        raise ValueError(f"need 0 <= min_index <= max_index <= {MAX_INDEX}, got "
                         f"{min_index} and {max_index}")
    cdef Py_ssize_t n = buf.shape[0]
    cdef BlockResult r
    # Rows: counted (memchr is cheap, and numpy backs large arrays with huge pages,
    # so a loose bound would cost a 2 MB page fault per array). Pairs: a bound (an
    # index:value pair takes >= 4 bytes with its separator); the pages never
    # written cost no memory, and callers recycle these arrays.
    cdef Py_ssize_t nl = 0
    cdef const unsigned char* hit
    cdef const unsigned char* at
    if n > 0:
        with nogil:
            at = &buf[0]
            hit = <const unsigned char*>memchr(at, 10, n)
            while hit != NULL:
                nl += 1
                hit = <const unsigned char*>memchr(hit + 1, 10, n - (hit + 1 - at))
    cdef Py_ssize_t rows_cap = nl + 2, nnz_cap = n // 4 + 2
    cdef double[::1] y = np.empty(rows_cap, dtype=np.float64)
    cdef int64_t[::1] qid = np.zeros(rows_cap, dtype=np.int64)
    cdef int64_t[::1] indptr = np.empty(rows_cap + 1, dtype=np.int64)
    cdef double[::1] data = _scratch(data_buf, nnz_cap, np.float64)
    cdef int32_t[::1] indices = _scratch(index_buf, nnz_cap, np.int32)
    cdef double[::1] labels = np.empty(n // 2 + 2 if multilabel else 1, dtype=np.float64)
    cdef int64_t[::1] label_ptr = np.empty((rows_cap + 1) if multilabel else 1, dtype=np.int64)
    r.n_rows = 0
    r.nnz = 0
    r.n_labels = 0
    r.n_lines = 0
    r.min_index = -1
    r.max_index = -1
    r.status = OK
    indptr[0] = 0
    label_ptr[0] = 0
    if n > 0:
        with nogil:
            _parse_lines(&buf[0], n, multilabel, require_qid, min_index, max_index, &y[0],
                         &qid[0], &indptr[0], &data[0], &indices[0], &labels[0],
                         &label_ptr[0], &r)
    if r.status != OK:
        return dict(status=r.status, line_start=r.err_line_start,
                    token_start=r.err_token_start, token_end=r.err_token_end,
                    value=r.err_value)
    return dict(
        status=OK,
        n_rows=r.n_rows,
        nnz=r.nnz,
        n_lines=r.n_lines,
        min_index=r.min_index if r.nnz > 0 else -1,
        max_index=r.max_index,
        # small per-row arrays are copied so the large reservations are released
        y=y.base[:r.n_rows].copy(),
        qid=qid.base[:r.n_rows].copy(),
        indptr=indptr.base[:r.n_rows + 1].copy(),
        data=data.base[:r.nnz],
        indices=indices.base[:r.nnz],
        labels=labels.base[:r.n_labels].copy() if multilabel else None,
        label_ptr=label_ptr.base[:r.n_rows + 1].copy() if multilabel else None,
    )
