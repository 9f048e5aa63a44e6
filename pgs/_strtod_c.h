/* Locale-independent strtod for pgs/_svmlight.pyx.
 *
 * C's strtod follows LC_NUMERIC (a process-wide setting a user may change with
 * locale.setlocale), so "0.5" could parse as 0 under a comma-decimal locale.  The
 * *_l variants take an explicit locale object: we create the "C" locale once at
 * import and use it from every parser thread.  glibc, musl, macOS and MSVC's
 * strtod are correctly rounded, which is what makes the slow path exact.
 */
#ifndef PGS_STRTOD_C_H
#define PGS_STRTOD_C_H

#include <stdlib.h>
#include <locale.h>

#if defined(_WIN32)
static _locale_t pgs_c_locale = NULL;
static int pgs_strtod_init(void) {
    if (pgs_c_locale == NULL) pgs_c_locale = _create_locale(LC_ALL, "C");
    return pgs_c_locale != NULL;
}
static double pgs_strtod_c(const char *s, char **end) {
    return _strtod_l(s, end, pgs_c_locale);
}
#else
#if defined(__APPLE__)
#include <xlocale.h>
#endif
static locale_t pgs_c_locale = (locale_t)0;
static int pgs_strtod_init(void) {
    if (pgs_c_locale == (locale_t)0) pgs_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    return pgs_c_locale != (locale_t)0;
}
static double pgs_strtod_c(const char *s, char **end) {
    return strtod_l(s, end, pgs_c_locale);
}
#endif

/* Decimal mantissas of up to 19 digits (exact in the x87 80-bit format's 64-bit
 * significand) scaled by 10^e, |e| <= 27 (10^27 = 2^27 * 5^27 with 5^27 < 2^63, so
 * exact too): one correctly rounded extended-precision operation gives r with
 * |r - v| <= 1/2 ulp_64.  Rounding r to double gives the correctly rounded v unless
 * r sits exactly on a double rounding midpoint (its low 11 significand bits equal
 * 0x400), the only case where v and r could round differently; then return 0 and
 * let strtod decide.  Results lie in [1e-27, 1e46], far from subnormals and
 * overflow.  Only where long double is the x87 format.
 */
#include <float.h>
#include <stdint.h>
#include <string.h>
#if (defined(__x86_64__) || defined(__i386__)) && LDBL_MANT_DIG == 64 && !defined(_MSC_VER)
#define PGS_HAVE_EXT_SCALE 1
static const long double pgs_pow10_ext[28] = {
    1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L, 1e8L, 1e9L, 1e10L, 1e11L, 1e12L,
    1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L,
    1e24L, 1e25L, 1e26L, 1e27L,
};
static int pgs_ext_scale(uint64_t m, int e, double *out) {
    long double r = (long double)m;
    uint64_t sig;
    if (e >= 0) r *= pgs_pow10_ext[e];
    else r /= pgs_pow10_ext[-e];
    memcpy(&sig, &r, sizeof sig);   /* little-endian: the 64-bit significand first */
    if ((sig & 0x7FF) == 0x400) return 0;
    *out = (double)r;
    return 1;
}
#else
#define PGS_HAVE_EXT_SCALE 0
static int pgs_ext_scale(uint64_t m, int e, double *out) {
    (void)m; (void)e; (void)out;
    return 0;
}
#endif

/* Eight ASCII digits at once (SWAR), for the long mantissas of 17-digit output.
 * Loaded little-endian, the first character is the lowest byte.  A byte is a digit
 * iff its high nibble is 3 and adding 6 to its low nibble does not carry.  The value
 * is built by combining neighbours: bytes into 2-digit 16-bit lanes (10a + b <= 99,
 * no carries), those into 4-digit 32-bit lanes (100a + b <= 9999), then into one
 * 8-digit number (10000a + b < 2^32).
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ || defined(_WIN32)
#define PGS_SWAR_DIGITS 1
#else
#define PGS_SWAR_DIGITS 0
#endif
static inline int pgs_eight_digits(const unsigned char *p, uint64_t *value) {
#if PGS_SWAR_DIGITS
    uint64_t v;
    memcpy(&v, p, 8);
    if ((v & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
        ((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL)
        return 0;
    v -= 0x3030303030303030ULL;
    v = ((v * 10) + (v >> 8)) & 0x00FF00FF00FF00FFULL;
    v = ((v * 100) + (v >> 16)) & 0x0000FFFF0000FFFFULL;
    v = ((v * 10000) + (v >> 32)) & 0xFFFFFFFFULL;
    *value = v;
    return 1;
#else
    (void)p; (void)value;
    return 0;
#endif
}

#endif
