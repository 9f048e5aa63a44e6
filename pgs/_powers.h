/* Powers a^(q-1) of many values at once, for the p < 2 updates of pgs/_core.pyx.
 *
 * An update of lam_j for p < 2 needs u_j = (|lam_j| / S)^(q-1). q - 1 = 1.25 (p = 1.8)
 * takes two square roots; any other q takes a power, which libm computes one value at a
 * time (exp2(e * log2(a)): about 11 ns per value on the 2-core EPYC of the benches).
 * The kernel gathers a row's (or a batch's) ratios into a buffer and hands them here:
 * on x86-64 CPUs with AVX2 and FMA (checked once at import) four at a time, in 256-bit
 * registers; elsewhere one at a time, as before.
 *
 * Every power of a run goes through pgs_powq_n (one value: n = 1), and a tail of fewer
 * than four values is padded to four, so within one machine a value's power does not
 * depend on the path that asked for it (k = 1, batches, threads, rescales).
 *
 * The vector power: log2 a = k + 2 atanh(s) / ln 2 with a = 2^k m, m in [1/sqrt 2,
 * sqrt 2), s = (m - 1) / (m + 1), atanh by its series to s^19; then 2^y for
 * y = (q - 1) log2 a as 2^n e^(f ln 2), n = round(y), |f| <= 1/2, e^r by its series to
 * r^13, and 2^n added to the exponent. A vector with a zero, subnormal, infinite or
 * NaN value, or with |y| > 1020, takes a slower variant (pgs_pow4_any) that applies 2^n
 * in two factors, so that results down to the subnormals come out right; where both
 * apply, the two give the same bits. Both series are summed by Estrin's scheme, whose
 * short dependency chains let four such vectors overlap. Relative error: below
 * 5e-16 (1 + |y|) against libm's pow over 8M random a in [2^-1200, 2^200) and eight
 * exponents (|y| < 1100); exact for a = 0, 1; NaN stays NaN and +inf stays +inf.
 * Speed (chunks of 61 values, this machine): 4.4-5.9 ns per value, against 6.3-8.2
 * for the first version (two-step scaling for all, series to s^23) and 11-17 for libm.
 */
#ifndef PGS_POWERS_H
#define PGS_POWERS_H

#include <math.h>
#include <stddef.h>

#define PGS_POW_Q225 1     /* q - 1 = 1.25: a sqrt(sqrt(a)) */
#define PGS_POW_GENERAL 2  /* any q - 1 > 0 */

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define PGS_POW_X86 1
#include <immintrin.h>
#endif

/* 1 if the AVX2 path runs; set by pgs_powers_init (the module does it at import). */
static int pgs_pow_simd = 0;

static void pgs_powers_init(void) {
#ifdef PGS_POW_X86
    __builtin_cpu_init();
    pgs_pow_simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
}

static int pgs_powers_simd(void) { return pgs_pow_simd; }

/* Tests: switch the AVX2 path off (0) or back on (1, where the CPU has it). Not
   while a run is going: a run's powers must all come from one path. */
static void pgs_powers_use_simd(int on) {
    pgs_pow_simd = 0;
    if (on)
        pgs_powers_init();
}

#ifdef PGS_POW_X86
#define PGS_C4(v) _mm256_set1_pd(v)

/* log2 m for m in [1, 2), plus k: the exponent of a (m's and k's adjustments done here) */
__attribute__((target("avx2,fma")))
static inline __m256d pgs_log2_core(__m256d m, __m256d k) {
    const __m256d one = PGS_C4(1.0);
    __m256d big = _mm256_cmp_pd(m, PGS_C4(1.4142135623730951), _CMP_GT_OQ);
    m = _mm256_blendv_pd(m, _mm256_mul_pd(m, PGS_C4(0.5)), big);  /* exact */
    k = _mm256_add_pd(k, _mm256_and_pd(big, one));
    __m256d s = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
    __m256d x = _mm256_mul_pd(s, s);
    __m256d x2 = _mm256_mul_pd(x, x), x4 = _mm256_mul_pd(x2, x2);
    __m256d x8 = _mm256_mul_pd(x4, x4);
    /* P(x) = sum_{i=0..8} x^i / (2i + 3); ln m = 2s + 2s x P(x). (x <= 0.0295: the
       next term would change ln m by less than 2^-60 of it.) */
    __m256d a0 = _mm256_fmadd_pd(PGS_C4(1.0 / 5), x, PGS_C4(1.0 / 3));
    __m256d a1 = _mm256_fmadd_pd(PGS_C4(1.0 / 9), x, PGS_C4(1.0 / 7));
    __m256d a2 = _mm256_fmadd_pd(PGS_C4(1.0 / 13), x, PGS_C4(1.0 / 11));
    __m256d a3 = _mm256_fmadd_pd(PGS_C4(1.0 / 17), x, PGS_C4(1.0 / 15));
    __m256d b0 = _mm256_fmadd_pd(a1, x2, a0);
    __m256d b1 = _mm256_fmadd_pd(a3, x2, a2);
    __m256d P = _mm256_fmadd_pd(PGS_C4(1.0 / 19), x8, _mm256_fmadd_pd(b1, x4, b0));
    __m256d s2 = _mm256_add_pd(s, s);
    __m256d lnm = _mm256_fmadd_pd(s2, _mm256_mul_pd(x, P), s2);
    return _mm256_fmadd_pd(lnm, PGS_C4(1.4426950408889634), k);
}

/* 2^(y - round(y)), and round(y) as an int64 in *n (|y| <= 1100) */
__attribute__((target("avx2,fma")))
static inline __m256d pgs_exp2_core(__m256d y, __m256i* n) {
    const __m256d one = PGS_C4(1.0);
    const __m256d shift = PGS_C4(0x1.8p52);
    __m256d t = _mm256_add_pd(y, shift);
    __m256d r = _mm256_mul_pd(_mm256_sub_pd(y, _mm256_sub_pd(t, shift)),
                              PGS_C4(0.6931471805599453));
    __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2);
    __m256d r8 = _mm256_mul_pd(r4, r4);
    /* e^r = sum_{i=0..13} r^i / i!, |r| <= ln(2) / 2 */
    __m256d e0 = _mm256_fmadd_pd(one, r, one);
    __m256d e1 = _mm256_fmadd_pd(PGS_C4(1.0 / 6), r, PGS_C4(1.0 / 2));
    __m256d e2 = _mm256_fmadd_pd(PGS_C4(1.0 / 120), r, PGS_C4(1.0 / 24));
    __m256d e3 = _mm256_fmadd_pd(PGS_C4(1.0 / 5040), r, PGS_C4(1.0 / 720));
    __m256d e4 = _mm256_fmadd_pd(PGS_C4(1.0 / 362880), r, PGS_C4(1.0 / 40320));
    __m256d e5 = _mm256_fmadd_pd(PGS_C4(1.0 / 39916800), r, PGS_C4(1.0 / 3628800));
    __m256d e6 = _mm256_fmadd_pd(PGS_C4(1.0 / 6227020800.0), r, PGS_C4(1.0 / 479001600));
    __m256d f0 = _mm256_fmadd_pd(e1, r2, e0);
    __m256d f1 = _mm256_fmadd_pd(e3, r2, e2);
    __m256d f2 = _mm256_fmadd_pd(e5, r2, e4);
    __m256d g0 = _mm256_fmadd_pd(f1, r4, f0);
    __m256d g1 = _mm256_fmadd_pd(e6, r4, f2);
    *n = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(shift));
    return _mm256_fmadd_pd(g1, r8, g0);
}

/* The exponent field of a normal a, as a double, and its mantissa in [1, 2) */
__attribute__((target("avx2,fma")))
static inline __m256d pgs_split(__m256d a, __m256d* m) {
    __m256i b = _mm256_castpd_si256(a);
    /* the biased exponent as a double: its bits under those of 2^52, minus 2^52 */
    __m256i eb = _mm256_or_si256(_mm256_srli_epi64(b, 52),
                                 _mm256_set1_epi64x(0x4330000000000000LL));
    *m = _mm256_castsi256_pd(_mm256_or_si256(
        _mm256_and_si256(b, _mm256_set1_epi64x(0x000fffffffffffffLL)),
        _mm256_set1_epi64x(0x3ff0000000000000LL)));
    return _mm256_sub_pd(_mm256_castsi256_pd(eb), PGS_C4(0x1p52 + 1023.0));
}

/* a^e, every case: zero, subnormal, infinite and NaN a, and results that are
   subnormal or overflow. The same arithmetic as pgs_pow4 where both apply. */
__attribute__((target("avx2,fma")))
static __m256d pgs_pow4_any(__m256d a, __m256d e) {
    __m256d sub = _mm256_cmp_pd(a, PGS_C4(0x1p-1022), _CMP_LT_OQ);
    __m256d m;
    /* a subnormal a is scaled by 2^54 first */
    __m256d k = pgs_split(_mm256_mul_pd(a, _mm256_blendv_pd(PGS_C4(1.0), PGS_C4(0x1p54), sub)),
                          &m);
    k = _mm256_sub_pd(k, _mm256_and_pd(sub, PGS_C4(54.0)));
    __m256d y = _mm256_mul_pd(e, pgs_log2_core(m, k));
    /* the clamp keeps n's arithmetic in range (a = 0 gives -inf here) */
    y = _mm256_min_pd(_mm256_max_pd(y, PGS_C4(-1100.0)), PGS_C4(1100.0));
    __m256i n;
    __m256d E = pgs_exp2_core(y, &n);
    /* 2^n = 2^h 2^(n-h), h = floor(n / 2), each factor a normal double */
    __m256i h = _mm256_sub_epi64(
        _mm256_srli_epi64(_mm256_add_epi64(n, _mm256_set1_epi64x(2048)), 1),
        _mm256_set1_epi64x(1024));
    __m256i g = _mm256_sub_epi64(n, h);
    __m256d sh = _mm256_castsi256_pd(
        _mm256_slli_epi64(_mm256_add_epi64(h, _mm256_set1_epi64x(1023)), 52));
    __m256d sg = _mm256_castsi256_pd(
        _mm256_slli_epi64(_mm256_add_epi64(g, _mm256_set1_epi64x(1023)), 52));
    __m256d res = _mm256_mul_pd(_mm256_mul_pd(E, sh), sg);
    res = _mm256_andnot_pd(_mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_EQ_OQ), res);
    /* NaN and +inf are their own powers (e > 0) */
    return _mm256_blendv_pd(res, a, _mm256_cmp_pd(a, PGS_C4(INFINITY), _CMP_NLT_UQ));
}

/* a^e for four a >= 0. The common case (every a a normal double, every result
   within [2^-1020, 2^1020]) skips pgs_pow4_any's special cases; its results are the
   same bits (2^n applied in one step or two is exact either way). */
__attribute__((target("avx2,fma")))
static inline __m256d pgs_pow4(__m256d a, __m256d e) {
    __m256d m;
    __m256d k = pgs_split(a, &m);
    __m256d y = _mm256_mul_pd(e, pgs_log2_core(m, k));
    /* (one test for both: a past the normal doubles, or NaN, or |y| > 1020) */
    __m256d odd = _mm256_or_pd(
        _mm256_or_pd(_mm256_cmp_pd(a, PGS_C4(0x1p-1022), _CMP_NGE_UQ),
                     _mm256_cmp_pd(a, PGS_C4(0x1.fffffffffffffp1023), _CMP_GT_OQ)),
        _mm256_cmp_pd(_mm256_andnot_pd(PGS_C4(-0.0), y), PGS_C4(1020.0), _CMP_NLE_UQ));
    if (_mm256_movemask_pd(odd))
        return pgs_pow4_any(a, e);
    __m256i n;
    __m256d E = pgs_exp2_core(y, &n);
    return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(E),
                                                _mm256_slli_epi64(n, 52)));
}

__attribute__((target("avx2,fma")))
static inline __m256d pgs_powq4(__m256d a, int kind, __m256d e) {
    if (kind == PGS_POW_Q225)
        return _mm256_mul_pd(a, _mm256_sqrt_pd(_mm256_sqrt_pd(a)));
    return pgs_pow4(a, e);
}

__attribute__((target("avx2,fma")))
static void pgs_powq_n_avx2(const double* a, double* out, ptrdiff_t n, int kind,
                            double qm1) {
    __m256d e = _mm256_set1_pd(qm1);
    double pad[4];
    ptrdiff_t i = 0, t;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(out + i, pgs_powq4(_mm256_loadu_pd(a + i), kind, e));
    if (i < n) {
        /* the tail in a padded vector: the same arithmetic as a full one */
        for (t = 0; t < 4; t++)
            pad[t] = i + t < n ? a[i + t] : 1.0;
        _mm256_storeu_pd(pad, pgs_powq4(_mm256_loadu_pd(pad), kind, e));
        for (t = 0; i + t < n; t++)
            out[i + t] = pad[t];
    }
}
#endif  /* PGS_POW_X86 */

/* out[i] = a[i]^qm1 for i < n, a[i] >= 0 (out may be a). kind: PGS_POW_Q225 (qm1 is
   1.25) or PGS_POW_GENERAL. */
static inline void pgs_powq_n(const double* a, double* out, ptrdiff_t n, int kind,
                              double qm1) {
    ptrdiff_t i;
#ifdef PGS_POW_X86
    if (pgs_pow_simd) {
        pgs_powq_n_avx2(a, out, n, kind, qm1);
        return;
    }
#endif
    if (kind == PGS_POW_Q225) {
        for (i = 0; i < n; i++)
            out[i] = a[i] * sqrt(sqrt(a[i]));
    } else {
        /* half the time of glibc's pow(); error about |qm1 log2 a| 2^-53 */
        for (i = 0; i < n; i++)
            out[i] = exp2(qm1 * log2(a[i]));
    }
}

#endif  /* PGS_POWERS_H */
