/* One row's update lam += g x for p = 1.8 (q - 1 = 1.25) and general p, four entries at
 * a time.
 *
 * The staged update of pgs/_core.pyx (_pow_stage, then a chunk's powers in one
 * pgs_powq_n call, then _pow_finish) moves every entry through five buffers and
 * back: about 40 scalar instructions an entry besides the powers. On x86-64 CPUs with
 * AVX2 and FMA this does the same arithmetic in 256-bit registers straight from the
 * row. For p = 1.8: four lam_j and u_j read, the new lam_j, its ratio r = |lam_j| / S,
 * u_j = r sqrt(sqrt(r)) (pgs_powq4, the staged path's own), and u_j and lam_j written
 * back. General p's power (pgs_pow4) is a long chain of arithmetic; inside that loop
 * too little of it overlaps (1.01x the staged path's time, RCV1-like, k = 1), so its
 * groups go through three passes over chunks of the row (PGS_GEN_GROUPS, below), with
 * the powers in a tight loop of their own (0.96x).
 *
 * The row's entries are taken from the start, in groups of four, while no group
 * repeats a column and no ratio passes ratio_hi; then the last 1-3 entries and the
 * intercept (entry n of the row, column icol, value icpt, if icpt != 0) as one
 * masked group. The return value is how many entries of the n + (icpt != 0) it took
 * (a multiple of four unless it took them all); the caller's staged path does the
 * rest, in order. Reading a group's four lam_j and u_j before writing any is the
 * same as one entry after another because the group has no column twice; across
 * groups, memory keeps the order. Q's terms are summed in four lanes (lane t & 3 of
 * entry t), as the staged path sums them, with a multiply and an add each (the build
 * turns off floating-point contraction); a masked lane adds +0 to a sum that is +0
 * or positive. Both paths give the same bits (tested).
 *
 * lam_j and u_j are lam[sd j] and u[sd j]: sd = 1 for separate arrays, 2 for the
 * interleaved st.lu of pgs/_core.pxd (lam = lu + 1, u = lu).
 *
 * With the average (w, not NULL), w_j += C (u_j' - u_j) for each entry, as the staged
 * path's _finish_one does (a multiply, a subtraction and an add: the same bits):
 * the average in one vector (p >= 1.2), see _fold_average in pgs/_core.pyx. w_j is w[j]
 * whatever sd (the row functions take wshift = sd - 1).
 *
 * pgs_colspow does the same for a batch of k >= 16 rows, whose steps the kernel sums
 * per column first: one update per distinct column, so no group repeats one.
 *
 * Without AVX2 (or on other CPUs) the functions take no entry.
 */
#ifndef PGS_ROWPOW_H
#define PGS_ROWPOW_H

#include <stdint.h>
#include <string.h>
#include "_powers.h"

/* copysign(mag, sgn) with integer operations on the bits: the same result as
   copysign. In the staged finish (pgs/_core.pyx, _finish_one, four lanes in registers)
   GCC spilled copysign's sign operand with an 8-byte store and reloaded it with a
   16-byte load for its andpd, a failed store forwarding on every entry: the averaged
   p = 1.8 run went 1.35x slower. General-purpose registers have no such spill. */
static inline double pgs_copysign(double mag, double sgn) {
    uint64_t m, s;
    memcpy(&m, &mag, sizeof m);
    memcpy(&s, &sgn, sizeof s);
    m = (m & 0x7fffffffffffffffULL) | (s & 0x8000000000000000ULL);
    memcpy(&mag, &m, sizeof m);
    return mag;
}

/* Tests: 0 sends every entry through the staged path (with the same powers), which
   must then give the same bits. Not while a run is going. */
static int pgs_rowpow_on = 1;
static void pgs_rowpow_use(int on) { pgs_rowpow_on = on; }

#ifdef PGS_POW_X86
/* One group: old lam_j, the steps d and old u_j of four entries in, the new lam_j and
   u_j out; Q's new terms r * r^(q-1) added to *DQ, its old ones a_old * |u_j| to *M.
   Returns 0, doing nothing, if a ratio passes HI (the staged path parks it). KIND and
   E as for pgs_powq4 (the callers pass constants: the compiler specialises). */
__attribute__((target("avx2,fma")))
static inline int pgs_pow_group(__m256d old, __m256d d, __m256d uo, __m256d IS,
                                __m256d HI, int kind, __m256d E, __m256d* DQ, __m256d* M,
                                __m256d* nw, __m256d* un) {
    const __m256d SIGN = _mm256_set1_pd(-0.0);
    __m256d n = _mm256_add_pd(old, d);
    __m256d r = _mm256_mul_pd(_mm256_andnot_pd(SIGN, n), IS);
    __m256d a_old, pw;
    if (_mm256_movemask_pd(_mm256_cmp_pd(r, HI, _CMP_GT_OQ)))
        return 0;
    a_old = _mm256_mul_pd(_mm256_andnot_pd(SIGN, old), IS);
    pw = pgs_powq4(r, kind, E);
    *M = _mm256_add_pd(*M, _mm256_mul_pd(a_old, _mm256_andnot_pd(SIGN, uo)));
    *DQ = _mm256_add_pd(*DQ, _mm256_mul_pd(r, pw));
    *nw = n;
    *un = _mm256_or_pd(_mm256_andnot_pd(SIGN, pw), _mm256_and_pd(SIGN, n));
    return 1;
}

__attribute__((target("avx2,fma")))
static inline void pgs_scatter4(double* v, int64_t j0, int64_t j1, int64_t j2, int64_t j3,
                                __m256d x) {
    __m128d lo = _mm256_castpd256_pd128(x), hi = _mm256_extractf128_pd(x, 1);
    _mm_storel_pd(v + j0, lo);
    _mm_storeh_pd(v + j1, lo);
    _mm_storel_pd(v + j2, hi);
    _mm_storeh_pd(v + j3, hi);
}

/* The average's w_j += C (u_j' - u_j) for a group of four distinct columns, the
   columns' positions in lam and u j[t], in w j[t] >> sh. */
__attribute__((target("avx2,fma")))
static inline void pgs_average4(double* w, const int64_t* j, int sh, __m256d C,
                                __m256d uo, __m256d un) {
    int64_t j0 = j[0] >> sh, j1 = j[1] >> sh, j2 = j[2] >> sh, j3 = j[3] >> sh;
    __m256d wo = _mm256_set_pd(w[j3], w[j2], w[j1], w[j0]);
    pgs_scatter4(w, j0, j1, j2, j3,
                 _mm256_add_pd(wo, _mm256_mul_pd(C, _mm256_sub_pd(un, uo))));
}

/* General p's full groups, chunk by chunk (up to PGS_GEN_GROUPS groups): first each
   group's new lam_j (written back at once, as the staged path does), its ratios and
   a_old = |lam_j| / S into buffers; then the chunk's powers in one tight loop, where
   four vectors' long chains of arithmetic overlap (inside the group loop they would
   not); then each group's u_j, read and written in order, and Q's terms. A column in
   two groups of a chunk thus sees the other's lam_j and u_j as one entry after
   another would. (p = 1.8's two roots are short enough to stay in the group loop.) */
#define PGS_GEN_GROUPS 32

__attribute__((target("avx2,fma")))
static inline void pgs_gen_finish(const int64_t* jb, const double* ab, const double* rb,
                                  const double* pb, const double* nb, ptrdiff_t ng,
                                  double* u, double* w, int wshift, __m256d CC,
                                  __m256d* DQ, __m256d* M) {
    const __m256d SIGN = _mm256_set1_pd(-0.0);
    __m256d U, pw, un;
    ptrdiff_t t;
    for (t = 0; t < 4 * ng; t += 4) {
        const int64_t* j = jb + t;
        U = _mm256_set_pd(u[j[3]], u[j[2]], u[j[1]], u[j[0]]);
        pw = _mm256_loadu_pd(pb + t);
        *M = _mm256_add_pd(*M, _mm256_mul_pd(_mm256_loadu_pd(ab + t),
                                             _mm256_andnot_pd(SIGN, U)));
        *DQ = _mm256_add_pd(*DQ, _mm256_mul_pd(_mm256_loadu_pd(rb + t), pw));
        un = _mm256_or_pd(_mm256_andnot_pd(SIGN, pw),
                          _mm256_and_pd(SIGN, _mm256_loadu_pd(nb + t)));
        pgs_scatter4(u, j[0], j[1], j[2], j[3], un);
        if (w)
            pgs_average4(w, j, wshift, CC, U, un);
    }
}

/* Phase one for group g of a chunk (columns jb[4g..4g+3], distinct, steps D): the new
   lam_j written back, a_old, the ratios and the new lam_j into the chunk's buffers.
   Returns 0, doing nothing, if a ratio passes HI (the staged path parks it). */
__attribute__((target("avx2,fma")))
static inline int pgs_gen_stage(ptrdiff_t g, const int64_t* jb, __m256d D, double* lam,
                                __m256d IS, __m256d HI, double* ab, double* rb,
                                double* nb) {
    const __m256d SIGN = _mm256_set1_pd(-0.0);
    const int64_t* j = jb + 4 * g;
    __m256d ol = _mm256_set_pd(lam[j[3]], lam[j[2]], lam[j[1]], lam[j[0]]);
    __m256d nw = _mm256_add_pd(ol, D);
    __m256d r = _mm256_mul_pd(_mm256_andnot_pd(SIGN, nw), IS);
    if (_mm256_movemask_pd(_mm256_cmp_pd(r, HI, _CMP_GT_OQ)))
        return 0;
    _mm256_storeu_pd(ab + 4 * g, _mm256_mul_pd(_mm256_andnot_pd(SIGN, ol), IS));
    _mm256_storeu_pd(rb + 4 * g, r);
    _mm256_storeu_pd(nb + 4 * g, nw);
    pgs_scatter4(lam, j[0], j[1], j[2], j[3], nw);
    return 1;
}

/* Phases two and three for the chunk's first ng groups: their powers in a loop of
   their own, then pgs_gen_finish. */
__attribute__((target("avx2,fma")))
static inline void pgs_gen_complete(const int64_t* jb, const double* ab, const double* rb,
                                    double* pb, const double* nb, ptrdiff_t ng, __m256d E,
                                    double* u, double* w, int wshift, __m256d CC,
                                    __m256d* DQ, __m256d* M) {
    ptrdiff_t t;
    for (t = 0; t < 4 * ng; t += 4)
        _mm256_storeu_pd(pb + t, pgs_pow4(_mm256_loadu_pd(rb + t), E));
    pgs_gen_finish(jb, ab, rb, pb, nb, ng, u, w, wshift, CC, DQ, M);
}

/* NAME: the row update for KIND (PGS_POW_Q225: q - 1 = 1.25, one pass; PGS_POW_GENERAL:
   q - 1 = qm1, the three passes above), lam and u at stride sd. */
#define PGS_ROWPOW_DEFINE(NAME, DTYPE, ITYPE, LOAD4, KIND)                            \
__attribute__((target("avx2,fma")))                                                   \
static ptrdiff_t NAME##_avx2(const DTYPE* data, const ITYPE* idx, ptrdiff_t n,        \
                             double g, double* lam, double* u, ptrdiff_t sd,          \
                             double inv_S, double ratio_hi, int64_t icol, double icpt, \
                             double* dq4, double* m4, double* w, int wshift,          \
                             double C, double qm1) {                                  \
    const __m256d G = _mm256_set1_pd(g), IS = _mm256_set1_pd(inv_S);                  \
    const __m256d HI = _mm256_set1_pd(ratio_hi), CC = _mm256_set1_pd(C);              \
    const __m256d E = _mm256_set1_pd(KIND == PGS_POW_Q225 ? 1.25 : qm1);              \
    __m256d DQ = _mm256_loadu_pd(dq4), M = _mm256_loadu_pd(m4);                       \
    __m256d nw, un, U;                                                                \
    int64_t j[4];                                                                     \
    int64_t jb[4 * PGS_GEN_GROUPS];                                                   \
    double ab[4 * PGS_GEN_GROUPS], rb[4 * PGS_GEN_GROUPS], nb[4 * PGS_GEN_GROUPS];    \
    double pb[4 * PGS_GEN_GROUPS];                                                    \
    double x[4], o[4], uo[4], out[4];                                                 \
    ptrdiff_t s = 0, r0, l, cnt, ng;                                                  \
    int stop = 0;                                                                     \
    while (KIND == PGS_POW_GENERAL && !stop && s + 4 <= n) {                          \
        for (ng = 0; ng < PGS_GEN_GROUPS && s + 4 * ng + 4 <= n; ng++) {              \
            int64_t* jg = jb + 4 * ng;                                                \
            jg[0] = sd * (int64_t)idx[s + 4 * ng];                                         \
            jg[1] = sd * (int64_t)idx[s + 4 * ng + 1];                                     \
            jg[2] = sd * (int64_t)idx[s + 4 * ng + 2];                                     \
            jg[3] = sd * (int64_t)idx[s + 4 * ng + 3];                                     \
            if ((jg[0] == jg[1]) | (jg[0] == jg[2]) | (jg[0] == jg[3])                \
                    | (jg[1] == jg[2]) | (jg[1] == jg[3]) | (jg[2] == jg[3])) {       \
                stop = 1;                                                             \
                break;                                                                \
            }                                                                         \
            if (!pgs_gen_stage(ng, jb, _mm256_mul_pd(G, LOAD4(data + s + 4 * ng)), lam,  \
                               IS, HI, ab, rb, nb)) {                                 \
                stop = 1;                                                             \
                break;                                                                \
            }                                                                         \
        }                                                                             \
        pgs_gen_complete(jb, ab, rb, pb, nb, ng, E, u, w, wshift, CC, &DQ, &M);       \
        s += 4 * ng;                                                                  \
    }                                                                                 \
    if (stop)                                                                         \
        goto done;                                                                    \
    for (; KIND == PGS_POW_Q225 && s + 4 <= n; s += 4) {                              \
        j[0] = sd * (int64_t)idx[s];                                                  \
        j[1] = sd * (int64_t)idx[s + 1];                                              \
        j[2] = sd * (int64_t)idx[s + 2];                                              \
        j[3] = sd * (int64_t)idx[s + 3];                                              \
        if ((j[0] == j[1]) | (j[0] == j[2]) | (j[0] == j[3]) | (j[1] == j[2])         \
                | (j[1] == j[3]) | (j[2] == j[3]))                                    \
            goto done;                                                                \
        U = _mm256_set_pd(u[j[3]], u[j[2]], u[j[1]], u[j[0]]);                       \
        if (!pgs_pow_group(                                                           \
                _mm256_set_pd(lam[j[3]], lam[j[2]], lam[j[1]], lam[j[0]]),            \
                _mm256_mul_pd(G, LOAD4(data + s)), U, IS, HI, KIND, E, &DQ, &M, &nw,  \
                &un))                                                                 \
            goto done;                                                                \
        pgs_scatter4(lam, j[0], j[1], j[2], j[3], nw);                                \
        pgs_scatter4(u, j[0], j[1], j[2], j[3], un);                                  \
        if (w)                                                                        \
            pgs_average4(w, j, wshift, CC, U, un);                                    \
    }                                                                                 \
    /* the last 1-3 entries and the intercept (never a column of the row), masked */  \
    r0 = n - s;                                                                       \
    cnt = r0 + (icpt != 0.0);                                                         \
    if (cnt == 0)                                                                     \
        goto done;                                                                    \
    for (l = 0; l < 4; l++) {                                                         \
        j[l] = sd * (l < r0 ? (int64_t)idx[s + l] : icol);                            \
        x[l] = l < r0 ? (double)data[s + l] : (l == r0 ? icpt : 0.0);                 \
        o[l] = l < cnt ? lam[j[l]] : 0.0;                                             \
        uo[l] = l < cnt ? u[j[l]] : 0.0;                                              \
    }                                                                                 \
    if ((r0 > 1 && j[0] == j[1]) | (r0 > 2 && (j[0] == j[2] || j[1] == j[2])))        \
        goto done;                                                                    \
    U = _mm256_loadu_pd(uo);                                                          \
    if (!pgs_pow_group(_mm256_loadu_pd(o), _mm256_mul_pd(G, _mm256_loadu_pd(x)), U,   \
                       IS, HI, KIND, E, &DQ, &M, &nw, &un))                           \
        goto done;                                                                    \
    _mm256_storeu_pd(out, nw);                                                        \
    for (l = 0; l < cnt; l++)                                                         \
        lam[j[l]] = out[l];                                                           \
    _mm256_storeu_pd(out, un);                                                        \
    for (l = 0; l < cnt; l++)                                                         \
        u[j[l]] = out[l];                                                             \
    if (w) {                                                                          \
        _mm256_storeu_pd(out, _mm256_mul_pd(CC, _mm256_sub_pd(un, U)));               \
        for (l = 0; l < cnt; l++)                                                     \
            w[j[l] >> wshift] = w[j[l] >> wshift] + out[l];                           \
    }                                                                                 \
    s += cnt;                                                                         \
done:                                                                                 \
    _mm256_storeu_pd(dq4, DQ);                                                        \
    _mm256_storeu_pd(m4, M);                                                          \
    return s;                                                                         \
}                                                                                     \
static inline ptrdiff_t NAME(const DTYPE* data, const ITYPE* idx, ptrdiff_t n,        \
                             double g, double* lam, double* u, ptrdiff_t sd,          \
                             double inv_S, double ratio_hi, int64_t icol, double icpt, \
                             double* dq4, double* m4, double* w, int wshift,          \
                             double C, double qm1) {                                  \
    if (!pgs_pow_simd || !pgs_rowpow_on)                                              \
        return 0;                                                                     \
    return NAME##_avx2(data, idx, n, g, lam, u, sd, inv_S, ratio_hi, icol, icpt, dq4,   \
                       m4, w, wshift, C, qm1);                                        \
}

/* The updates lam_j += d_t of a batch (k >= 16), one per distinct column cols[t], four
   at a time, for p = 1.8 (KIND PGS_POW_Q225) and general p (PGS_POW_GENERAL, q - 1 =
   qm1, n at most 4 PGS_GEN_GROUPS: the caller's chunks): the AVX2 counterpart of the
   batch path's staging, with the same lanes (update t in lane t & 3). The columns of a
   batch's list are distinct, so no group repeats one. Returns how many it took: all n,
   or a multiple of four if a ratio passes ratio_hi (the staged path parks it). */
__attribute__((target("avx2,fma"), always_inline))
static inline ptrdiff_t pgs_colspow_body(const int64_t* cols, const double* d, ptrdiff_t n,
                                         double* lam, double* u, double inv_S,
                                         double ratio_hi, double* dq4, double* m4,
                                         double* w, double C, int kind, double qm1) {
    const __m256d IS = _mm256_set1_pd(inv_S), HI = _mm256_set1_pd(ratio_hi);
    const __m256d CC = _mm256_set1_pd(C);
    const __m256d E = _mm256_set1_pd(kind == PGS_POW_Q225 ? 1.25 : qm1);
    __m256d DQ = _mm256_loadu_pd(dq4), M = _mm256_loadu_pd(m4);
    __m256d nw, un, U;
    int64_t j[4];
    int64_t jb[4 * PGS_GEN_GROUPS];
    double ab[4 * PGS_GEN_GROUPS], rb[4 * PGS_GEN_GROUPS], nb[4 * PGS_GEN_GROUPS];
    double pb[4 * PGS_GEN_GROUPS];
    double x[4], o[4], uo[4], out[4];
    ptrdiff_t s = 0, r, l, ng;
    if (kind == PGS_POW_GENERAL) {
        for (ng = 0; ng < PGS_GEN_GROUPS && 4 * ng + 4 <= n; ng++) {
            memcpy(jb + 4 * ng, cols + 4 * ng, 4 * sizeof(int64_t));
            if (!pgs_gen_stage(ng, jb, _mm256_loadu_pd(d + 4 * ng), lam, IS, HI, ab, rb,
                               nb))
                break;
        }
        pgs_gen_complete(jb, ab, rb, pb, nb, ng, E, u, w, 0, CC, &DQ, &M);
        s = 4 * ng;
        if (s + 4 <= n)
            goto done;          /* a parked group, or more than one chunk */
    }
    for (; kind == PGS_POW_Q225 && s + 4 <= n; s += 4) {
        j[0] = cols[s];
        j[1] = cols[s + 1];
        j[2] = cols[s + 2];
        j[3] = cols[s + 3];
        U = _mm256_set_pd(u[j[3]], u[j[2]], u[j[1]], u[j[0]]);
        if (!pgs_pow_group(_mm256_set_pd(lam[j[3]], lam[j[2]], lam[j[1]], lam[j[0]]),
                           _mm256_loadu_pd(d + s), U, IS, HI, PGS_POW_Q225, E, &DQ, &M,
                           &nw, &un))
            goto done;
        pgs_scatter4(lam, j[0], j[1], j[2], j[3], nw);
        pgs_scatter4(u, j[0], j[1], j[2], j[3], un);
        if (w)
            pgs_average4(w, j, 0, CC, U, un);
    }
    r = n - s;              /* the last 1-3, masked (a masked lane adds +0) */
    if (r == 0)
        goto done;
    for (l = 0; l < 4; l++) {
        j[l] = l < r ? cols[s + l] : 0;
        x[l] = l < r ? d[s + l] : 0.0;
        o[l] = l < r ? lam[j[l]] : 0.0;
        uo[l] = l < r ? u[j[l]] : 0.0;
    }
    U = _mm256_loadu_pd(uo);
    if (!pgs_pow_group(_mm256_loadu_pd(o), _mm256_loadu_pd(x), U, IS, HI, kind, E, &DQ,
                       &M, &nw, &un))
        goto done;
    _mm256_storeu_pd(out, nw);
    for (l = 0; l < r; l++)
        lam[j[l]] = out[l];
    _mm256_storeu_pd(out, un);
    for (l = 0; l < r; l++)
        u[j[l]] = out[l];
    if (w) {
        _mm256_storeu_pd(out, _mm256_mul_pd(CC, _mm256_sub_pd(un, U)));
        for (l = 0; l < r; l++)
            w[j[l]] = w[j[l]] + out[l];
    }
    s = n;
done:
    _mm256_storeu_pd(dq4, DQ);
    _mm256_storeu_pd(m4, M);
    return s;
}

/* (one function for each kind, so that the compiler specialises the body) */
__attribute__((target("avx2,fma")))
static ptrdiff_t pgs_colsq225_avx2(const int64_t* cols, const double* d, ptrdiff_t n,
                                   double* lam, double* u, double inv_S, double ratio_hi,
                                   double* dq4, double* m4, double* w, double C) {
    return pgs_colspow_body(cols, d, n, lam, u, inv_S, ratio_hi, dq4, m4, w, C,
                            PGS_POW_Q225, 1.25);
}

__attribute__((target("avx2,fma")))
static ptrdiff_t pgs_colsgen_avx2(const int64_t* cols, const double* d, ptrdiff_t n,
                                  double* lam, double* u, double inv_S, double ratio_hi,
                                  double* dq4, double* m4, double* w, double C,
                                  double qm1) {
    return pgs_colspow_body(cols, d, n, lam, u, inv_S, ratio_hi, dq4, m4, w, C,
                            PGS_POW_GENERAL, qm1);
}

static inline ptrdiff_t pgs_colspow(const int64_t* cols, const double* d, ptrdiff_t n,
                                    double* lam, double* u, double inv_S, double ratio_hi,
                                    double* dq4, double* m4, double* w, double C, int kind,
                                    double qm1) {
    if (!pgs_pow_simd || !pgs_rowpow_on)
        return 0;
    if (kind == PGS_POW_Q225)
        return pgs_colsq225_avx2(cols, d, n, lam, u, inv_S, ratio_hi, dq4, m4, w, C);
    return pgs_colsgen_avx2(cols, d, n, lam, u, inv_S, ratio_hi, dq4, m4, w, C, qm1);
}

#define PGS_LOAD4_F64(p) _mm256_loadu_pd(p)
#define PGS_LOAD4_F32(p) _mm256_cvtps_pd(_mm_loadu_ps(p))

#else  /* no AVX2 path: the staged path takes every entry */
static inline ptrdiff_t pgs_colspow(const int64_t* cols, const double* d, ptrdiff_t n,
                                    double* lam, double* u, double inv_S, double ratio_hi,
                                    double* dq4, double* m4, double* w, double C, int kind,
                                    double qm1) {
    (void)cols; (void)d; (void)n; (void)lam; (void)u; (void)inv_S; (void)ratio_hi;
    (void)dq4; (void)m4; (void)w; (void)C; (void)kind; (void)qm1;
    return 0;
}
#define PGS_ROWPOW_DEFINE(NAME, DTYPE, ITYPE, LOAD4, KIND)                            \
static inline ptrdiff_t NAME(const DTYPE* data, const ITYPE* idx, ptrdiff_t n,        \
                             double g, double* lam, double* u, ptrdiff_t sd,          \
                             double inv_S, double ratio_hi, int64_t icol, double icpt, \
                             double* dq4, double* m4, double* w, int wshift,          \
                             double C, double qm1) {                                  \
    (void)data; (void)idx; (void)n; (void)g; (void)lam; (void)u; (void)sd;           \
    (void)inv_S; (void)ratio_hi; (void)icol; (void)icpt; (void)dq4; (void)m4;         \
    (void)w; (void)wshift; (void)C; (void)qm1;                                        \
    return 0;                                                                         \
}
#endif  /* PGS_POW_X86 */

/* data float64 / float32, indices int32 / int64: the CSR types the kernel takes */
PGS_ROWPOW_DEFINE(pgs_rowq225_f64_i32, double, int32_t, PGS_LOAD4_F64, PGS_POW_Q225)
PGS_ROWPOW_DEFINE(pgs_rowq225_f64_i64, double, int64_t, PGS_LOAD4_F64, PGS_POW_Q225)
PGS_ROWPOW_DEFINE(pgs_rowq225_f32_i32, float, int32_t, PGS_LOAD4_F32, PGS_POW_Q225)
PGS_ROWPOW_DEFINE(pgs_rowq225_f32_i64, float, int64_t, PGS_LOAD4_F32, PGS_POW_Q225)
PGS_ROWPOW_DEFINE(pgs_rowgen_f64_i32, double, int32_t, PGS_LOAD4_F64, PGS_POW_GENERAL)
PGS_ROWPOW_DEFINE(pgs_rowgen_f64_i64, double, int64_t, PGS_LOAD4_F64, PGS_POW_GENERAL)
PGS_ROWPOW_DEFINE(pgs_rowgen_f32_i32, float, int32_t, PGS_LOAD4_F32, PGS_POW_GENERAL)
PGS_ROWPOW_DEFINE(pgs_rowgen_f32_i64, float, int64_t, PGS_LOAD4_F32, PGS_POW_GENERAL)

/* pgs_rowpow_<types>: the row update for kind (PGS_POW_Q225 or PGS_POW_GENERAL) */
#define PGS_ROWPOW_DISPATCH(TYPES, DTYPE, ITYPE)                                      \
static inline ptrdiff_t pgs_rowpow_##TYPES(                                           \
        const DTYPE* data, const ITYPE* idx, ptrdiff_t n, double g, double* lam,      \
        double* u, ptrdiff_t sd, double inv_S, double ratio_hi, int64_t icol,         \
        double icpt, double* dq4, double* m4, double* w, int wshift, double C,        \
        int kind, double qm1) {                                                       \
    if (kind == PGS_POW_Q225)                                                         \
        return pgs_rowq225_##TYPES(data, idx, n, g, lam, u, sd, inv_S, ratio_hi, icol, \
                                   icpt, dq4, m4, w, wshift, C, qm1);                 \
    return pgs_rowgen_##TYPES(data, idx, n, g, lam, u, sd, inv_S, ratio_hi, icol, icpt, \
                              dq4, m4, w, wshift, C, qm1);                            \
}

PGS_ROWPOW_DISPATCH(f64_i32, double, int32_t)
PGS_ROWPOW_DISPATCH(f64_i64, double, int64_t)
PGS_ROWPOW_DISPATCH(f32_i32, float, int32_t)
PGS_ROWPOW_DISPATCH(f32_i64, float, int64_t)

#endif  /* PGS_ROWPOW_H */
