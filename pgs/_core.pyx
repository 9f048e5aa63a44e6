"""The compiled kernel of the Primal Gradient Solver (Zhu et al., ICDM 2009).

The loop of DESIGN.md section 2 over raw CSR buffers with the GIL released, in
the O(nnz)-per-iteration representation of section 3: ``w_t = c_t * u`` with
``u_j = sign(lam_j) |lam_j|^(q-1)``, ``Q = sum_j |lam_j|^q`` kept current, and
the projection onto ``||w||_p <= B`` a change of the scalar ``c_t``.  One loop
is compiled per loss (a fused tag type), data dtype and index dtype.
"""

from libc.math cimport sqrt, cbrt, pow, fabs, copysign, isfinite
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memset

import numpy as np

cimport pgs._losses as L
from pgs._losses cimport (
    loss_tag, Hinge, Logistic, Squared, SquaredHinge, SmoothHinge, ModifiedHuber,
    Huber, EpsilonInsensitive, Absolute,
)
from pgs._random cimport xoshiro_bounded, xoshiro_next

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


cdef inline void _update(const PGSParams* prm, PGSState* st, Py_ssize_t j,
                         double delta) noexcept nogil:
    """lam_j += delta, keeping u_j, Q and the lazy average consistent."""
    cdef double old = st.lam[j]
    cdef double new = old + delta
    cdef double old_u, new_u
    if prm.average:
        # u_j was constant since its last fold: add its span of the C sum.
        st.wsum[j] += st.u[j] * (st.C - st.clast[j])
        st.clast[j] = st.C
    st.lam[j] = new
    if prm.p_kind == P_TWO:
        _add_compensated(&st.Q, &st.Q_comp, delta * (old + new))
    else:
        old_u = st.u[j]
        new_u = copysign(_pow_qm1(fabs(new), prm), new)
        st.u[j] = new_u
        _add_compensated(&st.Q, &st.Q_comp, fabs(new) * fabs(new_u) - fabs(old) * fabs(old_u))


cdef double pgs_exact_Q(const PGSParams* prm, const PGSState* st,
                        Py_ssize_t n_cols) noexcept nogil:
    """sum_j |lam_j|^q recomputed from lam and u (u holds |lam_j|^(q-1) exactly)."""
    cdef double s = 0.0
    cdef double comp = 0.0
    cdef Py_ssize_t j
    for j in range(n_cols):
        _add_compensated(&s, &comp, fabs(st.lam[j]) * fabs(st.u[j]))
    return s + comp


cdef void _rebase(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil:
    """Every n_cols updates (so O(1) per non-zero): recompute Q exactly, and fold
    the average's open spans so that C restarts at 0.

    Without the fold, C would be dominated by the large early c_t (p < 2 has
    c ~ ||lam||^(2-q) / t) and C - clast_j would lose digits to cancellation.
    """
    cdef Py_ssize_t j
    st.Q = pgs_exact_Q(prm, st, n_cols)
    st.Q_comp = 0.0
    st.n_updates = 0
    if prm.average:
        for j in range(n_cols):
            st.wsum[j] += st.u[j] * (st.C - st.clast[j])
            st.clast[j] = 0.0
        st.C = 0.0


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
        # (p-1) ||lam||_q^(2-q) / (t sigma), with ||lam||_q^(2-q) = ||lam||_q^2 / Q
        c = (prm.p - 1.0) * (norm_lam * norm_lam / Qv) / tsig
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
    prm.recompute_every = n_cols if n_cols > 256 else 256
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

cdef enum:
    RING = 16           # rows drawn ahead in iid mode (a power of two)
    RING_MASK = 15
    AHEAD = 8           # rows ahead whose data is prefetched: RING - AHEAD draws after
                        # their indptr entry was prefetched, AHEAD rows before use


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


cdef inline void _prefetch_row(const floating_t* data, const index_t* indices,
                               const index_t* indptr, int64_t i) noexcept nogil:
    """Ask for row i's values and column indices, one cache line at a time."""
    cdef const char* a = <const char*>(data + indptr[i])
    cdef const char* a_end = <const char*>(data + indptr[i + 1])
    cdef const char* b = <const char*>(indices + indptr[i])
    cdef const char* b_end = <const char*>(indices + indptr[i + 1])
    while a < a_end:
        PGS_PREFETCH(a)
        a += 64
    while b < b_end:
        PGS_PREFETCH(b)
        b += 64


cdef inline void _shuffle(int64_t* perm, Py_ssize_t n, uint64_t* rng) noexcept nogil:
    """Fisher-Yates, in place."""
    cdef Py_ssize_t a, b
    cdef int64_t tmp
    for a in range(n - 1, 0, -1):
        b = <Py_ssize_t>xoshiro_bounded(rng, <uint64_t>(a + 1))
        tmp = perm[a]
        perm[a] = perm[b]
        perm[b] = tmp


# ---------------------------------------------------------------------- the loop

cdef int _pgs_loop(loss_tag* tag, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t n_rows,
                   Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                   long long t_end, const PGSSampler* smp) noexcept nogil:
    """Run PGS iterations st.t+1 .. t_end (DESIGN.md section 2, Figure 1 of the paper).

    All k margins of a batch are taken at w_{t-1}; then the k row updates are
    applied one after the other (rows may repeat and share columns).  In iid
    mode rows are drawn RING ahead so their memory can be prefetched; each ring
    slot remembers the PRNG state it was drawn from, and on return the state
    rewinds to the first unconsumed draw, so a run split into chunks draws
    exactly the rows of an unsplit run.
    """
    cdef Py_ssize_t k = prm.k
    cdef Py_ssize_t icol = n_cols - 1
    cdef double icpt = prm.icpt
    cdef double eps = prm.eps
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
    cdef Py_ssize_t r, jj, j
    cdef int64_t i
    cdef double s, z, g, row_w

    if mode == SAMPLE_PERMUTATION and smp.perm == NULL:
        return PGS_BAD_SAMPLER
    if mode == SAMPLE_FIXED and smp.fixed == NULL:
        return PGS_BAD_SAMPLER
    if mode == SAMPLE_IID:
        for b in range(4):
            rng[b] = st.rng[b]
        for a in range(RING):
            for b in range(4):
                ring_rng[a][b] = rng[b]
            ring_rows[a] = _draw_iid(smp, rng, n_rows)
            PGS_PREFETCH(&indptr[ring_rows[a]])

    while st.t < t_end:
        # 1. the batch and its loss derivatives at w_{t-1} = c * u
        for r in range(k):
            if mode == SAMPLE_IID:
                i = ring_rows[head]
                for b in range(4):
                    ring_rng[head][b] = rng[b]
                ring_rows[head] = _draw_iid(smp, rng, n_rows)
                PGS_PREFETCH(&indptr[ring_rows[head]])
                head = (head + 1) & RING_MASK
                _prefetch_row(data, indices, indptr, ring_rows[(head + AHEAD) & RING_MASK])
            elif mode == SAMPLE_PERMUTATION:
                if st.pos >= n_rows:
                    _shuffle(smp.perm, n_rows, st.rng)
                    st.pos = 0
                i = smp.perm[st.pos]
                st.pos += 1
                if st.pos + AHEAD < n_rows:
                    _prefetch_row(data, indices, indptr, smp.perm[st.pos + AHEAD])
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
            s = icpt * u[icol]
            for jj in range(indptr[i], indptr[i + 1]):
                s += data[jj] * u[indices[jj]]
            z = st.c * s
            if not isfinite(z):
                status = PGS_NONFINITE
                break
            row_w = g_scale
            if smp.row_scale != NULL:
                row_w *= smp.row_scale[i]
            coefs[r] = -L.dloss(tag, z, y[i], eps) * row_w
            if prm.track_loss:
                st.loss_sum += L.loss(tag, z, y[i], eps) * row_w * k
        if status != PGS_OK:
            break

        # 2. lam <- lam - lambda_t, row by row
        for r in range(k):
            g = coefs[r]
            if g == 0.0:
                continue
            i = rows[r]
            for jj in range(indptr[i], indptr[i + 1]):
                _update(prm, st, indices[jj], g * data[jj])
            st.n_updates += indptr[i + 1] - indptr[i]
            if icpt != 0.0:
                _update(prm, st, icol, g * icpt)
                st.n_updates += 1

        st.t += 1
        if st.n_updates >= prm.recompute_every:
            _rebase(prm, st, n_cols)

        # 3. w_t = grad r*(lam / (t sigma)), projected: only the scalar c changes
        _set_scale(prm, st)
        if not isfinite(st.c):
            status = PGS_NONFINITE
            break
        if prm.average:
            st.C += st.c
        if st.t == prm.t_pick:
            for j in range(n_cols):
                st.w_pick[j] = st.c * u[j]

    if mode == SAMPLE_IID:
        for b in range(4):
            st.rng[b] = ring_rng[head][b]
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
    return _dispatch(loss_id, data, indices, indptr, y, n_rows, n_cols, prm, st,
                     t_end, &smp)


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

# Scalars of PGSState that make up a resumable state (with the arrays).
_STATE_SCALARS = ("Q", "Q_comp", "C", "c", "t", "n_updates", "consumed", "pos", "loss_sum")


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
    """
    cdef PGSParams prm
    cdef PGSState st
    cdef PGSSampler smp
    cdef readonly int loss_id
    cdef readonly int sampling
    cdef readonly Py_ssize_t n_cols
    cdef readonly object lam, u, wsum, clast, w_pick, rows, coefs, perm
    cdef object _weights, _alias_prob, _alias_idx, _row_scale, _fixed
    cdef Py_ssize_t _n_rows

    def __cinit__(self, Py_ssize_t n_features, int loss_id, double p, double sigma,
                  double B, double icpt, double eps, Py_ssize_t k, long long t_pick,
                  bint average, uint64_t[::1] rng_state, int sampling=0,
                  bint track_loss=False):
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
        self.prm.track_loss = track_loss
        memset(&self.st, 0, sizeof(PGSState))
        memset(&self.smp, 0, sizeof(PGSSampler))
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
        self.perm = None
        self._n_rows = -1
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
        self.st.wsum = NULL
        self.st.clast = NULL
        self.st.w_pick = NULL
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
    def k(self):
        """Mini-batch size."""
        return self.prm.k

    @property
    def t_pick(self):
        """The iteration whose iterate is kept in `w_pick` (0: none)."""
        return self.prm.t_pick

    @property
    def Q(self):
        """The maintained sum_j |lam_j|^q."""
        return self.st.Q + self.st.Q_comp

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
        if fixed_rows is not None:
            fixed_rows = np.ascontiguousarray(fixed_rows, dtype=np.int64)
        if sample_weight is not None and sample_weight.shape[0] != n_rows:
            raise ValueError("sample_weight and indptr disagree on the number of rows")
        self._prepare_sampler(n_rows, sample_weight, fixed_rows)
        return _run(self, data, indices, indptr, y, t_end)

    def last(self):
        """w_t of the current iteration, as a new array of length n_features + 1."""
        return self.st.c * self.u

    def average(self):
        """The mean of w_1 .. w_t (O(n); leaves the state untouched, so a resumed run
        folds exactly as an unsplit one)."""
        if self.wsum is None:
            raise ValueError("this solver does not keep the average")
        if self.st.t == 0:
            return np.zeros(self.n_cols)
        return (self.wsum + self.u * (self.st.C - self.clast)) / <double>self.st.t

    def get_state(self):
        """A dict of copies of everything needed to resume (see `set_state`)."""
        state = {name: getattr(self, "_st_" + name)() for name in _STATE_SCALARS}
        state["rng"] = self.rng_state
        state["t_pick"] = self.prm.t_pick
        for name in ("lam", "u", "wsum", "clast", "w_pick", "perm"):
            arr = getattr(self, name)
            state[name] = None if arr is None else arr.copy()
        return state

    def set_state(self, dict state):
        """Resume from `get_state()` of a solver built with the same arguments."""
        cdef int a
        if state["lam"].shape[0] != self.n_cols:
            raise ValueError("the state belongs to a different number of features")
        if (state["wsum"] is None) != (self.wsum is None):
            raise ValueError("the state and this solver disagree on keeping the average")
        self.lam[:] = state["lam"]
        if self.prm.p_kind != P_TWO:
            self.u[:] = state["u"]
        if self.wsum is not None:
            self.wsum[:] = state["wsum"]
            self.clast[:] = state["clast"]
        if state["w_pick"] is not None:
            self.w_pick = state["w_pick"].copy()
        self.prm.t_pick = state["t_pick"]
        self.perm = None if state["perm"] is None else state["perm"].copy()
        self._n_rows = -1
        self._bind()
        self.st.Q = state["Q"]
        self.st.Q_comp = state["Q_comp"]
        self.st.C = state["C"]
        self.st.c = state["c"]
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

    def _st_Q(self):
        return self.st.Q

    def _st_Q_comp(self):
        return self.st.Q_comp

    def _st_C(self):
        return self.st.C

    def _st_c(self):
        return self.st.c

    def _st_t(self):
        return self.st.t

    def _st_n_updates(self):
        return self.st.n_updates

    def _st_consumed(self):
        return self.st.consumed

    def _st_pos(self):
        return self.st.pos

    def _st_loss_sum(self):
        return self.st.loss_sum


def _run(Solver s, const floating_t[::1] data, const index_t[::1] indices,
         const index_t[::1] indptr, const double[::1] y, long long t_end):
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef int status
    if y.shape[0] != n_rows:
        raise ValueError("y and indptr disagree on the number of rows")
    if n_rows < 1:
        raise ValueError("no rows")
    with nogil:
        status = _dispatch(s.loss_id, &data[0] if data.shape[0] > 0 else NULL,
                           &indices[0] if indices.shape[0] > 0 else NULL,
                           &indptr[0], &y[0], n_rows, s.n_cols, &s.prm, &s.st,
                           t_end, &s.smp)
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
