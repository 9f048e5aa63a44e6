"""The compiled kernel of Constrained SGD for least squares (Mu et al.; docs/design.md section 6).

One SGD step on the loss ``l(w) = (y - <w, x>)^2 / 2`` followed by the Euclidean
projection onto the hyperplane ``<w, xbar_t> = ybar_t`` through the running mean of
the rows seen so far.  The paper states O(n_features) per step; here every step costs
O(non-zeros of the row) through the representation

    w = a + gamma * S,       S = sum of the rows seen,   D = <S, a>,   N = ||S||^2,

with ``gamma = (sum y - D) / N`` after each step (the projection is a scalar).  Only
the row's support of ``a`` and ``S`` is read and written.  D and N are maintained
incrementally and recomputed exactly every ``recompute_every`` coordinate updates (at
which point gamma * S is folded into a, so gamma stays small).

K outputs can share one pass over the data (C-Adaline trains one regressor per class
on the same sample sequence): S and N are shared, a, D, sum y and gamma are per output.
The weights live in one array of blocks ``[S_j, a_j0, ..., a_j(K-1)]`` so that a row
touches one cache line per column.

The loop is compiled per data dtype, index dtype and projection on/off (fused types);
it holds no Python object, never raises, and reports errors as status codes.
"""

from libc.math cimport sqrt, isfinite
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

import numpy as np

from pgs._dual cimport floating_t, index_t
from pgs._random cimport xoshiro_bounded, xoshiro_shuffle


# Compile-time choice between CSGD/NCSGD (projected) and plain SGD.
cdef struct Projected:
    char _unused
cdef struct Plain:
    char _unused

ctypedef fused proj_tag:
    Projected
    Plain


cdef enum CSGDVariant:
    VARIANT_CSGD = 0      # projection, 2-phase step size
    VARIANT_NCSGD = 1     # projection, eta0 / sqrt(t)
    VARIANT_SGD = 2       # no projection, eta0 / sqrt(t)

cdef enum CSGDStatus:
    CSGD_OK = 0
    CSGD_NONFINITE = 1    # a prediction or gamma became inf or NaN (step size too large)
    CSGD_BAD_ROW = 2      # a row index of a fixed sequence is outside [0, n_rows)

VARIANT_NAMES = ("csgd", "ncsgd", "sgd")


cdef struct CSGDParams:
    int variant              # a CSGDVariant
    int constant_step        # nonzero: eta_t = eta0 (Adaline's rule; a bench hook)
    double eta0
    double switch_t          # m_switch of the 2-phase step size
    double sqrt_switch
    double icpt              # value of the implicit constant column; 0 for none
    Py_ssize_t K             # number of outputs
    int average              # nonzero: keep the running sum of the iterates
    int permutation          # nonzero: rows in a fresh random order each epoch, else i.i.d.
    long long recompute_every


cdef struct CSGDState:
    double* w                # n_cols blocks of K + 1: [S_j, a_j0 .. a_j(K-1)]
    double* D                # K: <S, a_k>
    double* sumy             # K: sum of the targets seen
    double* gamma            # K
    double* ax               # scratch K: <a_k, x>
    double* delta            # scratch K: the step's coefficient of x in a
    # (average) n_cols blocks of 2K + 1: [step of the last fold, wsum_j0 .. wsum_j(K-1),
    # G_0 .. G_(K-1) at the last fold]; wsum is the lazily folded sum of the iterates.
    double* acc
    double* G                # K: sum of gamma over the steps done (average)
    double N                 # ||S||^2
    long long t              # steps done
    long long n_updates      # coordinate updates since D and N were last recomputed
    uint64_t rng[4]          # xoshiro256** state
    int64_t* perm            # n_rows (permutation sampling): the current epoch's order
    long long pos            # position in perm of the next row


# ------------------------------------------------------------------ helpers

cdef inline double _eta(const CSGDParams* prm, long long t) noexcept nogil:
    """Step size of step t >= 1 (the paper's section 4.2 for CSGD)."""
    if prm.constant_step:
        return prm.eta0
    if prm.variant == VARIANT_CSGD and <double>t >= prm.switch_t:
        return prm.eta0 * prm.sqrt_switch / <double>t
    return prm.eta0 / sqrt(<double>t)


cdef inline void _fold(const CSGDParams* prm, CSGDState* st, Py_ssize_t j) noexcept nogil:
    """Add coordinate j's iterates since its last fold to wsum (it is about to change).

    Between two changes, a_j and S_j are constant, so the span's sum of
    w_j = a_j + gamma_s S_j is a_j * (steps) + S_j * (G_now - G_then).
    """
    cdef Py_ssize_t K = prm.K
    cdef Py_ssize_t k
    cdef double* ab = st.acc + j * (2 * K + 1)
    cdef double cnt = <double>st.t - ab[0]
    cdef double* blk = st.w + j * (K + 1)
    if cnt == 0.0:
        return
    for k in range(K):
        ab[1 + k] += cnt * blk[1 + k] + blk[0] * (st.G[k] - ab[1 + K + k])
        ab[1 + K + k] = st.G[k]
    ab[0] = <double>st.t


cdef void csgd_flush(const CSGDParams* prm, CSGDState* st, Py_ssize_t n_cols) noexcept nogil:
    """Fold every coordinate's open span into wsum (O(n_cols K))."""
    cdef Py_ssize_t j
    if not prm.average:
        return
    for j in range(n_cols):
        _fold(prm, st, j)


cdef void csgd_recompute(const CSGDParams* prm, CSGDState* st,
                         Py_ssize_t n_cols) noexcept nogil:
    """Fold gamma * S into a (w unchanged, gamma = 0) and recompute D and N exactly."""
    cdef Py_ssize_t K = prm.K
    cdef Py_ssize_t j, k
    cdef double s
    cdef double* blk
    csgd_flush(prm, st, n_cols)
    st.N = 0.0
    for k in range(K):
        st.D[k] = 0.0
    for j in range(n_cols):
        blk = st.w + j * (K + 1)
        s = blk[0]
        st.N += s * s
        for k in range(K):
            blk[1 + k] += st.gamma[k] * s
            st.D[k] += s * blk[1 + k]
    for k in range(K):
        st.gamma[k] = 0.0
    st.n_updates = 0


cdef inline void _apply_projected(const CSGDParams* prm, CSGDState* st, Py_ssize_t j,
                                  double d) noexcept nogil:
    """a_j += delta d, S_j += d, keeping D = <S, a> and N = ||S||^2 exact.

    Reads the current S_j and a_j, so a column repeated within a row is exact too.
    """
    cdef Py_ssize_t K = prm.K
    cdef Py_ssize_t k
    cdef double* blk = st.w + j * (K + 1)
    cdef double s, av, dk
    if prm.average:
        _fold(prm, st, j)
    s = blk[0]
    st.N += d * (s + s + d)
    blk[0] = s + d
    for k in range(K):
        av = blk[1 + k]
        dk = st.delta[k] * d
        # (s + d)(av + dk) - s av
        st.D[k] += s * dk + d * (av + dk)
        blk[1 + k] = av + dk


cdef inline void _apply_plain(const CSGDParams* prm, CSGDState* st, Py_ssize_t j,
                              double d) noexcept nogil:
    """a_j += delta d."""
    cdef Py_ssize_t K = prm.K
    cdef Py_ssize_t k
    cdef double* blk = st.w + j * (K + 1)
    if prm.average:
        _fold(prm, st, j)
    for k in range(K):
        blk[1 + k] += st.delta[k] * d


# ---------------------------------------------------------------------- the loop

# Single-output fast paths: the scalars live in registers, not behind pointers that
# alias the weight blocks.

cdef inline void _dot_one(proj_tag* tag, const floating_t* data, const index_t* indices,
                          Py_ssize_t lo, Py_ssize_t hi, const double* w, double icpt,
                          Py_ssize_t icol, double* sx_out, double* ax) noexcept nogil:
    """<S, x> and <a, x> for K = 1 (blocks [S_j, a_j])."""
    cdef double sx = 0.0
    cdef double axv = 0.0
    cdef double d
    cdef const double* blk
    cdef Py_ssize_t jj
    for jj in range(lo, hi):
        d = data[jj]
        blk = w + 2 * indices[jj]
        if proj_tag is Projected:
            sx += d * blk[0]
        axv += d * blk[1]
    if icpt != 0.0:
        blk = w + 2 * icol
        if proj_tag is Projected:
            sx += icpt * blk[0]
        axv += icpt * blk[1]
    sx_out[0] = sx
    ax[0] = axv


cdef inline void _dot_many(proj_tag* tag, const floating_t* data, const index_t* indices,
                           Py_ssize_t lo, Py_ssize_t hi, const double* w, Py_ssize_t K,
                           double icpt, Py_ssize_t icol, double* sx_out,
                           double* ax) noexcept nogil:
    """<S, x> and <a_k, x> for every output k."""
    cdef double sx = 0.0
    cdef double d
    cdef const double* blk
    cdef Py_ssize_t jj, k
    for k in range(K):
        ax[k] = 0.0
    for jj in range(lo, hi):
        d = data[jj]
        blk = w + indices[jj] * (K + 1)
        if proj_tag is Projected:
            sx += d * blk[0]
        for k in range(K):
            ax[k] += d * blk[1 + k]
    if icpt != 0.0:
        blk = w + icol * (K + 1)
        if proj_tag is Projected:
            sx += icpt * blk[0]
        for k in range(K):
            ax[k] += icpt * blk[1 + k]
    sx_out[0] = sx


cdef inline void _update_one(proj_tag* tag, const floating_t* data, const index_t* indices,
                             Py_ssize_t lo, Py_ssize_t hi, double* w, double icpt,
                             Py_ssize_t icol, CSGDState* st, bint average) noexcept nogil:
    """_apply_projected / _apply_plain (and _fold) for K = 1, scalars in registers."""
    cdef double dl = st.delta[0]
    cdef double N = st.N
    cdef double D = st.D[0]
    cdef double G0 = st.G[0]
    cdef double tnow = <double>st.t
    cdef double d, s, av, dk, cnt
    cdef double* blk
    cdef double* ab
    cdef Py_ssize_t jj, j
    for jj in range(lo, hi + (1 if icpt != 0.0 else 0)):
        if jj < hi:
            d = data[jj]
            j = indices[jj]
        else:
            d = icpt
            j = icol
        blk = w + 2 * j
        if average:
            ab = st.acc + 3 * j
            cnt = tnow - ab[0]
            if cnt != 0.0:
                ab[1] += cnt * blk[1] + blk[0] * (G0 - ab[2])
                ab[2] = G0
                ab[0] = tnow
        dk = dl * d
        if proj_tag is Projected:
            s = blk[0]
            av = blk[1]
            N += d * (s + s + d)
            D += s * dk + d * (av + dk)
            blk[0] = s + d
            blk[1] = av + dk
        else:
            blk[1] += dk
    st.N = N
    st.D[0] = D


cdef int _csgd_loop(proj_tag* tag, const floating_t* data, const index_t* indices,
                    const index_t* indptr, const double* y, Py_ssize_t n_rows,
                    Py_ssize_t n_cols, const CSGDParams* prm, CSGDState* st,
                    long long t_end, const int64_t* fixed_rows) noexcept nogil:
    """Run steps st.t+1 .. t_end (Algorithm 1 of the paper; plain SGD for `Plain`)."""
    cdef Py_ssize_t K = prm.K
    cdef Py_ssize_t icol = n_cols - 1
    cdef double icpt = prm.icpt
    cdef double* w = st.w
    cdef double* ax = st.ax
    cdef double* delta = st.delta
    cdef double* gamma = st.gamma
    cdef const double* yi
    cdef Py_ssize_t jj, k, lo, hi
    cdef int64_t i
    cdef double sx, z, eta

    while st.t < t_end:
        if fixed_rows != NULL:
            i = fixed_rows[st.t]
            if i < 0 or i >= n_rows:
                return CSGD_BAD_ROW
        elif prm.permutation:
            if st.pos == 0:
                xoshiro_shuffle(st.perm, n_rows, st.rng)
            i = st.perm[st.pos]
            st.pos += 1
            if st.pos == n_rows:
                st.pos = 0
        else:
            i = <int64_t>xoshiro_bounded(st.rng, <uint64_t>n_rows)
        lo = indptr[i]
        hi = indptr[i + 1]

        # 1. predictions z_k = <a_k, x> + gamma_k <S, x>
        if K == 1:
            _dot_one(tag, data, indices, lo, hi, w, icpt, icol, &sx, ax)
        else:
            _dot_many(tag, data, indices, lo, hi, w, K, icpt, icol, &sx, ax)

        # 2. the SGD step v = w + eta (y - z) x, written on a (and S += x)
        eta = _eta(prm, st.t + 1)
        yi = y + i * K
        for k in range(K):
            if proj_tag is Projected:
                z = ax[k] + gamma[k] * sx
                delta[k] = eta * (yi[k] - z) - gamma[k]
                st.sumy[k] += yi[k]
            else:
                z = ax[k]
                delta[k] = eta * (yi[k] - z)
            if not isfinite(z):
                return CSGD_NONFINITE
        if K == 1:
            _update_one(tag, data, indices, lo, hi, w, icpt, icol, st, prm.average)
        else:
            for jj in range(lo, hi):
                if proj_tag is Projected:
                    _apply_projected(prm, st, indices[jj], data[jj])
                else:
                    _apply_plain(prm, st, indices[jj], data[jj])
            if icpt != 0.0:
                if proj_tag is Projected:
                    _apply_projected(prm, st, icol, icpt)
                else:
                    _apply_plain(prm, st, icol, icpt)
        st.t += 1

        # 3. the projection onto <w, S> = sum y: only gamma changes
        if proj_tag is Projected:
            for k in range(K):
                gamma[k] = (st.sumy[k] - st.D[k]) / st.N if st.N > 0.0 else 0.0
                if not isfinite(gamma[k]):
                    return CSGD_NONFINITE
            if prm.average:
                for k in range(K):
                    st.G[k] += gamma[k]
            st.n_updates += hi - lo + (1 if icpt != 0.0 else 0)
            if st.n_updates >= prm.recompute_every:
                csgd_recompute(prm, st, n_cols)
    return CSGD_OK


cdef int _dispatch(bint projected, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t n_rows,
                   Py_ssize_t n_cols, const CSGDParams* prm, CSGDState* st,
                   long long t_end, const int64_t* fixed_rows) noexcept nogil:
    if projected:
        return _csgd_loop(<Projected*>NULL, data, indices, indptr, y, n_rows, n_cols,
                          prm, st, t_end, fixed_rows)
    return _csgd_loop(<Plain*>NULL, data, indices, indptr, y, n_rows, n_cols,
                      prm, st, t_end, fixed_rows)


# ------------------------------------------------------------ Python-facing state

cdef class CSGDSolver:
    """The resumable state of one CSGD / NCSGD / SGD run with K outputs.

    `run` advances it to a given step over CSR buffers; running to T1 and then
    to T2 equals running to T2 at once (bit for bit).

    Parameters
    ----------
    n_features : int
        Number of columns of X (the constant column is added internally).
    n_outputs : int
        K, the number of targets per row (1 for regression).
    variant : int
        Index in ``VARIANT_NAMES``.
    eta0 : float
        Base step size.
    switch : int
        m_switch of the 2-phase step size (CSGD only).
    icpt : float
        Value of the implicit constant column (0 for no intercept).
    average : bool
        Keep the sum of the iterates.
    rng_state : ndarray of 4 uint64
        Initial xoshiro256** state.
    constant_step : bool
        Use eta_t = eta0 (Adaline's rule; for the benchmarks).
    permutation : bool
        Draw the rows in a fresh random order each epoch instead of i.i.d.
    """
    cdef CSGDParams prm
    cdef CSGDState st
    cdef readonly Py_ssize_t n_cols
    cdef readonly object buf, D_arr, sumy, gamma_arr, ax, delta, acc, G, perm

    def __cinit__(self, Py_ssize_t n_features, Py_ssize_t n_outputs, int variant,
                  double eta0, long long switch, double icpt, bint average,
                  uint64_t[::1] rng_state, bint constant_step=False,
                  bint permutation=False):
        cdef int r
        if variant < 0 or variant > 2:
            raise ValueError(f"variant={variant} is not a variant id")
        if n_outputs < 1 or n_features < 1:
            raise ValueError("n_features and n_outputs must be >= 1")
        if rng_state.shape[0] != 4:
            raise ValueError("rng_state must hold 4 uint64 words")
        self.n_cols = n_features + 1
        memset(&self.prm, 0, sizeof(CSGDParams))
        memset(&self.st, 0, sizeof(CSGDState))
        self.prm.variant = variant
        self.prm.constant_step = constant_step
        self.prm.permutation = permutation
        self.prm.eta0 = eta0
        self.prm.switch_t = <double>(switch if switch > 0 else 1)
        self.prm.sqrt_switch = sqrt(self.prm.switch_t)
        self.prm.icpt = icpt
        self.prm.K = n_outputs
        self.prm.average = average
        # An exact recomputation costs n_cols (K + 1); doing it every 8 n_cols updates
        # keeps that a small O(K) per non-zero and bounds the drift to that many roundings.
        self.prm.recompute_every = 8 * self.n_cols if self.n_cols > 8192 else 65536
        for r in range(4):
            self.st.rng[r] = rng_state[r]
        if (rng_state[0] | rng_state[1] | rng_state[2] | rng_state[3]) == 0:
            self.st.rng[0] = 0x9E3779B97F4A7C15ULL   # all-zero is xoshiro's fixed point
        K = n_outputs
        self.buf = np.zeros(self.n_cols * (K + 1))
        self.D_arr = np.zeros(K)
        self.sumy = np.zeros(K)
        self.gamma_arr = np.zeros(K)
        self.ax = np.zeros(K)
        self.delta = np.zeros(K)
        self.G = np.zeros(K)
        if average:
            self.acc = np.zeros(self.n_cols * (2 * K + 1))
        self._bind()

    cdef void _bind(self):
        """Point the C state at the numpy buffers this object owns."""
        cdef double[::1] v
        v = self.buf
        self.st.w = &v[0]
        v = self.D_arr
        self.st.D = &v[0]
        v = self.sumy
        self.st.sumy = &v[0]
        v = self.gamma_arr
        self.st.gamma = &v[0]
        v = self.ax
        self.st.ax = &v[0]
        v = self.delta
        self.st.delta = &v[0]
        v = self.G
        self.st.G = &v[0]
        if self.prm.average:
            v = self.acc
            self.st.acc = &v[0]

    @property
    def t(self):
        """Steps done."""
        return self.st.t

    @property
    def recompute_every(self):
        """Coordinate updates between exact recomputations of D and N (settable: a test hook)."""
        return self.prm.recompute_every

    @recompute_every.setter
    def recompute_every(self, long long value):
        if value < 1:
            raise ValueError("recompute_every must be >= 1")
        self.prm.recompute_every = value

    @property
    def D(self):
        """The maintained <S, a_k> (a copy)."""
        return self.D_arr.copy()

    @property
    def N(self):
        """The maintained ||S||^2."""
        return self.st.N

    @property
    def gamma(self):
        """gamma_k, with w_k = a_k + gamma_k S (a copy)."""
        return self.gamma_arr.copy()

    @property
    def projected(self):
        """True for CSGD and NCSGD."""
        return self.prm.variant != VARIANT_SGD

    @property
    def rng_state(self):
        """The PRNG state, as 4 uint64 words."""
        return np.array([self.st.rng[0], self.st.rng[1], self.st.rng[2], self.st.rng[3]],
                        dtype=np.uint64)

    def a(self):
        """a, shape (n_cols, K) (a copy)."""
        K = self.prm.K
        return self.buf.reshape(self.n_cols, K + 1)[:, 1:].copy()

    def S(self):
        """S, the sum of the rows seen (constant column last), shape (n_cols,) (a copy)."""
        return self.buf.reshape(self.n_cols, self.prm.K + 1)[:, 0].copy()

    def exact_D(self):
        """<S, a_k> recomputed from scratch (a test hook for the drift)."""
        return self.S() @ self.a()

    def run(self, long long t_end, data, indices, indptr, y, fixed_rows=None):
        """Advance to step `t_end` over the CSR buffers (data, indices, indptr).

        `y` is a float64 array of n_rows * K targets (row-major).  `fixed_rows`,
        if given, is an int64 array of at least t_end row indices used instead of
        the PRNG (a test hook), indexed by the global step.  Returns a status code.
        """
        if fixed_rows is not None:
            fixed_rows = np.ascontiguousarray(fixed_rows, dtype=np.int64)
            if fixed_rows.shape[0] < t_end:
                raise ValueError("fixed_rows is shorter than t_end")
        n_rows = len(indptr) - 1
        if self.prm.permutation and fixed_rows is None:
            if self.perm is None:
                self.perm = np.arange(n_rows, dtype=np.int64)
                self._bind_perm()
            elif self.perm.shape[0] != n_rows:
                raise ValueError("permutation sampling: the number of rows changed")
        return _run(self, data, indices, indptr, y, t_end, fixed_rows)

    cdef void _bind_perm(self):
        cdef int64_t[::1] p = self.perm
        self.st.perm = &p[0]

    def last(self):
        """The current iterate w = a + gamma S, shape (n_cols, K)."""
        K = self.prm.K
        blocks = self.buf.reshape(self.n_cols, K + 1)
        if not self.projected:
            return blocks[:, 1:].copy()
        return blocks[:, 1:] + blocks[:, :1] * self.gamma_arr[None, :]

    def average(self):
        """The mean of the iterates after steps 1 .. t, shape (n_cols, K) (O(n K))."""
        if self.acc is None:
            raise ValueError("this solver does not keep the average")
        if self.st.t == 0:
            return np.zeros((self.n_cols, self.prm.K))
        csgd_flush(&self.prm, &self.st, self.n_cols)
        K = self.prm.K
        return self.acc.reshape(self.n_cols, 2 * K + 1)[:, 1:1 + K] / <double>self.st.t


def _run(CSGDSolver s, const floating_t[::1] data, const index_t[::1] indices,
         const index_t[::1] indptr, const double[::1] y, long long t_end,
         const int64_t[::1] fixed_rows):
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef const int64_t* fixed = NULL
    cdef int status
    cdef bint projected = s.prm.variant != VARIANT_SGD
    if n_rows < 1:
        raise ValueError("no rows")
    if y.shape[0] != n_rows * s.prm.K:
        raise ValueError("y must hold n_rows * n_outputs targets")
    if fixed_rows is not None:
        fixed = &fixed_rows[0]
    with nogil:
        status = _dispatch(projected, &data[0] if data.shape[0] > 0 else NULL,
                           &indices[0] if indices.shape[0] > 0 else NULL,
                           &indptr[0], &y[0], n_rows, s.n_cols, &s.prm, &s.st,
                           t_end, fixed)
    return status
