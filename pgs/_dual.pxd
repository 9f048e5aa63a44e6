# The dual vector of the Primal Gradient Solver: the p-norm generalisation of
# scikit-learn's WeightVector (sklearn/utils/_weight_vector.pyx.tp).
#
# PGS keeps the dual accumulator lam (minus the sum of the sampled subgradients) and
# maps it to the iterate w_t = grad r*(lam / (t sigma)). In the form of docs/design.md
# section 3 the map costs O(1) per iteration and an update O(non-zeros touched):
#
#     u_j = sign(lam_j) (|lam_j| / S)^(q-1)         (p = 2: u is lam)
#     Q   = sum_j (|lam_j| / S)^q                   (so ||lam||_q = S Q^(1/q))
#     w_t = c_t u,   c_t = (p-1) S Q^(2/q - 1) / ((t + t0) sigma),  times min(1, B / ||w||_p)
#
# S is a unit that keeps the powers in range for large q (rescaled when Q leaves
# [2^-64, 2^64]). The average of the iterates is kept lazily in one more vector: the sum
# of w_1 .. w_t is C u - wsum with C the sum of the c_s since the last fold, and an
# update of u_j adds C (u_j' - u_j) to wsum_j. For p < 1.2 (q > 6), where c_t can fall
# 1e13-fold in one update and C u - wsum would cancel, the average is kept by spans
# instead (wsum plus clast_j, the C at coordinate j's last update).
#
# The methods are `cdef inline ... noexcept nogil` functions taking a DualVector*:
#
#     dual_dot(dv, row)          <x, u> over a CSR row (w = c u: the margin is c times it)
#     dual_add(dv, row, g)       lam += g x, keeping u, Q and the average consistent
#     dual_truncate(dv, row, ...)  the l1 term's truncation the row's coordinates are owed
#     dual_maintain(dv)          Q's drift, cancellation and range (O(n), rarely)
#     dual_set_scale(dv, tsig)   c from Q, sigma and t: O(1)
#     dual_project(dv, B, tsig)  ||w||_p <= B by rescaling c: O(1)
#     dual_add_to_average(dv, t, rho)  the average's C += rho c (and its rare folds)
#     dual_renormalise(dv, f)    lam *= f keeping w (a step schedule's growing weight)
#     dual_write_w(dv, out)      out = c u
#     dual_average_to(dv, out, n)  the weighted mean of the iterates
#
# The variants of p live inside the type, one update each, chosen by a switch per row
# in dual_add: p = 2 (u is lam), p = 1.5 (u_j = t |t|, t = lam_j / S, computed where it
# is read: one array, as p = 2's) and every other p, whose row is staged by chunks and
# its powers taken in a tight loop (the vector power of pgs/_powers.h, four at a time
# with AVX2: bench/results/variants.md at commit 3c11a81, with the retired script
# bench/experiments/exp_variants.py that timed it build against build).
#
# Rows are CSR slices (data + lo .. data + hi) with an implicit constant column: the
# last coordinate, n - 1, has the value `icpt` in every row (0: no intercept).
#
# A block of K outputs (the K-output losses: docs/multiclass.md) keeps its K dual vectors
# in shared buffers, each feature's K coordinates adjacent: output c's lam_j at
# lam[K j + c] (its DualVector's lam points at offset c, stride K; 2 K for lam and u
# interleaved; wstride K for wsum, clast and paid). A row's K margins (`dual_dot_block`)
# and updates then share its features' cache lines instead of missing on K vectors. One
# output keeps its own p = 2 margin and update: the block's at R = 1 took 1.25-2.1x the
# time of a pass (bench/results/stride_r.md).

from libc.math cimport sqrt, fabs, copysign, exp2, log2, NAN
from libc.stdint cimport int32_t, int64_t


cdef extern from "_powers.h" nogil:
    void pgs_powers_init() noexcept
    int pgs_powers_simd() noexcept
    void pgs_pow_n(const double* a, double* out, Py_ssize_t n, double e) noexcept


ctypedef fused floating_t:
    float
    double

ctypedef fused index_t:
    int32_t
    int64_t


# How u_j = a^(q-1) is taken from a = |lam_j| / S.
cdef enum PKind:
    P_TWO = 0       # p = 2: u is lam itself
    P_Q3 = 1        # p = 1.5 (q = 3): a * a, computed from lam where read (u NULL)
    P_GENERAL = 2   # any other p in (1, 2): the vector power, by chunks of a row

cdef enum:
    POW_CHUNK = 128     # entries of a row staged per call of dual_powers (p < 2 but 1.5)

# p < 2: Q stays within [Q_LO, Q_HI] (S rescaled) and is recomputed when it falls below
# Q_CANCEL times the terms added since. The average folds when C > C_RESTART c (its
# rounding stays bounded), and is kept by spans above SPANS_Q (p < 1.2: the one-vector
# form missed the tests' 1e-12 at p = 1.01-1.05, held from p = 1.1).
cdef extern from *:
    """
    #define PGS_Q_LO 0x1p-64
    #define PGS_Q_HI 0x1p64
    #define PGS_Q_CANCEL 0x1p-12
    #define PGS_C_RESTART 65536.0
    #define PGS_SPANS_Q 6.0
    #define PGS_U_MAX 1e300
    """
    const double Q_LO "PGS_Q_LO"
    const double Q_HI "PGS_Q_HI"
    const double Q_CANCEL "PGS_Q_CANCEL"
    const double C_RESTART "PGS_C_RESTART"
    const double SPANS_Q "PGS_SPANS_Q"
    const double U_MAX "PGS_U_MAX"     # the l1 term's U saturates here (pgs/_core.pyx)


cdef struct DualVector:
    double* lam             # lam_j is lam[stride * j]
    # u_j is u[stride * j]; p = 2: u is lam and stride is 1; NULL (p = 1.5 only):
    # u_j = t |t|, t = lam_j / S, computed where it is read (dual_u)
    double* u
    # 1, or 2 for lam and u interleaved in one buffer (p < 2); in a block of R outputs
    # (each feature's R coordinates adjacent: docs/multiclass.md) R, or 2 R
    Py_ssize_t stride
    Py_ssize_t wstride      # wsum_j, clast_j, paid_j are at wstride * j (1, or R in a block)
    double* wsum            # the average's vector (NULL: no average)
    double* clast           # the average's span starts (p < 1.2 only, else NULL)
    Py_ssize_t n            # coordinates: the features and the constant column
    int kind                # a PKind
    double p
    double q
    double ratio_hi         # p < 2: a ratio |lam_j| / S past this would overflow Q
    double S                # p < 2: the unit of lam in u and Q (1 for p = 2)
    double inv_S
    double Q                # sum_j (|lam_j| / S)^q ...
    double Q_comp           # ... with Neumaier's compensation
    double Q_abs            # p < 2: the terms added to Q since it was exact
    long long n_updates     # coordinate updates since Q was exact
    long long recompute_every
    double c                # w = c u
    double norm_lam         # ||lam||_q (from dual_set_scale)
    double C                # the average: the sum of c since the last fold
    # The l1 term (docs/sparse.md; l1 nonzero): p = 2 reads every feature's lam_j truncated
    # towards 0 by U (dual averaging: lam keeps every gradient, paid is NULL); p < 2 keeps
    # lam truncated, coordinate j owing U - paid_j (`_pay`, `dual_truncate`)
    int l1
    double* paid
    double U
    # p = 2 with l1 and a radius B (l1_Q): Q = sum_j lam_j^2 over the features' lam_j
    # truncated by U_Q (U when Q was last recomputed exactly) and the constant column's: a
    # bound on the truncated iterate's norm, made exact where the projection onto B needs
    # it (`dual_project`); without B, Q (unread) keeps lam's
    bint l1_Q
    double U_Q


cdef inline int dual_kind(double p) noexcept nogil:
    """The PKind of p (p = 1.5 to 1e-12)."""
    if p == 2.0:
        return P_TWO
    if fabs(p - 1.5) < 1e-12:
        return P_Q3
    return P_GENERAL


cdef inline void dual_powers(int kind, double qm1, const double* a, double* out,
                             Py_ssize_t n) noexcept nogil:
    """out = a^(q-1) for n values a >= 0 (out may be a), as the updates take them."""
    cdef Py_ssize_t i
    if kind == P_TWO:
        for i in range(n):
            out[i] = a[i]
    elif kind == P_Q3:
        for i in range(n):
            out[i] = a[i] * a[i]
    else:
        pgs_pow_n(a, out, n, qm1)


cdef inline double dual_u(const DualVector* dv, Py_ssize_t j) noexcept nogil:
    """u_j, stored or (u NULL: p = 1.5) computed from lam_j; a parked u_j is 0."""
    cdef double t
    if dv.u != NULL:
        return dv.u[dv.stride * j]
    t = dv.lam[dv.stride * j] * dv.inv_S
    return 0.0 if fabs(t) > dv.ratio_hi else t * fabs(t)


cdef inline double _tr(double v, double owed) noexcept nogil:
    """v truncated towards 0 by owed >= 0, stopping at 0 (owed 0: v itself)."""
    cdef double a = fabs(v) - owed
    return copysign(a, v) if a > 0.0 else 0.0


cdef inline double _pay(DualVector* dv, Py_ssize_t j, double v) noexcept nogil:
    """lam_j = v truncated by what coordinate j (a feature) owes, U - paid_j, and paid_j
    raised by what it paid (a debt beyond |v| stays owed)."""
    cdef double* paid = &dv.paid[dv.wstride * j]
    cdef double a = fabs(v) - (dv.U - paid[0])
    if a > 0.0:
        paid[0] = dv.U
        return copysign(a, v)
    paid[0] += fabs(v)
    return 0.0


# ------------------------------------------------------------------------- dot

cdef extern from "_portable.h":
    void PGS_PREFETCH(const void* p) noexcept nogil


cdef inline double _u_at(const double* v, Py_ssize_t j, Py_ssize_t sd, bint q3, double inv_S,
                         const double* paid, Py_ssize_t ps, double U, bint l1) noexcept nogil:
    """u_j from v = u at stride sd, or (`q3`, p = 1.5) from v = lam at stride sd: t |t|,
    t = lam_j / S; with `l1` of lam_j truncated by U - paid_j (p = 1.5; paid at stride ps),
    or by U (p = 2: dual averaging). (`q3` and `l1` are constants; no parked u_j here:
    the dual vector rescales before the next margin.)"""
    cdef double t
    if q3:
        t = (_tr(v[sd * j], U - paid[ps * j]) if l1 else v[sd * j]) * inv_S
        return t * fabs(t)
    return _tr(v[sd * j], U) if l1 else v[sd * j]


cdef struct Ahead:            # the entries of the row drawn a few places on, to prefetch
    const char* a
    const char* a_end
    const char* b
    const char* b_end


cdef inline Ahead _ahead(const floating_t* data, const index_t* indices, Py_ssize_t lo,
                         Py_ssize_t hi) noexcept nogil:
    return Ahead(<const char*>(data + lo), <const char*>(data + hi),
                 <const char*>(indices + lo), <const char*>(indices + hi))


cdef inline void _ahead_line(Ahead* ah) noexcept nogil:
    """Prefetch the next line of the row ahead: one per four entries of the current row,
    spread out, so that the prefetches do not fill the core's few line-fill buffers at
    once (a burst stalls the loop). (With _core.pyx's ring: 28-44% less time where X
    outgrows the caches.)"""
    if ah.a < ah.a_end:
        PGS_PREFETCH(ah.a)
        ah.a += 64
    elif ah.b < ah.b_end:
        PGS_PREFETCH(ah.b)
        ah.b += 64


cdef inline void _ahead_rest(Ahead* ah) noexcept nogil:
    """The lines left (a short row leaves some of the next one's)."""
    while ah.a < ah.a_end or ah.b < ah.b_end:
        _ahead_line(ah)


# What a margin reads, a compile-time constant of `_dot` (Cython emits one `_dot` each, so
# no power or l1 test is left in the loop over the row's entries; GCC would not clone the
# one function that took them as arguments: at p = 1.5 a pass took 1.24x the
# instructions, bench/results/one_loop.md). One output's u at p = 2 and other p take
# their strides as constants; the other modes, and a block's outputs, the dual vector's
# (bench/results/block_modes.md).
cdef struct DotTwo:         # u at stride 1 (p = 2: u is lam)
    char _unused
cdef struct DotPow:         # other p: u interleaved with lam (stride 2)
    char _unused
cdef struct DotU:           # u at the dual vector's stride (an output of a block)
    char _unused
cdef struct DotTwoL1:       # p = 2 with l1: lam_j truncated by U
    char _unused
cdef struct DotQ3:          # p = 1.5: u_j = t |t|, t = lam_j / S
    char _unused
cdef struct DotQ3L1:        # p = 1.5 with l1: of lam_j as its debt leaves it
    char _unused
ctypedef fused dot_mode:
    DotTwo
    DotPow
    DotU
    DotTwoL1
    DotQ3
    DotQ3L1


cdef inline double _dot(dot_mode* mode, const DualVector* dv, const floating_t* data,
                        const index_t* indices, Py_ssize_t lo, Py_ssize_t hi, double icpt,
                        Py_ssize_t nxt_lo, Py_ssize_t nxt_hi) noexcept nogil:
    """`dual_dot` for the `mode` (`_u_at`)."""
    cdef Py_ssize_t sd = 1 if dot_mode is DotTwo else 2 if dot_mode is DotPow else dv.stride
    cdef bint q3 = dot_mode is DotQ3 or dot_mode is DotQ3L1
    cdef bint l1 = dot_mode is DotTwoL1 or dot_mode is DotQ3L1
    cdef const double* u = dv.lam if q3 else dv.u
    cdef Py_ssize_t ps = dv.wstride
    cdef const double* paid = dv.paid
    cdef double U = dv.U
    cdef double inv_S = dv.inv_S
    cdef size_t n_feat = <size_t>(dv.n - 1)
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t jj = lo
    cdef Ahead ah = _ahead(data, indices, nxt_lo, nxt_hi)
    while jj + 4 <= hi:
        if (<size_t>indices[jj] >= n_feat or <size_t>indices[jj + 1] >= n_feat
                or <size_t>indices[jj + 2] >= n_feat or <size_t>indices[jj + 3] >= n_feat):
            return NAN
        _ahead_line(&ah)
        s0 += data[jj] * _u_at(u, indices[jj], sd, q3, inv_S, paid, ps, U, l1)
        s1 += data[jj + 1] * _u_at(u, indices[jj + 1], sd, q3, inv_S, paid, ps, U, l1)
        s2 += data[jj + 2] * _u_at(u, indices[jj + 2], sd, q3, inv_S, paid, ps, U, l1)
        s3 += data[jj + 3] * _u_at(u, indices[jj + 3], sd, q3, inv_S, paid, ps, U, l1)
        jj += 4
    while jj < hi:
        if <size_t>indices[jj] >= n_feat:
            return NAN
        s0 += data[jj] * _u_at(u, indices[jj], sd, q3, inv_S, paid, ps, U, l1)
        jj += 1
    _ahead_rest(&ah)
    return ((s0 + s1) + (s2 + s3)) + icpt * _u_at(u, dv.n - 1, sd, q3, inv_S, NULL, 0, 0.0, False)


cdef inline double dual_dot(const DualVector* dv, const floating_t* data,
                            const index_t* indices, Py_ssize_t lo, Py_ssize_t hi, double icpt,
                            Py_ssize_t nxt_lo, Py_ssize_t nxt_hi) noexcept nogil:
    """<x, u> for the row data[lo:hi] (with the constant column icpt).

    NaN if a column index is outside [0, n - 1): X's entries are checked here, before u
    is read at them, and a non-finite value makes the result non-finite, so a bad row
    stops the loop before it changes anything. Entries [nxt_lo, nxt_hi) (the row drawn
    a few places on; empty for none) are prefetched meanwhile. Four partial sums: one
    would chain an add latency per entry. With l1, p = 2 and 1.5 read lam_j as the l1 term
    leaves it, changing nothing; other p's rows pay first (`dual_truncate`). The mode is
    chosen here, once a row: p = 2 and other p read u at stride 1 and 2 as constants (one
    output: where the binary loop spends its time), the others, and an output of a block
    (`dual_dot_block`), at the dual vector's stride.
    """
    if dv.u == NULL:
        if dv.l1:
            return _dot(<DotQ3L1*>NULL, dv, data, indices, lo, hi, icpt, nxt_lo, nxt_hi)
        return _dot(<DotQ3*>NULL, dv, data, indices, lo, hi, icpt, nxt_lo, nxt_hi)
    if dv.l1 and dv.kind == P_TWO:
        return _dot(<DotTwoL1*>NULL, dv, data, indices, lo, hi, icpt, nxt_lo, nxt_hi)
    if dv.stride == 1:
        return _dot(<DotTwo*>NULL, dv, data, indices, lo, hi, icpt, nxt_lo, nxt_hi)
    if dv.stride == 2:
        return _dot(<DotPow*>NULL, dv, data, indices, lo, hi, icpt, nxt_lo, nxt_hi)
    return _dot(<DotU*>NULL, dv, data, indices, lo, hi, icpt, nxt_lo, nxt_hi)


cdef inline void _dot_block(const DualVector* dv, Py_ssize_t K, const floating_t* data,
                            const index_t* indices, Py_ssize_t lo, Py_ssize_t hi,
                            double icpt, Py_ssize_t nxt_lo, Py_ssize_t nxt_hi,
                            double* acc, double* z, bint q3) noexcept nogil:
    """`dual_dot_block` of one block (acc: scratch of 4 K): each entry read once,
    its K coordinates in one pass over them (output c's lam_j at lam[K j + c]: its u_j
    at p = 2; with `q3`, p = 1.5, u_j computed from it as `_u_at` computes it), summed
    as `_dot` sums (four partial sums), so each z[c] has `dual_dot`'s bits; the next
    row's entries prefetched as `_dot` does. (q3 is a constant.)"""
    cdef const double* lam = dv[0].lam
    cdef const double* wsum = dv[0].wsum
    cdef const double* row
    cdef Py_ssize_t jj, c, e, n4 = lo + ((hi - lo) & ~3)
    cdef double x, t
    cdef Ahead ah = _ahead(data, indices, nxt_lo, nxt_hi)
    for jj in range(lo, hi):
        if <size_t>indices[jj] >= <size_t>(dv[0].n - 1):
            for c in range(K):
                z[c] = NAN
            return
    for c in range(4 * K):
        acc[c] = 0.0
    for jj in range(lo, hi):
        x = data[jj]
        row = lam + K * indices[jj]
        e = K * ((jj - lo) & 3) if jj < n4 else 0
        for c in range(K):
            if q3:
                t = row[c] * dv[c].inv_S
                acc[e + c] += x * (t * fabs(t))
            else:
                acc[e + c] += x * row[c]
        if wsum != NULL:        # (the average's lines, for the row's update: 0.7x the time)
            for c in range(0, K, 8):
                PGS_PREFETCH(wsum + (row - lam) + c)
            PGS_PREFETCH(wsum + (row - lam) + K - 1)
        if ((jj - lo) & 3) == 0:
            _ahead_line(&ah)
    _ahead_rest(&ah)
    row = lam + K * (dv[0].n - 1)
    for c in range(K):
        if q3:
            t = row[c] * dv[c].inv_S
            x = t * fabs(t)
        else:
            x = row[c]
        z[c] = ((acc[c] + acc[K + c]) + (acc[2 * K + c] + acc[3 * K + c])) + icpt * x


cdef inline void dual_dot_block(const DualVector* dv, Py_ssize_t K, const floating_t* data,
                                const index_t* indices, Py_ssize_t lo, Py_ssize_t hi,
                                double icpt, Py_ssize_t nxt_lo, Py_ssize_t nxt_hi,
                                double* z, bint one_block) noexcept nogil:
    """z[c] = <x, u_c> (`dual_dot`) for each output c of a block of K, dv[c] its dual
    vector, and z of length 5 K (scratch beyond K): `one_block` (the K outputs one block at
    p = 2 or 1.5 without l1: output c's lam_j and wsum_j at lam[K j + c] and wsum[K j + c]
    of output 0's; `_pgs_loop` of pgs/_core.pyx reads it from the state's layout), each
    entry's K coordinates in one pass (`_dot_block`), else output by output (`dual_dot`; as each
    feature's K coordinates are adjacent the first output's reads bring the others'
    lines: docs/multiclass.md)."""
    cdef Py_ssize_t c
    cdef bint q3 = dv[0].u == NULL
    if one_block:
        if q3:
            _dot_block(dv, K, data, indices, lo, hi, icpt, nxt_lo, nxt_hi, z + K, z, True)
        else:
            _dot_block(dv, K, data, indices, lo, hi, icpt, nxt_lo, nxt_hi, z + K, z, False)
        return
    for c in range(K):
        z[c] = dual_dot(&dv[c], data, indices, lo, hi, icpt, nxt_lo if c == 0 else 0,
                        nxt_hi if c == 0 else 0)


# ------------------------------------------------------------------------- add

cdef inline void _add_to_Q(DualVector* dv, double plus, double minus) noexcept nogil:
    """Q += plus - minus with Neumaier's compensation (the terms come in +/- pairs that
    cancel); Q_abs counts what went in since Q was exact."""
    cdef double t = dv.Q + plus
    if fabs(dv.Q) >= fabs(plus):
        dv.Q_comp += (dv.Q - t) + plus
    else:
        dv.Q_comp += (plus - t) + dv.Q
    dv.Q = t
    if minus != 0.0:
        t = dv.Q - minus
        if fabs(dv.Q) >= minus:
            dv.Q_comp += (dv.Q - t) - minus
        else:
            dv.Q_comp += (-minus - t) + dv.Q
        dv.Q = t
        dv.Q_abs += plus + minus


cdef inline double _coord(Py_ssize_t j, double d, double* lam, Py_ssize_t sd, double* wsum,
                          Py_ssize_t ws, double C, bint average, double U_Q,
                          bint l1) noexcept nogil:
    """p = 2: lam_j += d (u is lam; lam and wsum at strides sd and ws); returns Q's
    change, new^2 - old^2, with `l1` of the values truncated by U_Q (a feature's; average
    and l1: compile-time constants)."""
    cdef double old = lam[sd * j]
    cdef double new = old + d
    lam[sd * j] = new
    if average:
        wsum[ws * j] += C * (new - old)
    if l1:
        old = _tr(old, U_Q)
        new = _tr(new, U_Q)
        return (new - old) * (old + new)
    return d * (old + new)          # without cancellation


# What an update keeps beside lam, a compile-time constant of `_add_row_two` and
# `_add_row_q3` (one function each, as for `_dot`'s modes): the average's vector, and the
# l1 term's work (p = 2 with B: Q of the truncated features; p = 1.5: the debts paid).
cdef struct AddPlain:
    char _unused
cdef struct AddAverage:
    char _unused
cdef struct AddL1:
    char _unused
cdef struct AddAverageL1:
    char _unused
ctypedef fused add_mode:
    AddPlain
    AddAverage
    AddL1
    AddAverageL1


cdef inline void _add_row_two(add_mode* mode, DualVector* dv, const floating_t* data,
                              const index_t* indices, Py_ssize_t lo, Py_ssize_t hi, double g,
                              double icpt) noexcept nogil:
    """`dual_add` for p = 2 (with l1, Q of the truncated features: `DualVector.U_Q`).
    (The fields in locals: the stores to lam could alias them for the compiler.)"""
    cdef bint average = add_mode is AddAverage or add_mode is AddAverageL1
    cdef bint l1 = add_mode is AddL1 or add_mode is AddAverageL1
    cdef double* lam = dv.lam
    cdef double* wsum = dv.wsum
    cdef Py_ssize_t sd = dv.stride, ws = dv.wstride
    cdef double C = dv.C, U_Q = dv.U_Q
    # two partial sums: consecutive entries' adds do not wait for each other
    cdef double dq0 = 0.0, dq1 = 0.0
    cdef Py_ssize_t jj = lo
    while jj + 2 <= hi:
        dq0 += _coord(indices[jj], g * data[jj], lam, sd, wsum, ws, C, average, U_Q, l1)
        dq1 += _coord(indices[jj + 1], g * data[jj + 1], lam, sd, wsum, ws, C, average,
                      U_Q, l1)
        jj += 2
    if jj < hi:
        dq0 += _coord(indices[jj], g * data[jj], lam, sd, wsum, ws, C, average, U_Q, l1)
    if icpt != 0.0:
        dq1 += _coord(dv.n - 1, g * icpt, lam, sd, wsum, ws, C, average, 0.0, False)
    _add_to_Q(dv, dq0 + dq1, 0.0)


cdef inline void _add_row_q3(add_mode* mode, DualVector* dv, const floating_t* data,
                             const index_t* indices, Py_ssize_t lo, Py_ssize_t hi, double g,
                             double icpt) noexcept nogil:
    """`dual_add` for p = 1.5 with u computed from lam (u NULL): Q's terms are a^3, and the
    average takes C (u_j' - u_j) with u_j = t |t| (0 when parked); with l1 (paid set)
    lam_j pays what it owes first."""
    cdef bint average = add_mode is AddAverage or add_mode is AddAverageL1
    cdef bint l1 = add_mode is AddL1 or add_mode is AddAverageL1
    cdef double* lam = dv.lam
    cdef double* wsum = dv.wsum
    cdef Py_ssize_t sd = dv.stride, ws = dv.wstride
    cdef double C = dv.C, inv_S = dv.inv_S, ratio_hi = dv.ratio_hi
    cdef double dq = 0.0, m = 0.0, old, new, a_old, a_new, d
    cdef Py_ssize_t e, j
    cdef Py_ssize_t n_all = hi - lo + (icpt != 0.0)
    for e in range(n_all):
        if e < hi - lo:
            j = indices[lo + e]
            d = g * data[lo + e]
        else:
            j = dv.n - 1
            d = g * icpt
        old = lam[sd * j]
        new = (_pay(dv, j, old) if l1 and e < hi - lo else old) + d
        lam[sd * j] = new
        a_old = fabs(old) * inv_S
        a_new = fabs(new) * inv_S
        if average:
            wsum[ws * j] += C * ((0.0 if a_new > ratio_hi else copysign(a_new * a_new, new))
                                 - (0.0 if a_old > ratio_hi else copysign(a_old * a_old, old)))
        if a_new > ratio_hi:
            dq = NAN
        m += a_old * (a_old * a_old)
        dq += a_new * (a_new * a_new)
    _add_to_Q(dv, dq, m)


cdef inline void _add_row_pow(DualVector* dv, const floating_t* data,
                              const index_t* indices, Py_ssize_t lo, Py_ssize_t hi,
                              double g, double icpt) noexcept nogil:
    """`dual_add` for p < 2 but 1.5: the row (and its constant column, as entry hi - lo) by
    chunks of POW_CHUNK entries: lam_j updated and the ratios a = |lam_j| / S staged,
    their powers a^(q-1) taken in one call (`dual_powers`: a tight loop the CPU
    overlaps), then u_j, Q's terms (a^q new, a_old |u_j| old)
    and the average, in the entries' order (so a column that appears twice reads u_j as
    its first update left it). A ratio past ratio_hi parks u_j at 0 and makes Q NaN:
    `dual_maintain` then rescales before any u is read again."""
    cdef Py_ssize_t cols[POW_CHUNK]
    cdef double newv[POW_CHUNK]
    cdef double a_old[POW_CHUNK]
    cdef double ratio[POW_CHUNK]
    cdef double pw[POW_CHUNK]
    cdef double* lam = dv.lam
    cdef double* u = dv.u
    cdef double* wsum = dv.wsum
    cdef double* clast = dv.clast
    cdef bint one_vector = wsum != NULL and clast == NULL
    cdef Py_ssize_t sd = dv.stride, ws = dv.wstride
    cdef double C = dv.C, inv_S = dv.inv_S, ratio_hi = dv.ratio_hi, qm1 = dv.q - 1.0
    cdef double dq = 0.0, m = 0.0, old, new, d, span, old_u, new_u
    cdef Py_ssize_t n_row = hi - lo
    cdef Py_ssize_t n_all = n_row + (icpt != 0.0)
    cdef Py_ssize_t s = 0, n, t, j
    while s < n_all:
        n = n_all - s if n_all - s < POW_CHUNK else POW_CHUNK
        for t in range(n):
            if s + t < n_row:
                j = indices[lo + s + t]
                d = g * data[lo + s + t]
            else:
                j = dv.n - 1
                d = g * icpt
            old = lam[sd * j]
            new = old + d
            lam[sd * j] = new
            if clast != NULL:
                # u_j was constant since its last update: its span of the C sum. (An
                # empty span is skipped: a second update of j in one iteration must not
                # read a u_j parked at 0 as the iterate's.)
                span = C - clast[ws * j]
                if span != 0.0:
                    wsum[ws * j] += u[sd * j] * span
                clast[ws * j] = C
            cols[t] = j
            newv[t] = new
            a_old[t] = fabs(old) * inv_S
            ratio[t] = fabs(new) * inv_S
        dual_powers(dv.kind, qm1, ratio, pw, n)
        for t in range(n):
            j = cols[t]
            old_u = u[sd * j]
            if ratio[t] > ratio_hi:
                u[sd * j] = 0.0
                if one_vector:
                    wsum[ws * j] -= C * old_u
                dq = NAN
                continue
            new_u = copysign(pw[t], newv[t])
            u[sd * j] = new_u
            if one_vector:
                wsum[ws * j] += C * (new_u - old_u)
            m += a_old[t] * fabs(old_u)
            dq += ratio[t] * pw[t]
        s += n
    _add_to_Q(dv, dq, m)


cdef inline void dual_add(DualVector* dv, const floating_t* data, const index_t* indices,
                          Py_ssize_t lo, Py_ssize_t hi, double g, double icpt,
                          bint pay=True) noexcept nogil:
    """lam += g x for the row data[lo:hi] (and g icpt on the constant column), keeping
    u, Q and the average consistent; with l1 at p = 1.5 and `pay` each lam_j first pays
    what it owes (other p < 2, and `pay` False: `dual_truncate` paid it; p = 2 keeps every
    gradient)."""
    dv.n_updates += hi - lo + (icpt != 0.0)
    if dv.u == NULL:
        if pay and dv.paid != NULL:     # (l1: the debts paid as the row is added)
            if dv.wsum == NULL:
                _add_row_q3(<AddL1*>NULL, dv, data, indices, lo, hi, g, icpt)
            else:
                _add_row_q3(<AddAverageL1*>NULL, dv, data, indices, lo, hi, g, icpt)
        elif dv.wsum == NULL:
            _add_row_q3(<AddPlain*>NULL, dv, data, indices, lo, hi, g, icpt)
        else:
            _add_row_q3(<AddAverage*>NULL, dv, data, indices, lo, hi, g, icpt)
    elif dv.kind != P_TWO:
        _add_row_pow(dv, data, indices, lo, hi, g, icpt)
    elif dv.l1_Q:       # (p = 2 with l1 keeps no average: docs/sparse.md)
        _add_row_two(<AddL1*>NULL, dv, data, indices, lo, hi, g, icpt)
    elif dv.wsum == NULL:
        _add_row_two(<AddPlain*>NULL, dv, data, indices, lo, hi, g, icpt)
    else:
        _add_row_two(<AddAverage*>NULL, dv, data, indices, lo, hi, g, icpt)


cdef inline void _add_block_two(DualVector* dv, Py_ssize_t K, const floating_t* data,
                                const index_t* indices, Py_ssize_t lo, Py_ssize_t hi,
                                const double* g, double icpt, double* dq,
                                bint average) noexcept nogil:
    """`dual_add_block_two` (average: a constant)."""
    cdef double* lam = dv[0].lam
    cdef double* wsum = dv[0].wsum
    cdef double* C = dq + 2 * K
    cdef double* row
    cdef double x, d, old, new
    cdef Py_ssize_t jj, j, c, e, n = hi - lo
    for c in range(K):
        dq[c] = dq[K + c] = 0.0
        C[c] = dv[c].C
    for jj in range(lo, hi + (icpt != 0.0)):
        if jj < hi:
            j, x = indices[jj], data[jj]
            e = K * ((jj - lo) & 1) if jj < lo + (n & ~1) else 0   # (`_add_row_two`'s sums)
        else:
            j, x, e = dv[0].n - 1, icpt, K
        row = lam + K * j
        for c in range(K):
            d = g[c] * x
            old = row[c]
            new = old + d
            row[c] = new
            if average:
                wsum[K * j + c] += C[c] * (new - old)
            dq[e + c] += d * (old + new)
    for c in range(K):
        if g[c] != 0.0:
            dv[c].n_updates += n + (icpt != 0.0)
            _add_to_Q(&dv[c], dq[c] + dq[K + c], 0.0)


cdef inline void dual_add_block_two(DualVector* dv, Py_ssize_t K, const floating_t* data,
                                    const index_t* indices, Py_ssize_t lo, Py_ssize_t hi,
                                    const double* g, double icpt, double* dq) noexcept nogil:
    """`dual_add` of g[c] x to each output c of a wide block (one block at p = 2; dq:
    scratch of 3 K): each entry's K coordinates in one pass, each output's arithmetic that
    of `_add_row_two` (an output with g[c] = 0 adds 0 to its coordinates, which can only
    turn a -0.0 into 0.0; its Q and updates are left alone)."""
    if dv[0].wsum == NULL:
        _add_block_two(dv, K, data, indices, lo, hi, g, icpt, dq, False)
    else:
        _add_block_two(dv, K, data, indices, lo, hi, g, icpt, dq, True)


cdef inline void dual_maintain_block(DualVector* dv, Py_ssize_t K, double* acc) noexcept nogil:
    """`dual_maintain` of every output of a wide block (one block at p = 2) whose Q
    is due (acc: scratch of K): one pass over the block for all of them, each Q summed as
    `dual_exact_Q` sums it (output by output, each pass would read every line of the
    block)."""
    cdef Py_ssize_t c, j
    cdef const double* row
    cdef bint due = False
    for c in range(K):
        acc[c] = 0.0
        due = due or dv[c].n_updates >= dv[c].recompute_every
    if not due:
        return
    for j in range(dv[0].n):
        row = dv[0].lam + K * j
        for c in range(K):
            acc[c] += fabs(row[c]) * fabs(row[c])
    for c in range(K):
        if dv[c].n_updates >= dv[c].recompute_every:
            dv[c].Q = acc[c] * dv[c].inv_S
            dv[c].Q_comp = dv[c].Q_abs = 0.0
            dv[c].n_updates = 0


cdef inline void _add_paid(DualVector* dv, double* d, const int64_t* cols,
                           Py_ssize_t n) noexcept nogil:
    """lam += d at cols (n of them), paying no debt (they were paid)."""
    dual_add(dv, d, cols, 0, n, 1.0, 0.0, False)


cdef inline bint dual_truncate(DualVector* dv, const index_t* indices, Py_ssize_t lo,
                               Py_ssize_t hi) noexcept nogil:
    """The row's coordinates pay what they owe (`_pay`), written to lam: before a margin
    reads u where u is a power of lam (p < 2 but 1.5), and before a batch's updates (k >
    1: each coordinate pays once a step, whichever rows share it). The changes go through
    `dual_add` (by chunks of the non-zero ones), so u, Q and the average follow. False for
    a column index outside [0, n - 1) (nothing changed); the constant column owes nothing."""
    cdef int64_t cols[POW_CHUNK]
    cdef double d[POW_CHUNK]
    cdef Py_ssize_t jj, j, n = 0
    cdef double old, owed
    for jj in range(lo, hi):
        if <size_t>indices[jj] >= <size_t>(dv.n - 1):
            return False
    for jj in range(lo, hi):
        j = indices[jj]
        old = dv.lam[dv.stride * j]
        owed = dv.U - dv.paid[dv.wstride * j]
        if old != 0.0 and owed > 0.0:
            # (old + d is `_pay`'s value exactly: |old| - owed, signed, or 0)
            d[n] = -old if _pay(dv, j, old) == 0.0 else copysign(owed, -old)
            cols[n] = j
            n += 1
            if n == POW_CHUNK:
                _add_paid(dv, d, cols, n)
                n = 0
    if n > 0:
        _add_paid(dv, d, cols, n)
    return True


# ------------------------------------------------------ Q, scale and projection

cdef inline double dual_exact_Q(const DualVector* dv) noexcept nogil:
    """sum_j (|lam_j| / S)^q from lam and u: |lam_j| / S times |u_j| (O(n), rare); p = 2
    with l1 and B (`l1_Q`): of the features' lam_j truncated by U."""
    cdef double acc = 0.0, v
    cdef Py_ssize_t j
    if dv.l1_Q:
        for j in range(dv.n):
            v = dv.lam[dv.stride * j] if j == dv.n - 1 else _tr(dv.lam[dv.stride * j], dv.U)
            acc += v * v
        return acc
    for j in range(dv.n):
        acc += fabs(dv.lam[dv.stride * j]) * fabs(dual_u(dv, j))
    return acc * dv.inv_S


cdef inline void dual_recompute_Q(DualVector* dv) noexcept nogil:
    """Q from scratch (every few n updates, so O(1) per non-zero, and on cancellation)."""
    dv.Q = dual_exact_Q(dv)
    dv.U_Q = dv.U
    dv.Q_comp = 0.0
    dv.Q_abs = 0.0
    dv.n_updates = 0


cdef inline void dual_fold_average(DualVector* dv) noexcept nogil:
    """Restart the average's C sum at 0, keeping the sum of the iterates: wsum -= C u
    (one vector; a parked u_j counts as 0), or every coordinate's open span folded into
    wsum (spans). O(n): at powers of two of t, when C passes C_RESTART c, and before a
    rescale changes u's unit."""
    cdef Py_ssize_t j, ws = dv.wstride
    if dv.wsum == NULL or dv.C == 0.0:
        return
    if dv.clast == NULL:
        for j in range(dv.n):
            dv.wsum[ws * j] -= dv.C * dual_u(dv, j)
    else:
        for j in range(dv.n):
            if dv.C != dv.clast[ws * j]:        # (empty spans skipped, as in the update)
                dv.wsum[ws * j] += dual_u(dv, j) * (dv.C - dv.clast[ws * j])
            dv.clast[ws * j] = 0.0
    dv.C = 0.0


cdef inline void dual_rescale(DualVector* dv) noexcept nogil:
    """p < 2: make the largest |lam_j| the unit S and recompute u and Q (O(n), rare).
    w = c u is unchanged: c absorbs S (dual_set_scale)."""
    cdef double buf[POW_CHUNK]
    cdef Py_ssize_t j, t, n, sd = dv.stride
    cdef double S = 0.0
    dual_fold_average(dv)                   # in the old unit of u, first
    for j in range(dv.n):
        if fabs(dv.lam[sd * j]) > S:
            S = fabs(dv.lam[sd * j])
    dv.S = S if S > 0.0 else 1.0
    dv.inv_S = 1.0 / dv.S
    j = 0
    while j < dv.n and dv.u != NULL:
        n = dv.n - j if dv.n - j < POW_CHUNK else POW_CHUNK
        for t in range(n):
            buf[t] = fabs(dv.lam[sd * (j + t)]) * dv.inv_S
        dual_powers(dv.kind, dv.q - 1.0, buf, buf, n)
        for t in range(n):
            dv.u[sd * (j + t)] = copysign(buf[t], dv.lam[sd * (j + t)])
        j += n
    dual_recompute_Q(dv)


cdef inline void dual_maintain(DualVector* dv) noexcept nogil:
    """After an iteration's updates: Q recomputed where it drifted or cancelled, and
    rescaled (p < 2) where it left [Q_LO, Q_HI] or turned NaN (a parked u_j)."""
    cdef double Qv = dv.Q + dv.Q_comp
    if dv.kind != P_TWO:
        if not (Qv >= Q_LO and Qv <= Q_HI):        # (also true for NaN)
            dual_rescale(dv)
            return
        if Qv < dv.Q_abs * Q_CANCEL:
            dual_recompute_Q(dv)
            return
    if dv.n_updates >= dv.recompute_every:
        dual_recompute_Q(dv)


cdef inline void dual_set_scale(DualVector* dv, double tsig) noexcept nogil:
    """c such that w = grad r*(lam / tsig) = c u (tsig = (t + t0) sigma): O(1)."""
    cdef double Qv = dv.Q + dv.Q_comp
    cdef double norm
    if not Qv > 0.0:
        dv.c = 0.0
        dv.norm_lam = 0.0
        return
    if dv.kind == P_TWO:
        dv.norm_lam = sqrt(Qv)
        dv.c = 1.0 / tsig
        return
    # Q^(1/q) as exp2(log2(Q) / q): 12 ns against pow's 20; its relative error,
    # |log2 Q| / q 2^-53, stays below 4e-15 as Q stays within [2^-64, 2^64].
    norm = exp2(log2(Qv) * (1.0 / dv.q))
    # w = (p-1) ||lam||_q^(2-q) |lam|^(q-1) / tsig, in units of S: (p-1) S Q^(2/q-1) u / tsig
    dv.c = (dv.p - 1.0) * dv.S * (norm * norm / Qv) / tsig
    dv.norm_lam = norm * dv.S


cdef inline void dual_project(DualVector* dv, double B, double tsig) noexcept nogil:
    """w onto ||w||_p <= B (B <= 0: unbounded): ||w||_p = (p-1) ||lam||_q / tsig, and the
    projection onto a norm ball of the mirror map's image is a rescaling: O(1). p = 2 with
    l1: Q's norm bounds the truncated iterate's (`DualVector.U_Q`); where the bound would
    project, Q is first made exact (O(n)) if n / 8 coordinate updates have passed since
    it was (at most 8 operations an update: a B that binds on every step took 143x the
    time when Q was made exact each step), else the projection takes the bound."""
    cdef double norm_w
    if B > 0.0:
        if (dv.l1_Q and dv.U_Q != dv.U and 8 * dv.n_updates >= dv.n
                and (dv.p - 1.0) * dv.norm_lam / tsig > B):
            dual_recompute_Q(dv)
            dual_set_scale(dv, tsig)
        norm_w = (dv.p - 1.0) * dv.norm_lam / tsig
        if norm_w > B:
            dv.c *= B / norm_w


# ------------------------------------------------------------------ iterates

cdef inline void dual_add_to_average(DualVector* dv, long long t, double rho) noexcept nogil:
    """The average takes w_t with weight rho: C += rho c, after a fold where one is due:
    at powers of two of t from n / 8 on (an O(n) fold then costs at most 8 operations an
    iteration; before, C stays below C_RESTART rho c all the same), or past C_RESTART."""
    cdef bint two_power = (t & (t - 1)) == 0 and 8 * t >= dv.n
    if two_power or (dv.C > C_RESTART * rho * dv.c and dv.c > 0.0):
        dual_fold_average(dv)
    dv.C += rho * dv.c


cdef inline void dual_add_to_average_block(DualVector* dv, Py_ssize_t K, long long t,
                                           double rho, double* fold) noexcept nogil:
    """`dual_add_to_average` of every output of a wide block (one block at p = 2)
    with an average (fold: scratch of K): the outputs due a fold fold in one pass over the
    block, each element as `dual_fold_average` folds it (output by output, each pass would
    read every line)."""
    cdef Py_ssize_t c, j
    cdef bint two_power = (t & (t - 1)) == 0 and 8 * t >= dv[0].n, due = False
    cdef double* w
    cdef const double* row
    for c in range(K):
        fold[c] = dv[c].C if dv[c].C != 0.0 and (two_power or (
            dv[c].C > C_RESTART * rho * dv[c].c and dv[c].c > 0.0)) else 0.0
        due = due or fold[c] != 0.0
    if due:
        for j in range(dv[0].n):
            w, row = dv[0].wsum + K * j, dv[0].lam + K * j
            for c in range(K):
                w[c] -= fold[c] * row[c]
    for c in range(K):
        if fold[c] != 0.0:
            dv[c].C = 0.0
        dv[c].C += rho * dv[c].c


cdef inline void dual_renormalise(DualVector* dv, double f) noexcept nogil:
    """lam *= f, w unchanged (the dual point's scale / f; O(n), rare). p < 2: S *= f
    leaves u and Q (kept for lam / S); p = 2 (u is lam): C, c /= f, Q redone."""
    cdef Py_ssize_t j
    for j in range(dv.n):
        dv.lam[dv.stride * j] *= f
    if dv.kind != P_TWO:
        dv.S *= f
        dv.inv_S = 1.0 / dv.S
    else:
        dv.C /= f
        dv.c /= f
        dual_recompute_Q(dv)


cdef inline void dual_write_w(const DualVector* dv, double* out) noexcept nogil:
    """out = w = c u (length n)."""
    cdef Py_ssize_t j
    for j in range(dv.n):
        out[j] = dv.c * dual_u(dv, j)


cdef inline double dual_average_at(const DualVector* dv, Py_ssize_t j, double tt) noexcept nogil:
    """Coordinate j of the weighted mean of the iterates, tt their weights' sum:
    (C u_j - wsum_j) / tt, or with spans (wsum_j + u_j (C - clast_j)) / tt."""
    cdef Py_ssize_t ws = dv.wstride
    if dv.clast == NULL:
        return (dv.C * dual_u(dv, j) - dv.wsum[ws * j]) / tt
    return (dv.wsum[ws * j] + dual_u(dv, j) * (dv.C - dv.clast[ws * j])) / tt


cdef inline void dual_average_to(const DualVector* dv, double* out, double tt) noexcept nogil:
    """out = the weighted mean of the iterates (`dual_average_at`). Element by element, so
    out may be wsum or clast itself (wstride 1)."""
    cdef Py_ssize_t j
    for j in range(dv.n):
        out[j] = dual_average_at(dv, j, tt)
