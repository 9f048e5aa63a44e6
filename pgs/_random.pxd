# A small, seedable PRNG that needs no Python: xoshiro256** (Blackman & Vigna,
# 2018), and Lemire's (2019) nearly-divisionless unbiased bounded integers.
# Pure Cython (no C header), so downstream code can cimport it with nothing else.
#
# The state is four uint64 words; pgs seeds it from numpy's SeedSequence so the
# user's `seed` fully determines the stream.  A state of all zeros is invalid.

from libc.stdint cimport int64_t, uint64_t


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t xoshiro_next(uint64_t* s) noexcept nogil:
    """Next 64-bit output of xoshiro256**; advances the state `s[0:4]`."""
    cdef uint64_t result = _rotl(s[1] * 5, 7) * 9
    cdef uint64_t t = s[1] << 17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


cdef inline uint64_t _mul_hi_lo(uint64_t a, uint64_t b, uint64_t* lo) noexcept nogil:
    """High 64 bits of the 128-bit product a*b (low 64 bits in `lo`), portably."""
    cdef uint64_t a_lo = a & 0xFFFFFFFFU
    cdef uint64_t a_hi = a >> 32
    cdef uint64_t b_lo = b & 0xFFFFFFFFU
    cdef uint64_t b_hi = b >> 32
    cdef uint64_t p0 = a_lo * b_lo
    cdef uint64_t p1 = a_lo * b_hi
    cdef uint64_t p2 = a_hi * b_lo
    cdef uint64_t p3 = a_hi * b_hi
    cdef uint64_t mid = (p0 >> 32) + (p1 & 0xFFFFFFFFU) + (p2 & 0xFFFFFFFFU)
    lo[0] = a * b
    return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32)


cdef inline uint64_t xoshiro_bounded(uint64_t* s, uint64_t n) noexcept nogil:
    """Uniform integer in [0, n), n >= 1, without modulo bias (Lemire 2019)."""
    cdef uint64_t lo
    cdef uint64_t hi = _mul_hi_lo(xoshiro_next(s), n, &lo)
    cdef uint64_t threshold
    if lo < n:
        threshold = (0 - n) % n
        while lo < threshold:
            hi = _mul_hi_lo(xoshiro_next(s), n, &lo)
    return hi


cdef inline void xoshiro_shuffle(int64_t* perm, Py_ssize_t n, uint64_t* s) noexcept nogil:
    """Fisher-Yates shuffle of perm[0:n] in place, drawing from the state `s`."""
    cdef Py_ssize_t a, b
    cdef int64_t tmp
    for a in range(n - 1, 0, -1):
        b = <Py_ssize_t>xoshiro_bounded(s, <uint64_t>(a + 1))
        tmp = perm[a]
        perm[a] = perm[b]
        perm[b] = tmp
