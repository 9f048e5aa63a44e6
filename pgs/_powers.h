/* Powers a^e (e = q - 1 > 0, a >= 0) of a chunk of values, for the general p updates of
 * pgs/_dual.pxd. On x86-64 CPUs with AVX2 and FMA (checked once, at import) four at a
 * time, 2.5-2.7 ns per power against libm's 11-17; elsewhere, or built with
 * -Dsimd=disabled (PGS_NO_SIMD), libm.
 * The choice is fixed for a process: a seed gives the same bits on one machine and build.
 *
 * The vector power: log2 a = k + 2 atanh(s) / ln 2 with a = 2^k m, m in [1/sqrt 2,
 * sqrt 2) (from a's bits), s = (m - 1) / (m + 1), atanh by a minimax polynomial in s^2 of
 * degree 6; then 2^y, y = e log2 a, as 2^n 2^f, n = round(y), 2^f by a minimax polynomial
 * of degree 11 (both by Estrin's scheme: short chains that overlap), 2^n added to the
 * exponent. A zero, subnormal, infinite or NaN a, or |y| > 1020, is taken from libm.
 * Relative error below 3.8e-16 (1 + |y|) (tests/test_powers.py); exact for a = 0, 1.
 */
#ifndef PGS_POWERS_H
#define PGS_POWERS_H

#include <math.h>
#include <stddef.h>

#include "_portable.h"

#ifdef PGS_X86_SIMD
#define PGS_POW_X86 1
#include <immintrin.h>
#endif

/* 1 if the AVX2 path runs; set once by pgs_powers_init (at the module's import). */
static int pgs_pow_simd = 0;

static void pgs_powers_init(void) {
#ifdef PGS_POW_X86
    pgs_pow_simd = pgs_cpu_has_avx2_fma();
#endif
}

static int pgs_powers_simd(void) { return pgs_pow_simd; }

#ifdef PGS_POW_X86
#define PGS_C4(v) _mm256_set1_pd(v)

/* k + log2 m for m in [1/sqrt 2, sqrt 2) (pgs_split's) */
PGS_TARGET_AVX2_FMA
static inline __m256d pgs_log2_core(__m256d m, __m256d k) {
    const __m256d one = PGS_C4(1.0);
    __m256d s = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
    __m256d x = _mm256_mul_pd(s, s);
    __m256d x2 = _mm256_mul_pd(x, x), x4 = _mm256_mul_pd(x2, x2);
    /* log2 m = K s + K s x P(x), K = 2 / ln 2, P(x) = (atanh(s) / s - 1) / x: K P is
       the minimax polynomial of degree 6 on x in [0, 0.0295] for the weight x (the
       error that reaches log2 m), its error there 2.3e-18 (its first coefficients
       near those of the series, K / (2i + 3)) */
    __m256d a0 = _mm256_fmadd_pd(PGS_C4(0x1.2776c50eea867p-1), x,
                                 PGS_C4(0x1.ec709dc3a0435p-1));
    __m256d a1 = _mm256_fmadd_pd(PGS_C4(0x1.484afd74edf75p-2), x,
                                 PGS_C4(0x1.a61762cec8db4p-2));
    __m256d a2 = _mm256_fmadd_pd(PGS_C4(0x1.c4730110f9889p-3), x,
                                 PGS_C4(0x1.0ca125a2524d0p-2));
    __m256d b0 = _mm256_fmadd_pd(a1, x2, a0);
    __m256d b1 = _mm256_fmadd_pd(PGS_C4(0x1.b597c2cf66972p-3), x2, a2);
    __m256d P = _mm256_fmadd_pd(b1, x4, b0);
    __m256d main = _mm256_fmadd_pd(s, PGS_C4(0x1.71547652b82fep+1), k);
    return _mm256_fmadd_pd(_mm256_mul_pd(s, x), P, main);
}

/* 2^(y - round(y)), and round(y) as an int64 in *n (|y| <= 1100) */
PGS_TARGET_AVX2_FMA
static inline __m256d pgs_exp2_core(__m256d y, __m256i* n) {
    const __m256d shift = PGS_C4(0x1.8p52);
    __m256d t = _mm256_add_pd(y, shift);
    __m256d f = _mm256_sub_pd(y, _mm256_sub_pd(t, shift));
    __m256d f2 = _mm256_mul_pd(f, f), f4 = _mm256_mul_pd(f2, f2);
    __m256d f8 = _mm256_mul_pd(f4, f4);
    /* 2^f, |f| <= 1/2: the minimax polynomial of degree 11 for the relative error,
       3.1e-18 (coefficients near ln(2)^i / i!) */
    __m256d e0 = _mm256_fmadd_pd(PGS_C4(0x1.62e42fefa39efp-1), f, PGS_C4(1.0));
    __m256d e1 = _mm256_fmadd_pd(PGS_C4(0x1.c6b08d7049fd1p-5), f,
                                 PGS_C4(0x1.ebfbdff82c5adp-3));
    __m256d e2 = _mm256_fmadd_pd(PGS_C4(0x1.5d87fe78cf26dp-10), f,
                                 PGS_C4(0x1.3b2ab6fb9f413p-7));
    __m256d e3 = _mm256_fmadd_pd(PGS_C4(0x1.ffcbfba7b89b6p-17), f,
                                 PGS_C4(0x1.43091310bf6b0p-13));
    __m256d e4 = _mm256_fmadd_pd(PGS_C4(0x1.b526788b3b73dp-24), f,
                                 PGS_C4(0x1.62bfc3c1c8a7cp-20));
    __m256d e5 = _mm256_fmadd_pd(PGS_C4(0x1.e7aa0f6005d3cp-32), f,
                                 PGS_C4(0x1.e620fb765be15p-28));
    __m256d g0 = _mm256_fmadd_pd(e1, f2, e0);
    __m256d g1 = _mm256_fmadd_pd(e3, f2, e2);
    __m256d g2 = _mm256_fmadd_pd(e5, f2, e4);
    __m256d h0 = _mm256_fmadd_pd(g1, f4, g0);
    *n = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(shift));
    return _mm256_fmadd_pd(g2, f8, h0);
}

/* a = 2^k m with m in [1/sqrt 2, sqrt 2), for a normal a: k as a double (returned) and
   m (*m), both exact. Adding 2^52 (1 - 1/sqrt 2) to a's bits carries into the exponent
   field exactly when a's mantissa is at least sqrt 2. */
PGS_TARGET_AVX2_FMA
static inline __m256d pgs_split(__m256d a, __m256d* m) {
    __m256i b = _mm256_castpd_si256(a);
    __m256i e = _mm256_srli_epi64(
        _mm256_add_epi64(b, _mm256_set1_epi64x(0x00095f619980c433LL)), 52);
    *m = _mm256_castsi256_pd(_mm256_sub_epi64(
        b, _mm256_slli_epi64(_mm256_sub_epi64(e, _mm256_set1_epi64x(1023)), 52)));
    /* e as a double: its bits under those of 2^52, minus 2^52 (and the bias) */
    return _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(e, _mm256_set1_epi64x(0x4330000000000000LL))),
        PGS_C4(0x1p52 + 1023.0));
}

/* a^e for four a >= 0 where every a is a normal double and every result lies within
   [2^-1020, 2^1020]; *odd gets a bit for each lane where that fails (zero, subnormal,
   infinite or NaN a, or a result past those bounds), which the caller takes from libm. */
PGS_TARGET_AVX2_FMA
static inline __m256d pgs_pow4(__m256d a, __m256d e, int* odd) {
    __m256d m;
    __m256d k = pgs_split(a, &m);
    __m256d y = _mm256_mul_pd(e, pgs_log2_core(m, k));
    *odd = _mm256_movemask_pd(_mm256_or_pd(
        _mm256_or_pd(_mm256_cmp_pd(a, PGS_C4(0x1p-1022), _CMP_NGE_UQ),
                     _mm256_cmp_pd(a, PGS_C4(0x1.fffffffffffffp1023), _CMP_GT_OQ)),
        _mm256_cmp_pd(_mm256_andnot_pd(PGS_C4(-0.0), y), PGS_C4(1020.0), _CMP_NLE_UQ)));
    __m256i n;
    __m256d E = pgs_exp2_core(y, &n);
    return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(E),
                                                _mm256_slli_epi64(n, 52)));
}

/* four powers from a[0..3] into out[0..3] (out may be a) */
PGS_TARGET_AVX2_FMA
static inline void pgs_pow_4(const double* a, double* out, __m256d ev, double e) {
    double in[4];
    int odd, t;
    __m256d x = _mm256_loadu_pd(a);
    __m256d r = pgs_pow4(x, ev, &odd);
    if (odd)
        _mm256_storeu_pd(in, x);
    _mm256_storeu_pd(out, r);
    for (t = 0; odd; t++, odd >>= 1)
        if (odd & 1)
            out[t] = exp2(e * log2(in[t]));
}

PGS_TARGET_AVX2_FMA
static void pgs_pow_n_avx2(const double* a, double* out, ptrdiff_t n, double e) {
    __m256d ev = _mm256_set1_pd(e);
    double pad[4];
    ptrdiff_t i = 0, t;
    for (; i + 4 <= n; i += 4)
        pgs_pow_4(a + i, out + i, ev, e);
    if (i < n) {
        /* the tail in a padded vector: the same arithmetic as a full one */
        for (t = 0; t < 4; t++)
            pad[t] = i + t < n ? a[i + t] : 1.0;
        pgs_pow_4(pad, pad, ev, e);
        for (t = 0; i + t < n; t++)
            out[i + t] = pad[t];
    }
}
#endif  /* PGS_POW_X86 */

/* out[i] = a[i]^e for i < n, a[i] >= 0 (out may be a). */
static inline void pgs_pow_n(const double* a, double* out, ptrdiff_t n, double e) {
    ptrdiff_t i;
#ifdef PGS_POW_X86
    if (pgs_pow_simd) {
        pgs_pow_n_avx2(a, out, n, e);
        return;
    }
#endif
    /* half the time of glibc's pow(); error about |e log2 a| 2^-53 */
    for (i = 0; i < n; i++)
        out[i] = exp2(e * log2(a[i]));
}

#endif  /* PGS_POWERS_H */
