"""The compiled kernel of the Primal Gradient Solver (Zhu et al., ICDM 2009).

The loop of DESIGN.md section 2 over raw CSR buffers with the GIL released, in
the O(nnz)-per-iteration representation of section 3: ``w_t = c_t * u`` with
``u_j = sign(lam_j) |lam_j|^(q-1)``, ``Q = sum_j |lam_j|^q`` kept current, and
the projection onto ``||w||_p <= B`` a change of the scalar ``c_t``.  One loop
is compiled per loss (a fused tag type), data dtype and index dtype.
"""

from libc.math cimport sqrt, pow, exp2, log2, fabs, copysign, isfinite, INFINITY, NAN
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset
from cython.parallel cimport prange

import numpy as np

cimport pgs._losses as L
from pgs._losses cimport (
    loss_tag, Hinge, Logistic, Squared, SquaredHinge, SmoothHinge, ModifiedHuber,
    Huber, EpsilonInsensitive, Absolute,
)
from pgs._random cimport xoshiro_bounded, xoshiro_next, xoshiro_shuffle

# The order defines the loss ids of pgs/_losses.pxd (LossId).
LOSS_NAMES = (
    "hinge", "logistic", "squared", "squared_hinge", "smooth_hinge",
    "modified_huber", "huber", "epsilon_insensitive", "absolute",
)

ctypedef fused floating_t:
    float
    double

ctypedef fused index_t:
    int32_t
    int64_t


# ------------------------------------------------------------------ scalar helpers

cdef extern from "_powers.h" nogil:
    # a^(q-1) for a buffer of values, four at a time where the CPU has AVX2 (see the
    # header); the one way the kernel takes its powers, so that they do not depend on
    # the path that asks for them.
    int PGS_POW_Q225
    int PGS_POW_GENERAL
    void pgs_powers_init() noexcept
    int pgs_powers_simd() noexcept
    void pgs_powers_use_simd(int on) noexcept
    void pgs_powq_n(const double* a, double* out, Py_ssize_t n, int kind,
                    double qm1) noexcept

pgs_powers_init()

cdef extern from "_rowpow.h" nogil:
    # a row's p = 1.8 or general p (kind) updates four at a time, from the row's
    # start, while no group of four repeats a column; returns how many entries it took
    # (see the header)
    void pgs_rowpow_use(int on) noexcept
    double pgs_copysign(double mag, double sgn) noexcept
    Py_ssize_t pgs_colspow(const int64_t* cols, const double* d, Py_ssize_t n, double* lam,
                           double* u, double inv_S, double ratio_hi, double* dq4,
                           double* m4, double* w, double C, int kind,
                           double qm1) noexcept
    Py_ssize_t pgs_rowpow_f64_i32(
        const double* data, const int32_t* idx, Py_ssize_t n, double g, double* lam, double* u,
        Py_ssize_t sd, double inv_S, double ratio_hi, int64_t icol, double icpt,
        double* dq4, double* m4, double* w, int wshift, double C, int kind,
        double qm1) noexcept
    Py_ssize_t pgs_rowpow_f64_i64(
        const double* data, const int64_t* idx, Py_ssize_t n, double g, double* lam, double* u,
        Py_ssize_t sd, double inv_S, double ratio_hi, int64_t icol, double icpt,
        double* dq4, double* m4, double* w, int wshift, double C, int kind,
        double qm1) noexcept
    Py_ssize_t pgs_rowpow_f32_i32(
        const float* data, const int32_t* idx, Py_ssize_t n, double g, double* lam, double* u,
        Py_ssize_t sd, double inv_S, double ratio_hi, int64_t icol, double icpt,
        double* dq4, double* m4, double* w, int wshift, double C, int kind,
        double qm1) noexcept
    Py_ssize_t pgs_rowpow_f32_i64(
        const float* data, const int64_t* idx, Py_ssize_t n, double g, double* lam, double* u,
        Py_ssize_t sd, double inv_S, double ratio_hi, int64_t icol, double icpt,
        double* dq4, double* m4, double* w, int wshift, double C, int kind,
        double qm1) noexcept

cdef inline int _pow_kind(int p_kind) noexcept nogil:
    return PGS_POW_Q225 if p_kind == P_Q225 else PGS_POW_GENERAL


cdef inline double _pow_qm1(double a, int p_kind, double qm1) noexcept nogil:
    """a^(q-1) for one a >= 0: a multiply for p = 1.5, else `pgs_powq_n` (p = 1.8
    takes a sqrt(sqrt(a)), other p a power)."""
    cdef double r
    if p_kind == P_Q3:
        return a * a
    pgs_powq_n(&a, &r, 1, _pow_kind(p_kind), qm1)
    return r


cdef enum:
    U_IN_LU = 2     # (`_u_at`'s `implicit`: v is st.lu, u_j is v[2j])


cdef inline double _u_at(const double* v, Py_ssize_t j, int implicit,
                         double inv_S) noexcept nogil:
    """u_j: v[j] of the u array, or, for p = 1.5 (`implicit` = 1, v = lam), computed
    from lam: t |t| with t = lam_j / S, the same bits as the stored
    copysign((|lam_j| / S)^2, lam_j). p = 1.5 keeps u implicit during a run, so that its
    updates touch one array as p = 2's do (`pgs_sync_u` writes u out when the run
    returns). With `implicit` = U_IN_LU, v is the interleaved st.lu (p = 1.8 and general
    p, `pgs_lu_wanted`)."""
    cdef double t
    if implicit == U_IN_LU:
        return v[2 * j]
    if implicit:
        t = v[j] * inv_S
        return t * fabs(t)
    return v[j]


cdef inline void _add_compensated(double* s, double* comp, double x) noexcept nogil:
    """s + comp += x with Neumaier's compensation (Q receives +/- pairs that cancel)."""
    cdef double t = s[0] + x
    if fabs(s[0]) >= fabs(x):
        comp[0] += (s[0] - t) + x
    else:
        comp[0] += (x - t) + s[0]
    s[0] = t


cdef inline void _add_to_Q(PGSState* st, double plus, double minus) noexcept nogil:
    """Q += plus - minus, compensated; Q_abs counts what went in since the last exact Q."""
    _add_compensated(&st.Q, &st.Q_comp, plus)
    if minus != 0.0:
        _add_compensated(&st.Q, &st.Q_comp, -minus)
        st.Q_abs += plus + minus


cdef inline double _coord_update(Py_ssize_t j, double delta, double* lam, double* u,
                                 double* wsum, double* clast, double C, int p_kind,
                                 int average, double qm1, double inv_S,
                                 double ratio_hi, double* minus) noexcept nogil:
    """lam_j += delta, keeping u_j and the lazy average consistent.

    Returns Q's new term (p = 2: the whole change of Q); for p < 2 the old term is
    added to `minus`, so the cancellation happens in Q's compensated sum and a
    collapsing large term cannot wipe out Q's small ones. Called with constant
    `p_kind` and `average` so that the C compiler specialises it. If |lam_j| / S
    outgrows `ratio_hi`, u_j is parked at 0 and NaN is returned: Q turns NaN and the
    loop rescales every coordinate before u is read again.

    The average (see `_fold_average`): with spans (clast not NULL: p < 1.2) u_j's span
    of the C sum is added to wsum_j before u_j changes; else C (u_j' - u_j).
    """
    cdef double old = lam[j]
    cdef double new = old + delta
    cdef double old_u, new_u, a_old, a_new
    cdef double span
    if p_kind == P_TWO:
        lam[j] = new
        if average:
            # (p = 2: wsum is the offset of `_fold_average`; u is lam)
            wsum[j] += C * (new - old)
        return delta * (old + new)            # new^2 - old^2, without cancellation
    if average and clast != NULL:
        # u_j was constant since its last fold: add its span of the C sum. (An empty
        # span is skipped: a second update of j in one iteration must not read a u_j
        # parked at 0 as if it had been the iterate's, see below.)
        span = C - clast[j]
        if span != 0.0:
            wsum[j] += u[j] * span
        clast[j] = C
    lam[j] = new
    a_old = fabs(old) * inv_S
    a_new = fabs(new) * inv_S
    if p_kind == P_Q3:
        # u implicit (_u_at): the same terms as below, u untouched. A ratio past
        # ratio_hi makes Q NaN, and the loop rescales before any margin reads lam; until
        # then u_j counts as parked at 0 (the average's terms and `_fold_average`).
        if average:
            old_u = 0.0 if a_old > ratio_hi else pgs_copysign(a_old * a_old, old)
            new_u = 0.0 if a_new > ratio_hi else pgs_copysign(a_new * a_new, new)
            wsum[j] += C * (new_u - old_u)
        if a_new > ratio_hi:
            return NAN
        minus[0] += a_old * (a_old * a_old)
        return a_new * (a_new * a_new)
    old_u = u[j]
    if a_new > ratio_hi:
        u[j] = 0.0
        if average and clast == NULL:
            wsum[j] -= C * old_u
        return NAN
    new_u = copysign(_pow_qm1(a_new, p_kind, qm1), new)
    u[j] = new_u
    if average and clast == NULL:
        wsum[j] += C * (new_u - old_u)
    minus[0] += a_old * fabs(old_u)
    return a_new * fabs(new_u)


cdef enum:
    POW_CHUNK = 128   # updates whose powers are taken together (buffers on the stack)


cdef inline void _pow_stage(int64_t j, double d, Py_ssize_t t, double* lam, double* u,
                            double* wsum, double* clast, double C, int spans,
                            double inv_S, int64_t* cols, double* newv, double* a_old,
                            double* ratio) noexcept nogil:
    """p = 1.8 and general p: the first half of `_coord_update` (lam_j += d and, for an
    average kept by spans (`spans`), u_j's span), with what the second half needs staged
    at slot t."""
    cdef double old = lam[j]
    cdef double new = old + d
    cdef double span
    if spans:
        span = C - clast[j]
        if span != 0.0:
            wsum[j] += u[j] * span
        clast[j] = C
    lam[j] = new
    cols[t] = j
    newv[t] = new
    a_old[t] = fabs(old) * inv_S
    ratio[t] = fabs(new) * inv_S


cdef inline void _finish_one(Py_ssize_t t, const int64_t* cols, const double* newv,
                             const double* a_old, const double* ratio, const double* pw,
                             double* u, double* wsum, int wshift, double C,
                             double ratio_hi, double* dq, double* m) noexcept nogil:
    """Staged update t's u_j and Q's terms (dq: the new one, m: the old one), and with
    wsum (an average in one vector; NULL otherwise) C (u_j' - u_j) added to wsum_j. (u
    and cols may be st.lu's, at stride 2^wshift; wsum has stride 1.)"""
    cdef int64_t j = cols[t]
    cdef double old_u = u[j]
    cdef double new_u
    if ratio[t] > ratio_hi:
        u[j] = 0.0
        if wsum != NULL:
            wsum[j >> wshift] -= C * old_u
        dq[0] = NAN
        return
    m[0] += a_old[t] * fabs(old_u)
    dq[0] += ratio[t] * pw[t]
    new_u = pgs_copysign(pw[t], newv[t])      # (see the header: libm's spilled)
    u[j] = new_u
    if wsum != NULL:
        wsum[j >> wshift] += C * (new_u - old_u)


cdef inline void _pow_finish(Py_ssize_t n, const int64_t* cols, const double* newv,
                             const double* a_old, const double* ratio, double* u,
                             double* wsum, int wshift, double C, int kind, double qm1,
                             double ratio_hi, double* dq4, double* m4) noexcept nogil:
    """The second half of `_coord_update` for n staged updates: their n powers in one
    call (`pgs_powq_n`, four per instruction with AVX2), then u_j and Q's terms in
    staging order, so that a column staged twice reads u_j as its earlier update left
    it, as in one update after another: the same values as n `_coord_update` calls.

    Q's new terms go to dq4, its old ones to m4, staged update t to lane t & 3: the
    lanes of `_rowpow`'s registers (the caller stages from a multiple of 4 on), so both
    paths sum the same way. A parked update (ratio past ratio_hi) makes its lane NaN.
    """
    cdef double pw[POW_CHUNK]
    cdef double d0 = dq4[0], d1 = dq4[1], d2 = dq4[2], d3 = dq4[3]
    cdef double m0 = m4[0], m1 = m4[1], m2 = m4[2], m3 = m4[3]
    cdef Py_ssize_t t = 0
    pgs_powq_n(ratio, pw, n, kind, qm1)
    # (four sums in registers: consecutive adds do not wait for each other)
    while t + 4 <= n:
        _finish_one(t, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d0, &m0)
        _finish_one(t + 1, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d1, &m1)
        _finish_one(t + 2, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d2, &m2)
        _finish_one(t + 3, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d3, &m3)
        t += 4
    if t < n:
        _finish_one(t, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d0, &m0)
    if t + 1 < n:
        _finish_one(t + 1, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d1, &m1)
    if t + 2 < n:
        _finish_one(t + 2, cols, newv, a_old, ratio, pw, u, wsum, wshift, C, ratio_hi,
                    &d2, &m2)
    dq4[0] = d0
    dq4[1] = d1
    dq4[2] = d2
    dq4[3] = d3
    m4[0] = m0
    m4[1] = m1
    m4[2] = m2
    m4[3] = m3


cdef inline double _lane_sum(const double* a) noexcept nogil:
    """The four lanes of `_pow_finish` / `_rowpow` added in one fixed order."""
    return (a[0] + a[1]) + (a[2] + a[3])


cdef inline Py_ssize_t _rowpow(const floating_t* data, const index_t* indices,
                               Py_ssize_t lo, Py_ssize_t hi, double g, double* lam,
                               double* u, Py_ssize_t sd, double inv_S, double ratio_hi,
                               int64_t icol, double icpt, double* dq4,
                               double* m4, double* w, double C, int p_kind,
                               double qm1) noexcept nogil:
    """The entries of a row (and its intercept, entry hi - lo) that `pgs/_rowpow.h`
    updates in AVX2 registers for p = 1.8 and general p, from the first on; returns how
    many it took (0 without AVX2). lam_j and u_j are lam[sd j] and u[sd j] (sd = 2:
    st.lu); w (NULL: no average) the average's one vector, w_j at w[j]."""
    cdef int ws = <int>sd - 1
    cdef int kind = _pow_kind(p_kind)
    if floating_t is double:
        if index_t is int32_t:
            return pgs_rowpow_f64_i32(data + lo, indices + lo, hi - lo, g, lam, u, sd,
                                      inv_S, ratio_hi, icol, icpt, dq4, m4, w, ws, C, kind,
                                      qm1)
        else:
            return pgs_rowpow_f64_i64(data + lo, indices + lo, hi - lo, g, lam, u, sd,
                                      inv_S, ratio_hi, icol, icpt, dq4, m4, w, ws, C, kind,
                                      qm1)
    else:
        if index_t is int32_t:
            return pgs_rowpow_f32_i32(data + lo, indices + lo, hi - lo, g, lam, u, sd,
                                      inv_S, ratio_hi, icol, icpt, dq4, m4, w, ws, C, kind,
                                      qm1)
        else:
            return pgs_rowpow_f32_i64(data + lo, indices + lo, hi - lo, g, lam, u, sd,
                                      inv_S, ratio_hi, icol, icpt, dq4, m4, w, ws, C, kind,
                                      qm1)


cdef inline double _row_update_pow(const floating_t* data, const index_t* indices,
                                   Py_ssize_t lo, Py_ssize_t hi, double g, double* lam,
                                   double* u, double* wsum, double* clast, double C,
                                   int p_kind, int average, double qm1, double inv_S,
                                   double ratio_hi, Py_ssize_t icol, double icpt,
                                   Py_ssize_t sd, double* minus) noexcept nogil:
    """`_row_update_k` for p = 1.8 and general p, the intercept (if icpt != 0) taken as
    the row's last entry; lam_j and u_j are lam[sd j] and u[sd j] (sd = 2: st.lu, not
    with spans; the average's wsum_j stays wsum[j]).

    The entries are staged by chunks of POW_CHUNK and their powers taken together
    (`_pow_finish`); `_rowpow` first takes what it can four at a time. Both give the
    values of one `_coord_update` after another, with Q's terms summed in four lanes.
    """
    cdef int64_t cols[POW_CHUNK]
    cdef double newv[POW_CHUNK]
    cdef double a_old[POW_CHUNK]
    cdef double ratio[POW_CHUNK]
    cdef double dq4[4]
    cdef double m4[4]
    cdef Py_ssize_t n_row = hi - lo
    cdef Py_ssize_t n_all = n_row + (icpt != 0.0)
    cdef Py_ssize_t s = 0, t, n, n_data
    cdef int kind = _pow_kind(p_kind)
    # the average: spans (clast given: p < 1.2), or one vector (see `_fold_average`)
    cdef int spans = average and clast != NULL
    cdef double* wsum1 = wsum if average and clast == NULL else NULL
    for t in range(4):
        dq4[t] = 0.0
        m4[t] = 0.0
    # (not with spans: their clast is the staged path's alone)
    if not spans:
        s = _rowpow(data, indices, lo, hi, g, lam, u, sd, inv_S, ratio_hi, icol, icpt,
                    dq4, m4, wsum1, C, p_kind, qm1)
    # (s is a multiple of 4 here unless all is done: chunks keep entry t in lane t & 3)
    while s < n_all:
        n = n_all - s if n_all - s < POW_CHUNK else POW_CHUNK
        n_data = n_row - s if n_row - s < n else n
        for t in range(n_data):
            _pow_stage(sd * indices[lo + s + t], g * data[lo + s + t], t, lam, u, wsum,
                       clast, C, spans, inv_S, cols, newv, a_old, ratio)
        if n_data < n:
            _pow_stage(sd * icol, g * icpt, n_data, lam, u, wsum, clast, C, spans, inv_S,
                       cols, newv, a_old, ratio)
        _pow_finish(n, cols, newv, a_old, ratio, u, wsum1, <int>sd - 1, C, kind, qm1,
                    ratio_hi, dq4, m4)
        s += n
    minus[0] += _lane_sum(m4)
    return _lane_sum(dq4)


cdef inline double _row_update_k(const floating_t* data, const index_t* indices,
                                 Py_ssize_t lo, Py_ssize_t hi, double g, double* lam,
                                 double* u, double* wsum, double* clast, double C,
                                 int p_kind, int average, double qm1, double inv_S,
                                 double ratio_hi, Py_ssize_t icol, double icpt,
                                 Py_ssize_t sd, double* minus) noexcept nogil:
    """lam += g * x over one row's entries; returns the sum of Q's new terms (see
    `_coord_update`; the old ones are added to `minus`). For p = 1.8 and general p also
    the intercept's lam_icol += g * icpt if icpt != 0 (the caller does it for p = 2 and
    1.5). sd = 2 (p = 1.8 and general p): lam and u are st.lu's (`_row_update_pow`).

    Entries are applied in order; two partial sums of Q's terms keep the adds of
    consecutive entries independent (one sum would chain them).
    """
    cdef double dq0 = 0.0, dq1 = 0.0, m0 = 0.0, m1 = 0.0
    cdef Py_ssize_t jj = lo
    if p_kind == P_Q225 or p_kind == P_GENERAL:
        return _row_update_pow(data, indices, lo, hi, g, lam, u, wsum, clast, C, p_kind,
                               average, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
    while jj + 2 <= hi:
        dq0 += _coord_update(indices[jj], g * data[jj], lam, u, wsum, clast, C, p_kind,
                             average, qm1, inv_S, ratio_hi, &m0)
        dq1 += _coord_update(indices[jj + 1], g * data[jj + 1], lam, u, wsum, clast, C,
                             p_kind, average, qm1, inv_S, ratio_hi, &m1)
        jj += 2
    if jj < hi:
        dq0 += _coord_update(indices[jj], g * data[jj], lam, u, wsum, clast, C, p_kind,
                             average, qm1, inv_S, ratio_hi, &m0)
    minus[0] += m0 + m1
    return dq0 + dq1


cdef inline double _row_update(const floating_t* data, const index_t* indices,
                               Py_ssize_t lo, Py_ssize_t hi, double g, double* lam,
                               double* u, double* wsum, double* clast, double C,
                               int p_kind, int average, double qm1, double inv_S,
                               double ratio_hi, Py_ssize_t icol, double icpt,
                               Py_ssize_t sd, double* minus) noexcept nogil:
    """`_row_update_k` with p_kind and average turned into compile-time constants."""
    if average:
        if p_kind == P_TWO:
            return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                                 P_TWO, 1, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
        elif p_kind == P_Q225:
            return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                                 P_Q225, 1, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
        elif p_kind == P_Q3:
            return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                                 P_Q3, 1, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
        return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                             P_GENERAL, 1, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
    if p_kind == P_TWO:
        return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                             P_TWO, 0, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
    elif p_kind == P_Q225:
        return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                             P_Q225, 0, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
    elif p_kind == P_Q3:
        return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                             P_Q3, 0, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)
    return _row_update_k(data, indices, lo, hi, g, lam, u, wsum, clast, C,
                         P_GENERAL, 0, qm1, inv_S, ratio_hi, icol, icpt, sd, minus)


cdef double pgs_exact_Q(const PGSParams* prm, const PGSState* st,
                        Py_ssize_t n_cols) noexcept nogil:
    """sum_j (|lam_j| / S)^q recomputed from lam and u (u holds (|lam_j| / S)^(q-1);
    p = 1.5 computes it, see _u_at).

    The terms are non-negative, so a plain sum is accurate to n_cols / 8 roundings
    in the worst case; eight partial sums let the compiler vectorise it.
    """
    cdef double acc[8]
    cdef double inv_S = 1.0 / _unit(prm, st)
    cdef Py_ssize_t j, a, n8 = n_cols - n_cols % 8
    cdef int implicit = prm.p_kind == P_Q3
    cdef const double* v = st.lam if implicit else st.u
    for a in range(8):
        acc[a] = 0.0
    for j in range(0, n8, 8):
        for a in range(8):
            acc[a] += fabs(st.lam[j + a]) * fabs(_u_at(v, j + a, implicit, inv_S))
    for j in range(n8, n_cols):
        acc[0] += fabs(st.lam[j]) * fabs(_u_at(v, j, implicit, inv_S))
    return (((acc[0] + acc[1]) + (acc[2] + acc[3])) +
            ((acc[4] + acc[5]) + (acc[6] + acc[7]))) * inv_S


cdef inline double _unit(const PGSParams* prm, const PGSState* st) noexcept nogil:
    """S, the unit of lam in u and Q (always 1 for p = 2)."""
    if prm.p_kind == P_TWO or st.S <= 0.0:
        return 1.0
    return st.S


cdef void _recompute_Q(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Q from scratch: every n_cols updates (so O(1) per non-zero), and for p < 2 when
    Q fell far below the terms that went into it (cancellation)."""
    st.Q = pgs_exact_Q(prm, st, n_cols)
    st.Q_comp = 0.0
    st.Q_abs = 0.0
    st.n_updates = 0


cdef void _fold_average(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Restart the average's C sum at 0, keeping the sum of the iterates.

    Without prm.average_spans (p >= 1.2) the average is one vector: the sum of
    w_1 .. w_t is C u - wsum, and an update of u_j adds C (u_j' - u_j) to wsum_j
    (`_coord_update`, `_finish_one`), one read-modify-write instead of a span's three
    (and no clast). Its rounding is eps C |u_j' - u_j| per update, against the sum's
    share of that coordinate, c_t |u_j| per iteration; restarting C when it passes
    C_RESTART c_t (wsum <- wsum - C u) bounds their ratio but for what c_t falls within
    one iteration. For p = 2 that is 1 / (sigma t)'s fall, or with a binding radius
    ||lam||'s growth by one gradient. For p < 2, c_t goes as Q^(2/q - 1), with a
    binding radius as Q^(1/q - 1) (see `_set_scale`), and one coordinate's growth by a
    factor f grows Q by up to f^q: the larger q, the further c_t can fall in one update.
    The tests hold the average to 1e-12 of a compensated sum of the iterates where c_t
    falls 73-fold (p = 2) and 4-fold or more (p = 1.5, 1.8, 1.7, 1.25) in one
    iteration. A parked u_j (see `_coord_update`) counts as 0.

    With prm.average_spans (p < 1.2, SPANS_Q) every coordinate's open span
    u_j (C - clast_j) is folded into wsum. There c_t can fall 1e13-fold in one update
    (Q collapses), after which C u - wsum would cancel (the one-vector form missed the
    tests' 1e-12 by 3.3e-3 at p = 1.01).
    """
    cdef Py_ssize_t j
    cdef double inv_S = 1.0 / _unit(prm, st)
    cdef double ratio_hi = prm.ratio_hi
    cdef double C = st.C
    cdef double a
    # (during a run on st.lu, u is read there: lu[2j] = u_j)
    cdef bint in_lu = st.lu != NULL and pgs_lu_wanted(prm)
    cdef const double* uv = st.lu if in_lu else st.u
    cdef Py_ssize_t sd = 2 if in_lu else 1
    if not prm.average:
        return
    if not prm.average_spans:
        if C == 0.0:
            return
        if prm.p_kind == P_TWO:
            for j in range(n_cols):
                st.wsum[j] -= C * st.lam[j]
        elif prm.p_kind == P_Q3:
            for j in range(n_cols):
                a = fabs(st.lam[j]) * inv_S
                if not a > ratio_hi:
                    st.wsum[j] -= C * pgs_copysign(a * a, st.lam[j])
        else:
            for j in range(n_cols):
                st.wsum[j] -= C * uv[sd * j]
        st.C = 0.0
        return
    for j in range(n_cols):
        # (empty spans skipped, as in _coord_update: the coordinates updated in the
        # iteration that triggered a rescale have one)
        if st.C != st.clast[j]:
            st.wsum[j] += st.u[j] * (st.C - st.clast[j])
        st.clast[j] = 0.0
    st.C = 0.0


cdef void _rescale(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """p < 2: make the largest |lam_j| the unit S and recompute u and Q (O(n), rare).

    Run when Q leaves [2^-64, 2^64] or turned NaN (a parked coordinate). w = c u
    is unchanged: c absorbs S (see _set_scale).
    """
    cdef Py_ssize_t j
    cdef double S = 0.0
    cdef double inv_S, a
    _fold_average(prm, st, n_cols)        # with the old units of u, first
    for j in range(n_cols):
        a = fabs(st.lam[j])
        if a > S:
            S = a
    if S == 0.0:
        S = 1.0
    st.S = S
    inv_S = 1.0 / S
    if prm.p_kind != P_Q3:                 # (p = 1.5: u is implicit, see _u_at)
        for j in range(n_cols):
            st.u[j] = fabs(st.lam[j]) * inv_S
        pgs_powq_n(st.u, st.u, n_cols, _pow_kind(prm.p_kind), prm.q - 1.0)
        for j in range(n_cols):
            st.u[j] = copysign(st.u[j], st.lam[j])
    _recompute_Q(prm, st, n_cols)


cdef void pgs_sync_u(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Write u out from lam where a run keeps it implicit (p = 1.5, see `_u_at`; O(n),
    once per call of a run: pgs_run_f64_i64 and the Solver's do it before returning)."""
    cdef Py_ssize_t j
    cdef double inv_S
    if prm.p_kind != P_Q3:
        return
    inv_S = 1.0 / _unit(prm, st)
    for j in range(n_cols):
        st.u[j] = _u_at(st.lam, j, 1, inv_S)


cdef bint pgs_lu_wanted(const PGSParams* prm) noexcept nogil:
    """Whether a run keeps lam and u interleaved in st.lu: p = 1.8 and general p
    updating row by row (not prm.by_column; the AVX2 row update's cases; elsewhere both
    layouts cost the same or the batch path does its own staging), except an average
    kept by spans (p < 1.2), whose clast the staged path indexes by column. The
    average's wsum stays an array of its own (`_fold_average` reads u from st.lu).

    A k = 1 update reads lam_j right after the margin read u_j: as two arrays (2 x 8
    bytes x n_cols, more than L2 at RCV1's width) that is a second miss. p = 1.8 took
    0.83x the time with one line for both (paired runs, logistic, i.i.d. rows; hinge
    0.91x, rows in file order 0.86x); general p about 0.95x with its AVX2 row update.
    """
    return ((prm.p_kind == P_Q225
             or (prm.p_kind == P_GENERAL and not prm.average_spans))
            and not prm.by_column)


cdef void pgs_lu_pack(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """lam and u into st.lu (if set and wanted: `pgs_lu_wanted`), before a run."""
    cdef Py_ssize_t j
    if st.lu == NULL or not pgs_lu_wanted(prm):
        return
    for j in range(n_cols):
        st.lu[2 * j] = st.u[j]
        st.lu[2 * j + 1] = st.lam[j]


cdef void pgs_lu_unpack(const PGSParams* prm, PGSState* st,
                        Py_ssize_t n_cols) noexcept nogil:
    """st.lu back into lam and u (if set and wanted), after a run."""
    cdef Py_ssize_t j
    if st.lu == NULL or not pgs_lu_wanted(prm):
        return
    for j in range(n_cols):
        st.u[j] = st.lu[2 * j]
        st.lam[j] = st.lu[2 * j + 1]


cdef inline void _set_scale(const PGSParams* prm, PGSState* st) noexcept nogil:
    """c_t such that w_t = c_t * u, projection included (DESIGN.md section 3)."""
    cdef double Qv = st.Q + st.Q_comp
    cdef double tsig = (<double>st.t + prm.t_offset) * prm.sigma
    cdef double norm_lam, c, norm_w
    if not Qv > 0.0:
        st.c = 0.0
        return
    if prm.p_kind == P_TWO:
        norm_lam = sqrt(Qv)
        c = 1.0 / tsig
    else:
        # Q^(1/q) is needed every iteration: exp2(log2(Q) / q) takes about 12 ns
        # here, where pow() takes 20 and p = 1.8's cbrt(cbrt(Q)) 46 (glibc). Its
        # relative error, about |log2 Q| / q * 2^-53, stays below 4e-15: Q is kept
        # within [2^-64, 2^64] (rescale).
        norm_lam = exp2(log2(Qv) * (1.0 / prm.q))
        # In units of S: ||lam||_q = S Q^(1/q), and w = c u needs
        # c = (p-1) ||lam||_q^(2-q) S^(q-1) / (t sigma) = (p-1) S Q^(2/q) / Q / (t sigma)
        # (t here and below is t + t_offset).
        c = (prm.p - 1.0) * _unit(prm, st) * (norm_lam * norm_lam / Qv) / tsig
        norm_lam *= _unit(prm, st)
    if prm.B > 0.0:
        norm_w = (prm.p - 1.0) * norm_lam / tsig
        if norm_w > prm.B:
            c *= prm.B / norm_w
    st.c = c


cdef void pgs_state_init(PGSState* st, double* lam, double* u, int64_t* rows,
                         double* coefs, const uint64_t* rng) noexcept nogil:
    """Zero `st` and bind the caller's buffers: lam and u of length n_cols (zeroed by the
    caller; u may be lam itself when p = 2), rows and coefs of length k, and the PRNG's
    four words (not all zero). The average and the picked iterate are off (NULL)."""
    cdef int a
    memset(st, 0, sizeof(PGSState))
    st.lam = lam
    st.u = u
    st.rows = rows
    st.coefs = coefs
    for a in range(4):
        st.rng[a] = rng[a]


cdef void pgs_init(PGSParams* prm, double p, double sigma, double B, double icpt,
                   double eps, Py_ssize_t k, long long t_pick, int average,
                   Py_ssize_t n_cols) noexcept nogil:
    """Fill `prm`; picks the cheapest exact form of the exponent q - 1."""
    prm.p = p
    prm.q = p / (p - 1.0)
    prm.sigma = sigma
    prm.B = B
    prm.icpt = icpt
    prm.eps = eps
    prm.k = k
    prm.t_pick = t_pick
    prm.average = average
    prm.track_loss = 0
    prm.n_threads = 1
    prm.t_offset = 0.0
    # Recomputing Q costs n_cols; doing it every 4 n_cols updates keeps that well
    # under one operation per non-zero, and the compensated drift negligible.
    prm.recompute_every = 4 * n_cols if n_cols > 256 else 1024
    if p == 2.0:
        prm.p_kind = P_TWO
        prm.q = 2.0
        prm.ratio_hi = INFINITY
    elif fabs(p - 1.5) < 1e-12:
        prm.p_kind = P_Q3
        prm.q = 3.0
    elif fabs(p - 1.8) < 1e-12:
        prm.p_kind = P_Q225
        prm.q = 2.25
    else:
        prm.p_kind = P_GENERAL
    if prm.p_kind != P_TWO:
        # (|lam_j| / S)^q stays below 2^900 (and a sum of n of them finite).
        prm.ratio_hi = pow(2.0, 900.0 / prm.q)
    # (see _fold_average: the one-vector average cancels where c_t can collapse)
    prm.average_spans = average and prm.q > SPANS_Q
    if prm.p_kind == P_TWO:
        prm.by_column = k >= K_PART_P2
    elif prm.p_kind == P_Q3 and not average:
        prm.by_column = k >= K_PART_Q3
    else:
        prm.by_column = k >= K_PART


# The average is kept by spans for q > SPANS_Q (p < 1.2), in one vector otherwise (see
# _fold_average): the one-vector form missed the tests' 1e-12 at p = 1.01, 1.02 and
# 1.05 (q = 101, 51, 21) and held at p = 1.1 (q = 11) and above.
cdef double SPANS_Q = 6.0


# ------------------------------------------------------------------ row sampling

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define PGS_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
    #else
    #define PGS_PREFETCH(p) ((void)(p))
    #endif
    """
    void PGS_PREFETCH(const void* p) noexcept nogil

# p < 2: Q (in units of S) is kept within [Q_LO, Q_HI] by rescaling.
cdef double Q_LO = 5.421010862427522e-20     # 2^-64
cdef double Q_HI = 1.8446744073709552e+19    # 2^64
# ... and recomputed when it falls below Q_CANCEL times the terms added since.
cdef double Q_CANCEL = 0.000244140625     # 2^-12
# The average's C restarts when it exceeds C_RESTART c_t (its spans would cancel).
cdef double C_RESTART = 65536.0

# In iid mode RING rows are drawn ahead (a power of two), and the index pointer of each
# is prefetched when it is drawn: its miss is the one that costs most. The data of the
# row AHEAD places ahead is prefetched while the current row's margin is taken, a line
# per 4 entries (_margin_pf). (781k-row RCV1-like set, hinge, iid: index pointers only
# 9-10 ns per non-zero; all of a row's lines at once when drawn, 5.8-8 whatever the
# distance; spread over the margin, 3.8-5.4.)
cdef enum:
    RING = 64
    RING_MASK = 63
    AHEAD = 4

# Batches (prm.by_column) may sum their step per column first and update each column
# once (DESIGN.md section 3 asks only that u and Q stay consistent, which this keeps:
# for p < 2 it saves the powers and the average's folds of repeated columns), in two
# halves (by 8-column blocks) that two threads can do at once with results identical to
# one thread's. pgs_init sets it from k >= K_PART, or from larger k where a column's
# update costs next to nothing (p = 2, and p = 1.5 without the average); the Solver
# then lets p = 1.8, general p (with the average: p >= 1.2) and p = 1.5 with the average
# go row by row on data whose batches repeat few columns (`_distinct_fraction`,
# `_rows_from`).
cdef enum:
    K_PART = 16
    # p = 2 saves no powers by summing per column, and its row updates find the rows
    # in cache: one pass of logistic on the 781k RCV1-like set took 0.57x (k = 16),
    # 0.67x (64), 0.85x (300, average) and 0.75x (1000) the time by column, but 1.18x at
    # k = 4000 (the batch's rows no longer in cache when they are updated); 0.89x at
    # 2000.
    K_PART_P2 = 2048
    # p = 1.5 without the average (its update a few multiplies more than p = 2's):
    # 0.73x (k = 16), 0.73-0.80x (64), 0.76-0.80x (300), 0.86x (1000), but 0.95-1.06x
    # at 1024, 1.11x at 1500 and 1.09x at 2000; on a9a x 10 (123 columns) 0.84-0.98x
    # at k = 16-300.
    K_PART_Q3 = 1024

# p = 1.8 (Q225), general p (with the average: p >= 1.2) and p = 1.5 with the average,
# for K_PART <= k < K_PART_P2 (p = 1.5: K_PART_Q3): row by row when a batch's distinct
# columns are at least this fraction of its entries (`_rows_from`). One pass of
# logistic, row by row / by column:
# - p = 1.8: 0.69x at a fraction of 0.81 (RCV1-like, k = 16), 0.84x at 0.61 (64),
#   0.93x at 0.36 (300), 1.11x at 0.22 (1000), 1.26-1.48x at 0.25-0.02 (a9a,
#   k = 16-300);
# - general p (1.7): 0.83x at 0.81, 0.99-1.16x at 0.61, 1.09-1.26x at 0.36;
# - with the average (its one vector: a read-modify-write per update, which a column
#   summed over the batch does once), p = 1.5: 0.69x at 0.81, 0.85x at 0.61, 0.88x at
#   0.49, 1.08x at 0.36; p = 1.8: 0.63x at 0.72, 0.82x at 0.81, 0.88-1.03x at 0.49,
#   0.97x at 0.61, 1.26x at 0.36 (rechecked with its AVX2 update: 0.94x at 0.61, 1.05x
#   at 0.49, 1.02x at 0.36);
# - general p with the average: in one vector (p >= 1.2) as without it (0.90x at 0.81,
#   1.06x at 0.61, p = 1.7); kept by spans (p < 1.2: three memory operations per
#   update) row by row was 1.4-1.9x slower from k = 64 on, so it stays by column.
cdef double ROWS_FROM_Q225 = 0.3
cdef double ROWS_FROM_GENERAL = 0.7
cdef double ROWS_FROM_Q3_AVERAGE = 0.45
cdef double ROWS_FROM_Q225_AVERAGE = 0.55


cdef inline double _rows_from(const PGSParams* prm) noexcept nogil:
    """The fraction of distinct columns from which a Solver updates batches of
    K_PART <= k < `_rows_below` rows row by row (`_choose_path`); 0: the path pgs_init
    set stands."""
    if prm.p_kind == P_Q225:
        return ROWS_FROM_Q225_AVERAGE if prm.average else ROWS_FROM_Q225
    if prm.p_kind == P_GENERAL and not prm.average_spans:
        # (with the average in one vector: 0.90x at 0.81, 1.06x at 0.61, p = 1.7)
        return ROWS_FROM_GENERAL
    if prm.p_kind == P_Q3 and prm.average:
        return ROWS_FROM_Q3_AVERAGE
    return 0.0


cdef inline Py_ssize_t _rows_below(int p_kind) noexcept nogil:
    return K_PART_Q3 if p_kind == P_Q3 else K_PART_P2


# the batches `_distinct_fraction` looks at
cdef enum:
    PATH_PROBES = 4


cdef inline double _uniform01(uint64_t* rng) noexcept nogil:
    return <double>(xoshiro_next(rng) >> 11) * (1.0 / 9007199254740992.0)


cdef inline int64_t _draw_iid(const PGSSampler* smp, uint64_t* rng,
                              Py_ssize_t n_rows) noexcept nogil:
    """One row, uniform or (with an alias table) with probability proportional to weight."""
    cdef int64_t i = <int64_t>xoshiro_bounded(rng, <uint64_t>n_rows)
    if smp.alias_prob != NULL:
        if _uniform01(rng) >= smp.alias_prob[i]:
            i = smp.alias_idx[i]
    return i


cdef inline void _prefetch_cols(const index_t* indices, const index_t* indptr,
                                const double* lam, int64_t i) noexcept nogil:
    """p < 2: ask for lam at row i's columns once its margin is taken.

    The margin reads u, the update lam too, and both arrays together outgrow L2
    at RCV1's width (logistic, 781k rows: p = 1.5 went from 1.42x to 1.22x the
    time of p = 2). Call only for a finite margin: its indices are then in range.
    """
    cdef Py_ssize_t jj
    for jj in range(indptr[i], indptr[i + 1]):
        PGS_PREFETCH(&lam[indices[jj]])


cdef inline double _margin_pf(const floating_t* data, const index_t* indices,
                              const index_t* indptr, const double* u, int64_t i,
                              double icpt, Py_ssize_t icol, int64_t nxt, int implicit,
                              double inv_S) noexcept nogil:
    """`_margin` (below), prefetching row `nxt` (if >= 0) one cache line per 4 entries.

    Spreading the prefetches over the loop, instead of asking for a row's ~15 lines at
    once, keeps the few line-fill buffers of the core from filling up: a prefetch that
    finds them full stalls the loop (C model of an iid pass, 781k rows of 40-112
    entries: burst 5.4-6.2 ns per entry, spread 3.3-3.9).
    """
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t jj = indptr[i]
    cdef Py_ssize_t hi = indptr[i + 1]
    cdef size_t n_feat = <size_t>icol
    cdef const char* pa = NULL
    cdef const char* pa_end = NULL
    cdef const char* pb = NULL
    cdef const char* pb_end = NULL
    if nxt >= 0:
        pa = <const char*>(data + indptr[nxt])
        pa_end = <const char*>(data + indptr[nxt + 1])
        pb = <const char*>(indices + indptr[nxt])
        pb_end = <const char*>(indices + indptr[nxt + 1])
    while jj + 4 <= hi:
        if (<size_t>indices[jj] >= n_feat or <size_t>indices[jj + 1] >= n_feat
                or <size_t>indices[jj + 2] >= n_feat or <size_t>indices[jj + 3] >= n_feat):
            return NAN
        if pa < pa_end:
            PGS_PREFETCH(pa)
            pa += 64
        elif pb < pb_end:
            PGS_PREFETCH(pb)
            pb += 64
        s0 += data[jj] * _u_at(u, indices[jj], implicit, inv_S)
        s1 += data[jj + 1] * _u_at(u, indices[jj + 1], implicit, inv_S)
        s2 += data[jj + 2] * _u_at(u, indices[jj + 2], implicit, inv_S)
        s3 += data[jj + 3] * _u_at(u, indices[jj + 3], implicit, inv_S)
        jj += 4
    while jj < hi:
        if <size_t>indices[jj] >= n_feat:
            return NAN
        s0 += data[jj] * _u_at(u, indices[jj], implicit, inv_S)
        jj += 1
    while pa < pa_end:          # (a short row leaves some of the next one's lines)
        PGS_PREFETCH(pa)
        pa += 64
    while pb < pb_end:
        PGS_PREFETCH(pb)
        pb += 64
    return ((s0 + s1) + (s2 + s3)) + icpt * _u_at(u, icol, implicit, inv_S)


cdef inline double _margin(const floating_t* data, const index_t* indices,
                           const index_t* indptr, const double* u, int64_t i, double icpt,
                           Py_ssize_t icol, int implicit, double inv_S) noexcept nogil:
    """<x_i, u> with the implicit constant column; NaN if a column index of the row
    is outside [0, icol). With `implicit` (p = 1.5), `u` is lam and u_j is computed
    from it (_u_at).

    This is where X's entries are validated: the row's indices are checked before
    u is read at them, and a non-finite value makes the margin non-finite, which
    stops the loop before the row changes anything (the caller then names the
    entry). Four partial sums: one sum would be a chain of dependent adds, one add
    latency per non-zero; four let the gathers of u overlap.
    """
    # (nxt = -1 is a constant: the C compiler drops the prefetching code.)
    return _margin_at(data, indices, indptr, u, i, icpt, icol, -1, implicit, inv_S)


cdef inline double _margin_at(const floating_t* data, const index_t* indices,
                              const index_t* indptr, const double* u, int64_t i,
                              double icpt, Py_ssize_t icol, int64_t nxt, int implicit,
                              double inv_S) noexcept nogil:
    """`_margin_pf` with `implicit` turned into a compile-time constant (a flag tested
    per entry cost p = 2's pass 4-7%)."""
    if implicit == U_IN_LU:
        return _margin_pf(data, indices, indptr, u, i, icpt, icol, nxt, U_IN_LU, 1.0)
    if implicit:
        return _margin_pf(data, indices, indptr, u, i, icpt, icol, nxt, 1, inv_S)
    return _margin_pf(data, indices, indptr, u, i, icpt, icol, nxt, 0, 1.0)


cdef inline int64_t _upcoming(int mode, const int64_t* ring_rows, int head,
                              const PGSSampler* smp, long long pos, Py_ssize_t n_rows,
                              Py_ssize_t j) noexcept nogil:
    """The row to be drawn j places after the current batch (-1: not known, or rows in
    file order, which the hardware prefetches by itself)."""
    if mode == SAMPLE_IID and j < RING:
        return ring_rows[(head + j) & RING_MASK]
    if mode == SAMPLE_PERMUTATION and pos + j < n_rows:
        return smp.perm[pos + j]
    return -1


cdef inline int _block_half(int64_t j) noexcept nogil:
    """Which of the two threads of a batch update owns column j: blocks of 8 columns
    (one 64-byte cache line of the aligned lam, u, wsum and clast) alternate, so the
    two threads never write to the same cache line (with j % 2, every line they
    write would bounce between their cores)."""
    return <int>((j >> 3) & 1)


cdef enum:
    MAX_LANES = 16    # row ranges of a parallel batch, at most one per thread


cdef void _lane_margins(const floating_t* data, const index_t* indices,
                        const index_t* indptr, const double* u, int implicit, double inv_S,
                        const int64_t* rows, double* coefs, double c, double icpt,
                        Py_ssize_t icol, Py_ssize_t r0, Py_ssize_t r1, int64_t* ent,
                        int64_t* ent_row, Py_ssize_t lo, Py_ssize_t hi,
                        const double* lam_pf, Py_ssize_t* n0_out,
                        Py_ssize_t* n1_out) noexcept nogil:
    """Margins of batch rows r0..r1-1 (one thread's lane), and the lane's update lists.

    Each entry (its position jj in X, or -1 for the intercept) goes to the list of
    its column's half (_block_half): half 0 fills ent[lo:] upwards, half 1 ent[:hi]
    downwards, both in row order, with the row's batch index in ent_row. The slot is
    chosen arithmetically: the entry is written at both halves' next free slots and
    only its own half's count advances (hi - lo leaves room for every entry).
    """
    cdef Py_ssize_t r, jj, n0 = 0, n1 = 0
    cdef int64_t i
    cdef int h
    for r in range(r0, r1):
        coefs[r] = c * _margin_at(data, indices, indptr, u, rows[r], icpt, icol,
                                  rows[r + AHEAD] if r + AHEAD < r1 else -1, implicit,
                                  inv_S)
        if not isfinite(coefs[r]):
            continue         # the loop stops before any update (and its indices are bad)
        i = rows[r]
        if lam_pf != NULL:
            _prefetch_cols(indices, indptr, lam_pf, i)
        for jj in range(indptr[i], indptr[i + 1]):
            h = _block_half(indices[jj])
            ent[lo + n0] = jj
            ent_row[lo + n0] = r
            ent[hi - 1 - n1] = jj
            ent_row[hi - 1 - n1] = r
            n0 += 1 - h
            n1 += h
        if icpt != 0.0:
            h = _block_half(icol)
            ent[lo + n0] = -1
            ent_row[lo + n0] = r
            ent[hi - 1 - n1] = -1
            ent_row[hi - 1 - n1] = r
            n0 += 1 - h
            n1 += h
    n0_out[0] = n0
    n1_out[0] = n1


cdef bint _reserve(int64_t** buf, Py_ssize_t* cap, Py_ssize_t n) noexcept nogil:
    """Grow an int64 scratch buffer to at least n entries; False if memory ran out."""
    cdef int64_t* a
    if n <= cap[0]:
        return True
    n = n + n // 2
    a = <int64_t*>realloc(buf[0], n * sizeof(int64_t))
    if a == NULL:
        return False
    buf[0] = a
    cap[0] = n
    return True


cdef inline void _sum_row(const floating_t* data, const index_t* indices, Py_ssize_t lo,
                          Py_ssize_t hi, double g, double icpt, Py_ssize_t icol,
                          double* delta, int64_t* fresh, Py_ssize_t cap, Py_ssize_t* n0,
                          Py_ssize_t* n1) noexcept nogil:
    """delta += g * x for one row of a large batch (x with the constant column icpt).

    Rows are summed in batch order, so delta_j is the batch's step for column j. The
    columns whose delta this makes non-zero are listed in order of first appearance,
    each in its half's list (_block_half): half 0 upwards from fresh[0] (n0 of them),
    half 1 downwards from fresh[cap - 1] (n1). A column is written at both lists' next
    slots and only its own list's count advances (cap, at least the batch's entries
    and constant columns, leaves room).
    """
    # (the counts in locals: fresh's stores could alias *n0 and *n1 for the compiler)
    cdef Py_ssize_t jj, a = n0[0], b = n1[0]
    for jj in range(lo, hi):
        _sum_entry(indices[jj], g * data[jj], delta, fresh, cap, &a, &b)
    if icpt != 0.0:
        _sum_entry(icol, g * icpt, delta, fresh, cap, &a, &b)
    n0[0] = a
    n1[0] = b


cdef inline void _sum_entry(Py_ssize_t j, double x, double* delta, int64_t* fresh,
                            Py_ssize_t cap, Py_ssize_t* n0, Py_ssize_t* n1) noexcept nogil:
    """delta_j += x, listing j (see `_sum_row`) if that is its first step."""
    cdef int h = _block_half(j)
    cdef int new = delta[j] == 0.0
    fresh[n0[0]] = j
    fresh[cap - 1 - n1[0]] = j
    n0[0] += new & (1 - h)
    n1[0] += new & h
    delta[j] += x


cdef inline double _coef(loss_tag* tag, double z, int64_t i, const double* y,
                         double row_w, Py_ssize_t k, const PGSSampler* smp,
                         const PGSParams* prm, PGSState* st) noexcept nogil:
    """-loss'(z) times row i's weight / k (the sampled loss added up if tracked)."""
    if smp.row_scale != NULL:
        row_w *= smp.row_scale[i]
    if prm.track_loss:
        st.loss_sum += L.loss(tag, z, y[i], prm.eps) * row_w * k
    return -L.dloss(tag, z, y[i], prm.eps) * row_w


cdef Py_ssize_t _sum_half_lists(Py_ssize_t part, int lanes, const floating_t* data,
                                const index_t* indices, const int64_t* ent,
                                const int64_t* ent_row, const Py_ssize_t* lane_lo,
                                const Py_ssize_t* lane_hi, const Py_ssize_t* lane_n0,
                                const Py_ssize_t* lane_n1, const double* coefs, double icpt,
                                Py_ssize_t icol, double* delta, int64_t* fresh,
                                Py_ssize_t cap) noexcept nogil:
    """What `_sum_row` does to the columns of half `part`, for the whole batch, from
    the lanes' lists (in row order): the same sums in the same order, the same list.
    Returns its count."""
    cdef Py_ssize_t e, e0, e1, step, j, n = 0
    cdef int64_t jj
    cdef int lane
    cdef double g, x
    for lane in range(lanes):
        if part == 0:
            e0 = lane_lo[lane]
            e1 = e0 + lane_n0[lane]
            step = 1
        else:
            e0 = lane_hi[lane] - 1
            e1 = e0 - lane_n1[lane]
            step = -1
        e = e0
        while e != e1:
            g = coefs[ent_row[e]]
            jj = ent[e]
            e += step
            if g == 0.0:
                continue
            if jj >= 0:
                j = indices[jj]
                x = g * data[jj]
            else:
                j = icol
                x = g * icpt
            if part == 0:
                fresh[n] = j
            else:
                fresh[cap - 1 - n] = j
            n += delta[j] == 0.0
            delta[j] += x
    return n


cdef inline double _apply_sums(const int64_t* fresh, Py_ssize_t n, Py_ssize_t step,
                               double* delta, double* lam, double* u, double* wsum,
                               double* clast, double C, int p_kind, int average,
                               double qm1, double inv_S, double ratio_hi,
                               double* minus) noexcept nogil:
    """lam_j += delta_j for the n listed columns fresh[0], fresh[step], ... in order,
    zeroing delta_j as it is read (a column listed twice, or whose sum is exactly 0,
    is then skipped). Returns the sum of Q's new terms; the old ones go to `minus`.

    One update per column and batch, not per entry: for p < 2 a batch of 300 rows
    takes about a third of the powers (RCV1-like: 36% of its entries are distinct).
    For p = 2 and 1.5; p = 1.8 and general p take `_apply_sums_pow`.
    """
    cdef double dq = 0.0, m = 0.0, d
    cdef Py_ssize_t e = 0
    cdef int64_t j
    while e < n:
        j = fresh[e * step]
        d = delta[j]
        delta[j] = 0.0
        e += 1
        if d != 0.0:
            dq += _coord_update(j, d, lam, u, wsum, clast, C, p_kind, average, qm1, inv_S,
                                ratio_hi, &m)
    minus[0] += m
    return dq


cdef double _apply_sums_pow(const int64_t* fresh, Py_ssize_t n, Py_ssize_t step,
                            double* delta, double* lam, double* u, double* wsum,
                            double* clast, double C, int p_kind, int average, double qm1,
                            double inv_S, double ratio_hi, double* minus) noexcept nogil:
    """`_apply_sums` for p = 1.8 and general p: the batch's non-zero steps gathered by
    chunks of POW_CHUNK, then staged and their powers taken together (`_pow_stage`,
    `_pow_finish`); `pgs_colspow` first takes what it can four at a time (the same
    values and lanes)."""
    cdef int64_t ccols[POW_CHUNK]
    cdef double cd[POW_CHUNK]
    cdef int64_t cols[POW_CHUNK]
    cdef double newv[POW_CHUNK]
    cdef double a_old[POW_CHUNK]
    cdef double ratio[POW_CHUNK]
    cdef double dq4[4]
    cdef double m4[4]
    cdef double d
    cdef Py_ssize_t e = 0, nc, s, t
    cdef int64_t j
    cdef int kind = _pow_kind(p_kind)
    cdef int spans = average and clast != NULL
    cdef double* wsum1 = wsum if average and clast == NULL else NULL
    for t in range(4):
        dq4[t] = 0.0
        m4[t] = 0.0
    while e < n:
        nc = 0
        while e < n and nc < POW_CHUNK:
            j = fresh[e * step]
            d = delta[j]
            delta[j] = 0.0
            e += 1
            if d != 0.0:
                ccols[nc] = j
                cd[nc] = d
                nc += 1
        s = 0
        if not spans:   # (spans: the staged path's alone)
            s = pgs_colspow(ccols, cd, nc, lam, u, inv_S, ratio_hi, dq4, m4, wsum1, C, kind,
                            qm1)
        # (s is a multiple of 4 unless all is done: update t keeps lane t & 3)
        if s < nc:
            for t in range(s, nc):
                _pow_stage(ccols[t], cd[t], t - s, lam, u, wsum, clast, C, spans, inv_S,
                           cols, newv, a_old, ratio)
            _pow_finish(nc - s, cols, newv, a_old, ratio, u, wsum1, 0, C, kind, qm1,
                        ratio_hi, dq4, m4)
    minus[0] += _lane_sum(m4)
    return _lane_sum(dq4)


cdef double _apply_sums_k(const int64_t* fresh, Py_ssize_t n, Py_ssize_t step,
                          double* delta, double* lam, double* u, double* wsum,
                          double* clast, double C, int p_kind, int average, double qm1,
                          double inv_S, double ratio_hi, double* minus) noexcept nogil:
    """`_apply_sums` with p_kind turned into a compile-time constant (`average` is one
    well-predicted branch per column)."""
    if p_kind == P_TWO:
        return _apply_sums(fresh, n, step, delta, lam, u, wsum, clast, C, P_TWO, average,
                           qm1, inv_S, ratio_hi, minus)
    elif p_kind == P_Q3:
        return _apply_sums(fresh, n, step, delta, lam, u, wsum, clast, C, P_Q3, average,
                           qm1, inv_S, ratio_hi, minus)
    return _apply_sums_pow(fresh, n, step, delta, lam, u, wsum, clast, C, p_kind, average,
                           qm1, inv_S, ratio_hi, minus)


# ---------------------------------------------------------------------- the loop

cdef int _pgs_loop(loss_tag* tag, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t n_rows,
                   Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                   long long t_end, const PGSSampler* smp) noexcept nogil:
    """Run PGS iterations st.t+1 .. t_end (DESIGN.md section 2, Figure 1 of the paper).

    All k margins of a batch are taken at w_{t-1}; then the k row updates are
    applied one after the other (rows may repeat and share columns), or, with
    prm.by_column (see K_PART), summed per column and applied once per column. In iid
    mode rows are drawn RING ahead so their memory can be prefetched; each ring slot
    remembers the PRNG state it was drawn from, and on return the state rewinds to the
    first unconsumed draw, so a run split into chunks draws exactly the rows of an
    unsplit run.
    """
    cdef Py_ssize_t k = prm.k
    cdef Py_ssize_t icol = n_cols - 1
    cdef double icpt = prm.icpt
    cdef double g_scale = smp.grad_scale / <double>k
    cdef double* u = st.u
    cdef int64_t* rows = st.rows
    cdef double* coefs = st.coefs
    cdef int mode = smp.mode
    cdef int status = PGS_OK
    cdef int64_t ring_rows[RING]
    cdef uint64_t ring_rng[RING][4]
    cdef uint64_t rng[4]
    cdef int head = 0
    cdef int a, b
    cdef Py_ssize_t r, j
    cdef int64_t i
    cdef double z, g, dq, dm
    cdef int p_kind = prm.p_kind
    cdef int average = prm.average
    # (the average's clast only where it keeps spans: its absence selects one vector)
    cdef double* clast = st.clast if prm.average_spans else NULL
    cdef double qm1 = prm.q - 1.0
    cdef double inv_S = 1.0 / _unit(prm, st)
    cdef double Qv, c
    cdef int updated
    cdef double part_dq[16]
    cdef Py_ssize_t part
    cdef int n_threads = prm.n_threads
    cdef bint parallel = n_threads > 1 and prm.by_column
    # Parallel batches: per lane (a range of the batch's rows, one per thread) the
    # update lists of both halves, in buffers grown as batches need (freed on return).
    cdef int lanes = n_threads if n_threads < MAX_LANES else MAX_LANES
    cdef int lane
    cdef int64_t* ent = NULL
    cdef int64_t* ent_row = NULL
    cdef Py_ssize_t ent_cap = 0, ent_row_cap = 0, n_ent = 0
    # Batches by column (prm.by_column, see pgs_init): the batch's step per column (all
    # zero between batches; the caller's st.delta, else one allocated here) and the
    # columns it touches.
    cdef double* delta = st.delta
    cdef double* delta_own = NULL
    cdef int64_t* fresh = NULL
    cdef Py_ssize_t fresh_cap = 0, n_fresh, nf, nf0, nf1
    cdef Py_ssize_t lane_r0[MAX_LANES + 1]
    cdef Py_ssize_t lane_lo[MAX_LANES]
    cdef Py_ssize_t lane_hi[MAX_LANES]
    cdef Py_ssize_t lane_n0[MAX_LANES]
    cdef Py_ssize_t lane_n1[MAX_LANES]
    cdef bint lists, fused, nonfinite = False
    # p = 1.5 keeps u implicit (_u_at): its margins read lam. p = 1.8 and general p (row
    # by row) may run on st.lu, lam and u interleaved (pgs_lu_wanted): their margins
    # read u there, their row updates take lam = lu + 1, u = lu and a stride of 2.
    cdef bint in_lu = st.lu != NULL and pgs_lu_wanted(prm)
    cdef double* lam = st.lu + 1 if in_lu else st.lam
    cdef Py_ssize_t sd = 2 if in_lu else 1
    cdef int implicit = U_IN_LU if in_lu else p_kind == P_Q3
    cdef const double* mu = st.lu if in_lu else (st.lam if implicit else u)
    cdef const double* lam_pf = (
        st.lam if p_kind != P_TWO and not implicit else NULL)

    if mode == SAMPLE_PERMUTATION and smp.perm == NULL:
        return PGS_BAD_SAMPLER
    if mode == SAMPLE_FIXED and smp.fixed == NULL:
        return PGS_BAD_SAMPLER
    if prm.by_column and delta == NULL:
        # 64-byte aligned, so that the two halves' threads never share a line
        delta_own = <double*>calloc(n_cols + 8, sizeof(double))
        if delta_own == NULL:
            return PGS_NO_MEMORY
        delta = delta_own + ((-<size_t>delta_own // sizeof(double)) & 7)
    for b in range(4):
        rng[b] = st.rng[b]
    if mode == SAMPLE_IID:
        for a in range(RING):
            for b in range(4):
                ring_rng[a][b] = rng[b]
            ring_rows[a] = _draw_iid(smp, rng, n_rows)
            PGS_PREFETCH(&indptr[ring_rows[a]])

    while st.t < t_end:
        # 1. the batch's rows
        for r in range(k):
            if mode == SAMPLE_IID:
                i = ring_rows[head]
                for b in range(4):
                    ring_rng[head][b] = rng[b]
                ring_rows[head] = _draw_iid(smp, rng, n_rows)
                PGS_PREFETCH(&indptr[ring_rows[head]])
                head = (head + 1) & RING_MASK
                PGS_PREFETCH(&y[ring_rows[(head + AHEAD) & RING_MASK]])
            elif mode == SAMPLE_PERMUTATION:
                if st.pos >= n_rows:
                    xoshiro_shuffle(smp.perm, n_rows, st.rng)
                    st.pos = 0
                i = smp.perm[st.pos]
                st.pos += 1
                # As in iid mode: the index pointer RING rows ahead (its miss is
                # what costs most), the target AHEAD rows ahead (the row's data: while
                # the margins are taken, _margin_pf).
                if st.pos + RING < n_rows:
                    PGS_PREFETCH(&indptr[smp.perm[st.pos + RING]])
                if st.pos + AHEAD < n_rows:
                    PGS_PREFETCH(&y[smp.perm[st.pos + AHEAD]])
            elif mode == SAMPLE_CYCLIC:
                if st.pos >= n_rows:
                    st.pos = 0
                i = st.pos
                st.pos += 1
            else:
                if st.consumed >= smp.n_fixed:
                    status = PGS_BAD_ROW
                    break
                i = smp.fixed[st.consumed]
                if i < 0 or i >= n_rows:
                    status = PGS_BAD_ROW
                    break
            st.consumed += 1
            rows[r] = i
        if status != PGS_OK:
            break

        # 2. their margins at w_{t-1} = c * u (in parallel for large batches: each
        #    margin is computed the same way whichever thread does it)
        #    While a margin is taken, the row AHEAD places on is prefetched (by the
        #    thread that will take it, in its own core's cache).
        c = st.c
        lists = False
        if parallel:
            # Lane l takes rows lane_r0[l]..lane_r0[l+1]-1; its lists get one slot per
            # entry and one for the intercept of each of its rows.
            n_ent = 0
            for lane in range(lanes):
                lane_r0[lane] = lane * k // lanes
                lane_lo[lane] = n_ent
                for r in range(lane_r0[lane], (lane + 1) * k // lanes):
                    n_ent += indptr[rows[r] + 1] - indptr[rows[r]] + 1
                lane_hi[lane] = n_ent
            lane_r0[lanes] = k
            # (out of memory: this batch runs on one thread, with the same result)
            lists = (_reserve(&ent, &ent_cap, n_ent)
                     and _reserve(&ent_row, &ent_row_cap, n_ent)
                     and _reserve(&fresh, &fresh_cap, n_ent))
        fused = prm.by_column and not lists
        if lists:
            for lane in prange(lanes, num_threads=n_threads, schedule="static", chunksize=1):
                _lane_margins(data, indices, indptr, mu, implicit, inv_S, rows, coefs, c,
                              icpt, icol, lane_r0[lane], lane_r0[lane + 1], ent, ent_row,
                              lane_lo[lane], lane_hi[lane], lam_pf, &lane_n0[lane],
                              &lane_n1[lane])
        else:
            if fused:
                # (room in the lists for every entry and constant column of the batch)
                n_fresh = 0
                for r in range(k):
                    n_fresh += indptr[rows[r] + 1] - indptr[rows[r]] + 1
                if not _reserve(&fresh, &fresh_cap, n_fresh):
                    status = PGS_NO_MEMORY
                    break
                nf0 = 0
                nf1 = 0
                nonfinite = False
            for r in range(k):
                if mode == SAMPLE_IID or mode == SAMPLE_PERMUTATION:
                    # the row AHEAD places on: in this batch, or drawn after it
                    z = c * _margin_at(
                        data, indices, indptr, mu, rows[r], icpt, icol,
                        rows[r + AHEAD] if r + AHEAD < k else _upcoming(
                            mode, ring_rows, head, smp, st.pos, n_rows, r + AHEAD - k),
                        implicit, inv_S)
                else:
                    # rows in file order: the hardware prefetcher sees the stream
                    z = c * _margin(data, indices, indptr, mu, rows[r], icpt, icol, implicit,
                                    inv_S)
                coefs[r] = z
                if not fused:
                    if lam_pf != NULL and isfinite(z):
                        _prefetch_cols(indices, indptr, st.lam, rows[r])
                    continue
                # Large batches: the row's share of the step is summed into delta at
                # once, while the row is in L1 (u is unchanged until the batch ends,
                # so the margins still all see w_{t-1}).
                if not isfinite(z):
                    nonfinite = True
                    break
                i = rows[r]
                g = _coef(tag, z, i, y, g_scale, k, smp, prm, st)
                coefs[r] = g
                if g != 0.0:
                    _sum_row(data, indices, indptr[i], indptr[i + 1], g, icpt, icol, delta,
                             fresh, n_fresh, &nf0, &nf1)
            if nonfinite:
                # a non-finite margin: nothing of the batch is applied
                for j in range(nf0):
                    delta[fresh[j]] = 0.0
                for j in range(nf1):
                    delta[fresh[n_fresh - 1 - j]] = 0.0
                status = PGS_NONFINITE
                break

        # 3. the loss derivatives: coefs[r] = -loss'(z_r) * weight / k
        if not fused:
            for r in range(k):
                z = coefs[r]
                if not isfinite(z):
                    status = PGS_NONFINITE
                    break
                coefs[r] = _coef(tag, z, rows[r], y, g_scale, k, smp, prm, st)
            if status != PGS_OK:
                break

        # 4. lam <- lam - lambda_t
        updated = 0
        if not prm.by_column:
            # Q's change summed per row, then added with compensation.
            for r in range(k):
                g = coefs[r]
                if g == 0.0:
                    continue
                i = rows[r]
                dm = 0.0
                dq = _row_update(data, indices, indptr[i], indptr[i + 1], g, lam,
                                 st.lu if in_lu else u, st.wsum, clast, st.C, p_kind,
                                 average, qm1, inv_S, prm.ratio_hi, icol, icpt, sd, &dm)
                st.n_updates += indptr[i + 1] - indptr[i] + (icpt != 0.0)
                if icpt != 0.0 and (p_kind == P_TWO or p_kind == P_Q3):
                    # (p = 1.8 and general p stage the intercept with the row)
                    dq += _coord_update(icol, g * icpt, st.lam, u, st.wsum, clast, st.C,
                                        p_kind, average, qm1, inv_S, prm.ratio_hi, &dm)
                _add_to_Q(st, dq, dm)
                updated = 1
        else:
            # Large batches: the batch's step is summed per column (delta), then each
            # column is updated once. Columns are split in two halves (_block_half),
            # each half's change of Q summed on its own, so that two threads (one per
            # half) and one thread give the same bits.
            for r in range(k):
                if coefs[r] != 0.0:
                    updated = 1
                    i = rows[r]
                    st.n_updates += indptr[i + 1] - indptr[i] + (icpt != 0.0)
            if updated:
                part_dq[1] = 0.0
                part_dq[9] = 0.0
                if lists:
                    # (fresh holds n_ent, every row of the batch: room for both halves)
                    for part in prange(2, num_threads=2, schedule="static", chunksize=1):
                        nf = _sum_half_lists(part, lanes, data, indices, ent, ent_row,
                                             lane_lo, lane_hi, lane_n0, lane_n1, coefs,
                                             icpt, icol, delta, fresh, n_ent)
                        part_dq[part * 8] = _apply_sums_k(
                            fresh + (0 if part == 0 else n_ent - 1), nf,
                            1 if part == 0 else -1, delta, st.lam, u, st.wsum, clast,
                            st.C, p_kind, average, qm1, inv_S, prm.ratio_hi,
                            &part_dq[part * 8 + 1])
                else:
                    # (delta was summed with the margins)
                    part_dq[0] = _apply_sums_k(fresh, nf0, 1, delta, st.lam, u, st.wsum,
                                               clast, st.C, p_kind, average, qm1, inv_S,
                                               prm.ratio_hi, &part_dq[1])
                    part_dq[8] = _apply_sums_k(fresh + n_fresh - 1, nf1, -1, delta, st.lam,
                                               u, st.wsum, clast, st.C, p_kind, average,
                                               qm1, inv_S, prm.ratio_hi, &part_dq[9])
                _add_to_Q(st, part_dq[0], part_dq[1])
                _add_to_Q(st, part_dq[8], part_dq[9])

        st.t += 1
        if p_kind != P_TWO and updated:
            Qv = st.Q + st.Q_comp
            # (both O(n_cols) and rare: on st.lu, unpacked and packed around them)
            if not (Qv >= Q_LO and Qv <= Q_HI):   # also true for NaN
                if in_lu:
                    pgs_lu_unpack(prm, st, n_cols)
                _rescale(prm, st, n_cols)
                if in_lu:
                    pgs_lu_pack(prm, st, n_cols)
                inv_S = 1.0 / st.S
            elif Qv < st.Q_abs * Q_CANCEL:
                if in_lu:
                    pgs_lu_unpack(prm, st, n_cols)
                _recompute_Q(prm, st, n_cols)
        if st.n_updates >= prm.recompute_every:
            if in_lu:
                pgs_lu_unpack(prm, st, n_cols)
            _recompute_Q(prm, st, n_cols)
            _fold_average(prm, st, n_cols)
        elif average and (st.t & (st.t - 1)) == 0:
            _fold_average(prm, st, n_cols)       # O(log T) times in all

        # 3. w_t = grad r*(lam / ((t + t_offset) sigma)), projected: only c changes
        _set_scale(prm, st)
        if not isfinite(st.c):
            status = PGS_NONFINITE
            break
        if average:
            if st.C > C_RESTART * st.c and st.c > 0.0:
                _fold_average(prm, st, n_cols)
            st.C += st.c
        if st.t == prm.t_pick:
            for j in range(n_cols):
                st.w_pick[j] = st.c * _u_at(mu, j, implicit, inv_S)

    if mode == SAMPLE_IID:
        for b in range(4):
            st.rng[b] = ring_rng[head][b]
    free(ent)
    free(ent_row)
    free(fresh)
    free(delta_own)
    return status


cdef int _dispatch(int loss_id, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t n_rows,
                   Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                   long long t_end, const PGSSampler* smp) noexcept nogil:
    """Select the loop compiled for `loss_id` (once per call, not per sample)."""
    if loss_id == L.LOSS_HINGE:
        return _pgs_loop(<Hinge*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_LOGISTIC:
        return _pgs_loop(<Logistic*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_SQUARED:
        return _pgs_loop(<Squared*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_SQUARED_HINGE:
        return _pgs_loop(<SquaredHinge*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_SMOOTH_HINGE:
        return _pgs_loop(<SmoothHinge*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_MODIFIED_HUBER:
        return _pgs_loop(<ModifiedHuber*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_HUBER:
        return _pgs_loop(<Huber*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, smp)
    elif loss_id == L.LOSS_EPSILON_INSENSITIVE:
        return _pgs_loop(<EpsilonInsensitive*>NULL, data, indices, indptr, y, n_rows,
                         n_cols, prm, st, t_end, smp)
    return _pgs_loop(<Absolute*>NULL, data, indices, indptr, y, n_rows, n_cols,
                     prm, st, t_end, smp)


cdef int pgs_run_f64_i64(int loss_id, const double* data, const int64_t* indices,
                         const int64_t* indptr, const double* y, Py_ssize_t n_rows,
                         Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                         long long t_end, const int64_t* fixed_rows) noexcept nogil:
    """Public entry point for float64 data with int64 indices (see pgs/_core.pxd).

    Rows are drawn i.i.d. uniformly from st.rng, or taken from `fixed_rows`
    (which must hold at least t_end * k entries) when it is not NULL.
    """
    cdef PGSSampler smp
    if loss_id < 0 or loss_id >= L.N_LOSSES:
        return -1
    memset(&smp, 0, sizeof(PGSSampler))
    smp.grad_scale = 1.0
    smp.mode = SAMPLE_IID
    if fixed_rows != NULL:
        smp.mode = SAMPLE_FIXED
        smp.fixed = fixed_rows
        smp.n_fixed = t_end * prm.k
    cdef int status = _dispatch(loss_id, data, indices, indptr, y, n_rows, n_cols, prm, st,
                                t_end, &smp)
    pgs_sync_u(prm, st, n_cols)
    return status


def build_alias(const double[::1] weights):
    """Vose's alias table for sampling index i with probability weights[i] / sum.

    Returns ``(prob, alias)``: draw i uniformly, keep it with probability
    ``prob[i]``, else take ``alias[i]``.  O(n), once per data set.
    """
    cdef Py_ssize_t n = weights.shape[0]
    cdef Py_ssize_t i, n_small = 0, n_large = 0, sm, lg
    cdef double total = 0.0
    prob_arr = np.empty(n)
    alias_arr = np.arange(n, dtype=np.int64)
    small_arr = np.empty(n, dtype=np.int64)
    large_arr = np.empty(n, dtype=np.int64)
    cdef double[::1] prob = prob_arr
    cdef int64_t[::1] alias = alias_arr
    cdef int64_t[::1] small = small_arr
    cdef int64_t[::1] large = large_arr
    with nogil:
        for i in range(n):
            total += weights[i]
        for i in range(n):
            prob[i] = weights[i] * n / total
            if prob[i] < 1.0:
                small[n_small] = i
                n_small += 1
            else:
                large[n_large] = i
                n_large += 1
        while n_small > 0 and n_large > 0:
            n_small -= 1
            sm = small[n_small]
            lg = large[n_large - 1]
            alias[sm] = lg
            prob[lg] = (prob[lg] + prob[sm]) - 1.0
            if prob[lg] < 1.0:
                n_large -= 1
                small[n_small] = lg
                n_small += 1
        # What is left is 1 up to rounding.
        for i in range(n_large):
            prob[large[i]] = 1.0
        for i in range(n_small):
            prob[small[i]] = 1.0
    return prob_arr, alias_arr


# ------------------------------------------------------------ Python-facing state

SAMPLING_MODES = ("iid", "permutation", "cyclic")


def _aligned_zeros(Py_ssize_t n):
    """n float64 zeros starting on a 64-byte boundary (see _block_half)."""
    buf = np.zeros(n + 8)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + n]


cdef class Solver:
    """The resumable state of one PGS run.

    Holds lambda, u, Q, t, the PRNG state and (optionally) the lazy average and
    the randomly picked iterate.  `run` advances it to a given iteration over
    CSR buffers; running to T1 and then to T2 equals running to T2 at once.

    Parameters
    ----------
    n_features : int
        Number of columns of X (the intercept column is added internally).
    loss_id : int
        Index of the loss in ``LOSS_NAMES``.
    p, sigma, B, icpt, eps : float
        See `pgs.train`; ``B <= 0`` means unbounded, ``icpt = 0`` no intercept.
    k : int
        Mini-batch size.
    t_pick : int
        Iteration whose iterate is kept (0 for none).
    average : bool
        Maintain the average of the iterates.
    rng_state : ndarray of 4 uint64
        Initial xoshiro256** state (not all zero).
    sampling : int
        Index of the sampling mode in ``SAMPLING_MODES``.
    track_loss : bool
        Accumulate the sampled losses (for progress reports).
    n_threads : int
        Threads for the margins and updates of batches of >= 16 rows (OpenMP).
    t_offset : float
        Iteration offset t0 >= 0: ``w_t = grad r*(lam / ((t + t0) sigma))`` (0 is the
        paper's Figure 1; see `pgs.train`).
    """
    cdef PGSParams prm
    cdef PGSState st
    cdef PGSSampler smp
    cdef readonly int loss_id
    cdef readonly int sampling
    cdef readonly Py_ssize_t n_cols
    cdef readonly object lam, u, wsum, clast, w_pick, rows, coefs, perm
    cdef object _delta
    # lam and u interleaved for the length of a run (pgs_lu_wanted), else None
    cdef object _lu
    cdef double* _lu_buf
    cdef object _weights, _alias_prob, _alias_idx, _row_scale, _fixed
    cdef Py_ssize_t _n_rows
    cdef bint _finished   # `finish`: no run until set_state
    # batches' path (prm.by_column) still to be chosen from the data (`_choose_path`)
    cdef bint _path_open
    cdef bint _consumed   # `take`: the state is gone
    cdef bint _handed     # `get_state(copy=False)`: its buffers are the caller's state

    def __cinit__(self, Py_ssize_t n_features, int loss_id, double p, double sigma,
                  double B, double icpt, double eps, Py_ssize_t k, long long t_pick,
                  bint average, uint64_t[::1] rng_state, int sampling=0,
                  bint track_loss=False, int n_threads=1, double t_offset=0.0):
        cdef int a
        if loss_id < 0 or loss_id >= L.N_LOSSES:
            raise ValueError(f"loss_id={loss_id} is not a loss id")
        if sampling < 0 or sampling > 2:
            raise ValueError(f"sampling={sampling} is not a sampling mode")
        if rng_state.shape[0] != 4:
            raise ValueError("rng_state must hold 4 uint64 words")
        self.loss_id = loss_id
        self.sampling = sampling
        self.n_cols = n_features + 1
        pgs_init(&self.prm, p, sigma, B, icpt, eps, k, t_pick, average, self.n_cols)
        if self.prm.average_spans and self.n_cols > BY_COLUMN_MAX_COLS:
            # (the memory budget: see BY_COLUMN_MAX_COLS)
            self.prm.by_column = 0
        self._path_open = (_rows_from(&self.prm) > 0.0
                           and K_PART <= k < _rows_below(self.prm.p_kind)
                           and self.prm.by_column)
        self.prm.track_loss = track_loss
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.prm.n_threads = n_threads
        if not t_offset >= 0.0 or t_offset == INFINITY:
            raise ValueError(f"t_offset must be a finite number >= 0, got {t_offset}")
        self.prm.t_offset = t_offset
        memset(&self.st, 0, sizeof(PGSState))
        memset(&self.smp, 0, sizeof(PGSSampler))
        for a in range(4):
            self.st.rng[a] = rng_state[a]
        if (rng_state[0] | rng_state[1] | rng_state[2] | rng_state[3]) == 0:
            self.st.rng[0] = 0x9E3779B97F4A7C15ULL   # all-zero is xoshiro's fixed point
        self.lam = _aligned_zeros(self.n_cols)
        self.u = self.lam if self.prm.p_kind == P_TWO else _aligned_zeros(self.n_cols)
        self.rows = np.zeros(k, dtype=np.int64)
        self.coefs = np.zeros(k)
        self._alloc_scratch()
        self.wsum = _aligned_zeros(self.n_cols) if average else None
        # (only an average kept by spans has clast: see _fold_average)
        self.clast = _aligned_zeros(self.n_cols) if self.prm.average_spans else None
        self.w_pick = np.zeros(self.n_cols) if t_pick > 0 else None
        self.perm = None
        self._n_rows = -1
        self._bind()

    def _alloc_scratch(self):
        """The buffers only a run uses (`finish` frees them; none until the batches'
        path is chosen)."""
        if self._path_open:
            self._delta = self._lu = None
            return
        # (the kernel's per-column sums of a large batch, kept to spare a run an O(n)
        # allocation: lock-step runs are many short calls)
        self._delta = _aligned_zeros(self.n_cols) if self.prm.by_column else None
        # (not past LU_MAX_COLS: see there)
        self._lu = (_aligned_zeros(2 * self.n_cols)
                    if pgs_lu_wanted(&self.prm) and self.n_cols <= LU_MAX_COLS else None)

    cdef void _bind(self):
        """Point the C state at the numpy buffers this object owns."""
        cdef double[::1] v
        cdef int64_t[::1] iv
        v = self.lam
        self.st.lam = &v[0]
        v = self.u
        self.st.u = &v[0]
        iv = self.rows
        self.st.rows = &iv[0]
        v = self.coefs
        self.st.coefs = &v[0]
        self.st.delta = NULL
        if self._delta is not None:
            v = self._delta
            self.st.delta = &v[0]
        self._lu_buf = NULL
        if self._lu is not None:
            v = self._lu
            self._lu_buf = &v[0]
        self.st.wsum = NULL
        self.st.clast = NULL
        self.st.w_pick = NULL
        if self.wsum is not None:
            v = self.wsum
            self.st.wsum = &v[0]
        if self.clast is not None:
            v = self.clast
            self.st.clast = &v[0]
        if self.w_pick is not None:
            v = self.w_pick
            self.st.w_pick = &v[0]

    @property
    def by_column(self):
        """Whether batches are summed per column before the update (see K_PART); None
        until the first run chooses it from the data (`_rows_from`: p = 1.8, general p
        (with the average: p >= 1.2) and p = 1.5 with the average, for 16 <= k < 2048,
        p = 1.5 1024)."""
        return None if self._path_open else bool(self.prm.by_column)

    def _choose_path(self, const index_t[::1] indices, const index_t[::1] indptr):
        """Fix the batches' path from the data, if still open: row by row when a batch
        of k rows repeats few columns (`_rows_from`; the batches probed as the sampling
        mode forms them, see `_distinct_fraction`). Once per solver, whatever data later
        runs get, so a run split into chunks keeps one path."""
        cdef double frac
        cdef double rows_from = _rows_from(&self.prm)
        if not self._path_open or indptr.shape[0] < 2:
            return              # (no rows: the run refuses them, the path stays open)
        frac = _distinct_fraction(indices, indptr, self.n_cols - 1, self.prm.k,
                                  self.prm.icpt != 0.0, self.sampling == SAMPLE_CYCLIC)
        self._set_path(frac < rows_from)

    def _force_path(self, bint by_column):
        """Tests and benchmarks: set the batches' path (prm.by_column) of a solver that
        has not run yet, instead of `_choose_path`."""
        if self.st.t > 0:
            raise RuntimeError("the batches' path is fixed once a solver has run")
        self._set_path(by_column)

    def _set_path(self, bint by_column):
        self.prm.by_column = by_column
        self._path_open = False
        if not self._finished:
            self._alloc_scratch()
            self._bind()

    @property
    def interleaved(self):
        """Whether runs keep lam and u interleaved (p = 1.8 and general p row by row, at
        most LU_MAX_COLS columns; see pgs_lu_wanted)."""
        return self._lu is not None

    @property
    def t(self):
        """Iterations done."""
        return self.st.t

    @property
    def k(self):
        """Mini-batch size."""
        return self.prm.k

    @property
    def t_pick(self):
        """The iteration whose iterate is kept in `w_pick` (0: none)."""
        return self.prm.t_pick

    @property
    def Q(self):
        """The maintained sum_j (|lam_j| / S)^q (S = `lam_scale`, 1 for p = 2)."""
        return self.st.Q + self.st.Q_comp

    @property
    def lam_scale(self):
        """S: u and Q are kept for lam / S (p < 2; always 1 for p = 2)."""
        return _unit(&self.prm, &self.st)

    @property
    def q(self):
        """The dual exponent used by the kernel."""
        return self.prm.q

    @property
    def scale(self):
        """c_t, with w_t = c_t * u."""
        return self.st.c

    @property
    def loss_sum(self):
        """Sum of the sampled (weighted) losses at the pre-update iterates."""
        return self.st.loss_sum

    @property
    def consumed(self):
        """Rows consumed so far."""
        return self.st.consumed

    @property
    def norm_w(self):
        """||w_t||_p, from Q in O(1)."""
        cdef double Qv = self.st.Q + self.st.Q_comp
        if Qv <= 0.0:
            return 0.0
        if self.prm.p_kind == P_TWO:
            return self.st.c * sqrt(Qv)
        # ||c u||_p = c (sum |lam|^((q-1) p))^(1/p) = c Q^(1/p)
        return self.st.c * pow(Qv, 1.0 / self.prm.p)

    def exact_Q(self):
        """sum_j |lam_j|^q recomputed from scratch (a test hook for the drift)."""
        return pgs_exact_Q(&self.prm, &self.st, self.n_cols)

    def set_t_pick(self, long long t_pick):
        """Choose (again) which future iteration's iterate to keep."""
        if t_pick > 0 and self.w_pick is None:
            self.w_pick = np.zeros(self.n_cols)
            self._bind()
        self.prm.t_pick = t_pick

    cdef void _prepare_sampler(self, Py_ssize_t n_rows, object sample_weight,
                               object fixed_rows):
        """Build the sampler for this data set (alias table, permutation) once."""
        cdef double[::1] dv
        cdef int64_t[::1] iv
        if fixed_rows is not None:
            self._fixed = fixed_rows
            iv = self._fixed
            self.smp.mode = SAMPLE_FIXED
            self.smp.fixed = &iv[0] if iv.shape[0] > 0 else NULL
            self.smp.n_fixed = iv.shape[0]
            self.smp.grad_scale = 1.0
            self.smp.alias_prob = NULL
            self.smp.alias_idx = NULL
            self.smp.row_scale = NULL
            self._n_rows = -1           # rebuild the real sampler on the next call
            return
        if n_rows == self._n_rows and sample_weight is self._weights:
            return
        self._n_rows = n_rows
        self._weights = sample_weight
        self.smp.mode = self.sampling
        self.smp.fixed = NULL
        self.smp.alias_prob = NULL
        self.smp.alias_idx = NULL
        self.smp.row_scale = NULL
        self.smp.grad_scale = 1.0
        if sample_weight is not None:
            if self.sampling == SAMPLE_IID:
                # Rows drawn with probability w_i / W, gradient times W / m: unbiased
                # for (1/m) sum_i w_i loss_i, and O(1) per draw.
                self._alias_prob, self._alias_idx = build_alias(sample_weight)
                dv = self._alias_prob
                self.smp.alias_prob = &dv[0]
                iv = self._alias_idx
                self.smp.alias_idx = &iv[0]
                self.smp.grad_scale = float(np.mean(sample_weight))
            else:
                self._row_scale = sample_weight
                dv = self._row_scale
                self.smp.row_scale = &dv[0]
        if self.sampling == SAMPLE_PERMUTATION:
            if self.perm is None or self.perm.shape[0] != n_rows:
                self.perm = np.arange(n_rows, dtype=np.int64)
                self.st.pos = n_rows          # shuffle before the first row
            iv = self.perm
            self.smp.perm = &iv[0]

    def run(self, long long t_end, data, indices, indptr, y, fixed_rows=None,
            sample_weight=None):
        """Advance to iteration `t_end` over the CSR buffers (data, indices, indptr).

        Parameters
        ----------
        t_end : int
            Iteration to stop at (global count).
        data, indices, indptr : ndarray
            CSR buffers (float32/float64 data, int32/int64 indices and indptr).
        y : ndarray of float64
            Targets, -1/+1 for classification.
        fixed_rows : ndarray of int64, optional
            Row sequence used instead of the sampler (a test hook), indexed by the
            global count of rows consumed so chunked runs stay exact.
        sample_weight : ndarray of float64, optional
            Non-negative row weights (pass the same object on every chunk).

        Returns
        -------
        int
            A status code (0: ok).
        """
        cdef Py_ssize_t n_rows = indptr.shape[0] - 1
        self._check_runnable()
        if fixed_rows is not None:
            fixed_rows = np.ascontiguousarray(fixed_rows, dtype=np.int64)
        if sample_weight is not None and sample_weight.shape[0] != n_rows:
            raise ValueError("sample_weight and indptr disagree on the number of rows")
        self._prepare_sampler(n_rows, sample_weight, fixed_rows)
        self._choose_path(indices, indptr)
        return _run(self, data, indices, indptr, y, t_end)

    def last(self):
        """w_t of the current iteration, as a new array of length n_features + 1."""
        self._check_state()
        return self.st.c * self.u

    def average(self):
        """The mean of w_1 .. w_t (O(n); leaves the state untouched, so a resumed run
        folds exactly as an unsplit one)."""
        self._check_state()
        if self.wsum is None:
            raise ValueError("this solver does not keep the average")
        if self.st.t == 0:
            return np.zeros(self.n_cols)
        out = np.empty(self.n_cols)
        self._average_to(out)
        return out

    def _average_to(self, double[::1] out):
        """out = (wsum + u (C - clast)) / t, without clast (p >= 1.2) (C u - wsum) / t (see
        _fold_average), element by element: no temporary, and out may be clast (or
        wsum where there is no clast)."""
        cdef const double* u = self.st.u
        cdef const double* wsum = self.st.wsum
        cdef const double* clast = self.st.clast
        cdef double C = self.st.C
        cdef double t = <double>self.st.t
        cdef Py_ssize_t j
        with nogil:
            if clast == NULL:
                for j in range(self.n_cols):
                    out[j] = (C * u[j] - wsum[j]) / t
            else:
                for j in range(self.n_cols):
                    out[j] = (wsum[j] + u[j] * (C - clast[j])) / t

    def finish(self):
        """End the solver's run: free the buffers only a run uses (st.lu, the batch's
        sums). Its state and iterates can still be read; `run` refuses it until
        `set_state`. (`take` and `get_state(copy=False)` finish it themselves.)"""
        self._finished = True
        self._lu = None
        self._delta = None
        self._bind()

    def take(self, str which):
        """The iterate `which` ("last", "average" or "pick") in one of the solver's own
        buffers, computed in place, without a temporary of n_cols.

        Consumes the state: the solver then refuses to run, to hand out its state or
        another iterate, until `set_state`. To keep the state, call `finish`, then
        `iterate(which)` and `get_state(copy=False)`. This is how `pgs.train` returns its
        model: the iterate costs no memory on top of the state.
        """
        self._check_state()
        self._check_which(which)
        if self._handed:
            raise RuntimeError("get_state(copy=False) handed the solver's buffers over as "
                               "a state: take() would overwrite it (use iterate())")
        self.finish()
        self._consumed = True
        if which == "pick":
            w = self.w_pick
        elif which == "last":
            w = self.u
            np.multiply(w, self.st.c, out=w)
        else:
            w = self.wsum if self.clast is None else self.clast
            if self.st.t == 0:
                w[:] = 0.0
            else:
                self._average_to(w)
        return w

    def iterate(self, str which):
        """The iterate `which` ("last", "average" or "pick") as a new array."""
        self._check_state()
        self._check_which(which)
        if which == "pick":
            return self.w_pick.copy()
        return self.last() if which == "last" else self.average()

    def _check_which(self, str which):
        if which == "pick":
            if self.w_pick is None:
                raise ValueError("this solver keeps no picked iterate")
        elif which == "average":
            if self.wsum is None:
                raise ValueError("this solver does not keep the average")
        elif which != "last":
            raise ValueError(f"which must be 'last', 'average' or 'pick', got {which!r}")

    def _check_state(self):
        if self._consumed:
            raise RuntimeError("the solver's state was consumed by take(); restore it "
                               "with set_state()")

    def _check_runnable(self):
        self._check_state()
        if self._finished:
            raise RuntimeError("the solver was finished (finish(), take() or "
                               "get_state(copy=False)); restore it with set_state() "
                               "to run it again")

    def get_state(self, bint copy=True):
        """A dict of copies of everything needed to resume (see `set_state`).

        With ``copy=False``, the solver's own buffers instead, handed over: it is
        finished (see `finish`). That is how `pgs.train(keep_state=True)` keeps a
        finished run's state without copying it.
        """
        self._check_state()
        st = &self.st
        state = dict(Q=st.Q, Q_comp=st.Q_comp, Q_abs=st.Q_abs, C=st.C, c=st.c, S=st.S,
                     t=st.t, n_updates=st.n_updates, consumed=st.consumed, pos=st.pos,
                     loss_sum=st.loss_sum, rng=self.rng_state, t_pick=self.prm.t_pick,
                     by_column=self.by_column)
        for name in ("lam", "u", "wsum", "clast", "w_pick", "perm"):
            arr = getattr(self, name)
            state[name] = None if arr is None else arr.copy() if copy else arr
        if self.u is self.lam:
            state["u"] = None          # (p = 2: u is lam, one copy is enough)
        if not copy:
            self.finish()
            self._handed = True
        return state

    def set_state(self, dict state):
        """Resume from `get_state()` of a solver built with the same arguments."""
        cdef int a
        if state["lam"].shape[0] != self.n_cols:
            raise ValueError("the state belongs to a different number of features")
        if (state["wsum"] is None) != (self.wsum is None):
            raise ValueError("the state and this solver disagree on keeping the average")
        if (state["clast"] is None) != (self.clast is None):
            # (one vector for p >= 1.2, spans below: see _fold_average)
            raise ValueError("the state keeps its average in another form than this "
                             "solver (a state of another version of pgs, or another p)")
        self.lam[:] = state["lam"]
        if self.prm.p_kind != P_TWO:
            self.u[:] = state["u"]
        if self.wsum is not None:
            self.wsum[:] = state["wsum"]
        if self.clast is not None:
            self.clast[:] = state["clast"]
        if state["w_pick"] is not None:
            self.w_pick = state["w_pick"].copy()
        self.prm.t_pick = state["t_pick"]
        self.perm = None if state["perm"] is None else state["perm"].copy()
        self._n_rows = -1
        if state.get("by_column") is not None and state["by_column"] != self.by_column:
            # (the path the state's runs took, so that a resumed run takes it too)
            self._set_path(state["by_column"])
        if self._finished:
            self._alloc_scratch()
        self._finished = self._consumed = self._handed = False
        self._bind()
        self.st.Q = state["Q"]
        self.st.Q_comp = state["Q_comp"]
        self.st.C = state["C"]
        self.st.c = state["c"]
        self.st.S = state["S"]
        self.st.Q_abs = state["Q_abs"]
        self.st.t = state["t"]
        self.st.n_updates = state["n_updates"]
        self.st.consumed = state["consumed"]
        self.st.pos = state["pos"]
        self.st.loss_sum = state["loss_sum"]
        for a in range(4):
            self.st.rng[a] = state["rng"][a]

    @property
    def rng_state(self):
        """The PRNG state before the next unconsumed draw, as 4 uint64 words."""
        return np.array([self.st.rng[0], self.st.rng[1], self.st.rng[2], self.st.rng[3]],
                        dtype=np.uint64)


def _run(Solver s, const floating_t[::1] data, const index_t[::1] indices,
         const index_t[::1] indptr, const double[::1] y, long long t_end):
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef int status
    if y.shape[0] != n_rows:
        raise ValueError("y and indptr disagree on the number of rows")
    if n_rows < 1:
        raise ValueError("no rows")
    with nogil:
        # (lam and u are current between runs: st.lu lives for one run)
        s.st.lu = s._lu_buf if _LU_ON else NULL
        pgs_lu_pack(&s.prm, &s.st, s.n_cols)
        status = _dispatch(s.loss_id, &data[0] if data.shape[0] > 0 else NULL,
                           &indices[0] if indices.shape[0] > 0 else NULL,
                           &indptr[0], &y[0], n_rows, s.n_cols, &s.prm, &s.st,
                           t_end, &s.smp)
        pgs_lu_unpack(&s.prm, &s.st, s.n_cols)
        s.st.lu = NULL
        pgs_sync_u(&s.prm, &s.st, s.n_cols)
    return status


def run_lockstep(list solvers, long long t_end, Py_ssize_t block, data, indices, indptr,
                 list ys, sample_weight=None):
    """Advance several solvers over the same X to iteration `t_end`, in lock-step.

    Each solver in turn runs `block` iterations, then the next; so when the solvers
    draw the same rows (same seed, sampling mode, k and weights, e.g. the one-vs-rest
    problems of a multiclass fit) each block's rows are fetched from memory once and
    found in cache by the other solvers. A solver's result does not depend on the
    schedule: it is bit-identical to ``solver.run(t_end, ...)`` (a chunked run draws
    exactly an unsplit run's rows), whatever rows the others draw.

    Parameters
    ----------
    solvers : list of Solver
    t_end : int
        Iteration every solver stops at.
    block : int
        Iterations per solver per turn (>= 1); its rows should fit in L2.
    data, indices, indptr : ndarray
        CSR buffers, as for `Solver.run`.
    ys : list of ndarray of float64
        Each solver's targets.
    sample_weight : ndarray of float64, optional
        Row weights shared by all the solvers.

    Returns
    -------
    (int, int)
        The index of the first solver that failed and its status code, or (-1, 0).
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Solver s
    if len(ys) != len(solvers):
        raise ValueError(f"{len(solvers)} solvers but {len(ys)} target arrays")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    if sample_weight is not None and sample_weight.shape[0] != n_rows:
        raise ValueError("sample_weight and indptr disagree on the number of rows")
    if n_rows < 1:
        raise ValueError("no rows")
    for s in solvers:
        s._check_runnable()
        s._prepare_sampler(n_rows, sample_weight, None)
        s._choose_path(indices, indptr)
    return _run_lockstep(solvers, data, indices, indptr, ys, t_end, block)


def _run_lockstep(list solvers, const floating_t[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, list ys, long long t_end, Py_ssize_t block):
    cdef Py_ssize_t n = len(solvers)
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t a
    cdef const double[::1] yv
    cdef Solver s
    cdef long long t_lo, te
    cdef int status = 0
    cdef Py_ssize_t failed = -1
    cdef const floating_t* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const index_t* ip = &indices[0] if indices.shape[0] > 0 else NULL
    # The C views of every solver (the list keeps the objects, and so these, alive).
    cdef PGSParams** prm = <PGSParams**>malloc(n * sizeof(PGSParams*))
    cdef PGSState** st = <PGSState**>malloc(n * sizeof(PGSState*))
    cdef PGSSampler** smp = <PGSSampler**>malloc(n * sizeof(PGSSampler*))
    cdef const double** yp = <const double**>malloc(n * sizeof(double*))
    cdef int* loss_id = <int*>malloc(n * sizeof(int))
    cdef Py_ssize_t* n_cols = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    try:
        if n == 0:
            return (-1, 0)
        if (prm == NULL or st == NULL or smp == NULL or yp == NULL or loss_id == NULL
                or n_cols == NULL):
            raise MemoryError()
        t_lo = t_end
        for a in range(n):
            s = solvers[a]
            yv = ys[a]
            if yv.shape[0] != n_rows:
                raise ValueError("y and indptr disagree on the number of rows")
            prm[a] = &s.prm
            st[a] = &s.st
            smp[a] = &s.smp
            yp[a] = &yv[0]
            loss_id[a] = s.loss_id
            n_cols[a] = s.n_cols
            if s.st.t < t_lo:
                t_lo = s.st.t
        # (only once every solver is checked: an error above leaves no st.lu set)
        for a in range(n):
            s = solvers[a]
            s.st.lu = s._lu_buf if _LU_ON else NULL
        with nogil:
            for a in range(n):
                pgs_lu_pack(prm[a], st[a], n_cols[a])
            te = t_lo
            while te < t_end and failed < 0:
                te = te + block if t_end - te > block else t_end
                for a in range(n):
                    status = _dispatch(loss_id[a], dp, ip, &indptr[0], yp[a], n_rows,
                                       n_cols[a], prm[a], st[a], te, smp[a])
                    if status != PGS_OK:
                        failed = a
                        break
            for a in range(n):
                pgs_lu_unpack(prm[a], st[a], n_cols[a])
                st[a].lu = NULL
                pgs_sync_u(prm[a], st[a], n_cols[a])
        return (failed, status)
    finally:
        free(prm)
        free(st)
        free(smp)
        free(yp)
        free(loss_id)
        free(n_cols)


# ------------------------------------------------------------- checks and helpers

cdef double _distinct_fraction(const index_t[::1] indices, const index_t[::1] indptr,
                               Py_ssize_t n_feat, Py_ssize_t k, bint icpt,
                               bint consecutive) except -1.0:
    """The distinct columns of a batch of k rows as a fraction of its entries (the
    intercept's included), over PATH_PROBES batches: of rows spread evenly over X, as
    random draws would be, or (`consecutive`, for rows in file order) of k consecutive
    rows from evenly spaced starts. Not drawn: the choice must not depend on the seed.
    Entries outside [0, n_feat) are skipped (the run reports them)."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t b, r, jj, n_ent = 0, n_new = 0
    cdef int64_t i, j
    cdef int pass_
    cdef unsigned char bit
    cdef unsigned char* seen
    if n_rows < 1:
        return 1.0
    seen = <unsigned char*>calloc((n_feat >> 3) + 1, 1)
    if seen == NULL:
        raise MemoryError()
    with nogil:
        for b in range(PATH_PROBES):
            # pass 0 marks the batch's columns, pass 1 clears them for the next batch
            for pass_ in range(2):
                for r in range(k):
                    if consecutive:
                        i = (<int64_t>b * n_rows // PATH_PROBES + r) % n_rows
                    else:
                        i = ((<int64_t>r * PATH_PROBES + b) * n_rows
                             // (<int64_t>PATH_PROBES * k))
                    for jj in range(indptr[i], indptr[i + 1]):
                        j = indices[jj]
                        if j < 0 or j >= n_feat:
                            continue
                        if pass_ == 1:
                            seen[j >> 3] = 0
                            continue
                        bit = <unsigned char>(1 << (j & 7))
                        n_ent += 1
                        if not seen[j >> 3] & bit:
                            seen[j >> 3] |= bit
                            n_new += 1
    free(seen)
    if icpt:
        n_ent += PATH_PROBES * k
        n_new += PATH_PROBES
    return <double>n_new / <double>n_ent if n_ent > 0 else 1.0


def max_row_norm(const floating_t[::1] data, const index_t[::1] indptr, double q,
                 double icpt=0.0):
    """max_i ||(x_i, icpt)||_q over CSR buffers (the index pointer must be valid).

    One pass, no allocation; |x|^q as the kernel takes its powers (`pgs_powq_n`, by
    chunks of a row). NaN if a value is not finite.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t i, lo, hi, n, t
    cdef double best = 0.0, s
    cdef double tail = pow(fabs(icpt), q)
    cdef double a[POW_CHUNK]
    cdef double pw[POW_CHUNK]
    cdef int p_kind = P_GENERAL
    if q == 2.0:
        p_kind = P_TWO
    elif fabs(q - 3.0) < 1e-12:
        p_kind = P_Q3
    elif fabs(q - 2.25) < 1e-12:
        p_kind = P_Q225
    with nogil:
        for i in range(n_rows):
            s = 0.0
            lo = indptr[i]
            hi = indptr[i + 1]
            while lo < hi:
                n = hi - lo if hi - lo < POW_CHUNK else POW_CHUNK
                for t in range(n):
                    a[t] = fabs(data[lo + t])
                if p_kind == P_TWO or p_kind == P_Q3:
                    for t in range(n):
                        s += a[t] * a[t] if p_kind == P_TWO else a[t] * (a[t] * a[t])
                else:
                    pgs_powq_n(a, pw, n, _pow_kind(p_kind), q - 1.0)
                    for t in range(n):
                        s += a[t] * pw[t]
                lo += n
            if not s <= best:         # also takes NaN, which then stays
                best = s
                if best != best:
                    break
    return pow(best + tail, 1.0 / q)


def powers(const double[::1] a, double q_minus_1):
    """a^(q-1) elementwise, as the kernel takes its powers (tests and benches).

    Parameters
    ----------
    a : ndarray of float64, C-contiguous
        Values >= 0.
    q_minus_1 : float
        The exponent, > 0 (1.25 takes the square-root path of p = 1.8).

    Returns
    -------
    ndarray of float64
        The powers, computed four at a time where ``SIMD_POWERS`` is true.
    """
    out = np.empty(a.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    cdef int kind = PGS_POW_Q225 if q_minus_1 == 1.25 else PGS_POW_GENERAL
    if a.shape[0]:
        with nogil:
            pgs_powq_n(&a[0], &o[0], a.shape[0], kind, q_minus_1)
    return out


# True where the kernel takes its powers with AVX2 (see _powers.h).
SIMD_POWERS = bool(pgs_powers_simd())


cdef bint _LU_ON = True

# Widest problem a Solver runs on st.lu. Its two vectors, with lam, u and the picked
# iterate (iterate="random", pgs.train's default), make five of n_features doubles:
# within the memory budget of four plus 20 MB up to about 2.6M columns. Wider ones
# (hashed features) run on two arrays.
cdef Py_ssize_t LU_MAX_COLS = 1 << 21
INTERLEAVED_MAX_COLS = LU_MAX_COLS   # (for Python: tests)

# Widest problem whose batches of k >= 16 rows a Solver sums per column for p < 1.2
# with the average: lam, u, the average's two vectors (spans) and the per-column sums
# make five, as above (p >= 1.2 keeps the average in one vector: four). Wider ones
# update row by row (the same algorithm, rounded in another order; on wide data a batch
# repeats few columns, which is what summing per column saves).
cdef Py_ssize_t BY_COLUMN_MAX_COLS = 1 << 21


def batch_distinct_fraction(const index_t[::1] indices, const index_t[::1] indptr,
                            Py_ssize_t n_features, Py_ssize_t k, bint icpt=True,
                            bint consecutive=False):
    """The fraction a Solver's first run bases its batches' path on (`_choose_path`).

    Parameters
    ----------
    indices, indptr : ndarray
        CSR index buffers (int32 or int64, the same dtype).
    n_features : int
        Columns; entries outside [0, n_features) are not counted.
    k : int
        Rows per batch (>= 1).
    icpt : bool
        Count the intercept's column as an entry of every row.
    consecutive : bool
        Batches of k consecutive rows (sampling="cyclic"), not of rows spread over X.

    Returns
    -------
    float
        Distinct columns over entries in PATH_PROBES batches of k rows spread evenly over
        the rows, or of k consecutive rows from evenly spaced starts (1.0 for no
        entries).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return _distinct_fraction(indices, indptr, n_features, k, icpt, consecutive)


def _set_by_column_max_cols(Py_ssize_t n):
    """Tests: set BY_COLUMN_MAX_COLS for Solvers made from now on; returns the old value."""
    global BY_COLUMN_MAX_COLS
    old = BY_COLUMN_MAX_COLS
    BY_COLUMN_MAX_COLS = n
    return old


def _use_interleaved(bint on):
    """Tests: run p = 1.8 and general p on lam and u as two arrays (False) instead of
    interleaved in st.lu (True, the default, where `pgs_lu_wanted`); the two give the
    same bits. Not while a run is going."""
    global _LU_ON
    _LU_ON = on


def _use_simd_rows(bint on):
    """Tests: send the row updates of p = 1.8 and general p (and p = 1.8's batch
    updates) through the staged path (False) or let the AVX2 update take them where it
    can (True, the default); the two give the same bits. Not while a run is going."""
    pgs_rowpow_use(on)


def _use_simd_powers(bint on):
    """Tests only: take the powers with AVX2 (where the CPU has it) or with libm.

    Returns whether the AVX2 path was on before. Never call it while a run is going
    (a run's powers must all come from one path).
    """
    cdef bint was = pgs_powers_simd()
    pgs_powers_use_simd(on)
    return was


def check_csr(const floating_t[::1] data, const index_t[::1] indices,
              const index_t[::1] indptr, Py_ssize_t n_features, bint entries=True):
    """Validate raw CSR buffers without copying them.

    Returns ``None`` when they are consistent, else a message: the index
    pointer must be non-decreasing within the buffers, column indices in
    ``[0, n_features)`` and every stored value finite. With ``entries=False``
    only the index pointer is checked (O(n_rows)); the kernel checks the
    entries of each row it reads.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t i, jj
    cdef index_t lo, hi, idx_min, idx_max
    cdef double finite_sum = 0.0
    cdef Py_ssize_t bad = -1
    cdef int kind = 0
    if n_rows < 0:
        return "indptr is empty"
    with nogil:
        if indptr[0] < 0:
            kind = 1
        # (branch-free, so that the compiler vectorises it: it runs on every train call)
        for i in range(n_rows):
            kind |= indptr[i + 1] < indptr[i]
        if kind == 0 and (indptr[n_rows] > data.shape[0]
                          or indptr[n_rows] > indices.shape[0]):
            kind = 1
        if kind == 0 and entries:
            lo = indptr[0]
            hi = indptr[n_rows]
            # Branch-free passes the compiler vectorises (this runs on every train
            # call); the offending entry is searched for only if there is one.
            if hi > lo:
                idx_min = indices[lo]
                idx_max = indices[lo]
                for jj in range(lo, hi):
                    idx_min = indices[jj] if indices[jj] < idx_min else idx_min
                    idx_max = indices[jj] if indices[jj] > idx_max else idx_max
                    finite_sum += data[jj] * 0.0     # NaN once any value is inf or NaN
                if idx_min < 0 or idx_max >= n_features or finite_sum != 0.0:
                    for jj in range(lo, hi):
                        if indices[jj] < 0 or indices[jj] >= n_features:
                            kind = 2
                            bad = jj
                            break
                        if not isfinite(data[jj]):
                            kind = 3
                            bad = jj
                            break
    if kind == 1:
        return "indptr is not a valid CSR index pointer for its data and indices"
    if kind == 2:
        return f"column index {indices[bad]} is outside [0, {n_features})"
    if kind == 3:
        return f"X contains a non-finite value ({data[bad]})"
    return None


def mean_loss(const double[::1] z, const double[::1] y, int loss_id, double eps,
              const double[::1] sample_weight=None):
    """(1/n) sum_i s_i loss(z_i, y_i) over margins `z` and targets `y` (s_i = 1 by default)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double s = 0.0
    if y.shape[0] != n:
        raise ValueError("z and y differ in length")
    if sample_weight is not None and sample_weight.shape[0] != n:
        raise ValueError("z and sample_weight differ in length")
    if n == 0:
        return 0.0
    with nogil:
        if sample_weight is None:
            for i in range(n):
                s += L.loss_value(loss_id, z[i], y[i], eps)
        else:
            for i in range(n):
                s += sample_weight[i] * L.loss_value(loss_id, z[i], y[i], eps)
    return s / n


def py_loss(int loss_id, double z, double y, double eps):
    """The compiled loss value (a test hook)."""
    return L.loss_value(loss_id, z, y, eps)


def py_dloss(int loss_id, double z, double y, double eps):
    """The compiled loss derivative (a test hook)."""
    return L.loss_deriv(loss_id, z, y, eps)
