"""The compiled kernel of the Primal Gradient Solver (Zhu et al., ICDM 2009).

The loop of DESIGN.md section 2 over raw CSR buffers with the GIL released, in
the O(nnz)-per-iteration representation of section 3: ``w_t = c_t * u`` with
``u_j = sign(lam_j) |lam_j|^(q-1)``, ``Q = sum_j |lam_j|^q`` kept current, and
the projection onto ``||w||_p <= B`` a change of the scalar ``c_t``.  One loop
is compiled per loss (a fused tag type), data dtype and index dtype.
"""

from libc.math cimport sqrt, cbrt, pow, fabs, copysign, isfinite, frexp, ldexp
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memset

import numpy as np

cimport pgs._losses as L
from pgs._losses cimport (
    loss_tag, Hinge, Logistic, Squared, SquaredHinge, SmoothHinge, ModifiedHuber,
    Huber, EpsilonInsensitive, Absolute,
)
from pgs._random cimport xoshiro_bounded

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

cdef inline double _pow_qm1(double a, const PGSParams* prm) noexcept nogil:
    """a^(q-1) for a >= 0, without pow() for the common p."""
    if prm.p_kind == P_Q3:
        return a * a
    elif prm.p_kind == P_Q225:
        return a * sqrt(sqrt(a))
    return pow(a, prm.q - 1.0)


cdef inline void _add_compensated(double* s, double* comp, double x) noexcept nogil:
    """s + comp += x with Neumaier's compensation (Q receives +/- pairs that cancel)."""
    cdef double t = s[0] + x
    if fabs(s[0]) >= fabs(x):
        comp[0] += (s[0] - t) + x
    else:
        comp[0] += (x - t) + s[0]
    s[0] = t


cdef void _recompute_Q(PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Q = sum_j |lam_j / s|^q afresh, kept as the compensated pair (Q, Q_comp).

    Rounding the pair to one double would leave an error eps * Q that outlives a later
    collapse of Q (one dominant term shrinking by 1e13 when q is large).
    """
    cdef double inv = 1.0 if st.lam_scale == 0.0 else 1.0 / st.lam_scale
    cdef Py_ssize_t j
    st.Q = 0.0
    st.Q_comp = 0.0
    for j in range(n_cols):
        _add_compensated(&st.Q, &st.Q_comp, fabs(st.lam[j]) * inv * fabs(st.u[j]))
    st.Q_abs = st.Q
    st.n_updates = 0


cdef inline void _rebase_average(PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Fold every coordinate's open span of the C sum, then restart C at 0.

    A span is u_j * (C - clast_j). For p < 2, c_t falls like t^(1-q) while u
    grows, so C is dominated by the first iterations and C - clast_j cancels
    catastrophically (relative error ~ eps * C / span, growing like t^(q-1)).
    The loop restarts C when t doubles, at every exact recomputation of Q, when
    C exceeds 2^16 c_t and before lam is rescaled, so a span never loses more than
    ~16 bits; the cost is O(n_cols) at moments that already cost O(n_cols), or
    O(log T) times in all (O(q log T) when c_t decays fastest, p near 1).
    """
    cdef Py_ssize_t j
    for j in range(n_cols):
        st.wsum[j] += st.u[j] * (st.C - st.clast[j])
        st.clast[j] = 0.0
    st.C = 0.0


cdef void _rescale(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Set lam_scale = 2^e with max_j |lam_j| / 2^e in [0.5, 1); recompute u and Q from lam.

    For p < 2 the kernel stores u_j = sign(lam_j) |lam_j / s|^(q-1) and Q = sum |lam_j / s|^q
    for a power of two s. Unscaled, these powers leave the double range when q is large
    (p = 1.01, q = 101: |lam_j| > ~1100 overflows Q; tiny features underflow u to 0).
    w = c u is unchanged: c absorbs s (see _set_scale). O(n_cols), needed O(log) times.
    """
    cdef Py_ssize_t j
    cdef double big = 0.0
    cdef double a
    cdef int e
    for j in range(n_cols):
        a = fabs(st.lam[j])
        if a > big:
            big = a
    if big == 0.0:
        return
    if prm.average:
        _rebase_average(st, n_cols)     # fold the spans with the old u before it changes
    frexp(big, &e)
    st.lam_scale = ldexp(1.0, e)
    st.inv_scale = ldexp(1.0, -e)
    for j in range(n_cols):
        st.u[j] = copysign(_pow_qm1(fabs(st.lam[j]) * st.inv_scale, prm), st.lam[j])
    _recompute_Q(st, n_cols)


cdef inline void _update(const PGSParams* prm, PGSState* st, Py_ssize_t j,
                         double delta, Py_ssize_t n_cols) noexcept nogil:
    """lam_j += delta, keeping u_j, Q and the lazy average consistent."""
    cdef double old = st.lam[j]
    cdef double new = old + delta
    cdef double old_u, new_u, a, t_new, t_old
    if prm.average:
        # u_j was constant since its last fold: add its span of the C sum.
        st.wsum[j] += st.u[j] * (st.C - st.clast[j])
        st.clast[j] = st.C
    st.lam[j] = new
    if prm.p_kind == P_TWO:
        _add_compensated(&st.Q, &st.Q_comp, delta * (old + new))
    else:
        a = fabs(new) * st.inv_scale
        if a > prm.rescale_above:
            _rescale(prm, st, n_cols)   # recomputes u (u_j included) and Q from lam
            return
        old_u = st.u[j]
        new_u = copysign(_pow_qm1(a, prm), new)
        st.u[j] = new_u
        # Two separate terms, not their difference: the old term is bit for bit the one
        # added before, so it cancels in the compensated sum. For large q a term collapses
        # (0.74^101 ~ 6e-14): rounding the difference first left an error of eps * old
        # term in Q (2e-3 relative in w_t at p = 1.01). Q_abs bounds what compensation
        # cannot: an error ~ eps^2 * Q_abs, so Q is recomputed when Q << Q_abs.
        t_new = a * fabs(new_u)
        t_old = fabs(old) * st.inv_scale * fabs(old_u)
        _add_compensated(&st.Q, &st.Q_comp, t_new)
        _add_compensated(&st.Q, &st.Q_comp, -t_old)
        st.Q_abs += t_new + t_old


cdef double pgs_exact_Q(const PGSParams* prm, const PGSState* st,
                        Py_ssize_t n_cols) noexcept nogil:
    """sum_j |lam_j / s|^q recomputed from lam and u (u holds |lam_j / s|^(q-1) exactly)."""
    cdef double s = 0.0
    cdef double comp = 0.0
    cdef double inv = 1.0 if st.lam_scale == 0.0 else 1.0 / st.lam_scale
    cdef Py_ssize_t j
    for j in range(n_cols):
        _add_compensated(&s, &comp, fabs(st.lam[j]) * inv * fabs(st.u[j]))
    return s + comp


cdef inline void _set_scale(const PGSParams* prm, PGSState* st) noexcept nogil:
    """c_t such that w_t = c_t * u, projection included (DESIGN.md section 3)."""
    cdef double Qv = st.Q + st.Q_comp
    cdef double tsig = <double>st.t * prm.sigma
    cdef double norm_lam, r, c, norm_w
    if not Qv > 0.0:
        st.c = 0.0
        return
    if prm.p_kind == P_TWO:
        norm_lam = sqrt(Qv)
        c = 1.0 / tsig
    else:
        if prm.p_kind == P_Q3:
            norm_lam = cbrt(Qv)
        elif prm.p_kind == P_Q225:
            r = cbrt(cbrt(Qv))        # Q^(1/9); ||lam||_q = Q^(4/9)
            r = r * r
            norm_lam = r * r
        else:
            norm_lam = pow(Qv, 1.0 / prm.q)
        # (p-1) ||lam||_q^(2-q) / (t sigma), with ||lam||_q^(2-q) = ||lam||_q^2 / Q; Q and
        # u are of lam / s, and w = c u needs (s ||lam/s||)^(2-q) s^(q-1) = s ||lam/s||^(2-q)
        c = (prm.p - 1.0) * (norm_lam * norm_lam / Qv) / tsig * st.lam_scale
        norm_lam = norm_lam * st.lam_scale
    if prm.B > 0.0:
        norm_w = (prm.p - 1.0) * norm_lam / tsig
        if norm_w > prm.B:
            c *= prm.B / norm_w
    st.c = c


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
    # Recomputing Q costs n_cols; doing it every n_cols updates keeps that O(1)
    # per non-zero and bounds the drift to n_cols roundings.
    prm.recompute_every = n_cols if n_cols > 4096 else 4096
    if p == 2.0:
        prm.p_kind = P_TWO
        prm.q = 2.0
    elif fabs(p - 1.5) < 1e-12:
        prm.p_kind = P_Q3
        prm.q = 3.0
    elif fabs(p - 1.8) < 1e-12:
        prm.p_kind = P_Q225
        prm.q = 2.25
    else:
        prm.p_kind = P_GENERAL
    # Keep |lam_j / s|^q below 2^256 (see _rescale); at least 2 so a fresh scale is stable.
    prm.rescale_above = ldexp(1.0, max(1, <int>(256.0 / prm.q)))
    prm.rescale_below = ldexp(1.0, -(min(<int>prm.q, 900) + 64))


# ---------------------------------------------------------------------- the loop

cdef int _pgs_loop(loss_tag* tag, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t n_rows,
                   Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                   long long t_end, const int64_t* fixed_rows) noexcept nogil:
    """Run PGS iterations st.t+1 .. t_end (DESIGN.md section 2, Figure 1 of the paper).

    All k margins of a batch are taken at w_{t-1}; then the k row updates are
    applied one after the other (rows may repeat and share columns).
    """
    cdef Py_ssize_t k = prm.k
    cdef Py_ssize_t icol = n_cols - 1
    cdef double icpt = prm.icpt
    cdef double eps = prm.eps
    cdef double inv_k = 1.0 / <double>k
    cdef double* u = st.u
    cdef int64_t* rows = st.rows
    cdef double* coefs = st.coefs
    cdef Py_ssize_t r, jj, j
    cdef int64_t i
    cdef double s, z, g
    cdef bint touched

    if st.lam_scale == 0.0:          # a zeroed state: no scaling yet
        st.lam_scale = 1.0
        st.inv_scale = 1.0
    while st.t < t_end:
        # 1. the batch and its loss derivatives at w_{t-1} = c * u
        for r in range(k):
            if fixed_rows != NULL:
                i = fixed_rows[st.t * k + r]
                if i < 0 or i >= n_rows:
                    return PGS_BAD_ROW
            else:
                i = <int64_t>xoshiro_bounded(st.rng, <uint64_t>n_rows)
            rows[r] = i
            s = icpt * u[icol]
            for jj in range(indptr[i], indptr[i + 1]):
                s += data[jj] * u[indices[jj]]
            z = st.c * s
            if not isfinite(z):
                return PGS_NONFINITE
            coefs[r] = -L.dloss(tag, z, y[i], eps) * inv_k

        # 2. lam <- lam - lambda_t, row by row
        touched = False
        for r in range(k):
            g = coefs[r]
            if g == 0.0:
                continue
            touched = True
            i = rows[r]
            for jj in range(indptr[i], indptr[i + 1]):
                _update(prm, st, indices[jj], g * data[jj], n_cols)
            st.n_updates += indptr[i + 1] - indptr[i]
            if icpt != 0.0:
                _update(prm, st, icol, g * icpt, n_cols)
                st.n_updates += 1
        if touched and prm.p_kind != P_TWO and st.Q + st.Q_comp < prm.rescale_below:
            # lam is tiny (or shrank) relative to its scale: |lam/s|^q underflows
            _rescale(prm, st, n_cols)

        st.t += 1
        # Recompute Q exactly every recompute_every updates (bounded drift, amortised O(1))
        # and when it has collapsed far below the mass added since (error ~ eps^2 Q_abs).
        if (st.n_updates >= prm.recompute_every
                or st.Q + st.Q_comp < st.Q_abs * 9.313225746154785e-10):     # 2^-30
            _recompute_Q(st, n_cols)
            if prm.average:
                _rebase_average(st, n_cols)
        elif prm.average and (st.t & (st.t - 1)) == 0:
            _rebase_average(st, n_cols)

        # 3. w_t = grad r*(lam / (t sigma)), projected: only the scalar c changes
        _set_scale(prm, st)
        if not isfinite(st.c):
            return PGS_NONFINITE
        if prm.average:
            if st.c > 0.0 and st.C > 65536.0 * st.c:
                # c_t has decayed far below the C sum (fast for p near 1: c_t falls like
                # t^(1-q)); a span C - clast would lose log2(C / c) bits: restart C.
                _rebase_average(st, n_cols)
            st.C += st.c
        if st.t == prm.t_pick:
            for j in range(n_cols):
                st.w_pick[j] = st.c * u[j]
    return PGS_OK


cdef int _dispatch(int loss_id, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t n_rows,
                   Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                   long long t_end, const int64_t* fixed_rows) noexcept nogil:
    """Select the loop compiled for `loss_id` (once per call, not per sample)."""
    if loss_id == L.LOSS_HINGE:
        return _pgs_loop(<Hinge*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_LOGISTIC:
        return _pgs_loop(<Logistic*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_SQUARED:
        return _pgs_loop(<Squared*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_SQUARED_HINGE:
        return _pgs_loop(<SquaredHinge*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_SMOOTH_HINGE:
        return _pgs_loop(<SmoothHinge*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_MODIFIED_HUBER:
        return _pgs_loop(<ModifiedHuber*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_HUBER:
        return _pgs_loop(<Huber*>NULL, data, indices, indptr, y, n_rows, n_cols,
                         prm, st, t_end, fixed_rows)
    elif loss_id == L.LOSS_EPSILON_INSENSITIVE:
        return _pgs_loop(<EpsilonInsensitive*>NULL, data, indices, indptr, y, n_rows,
                         n_cols, prm, st, t_end, fixed_rows)
    return _pgs_loop(<Absolute*>NULL, data, indices, indptr, y, n_rows, n_cols,
                     prm, st, t_end, fixed_rows)


cdef int pgs_run_f64_i64(int loss_id, const double* data, const int64_t* indices,
                         const int64_t* indptr, const double* y, Py_ssize_t n_rows,
                         Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                         long long t_end, const int64_t* fixed_rows) noexcept nogil:
    """Public entry point for float64 data with int64 indices (see pgs/_core.pxd)."""
    if loss_id < 0 or loss_id >= L.N_LOSSES:
        return -1
    return _dispatch(loss_id, data, indices, indptr, y, n_rows, n_cols, prm, st,
                     t_end, fixed_rows)


# ------------------------------------------------------------ Python-facing state

cdef class Solver:
    """The resumable state of one PGS run over a fixed data set's shape.

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
    """
    cdef PGSParams prm
    cdef PGSState st
    cdef readonly int loss_id
    cdef readonly Py_ssize_t n_cols
    cdef readonly object lam, u, wsum, clast, w_pick, rows, coefs

    def __cinit__(self, Py_ssize_t n_features, int loss_id, double p, double sigma,
                  double B, double icpt, double eps, Py_ssize_t k, long long t_pick,
                  bint average, uint64_t[::1] rng_state):
        cdef int a
        if loss_id < 0 or loss_id >= L.N_LOSSES:
            raise ValueError(f"loss_id={loss_id} is not a loss id")
        if rng_state.shape[0] != 4:
            raise ValueError("rng_state must hold 4 uint64 words")
        self.loss_id = loss_id
        self.n_cols = n_features + 1
        pgs_init(&self.prm, p, sigma, B, icpt, eps, k, t_pick, average, self.n_cols)
        memset(&self.st, 0, sizeof(PGSState))
        for a in range(4):
            self.st.rng[a] = rng_state[a]
        if (rng_state[0] | rng_state[1] | rng_state[2] | rng_state[3]) == 0:
            self.st.rng[0] = 0x9E3779B97F4A7C15ULL   # all-zero is xoshiro's fixed point
        self.lam = np.zeros(self.n_cols)
        self.u = self.lam if self.prm.p_kind == P_TWO else np.zeros(self.n_cols)
        self.rows = np.zeros(k, dtype=np.int64)
        self.coefs = np.zeros(k)
        self.wsum = np.zeros(self.n_cols) if average else None
        self.clast = np.zeros(self.n_cols) if average else None
        self.w_pick = np.zeros(self.n_cols) if t_pick > 0 else None
        self._bind()

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
        if self.wsum is not None:
            v = self.wsum
            self.st.wsum = &v[0]
            v = self.clast
            self.st.clast = &v[0]
        if self.w_pick is not None:
            v = self.w_pick
            self.st.w_pick = &v[0]

    @property
    def t(self):
        """Iterations done."""
        return self.st.t

    @property
    def Q(self):
        """The maintained sum_j |lam_j / lam_scale|^q."""
        return self.st.Q + self.st.Q_comp

    @property
    def q(self):
        """The dual exponent used by the kernel."""
        return self.prm.q

    @property
    def lam_scale(self):
        """The power of two s such that u and Q are stored for lam / s (1 for p = 2)."""
        return self.st.lam_scale if self.st.lam_scale != 0.0 else 1.0

    @property
    def scale(self):
        """c_t, with w_t = c_t * u."""
        return self.st.c

    @property
    def rng_state(self):
        """The PRNG state, as 4 uint64 words."""
        return np.array([self.st.rng[0], self.st.rng[1], self.st.rng[2], self.st.rng[3]],
                        dtype=np.uint64)

    def exact_Q(self):
        """sum_j |lam_j|^q recomputed from scratch (a test hook for the drift)."""
        return pgs_exact_Q(&self.prm, &self.st, self.n_cols)

    def run(self, long long t_end, data, indices, indptr, y, fixed_rows=None):
        """Advance to iteration `t_end` over the CSR buffers (data, indices, indptr).

        `fixed_rows`, if given, is an int64 array of at least t_end * k row
        indices used instead of the PRNG (a test hook); it is indexed by the
        global iteration, so chunked runs stay exact.  Returns a status code.
        """
        if fixed_rows is not None:
            fixed_rows = np.ascontiguousarray(fixed_rows, dtype=np.int64)
            if fixed_rows.shape[0] < t_end * self.prm.k:
                raise ValueError("fixed_rows is shorter than t_end * k")
        return _run(self, data, indices, indptr, y, t_end, fixed_rows)

    def last(self):
        """w_t of the current iteration, as a new array of length n_features + 1."""
        return self.st.c * self.u

    def average(self):
        """The mean of w_1 .. w_t (folds every coordinate's open span once, O(n))."""
        cdef Py_ssize_t j
        if self.wsum is None:
            raise ValueError("this solver does not keep the average")
        if self.st.t == 0:
            return np.zeros(self.n_cols)
        for j in range(self.n_cols):
            self.st.wsum[j] += self.st.u[j] * (self.st.C - self.st.clast[j])
            self.st.clast[j] = self.st.C
        return self.wsum / <double>self.st.t


def _run(Solver s, const floating_t[::1] data, const index_t[::1] indices,
         const index_t[::1] indptr, const double[::1] y, long long t_end,
         const int64_t[::1] fixed_rows):
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef const int64_t* fixed = NULL
    cdef int status
    if y.shape[0] != n_rows:
        raise ValueError("y and indptr disagree on the number of rows")
    if n_rows < 1:
        raise ValueError("no rows")
    if fixed_rows is not None:
        fixed = &fixed_rows[0]
    with nogil:
        status = _dispatch(s.loss_id, &data[0] if data.shape[0] > 0 else NULL,
                           &indices[0] if indices.shape[0] > 0 else NULL,
                           &indptr[0], &y[0], n_rows, s.n_cols, &s.prm, &s.st,
                           t_end, fixed)
    return status


# ------------------------------------------------------------- checks and helpers

def check_csr(const floating_t[::1] data, const index_t[::1] indices,
              const index_t[::1] indptr, Py_ssize_t n_features):
    """Validate raw CSR buffers without copying them.

    Returns ``None`` when they are consistent, else a message: the index
    pointer must be non-decreasing within the buffers, column indices in
    ``[0, n_features)`` and every stored value finite.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t i, jj
    cdef index_t lo, hi
    cdef Py_ssize_t bad = -1
    cdef int kind = 0
    if n_rows < 0:
        return "indptr is empty"
    with nogil:
        if indptr[0] < 0:
            kind = 1
        for i in range(n_rows):
            if indptr[i + 1] < indptr[i]:
                kind = 1
                break
        if kind == 0 and (indptr[n_rows] > data.shape[0]
                          or indptr[n_rows] > indices.shape[0]):
            kind = 1
        if kind == 0:
            lo = indptr[0]
            hi = indptr[n_rows]
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


def mean_loss(const double[::1] z, const double[::1] y, int loss_id, double eps):
    """Mean of the loss over margins `z` and targets `y` (used for the objective)."""
    cdef Py_ssize_t i, n = z.shape[0]
    cdef double s = 0.0
    if y.shape[0] != n:
        raise ValueError("z and y differ in length")
    if n == 0:
        return 0.0
    with nogil:
        for i in range(n):
            s += L.loss_value(loss_id, z[i], y[i], eps)
    return s / n


def py_loss(int loss_id, double z, double y, double eps):
    """The compiled loss value (a test hook)."""
    return L.loss_value(loss_id, z, y, eps)


def py_dloss(int loss_id, double z, double y, double eps):
    """The compiled loss derivative (a test hook)."""
    return L.loss_deriv(loss_id, z, y, eps)
