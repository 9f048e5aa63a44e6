/* The compiler-specific constructs of the kernels, each behind a macro, so that the C that
 * Cython generates builds with GCC, clang (Apple's too) and MSVC.
 *
 * PGS_PREFETCH(p)      a read prefetch of p into every cache level; nothing elsewhere.
 * PGS_X86_SIMD         defined where the AVX2 kernels of _powers.h are compiled: x86-64,
 *                      GCC or clang, and not built with -Dsimd=disabled (PGS_NO_SIMD).
 *                      MSVC (and every other CPU) takes the scalar paths.
 * PGS_TARGET_AVX2_FMA  (with PGS_X86_SIMD) compiles one function for AVX2 and FMA, whatever
 *                      the build's -march: the package is built for baseline x86-64.
 * pgs_cpu_has_avx2_fma()  (with PGS_X86_SIMD) 1 if this CPU (and OS) runs AVX2 and FMA.
 */
#ifndef PGS_PORTABLE_H
#define PGS_PORTABLE_H

#if defined(__GNUC__) || defined(__clang__)
#define PGS_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
#else
#define PGS_PREFETCH(p) ((void)(p))
#endif

#if !defined(PGS_NO_SIMD) && (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define PGS_X86_SIMD 1
#define PGS_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
static inline int pgs_cpu_has_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

#endif  /* PGS_PORTABLE_H */
