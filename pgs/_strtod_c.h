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

#endif
