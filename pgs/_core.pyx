"""The compiled kernel of the Primal Gradient Solver (Zhu et al., ICDM 2009).

One loop, `_pgs_loop`, runs Figure 1 of the paper over raw CSR buffers with the
GIL released: draw a batch, take its margins at w_{t-1}, subtract the batch's
subgradient from the dual accumulator, map it to w_t and keep the iterates the
caller asked for. The dual accumulator and its map to w are a `DualVector`
(pgs/_dual.pxd): w = c u, updates O(non-zeros), the map and the projection O(1).
The loop is compiled once per loss family (binary, multinomial, Crammer-Singer: a fused
tag type, pgs/_losses.pxd), data dtype and index dtype; the variants of p live inside
the dual vector's `dual_add`.
"""

from libc.math cimport pow, sqrt, fabs, fmin, isfinite, INFINITY
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

cimport pgs._losses as L
from pgs._losses cimport loss_tag, Binary, Multinomial, CrammerSinger
from pgs._dual cimport (
    DualVector, floating_t, index_t, P_TWO, P_Q3, P_GENERAL, SPANS_Q, U_MAX, PGS_PREFETCH,
    POW_CHUNK,
    pgs_powers_init, pgs_powers_simd, pgs_pow_n, dual_kind, dual_dot, dual_add, dual_maintain,
    dual_set_scale, dual_project, dual_add_to_average, dual_write_w,
    dual_average_at, dual_u,
    dual_truncate, dual_exact_Q, dual_renormalise, dual_rescale, dual_recompute_Q,
    dual_dot_block, dual_add_block_two, dual_maintain_block,
    dual_add_to_average_block,
)
from pgs._random cimport xoshiro_bounded, xoshiro_next, xoshiro_shuffle


pgs_powers_init()

# True where general p's powers are taken four at a time with AVX2 (pgs/_powers.h).
SIMD_POWERS = bool(pgs_powers_simd())


# ------------------------------------------------------------------ the dual vector

cdef void pgs_dual(DualVector* dv, const PGSParams* prm, const PGSState* st,
                   Py_ssize_t n_cols, Py_ssize_t r) noexcept nogil:
    """The dual vector of output r of a run: its part of the state's buffers and its
    scalars (O(1))."""
    cdef const PGSOutput* o = &st.outs[r]
    cdef Py_ssize_t off = r * st.out_step, woff = r * st.wout_step
    dv.lam = st.lam + off
    dv.u = NULL if prm.p_kind == P_Q3 else st.u + off      # (p = 1.5: computed from lam)
    dv.stride = st.stride
    dv.wstride = st.wstride
    dv.wsum = st.wsum + woff if prm.average else NULL
    dv.clast = st.clast + woff if prm.average and prm.average_spans else NULL
    dv.n = n_cols
    dv.kind = prm.p_kind
    dv.p = prm.p
    dv.q = prm.q
    dv.ratio_hi = prm.ratio_hi
    dv.S = o.S if prm.p_kind != P_TWO and o.S > 0.0 else 1.0
    dv.inv_S = 1.0 / dv.S
    dv.Q = o.Q
    dv.Q_comp = o.Q_comp
    dv.Q_abs = o.Q_abs
    dv.n_updates = o.n_updates
    dv.recompute_every = prm.recompute_every
    dv.c = o.c
    dv.C = o.C
    dv.l1 = prm.l1 > 0.0
    dv.paid = st.paid + woff if dv.l1 and prm.p_kind != P_TWO else NULL
    dv.U = o.U
    dv.l1_Q = dv.l1 and prm.p_kind == P_TWO and o.B > 0.0
    dv.U_Q = o.U_Q


cdef void _dual_to_state(const DualVector* dv, PGSOutput* o) noexcept nogil:
    """An output's scalars back from its dual vector (whose buffers are the state's)."""
    o.Q = dv.Q
    o.Q_comp = dv.Q_comp
    o.Q_abs = dv.Q_abs
    o.S = dv.S
    o.n_updates = dv.n_updates
    o.c = dv.c
    o.C = dv.C
    o.U = dv.U
    o.U_Q = dv.U_Q


# ------------------------------------------------------------------ row sampling

# In iid mode RING rows are drawn ahead (a power of two) and the index pointer of each
# is prefetched when it is drawn: its miss is the one that costs most. Against rows
# drawn when needed and no prefetch: 28-44% less CPU time on the 781k-row RCV1-like set
# and on MNIST (real, 110 MB), none on the 1 MB RCV1 sample, which stays in cache
# (k = 1, p = 2 and 1.5, iid and permutation: bench/results/kernel_paths*.md). The data of the
# row AHEAD places on is prefetched while the current row's margin is taken
# (`dual_dot`). Each slot remembers the PRNG state it was drawn from: a run hands back
# the state before its first unconsumed draw, so a run split into chunks draws exactly
# the rows of an unsplit run.
cdef enum:
    RING = 64
    RING_MASK = 63
    AHEAD = 4


cdef struct Draws:
    int64_t rows[RING]
    uint64_t rng_before[RING][4]
    uint64_t rng[4]
    int head


cdef inline int64_t _draw_iid(const PGSSampler* smp, uint64_t* rng,
                              Py_ssize_t n_rows) noexcept nogil:
    """One row, uniform or (with an alias table) with probability proportional to weight."""
    cdef int64_t i = <int64_t>xoshiro_bounded(rng, <uint64_t>n_rows)
    if smp.alias_prob != NULL:
        if <double>(xoshiro_next(rng) >> 11) * (1.0 / 9007199254740992.0) >= smp.alias_prob[i]:
            i = smp.alias_idx[i]
    return i


cdef void _draws_start(Draws* dr, const PGSSampler* smp, const PGSState* st,
                       Py_ssize_t n_rows, const index_t* indptr) noexcept nogil:
    cdef int a, b
    for b in range(4):
        dr.rng[b] = st.rng[b]
    dr.head = 0
    if smp.mode != SAMPLE_IID:
        return
    for a in range(RING):
        for b in range(4):
            dr.rng_before[a][b] = dr.rng[b]
        dr.rows[a] = _draw_iid(smp, dr.rng, n_rows)
        PGS_PREFETCH(&indptr[dr.rows[a]])


cdef inline int _next_row(Draws* dr, const PGSSampler* smp, PGSState* st, Py_ssize_t n_rows,
                          const index_t* indptr, const double* y, Py_ssize_t y_stride,
                          int64_t* row) noexcept nogil:
    """The next row of the sampling mode into *row (row i's targets at y[y_stride i], K
    binary problems': y_stride K of them); a status."""
    cdef int64_t i
    cdef int b
    if smp.mode == SAMPLE_IID:
        i = dr.rows[dr.head]
        for b in range(4):
            dr.rng_before[dr.head][b] = dr.rng[b]
        dr.rows[dr.head] = _draw_iid(smp, dr.rng, n_rows)
        PGS_PREFETCH(&indptr[dr.rows[dr.head]])
        dr.head = (dr.head + 1) & RING_MASK
        PGS_PREFETCH(&y[y_stride * dr.rows[(dr.head + AHEAD) & RING_MASK]])
    elif smp.mode == SAMPLE_PERMUTATION:
        if st.pos >= n_rows:
            xoshiro_shuffle(smp.perm, n_rows, st.rng)
            st.pos = 0
        i = smp.perm[st.pos]
        st.pos += 1
        # as in iid mode: the index pointer RING rows ahead, the target AHEAD
        if st.pos + RING < n_rows:
            PGS_PREFETCH(&indptr[smp.perm[st.pos + RING]])
        if st.pos + AHEAD < n_rows:
            PGS_PREFETCH(&y[y_stride * smp.perm[st.pos + AHEAD]])
    else:                                       # (cyclic)
        if st.pos >= n_rows:
            st.pos = 0
        i = st.pos
        st.pos += 1
    st.consumed += 1
    row[0] = i
    return PGS_OK


cdef inline int64_t _upcoming(const Draws* dr, const PGSSampler* smp, const PGSState* st,
                              Py_ssize_t n_rows, Py_ssize_t j) noexcept nogil:
    """The row to be drawn j places after the current batch (-1: not known, or rows in
    file order, which the hardware prefetches by itself)."""
    if smp.mode == SAMPLE_IID and j < RING:
        return dr.rows[(dr.head + j) & RING_MASK]
    if smp.mode == SAMPLE_PERMUTATION and st.pos + j < n_rows:
        return smp.perm[st.pos + j]
    return -1


cdef void _draws_end(const Draws* dr, const PGSSampler* smp, PGSState* st) noexcept nogil:
    """Hand back the PRNG state before the first unconsumed draw."""
    cdef int b
    if smp.mode == SAMPLE_IID:
        for b in range(4):
            st.rng[b] = dr.rng_before[dr.head][b]


# ---------------------------------------------------------------------- the loop

cdef inline void _coefs(loss_tag* tag, int loss_id, double* z, Py_ssize_t K, Py_ssize_t r,
                        int64_t i, const double* y, Py_ssize_t y_stride, double g_scale,
                        const PGSSampler* smp, const PGSParams* prm,
                        PGSState* st) noexcept nogil:
    """Row i's -loss'(z, y_i) times its weight / k into output c's st.coefs[k c + r] for its
    K margins z (the K-output losses overwrite z; row i's class at y[y_stride i]; K
    binary problems: output c's target at y[y_stride i + c]); the sampled loss added up
    if tracked."""
    cdef Py_ssize_t c
    cdef double v
    if smp.row_scale != NULL:
        g_scale *= smp.row_scale[i]
    if loss_tag is Multinomial or loss_tag is CrammerSinger:
        v = L.multi_dloss(tag, z, K, <Py_ssize_t>y[y_stride * i])
        for c in range(K):
            st.coefs[prm.k * c + r] = -z[c] * g_scale
        if prm.track_loss:
            st.loss_sum += v * g_scale * prm.k
    else:
        for c in range(K):
            st.coefs[prm.k * c + r] = -L.loss_at(loss_id, z[c], y[y_stride * i + c], prm.eps,
                                                 &v if prm.track_loss else NULL) * g_scale
            if prm.track_loss:
                st.loss_sum += v * g_scale * prm.k


cdef inline void _scale(double* v, Py_ssize_t n, Py_ssize_t stride, double f) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(n):
        v[stride * j] *= f


cdef int _pgs_loop(loss_tag* tag, int loss_id, const floating_t* data,
                   const index_t* indices, const index_t* indptr, const double* y,
                   Py_ssize_t y_stride, Py_ssize_t n_rows, Py_ssize_t n_cols,
                   const PGSParams* prm, PGSState* st, DualVector* dv, double* z,
                   long long t_end, const PGSSampler* smp) noexcept nogil:
    """Run PGS iterations st.t + 1 .. t_end (Figure 1 of the paper, docs/design.md section 2).

    All k margins of a batch are taken at w_{t-1}; then the k rows' updates are
    applied one after the other (rows may repeat and share columns). The state's R
    outputs (dv: R dual vectors, z: scratch of 5 R) take every row's R margins, then its
    R coefficients (a K-output loss's from the K margins together: docs/design.md 6d; R
    binary problems' each from its own target, row i's R targets side by side from
    y[y_stride i]; a row's class, or its one target, at y[y_stride i]), then each output's
    updates. One output takes its margins by `dual_dot`, whose strides are constants; a
    block (feature-major) of R by `dual_dot_block`. (One output's dual vector is a local:
    the compiler keeps its fields apart from the stores to lam.)
    """
    cdef DualVector one
    cdef double z1[1]
    cdef Draws dr
    cdef PGSOutput* outs = st.outs      # (locals: no store to a vector can move them)
    cdef double* coefs = st.coefs
    cdef Py_ssize_t K = st.n_out
    cdef Py_ssize_t k = prm.k
    cdef Py_ssize_t r, c
    cdef int64_t i, nxt
    cdef double tsig, eta = 0.0, gw = 1.0, gsum, rho, root
    cdef double g_scale = smp.grad_scale / <double>k
    cdef bint updated, prepaid, one_block = False, wide = False
    cdef Py_ssize_t n_nz
    cdef int status = PGS_OK
    if smp.mode == SAMPLE_PERMUTATION and smp.perm == NULL:
        return PGS_BAD_SAMPLER
    if K == 1:
        dv, z = &one, z1
    for c in range(K):
        pgs_dual(&dv[c], prm, st, n_cols, c)
    # One block (feature-major at p = 2 or 1.5, without l1): a row's K margins take each
    # entry once; at p = 2 ("wide") the updates, Q's recomputation and the average's folds
    # too. (Other p interleave u with lam: there the one-pass margins did not pay,
    # bench/results/block_margins.md.)
    one_block = (K > 1 and prm.p_kind != P_GENERAL and prm.l1 == 0.0 and st.out_step == 1
                 and st.stride == K and st.wout_step == 1 and st.wstride == K)
    wide = one_block and prm.p_kind == P_TWO
    _draws_start(&dr, smp, st, n_rows, indptr)

    while st.t < t_end:
        # 1. A_t: the batch's k rows
        for r in range(k):
            status = _next_row(&dr, smp, st, n_rows, indptr, y, y_stride, &st.rows[r])
            if status != PGS_OK:
                break
        if status != PGS_OK:
            break

        # 2. lambda_t's coefficients at w_{t-1} = c u: -loss'(<w, x_i> + b, y_i) / k (with
        #    l1 the margins read lam as the l1 term leaves it: p = 2 truncated by U, p = 1.5
        #    by its debts, and with k = 1 the update pays; other p < 2, and k > 1, pay
        #    first). (The row AHEAD places on is prefetched meanwhile, in this batch or the
        #    next.)
        prepaid = prm.l1 > 0.0 and prm.p_kind != P_TWO and (prm.p_kind == P_GENERAL or k > 1)
        if prepaid:
            for c in range(K):
                for r in range(k):
                    i = st.rows[r]
                    if not dual_truncate(&dv[c], indices, indptr[i], indptr[i + 1]):
                        status = PGS_NONFINITE
                dual_maintain(&dv[c])
            if status != PGS_OK:
                break
        for r in range(k):
            i = st.rows[r]
            nxt = -1
            if smp.mode == SAMPLE_IID or smp.mode == SAMPLE_PERMUTATION:
                nxt = (st.rows[r + AHEAD] if r + AHEAD < k
                       else _upcoming(&dr, smp, st, n_rows, r + AHEAD - k))
            if K > 1:
                # the K margins over the block (docs/multiclass.md)
                dual_dot_block(dv, K, data, indices, indptr[i], indptr[i + 1], prm.icpt,
                               indptr[nxt] if nxt >= 0 else 0, indptr[nxt + 1] if nxt >= 0 else 0,
                               z, one_block)
            else:
                z[0] = dual_dot(dv, data, indices, indptr[i], indptr[i + 1], prm.icpt,
                                indptr[nxt] if nxt >= 0 else 0, indptr[nxt + 1] if nxt >= 0 else 0)
            for c in range(K):
                z[c] = dv[c].c * z[c] + outs[c].b
                if not isfinite(z[c]):
                    status = PGS_NONFINITE        # nothing of the batch is applied
            if status != PGS_OK:
                break
            _coefs(tag, loss_id, z, K, r, i, y, y_stride, g_scale, smp, prm, st)
        if status != PGS_OK:
            break

        # 3. lam <- lam - gw lambda_t, row by row: gw = 1 for the paper's step (dual point
        #    lam / ((t + t0) sigma)); SCHED_ASGD's is zs lam, so gw = eta_t / zs (docs/design.md 6c)
        if prm.schedule == SCHED_ASGD:
            root = sqrt(1.0 + prm.sigma * prm.eta0 * <double>st.t)  # (x^-3/4 without pow)
            eta = prm.eta0 / (root * sqrt(root))
            st.zs *= 1.0 - prm.sigma * eta
            if st.zs < 1e-30:
                for c in range(K):
                    dv[c].U *= st.zs    # (the l1 term's, in lam's new units: first, as
                    #                            p = 2 recomputes Q from it)
                    dual_renormalise(&dv[c], st.zs)
                    if dv[c].paid != NULL:
                        _scale(dv[c].paid, n_cols, dv[c].wstride, st.zs)
                st.zs = 1.0
            gw = eta / st.zs
        if wide:
            # p = 2 without l1: each row's K outputs in one pass over its entries, where at
            # least a quarter of them move (else the few, one by one)
            for r in range(k):
                i = st.rows[r]
                n_nz = 0
                for c in range(K):
                    z[K + c] = coefs[k * c + r] * gw
                    n_nz += z[K + c] != 0.0
                if 4 * n_nz >= K:
                    dual_add_block_two(dv, K, data, indices, indptr[i], indptr[i + 1], z + K,
                                       prm.icpt, z + 2 * K)
                    continue
                for c in range(K):
                    if z[K + c] != 0.0:
                        dual_add(&dv[c], data, indices, indptr[i], indptr[i + 1], z[K + c],
                                 prm.icpt)
            dual_maintain_block(dv, K, z + K)
        else:
            for c in range(K):
                updated = False
                for r in range(k):
                    if coefs[k * c + r] != 0.0:
                        i = st.rows[r]
                        # (prepaid: the batch paid this step's debts, its rows add only)
                        dual_add(&dv[c], data, indices, indptr[i], indptr[i + 1],
                                 coefs[k * c + r] * gw, prm.icpt, not prepaid)
                        updated = True
                if updated:
                    dual_maintain(&dv[c])

        # 4. w_t = grad r*(dual point), projected onto ||w||_p <= B: c only; the free bias
        st.t += 1
        if prm.schedule == SCHED_ASGD:
            tsig = 1.0 / st.zs
        else:
            tsig = (<double>st.t + prm.t_offset) * prm.sigma
            eta = 1.0 / tsig
        for c in range(K):
            # (this step's truncation; a debt of U_MAX already zeroes any lam_j a finite
            # run holds, and saturating keeps the engines' U - U0 finite: no inf - inf;
            # never down, as a merge may leave U past it and paid_j at U; l1 = 0: nothing)
            if prm.l1 > 0.0 and dv[c].U < U_MAX:
                dv[c].U = fmin(dv[c].U + prm.l1 * gw, U_MAX)
            dual_set_scale(&dv[c], tsig)
            dual_project(&dv[c], outs[c].B, tsig)     # (one-vs-rest: each its own B)
            if prm.icpt_rate > 0.0:
                gsum = 0.0
                for r in range(k):
                    gsum += coefs[k * c + r]
                outs[c].b += prm.icpt_rate * eta * gsum          # (plain SGD)
            if not (isfinite(dv[c].c) and isfinite(outs[c].b)):
                status = PGS_NONFINITE
        if status != PGS_OK:
            break

        # 5. the iterates kept: the average (weights 1, or t under SCHED_ASGD: it forgets
        #    the start), and the one drawn ahead (iterate="random")
        if prm.average:
            rho = <double>st.t if prm.schedule == SCHED_ASGD else 1.0
            if wide:
                dual_add_to_average_block(dv, K, st.t, rho, z + K)
            for c in range(K):
                if not wide:
                    dual_add_to_average(&dv[c], st.t, rho)
                outs[c].b_sum += rho * outs[c].b
            st.rho_sum += rho
        if st.t == prm.t_pick:
            for c in range(K):
                dual_write_w(&dv[c], st.w_pick + c * n_cols)
                outs[c].b_pick = outs[c].b

    _draws_end(&dr, smp, st)
    for c in range(K):
        _dual_to_state(&dv[c], &outs[c])
    return status


cdef int _dispatch(int loss_id, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t y_stride,
                   Py_ssize_t n_rows, Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                   long long t_end, const PGSSampler* smp) noexcept nogil:
    """Select the loop compiled for `loss_id` (once per call, not per sample) and give it
    its scratch (R > 1 outputs: allocated for the call); -1 for an id that names no loss,
    a K-output loss of one output, or l1 > 0 at p < 2 without the state's paid."""
    cdef DualVector* dv = NULL
    cdef double* z = NULL
    cdef Py_ssize_t K = st.n_out
    cdef int status
    if K < 1 or ((loss_id == L.LOSS_MULTINOMIAL or loss_id == L.LOSS_CRAMMER_SINGER)
                 and K < 2) or (prm.l1 > 0.0 and prm.p_kind != P_TWO and st.paid == NULL):
        return -1
    if K > 1:
        dv = <DualVector*>malloc(K * sizeof(DualVector))
        z = <double*>malloc(5 * K * sizeof(double))
        if dv == NULL or z == NULL:
            free(dv)
            free(z)
            return PGS_NO_MEMORY
    if loss_id == L.LOSS_MULTINOMIAL:
        status = _pgs_loop(<Multinomial*>NULL, loss_id, data, indices, indptr,
                           y, y_stride, n_rows, n_cols, prm, st, dv, z, t_end, smp)
    elif loss_id == L.LOSS_CRAMMER_SINGER:
        status = _pgs_loop(<CrammerSinger*>NULL, loss_id, data, indices, indptr,
                           y, y_stride, n_rows, n_cols, prm, st, dv, z, t_end, smp)
    elif 0 <= loss_id < L.LOSS_MULTINOMIAL:
        status = _pgs_loop(<Binary*>NULL, loss_id, data, indices, indptr,
                           y, y_stride, n_rows, n_cols, prm, st, dv, z, t_end, smp)
    else:
        status = -1
    if K > 1:
        free(dv)
        free(z)
    return status


# ------------------------------------------------------------------- C-level API

cdef void pgs_init(PGSParams* prm, double p, double sigma, double B, double icpt,
                   double eps, Py_ssize_t k, long long t_pick, int average,
                   Py_ssize_t n_cols) noexcept nogil:
    """Fill `prm` (see pgs/_core.pxd)."""
    memset(prm, 0, sizeof(PGSParams))
    prm.p = p
    prm.p_kind = dual_kind(p)
    prm.q = 2.0 if prm.p_kind == P_TWO else p / (p - 1.0)
    prm.sigma = sigma
    prm.B = B
    prm.icpt = icpt
    prm.eps = eps
    prm.k = k
    prm.t_pick = t_pick
    prm.average = average
    # Recomputing Q costs n_cols; every 4 n_cols updates keeps that well under one
    # operation per non-zero, and the compensated drift negligible.
    prm.recompute_every = 4 * n_cols if n_cols > 256 else 1024
    # (|lam_j| / S)^q stays below 2^900 (and a sum of n of them finite)
    prm.ratio_hi = INFINITY if prm.p_kind == P_TWO else pow(2.0, 900.0 / prm.q)
    prm.average_spans = average and prm.q > SPANS_Q


cdef void pgs_state_init(PGSState* st, const PGSParams* prm, Py_ssize_t n_out,
                         PGSOutput* outs, double* lam, double* u, int64_t* rows,
                         double* coefs, const uint64_t* rng, Py_ssize_t n_cols) noexcept nogil:
    """Zero `st` and its `n_out` (R) `outs`, and bind the caller's buffers, output-major
    (pgs/_core.pxd): lam and u of length R n_cols (zeroed by the caller; see
    pgs/_core.pxd for u per p), rows of length k and coefs of k R, and the PRNG's four
    words (all zero, xoshiro's fixed point, is replaced). Each output's radius is prm.B.
    The average, the picked iterate and l1's paid are off (NULL)."""
    cdef int a
    cdef Py_ssize_t c
    memset(st, 0, sizeof(PGSState))
    memset(outs, 0, n_out * sizeof(PGSOutput))
    st.lam = lam
    st.u = u
    st.n_out = n_out
    st.outs = outs
    st.stride = st.wstride = 1
    st.out_step = st.wout_step = n_cols
    st.rows = rows
    st.coefs = coefs
    for a in range(4):
        st.rng[a] = rng[a]
    if (rng[0] | rng[1] | rng[2] | rng[3]) == 0:
        st.rng[0] = 0x9E3779B97F4A7C15ULL
    st.zs = 1.0
    for c in range(n_out):
        outs[c].B = prm.B


cdef void pgs_sampler_init(PGSSampler* smp, int mode) noexcept nogil:
    """Unweighted rows in `mode` (the caller then sets the weights' buffers, and perm for
    SAMPLE_PERMUTATION)."""
    memset(smp, 0, sizeof(PGSSampler))
    smp.mode = mode
    smp.grad_scale = 1.0


cdef int pgs_run_f64_i64(int loss_id, const double* data, const int64_t* indices,
                         const int64_t* indptr, const double* y, Py_ssize_t n_rows,
                         Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                         long long t_end, const PGSSampler* smp) noexcept nogil:
    """The public entry point: `_dispatch` for float64 data, int64 indices (pgs/_core.pxd;
    row i's R binary targets at y[R i], a K-output loss's class at y[i])."""
    cdef Py_ssize_t y_stride = (1 if loss_id == L.LOSS_MULTINOMIAL
                                or loss_id == L.LOSS_CRAMMER_SINGER else st.n_out)
    return _dispatch(loss_id, data, indices, indptr, y, y_stride, n_rows, n_cols, prm, st,
                     t_end, smp)


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


#: Each output's own scalars in a state (`SolverCore._scalars`), and their values at the
#: start (a state that lacks one: lam alone, whose scalars set_lam rebuilds, or an older one).
OUTPUT_SCALARS = dict(Q=0.0, Q_comp=0.0, Q_abs=0.0, C=0.0, c=0.0, S=1.0, n_updates=0, b=0.0,
                      b_sum=0.0, b_pick=0.0, U=0.0, U_Q=0.0)


cdef class SolverCore:
    """The compiled state of one PGS run of R >= 1 outputs over the same rows (a binary
    problem or a regression: R = 1; a K-output loss's classes; R binary problems): the
    dual vectors' buffers and scalars, t, the PRNG and the sampler, bound to the C structs
    the loop runs on (pgs/_core.pxd). `pgs.engine.solver.Solver` adds the Python-level life
    cycle (runs, iterates, states) and documents the arguments.

    Each vector of the R outputs is one buffer (lam with u interleaved for p < 2 but 1.5,
    where u_j and lam_j share a cache line; p = 1.5 keeps no u), in the layout `block`
    chooses: feature-major (each feature's R coordinates adjacent, docs/multiclass.md) or
    output-major. `lam`, `u`, `wsum`, `clast` and `paid` are views of shape (n_cols,) for
    R = 1, else (n_cols, R); `w_pick` (n_cols,), or (R, n_cols).
    """
    cdef PGSParams prm
    cdef PGSState st
    cdef PGSSampler smp
    cdef PGSOutput* outs
    cdef readonly int loss_id
    cdef readonly int sampling
    cdef readonly Py_ssize_t n_cols, n_out
    cdef readonly bint block
    cdef readonly object lam, u, wsum, clast, rows, coefs, paid
    cdef public object w_pick, perm
    cdef object _bufs         # the buffers of (lam and u, wsum, clast, paid); None: not kept
    cdef object _weights, _alias_prob, _alias_idx, _row_scale
    cdef Py_ssize_t _n_rows

    def __cinit__(self, Py_ssize_t n_features, int loss_id, double p, double sigma,
                  double B, double icpt, double eps, Py_ssize_t k, long long t_pick,
                  bint average, uint64_t[::1] rng_state, int sampling=0,
                  bint track_loss=False, double t_offset=0.0, int schedule=SCHED_PGS,
                  double eta0=0.0, double icpt_rate=0.0, double l1=0.0, Py_ssize_t n_out=1,
                  bint block=False):
        if loss_id < 0 or loss_id >= L.N_LOSSES:
            raise ValueError(f"loss_id={loss_id} is not a loss id")
        if sampling < 0 or sampling > 2:
            raise ValueError(f"sampling={sampling} is not a sampling mode")
        if rng_state.shape[0] != 4:
            raise ValueError("rng_state must hold 4 uint64 words")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not t_offset >= 0.0 or t_offset == INFINITY:
            raise ValueError(f"t_offset must be a finite number >= 0, got {t_offset}")
        if not l1 >= 0.0 or l1 == INFINITY:
            raise ValueError(f"l1 must be a finite number >= 0, got {l1}")
        if n_out < 1:
            raise ValueError(f"n_out must be >= 1, got {n_out}")
        self.outs = <PGSOutput*>malloc(n_out * sizeof(PGSOutput))
        if self.outs == NULL:
            raise MemoryError()
        self.loss_id = loss_id
        self.sampling = sampling
        self.n_cols = n_features + 1
        self.n_out = n_out
        self.block = block and n_out > 1
        pgs_init(&self.prm, p, sigma, B, icpt, eps, k, t_pick, average, self.n_cols)
        self.prm.track_loss = track_loss
        self.prm.t_offset = t_offset
        self.prm.schedule = schedule
        self.prm.eta0 = eta0
        self.prm.icpt_rate = icpt_rate
        self.prm.l1 = l1
        pgs_state_init(&self.st, &self.prm, n_out, self.outs, NULL, NULL, NULL, NULL,
                       &rng_state[0], self.n_cols)             # (the buffers: _bind's)
        pgs_sampler_init(&self.smp, SAMPLE_IID)
        cdef Py_ssize_t size = self.n_cols * n_out
        # (p = 1.5 computes u_j = t |t| from lam where it reads it: one array, as p = 2;
        # only an average kept by spans has clast, pgs/_dual.pxd; p = 2 reads lam truncated
        # by U alone, docs/sparse.md)
        self._bufs = (np.zeros((2 if self.prm.p_kind == P_GENERAL else 1) * size),
                      np.zeros(size) if average else None,
                      np.zeros(size) if self.prm.average_spans else None,
                      np.zeros(size) if l1 > 0.0 and self.prm.p_kind != P_TWO else None)
        self.rows = np.zeros(k, dtype=np.int64)
        self.coefs = np.zeros(k * n_out)
        self.w_pick = self._new_pick() if t_pick > 0 else None
        self.perm = None
        self._n_rows = -1
        self._views()
        self._bind()

    def __dealloc__(self):
        free(self.outs)

    def _new_pick(self):
        """A zeroed w_pick: (n_cols,), or (R, n_cols)."""
        pick = np.zeros((self.n_out, self.n_cols))
        return pick[0] if self.n_out == 1 else pick

    def _view(self, buf, Py_ssize_t s=1, Py_ssize_t e=0):
        """Entry e of every s of `buf` as the outputs' vectors in the layout: (n_cols,) for
        one output, else (n_cols, R)."""
        R, n = self.n_out, self.n_cols
        v = (buf.reshape(n, R, s) if self.block else buf.reshape(R, n, s).transpose(1, 0, 2))
        return v[:, 0, e] if R == 1 else v[:, :, e]

    def _views(self):
        """The outputs' vectors as views of the buffers (`lam`, `u`, `wsum`, ...)."""
        buf = self._bufs[0]
        if self.prm.p_kind == P_GENERAL:            # (lam and u interleaved)
            self.u, self.lam = self._view(buf, 2, 0), self._view(buf, 2, 1)
        else:
            self.lam = self._view(buf)
            self.u = self.lam if self.prm.p_kind == P_TWO else None
        self.wsum, self.clast, self.paid = (None if b is None else self._view(b)
                                            for b in self._bufs[1:])

    def _bind(self):
        """Point the C state at the numpy buffers this object owns (again)."""
        cdef double[::1] v = self._bufs[0]
        cdef int64_t[::1] iv
        cdef Py_ssize_t R = self.n_out, s = 2 if self.prm.p_kind == P_GENERAL else 1
        self.st.u = &v[0]
        self.st.lam = &v[s - 1]
        if self.prm.p_kind != P_GENERAL:
            self.st.u = self.st.lam if self.prm.p_kind == P_TWO else NULL
        if self.block:
            self.st.stride, self.st.out_step, self.st.wstride, self.st.wout_step = R * s, s, R, 1
        else:
            self.st.stride, self.st.out_step = s, self.n_cols * s
            self.st.wstride, self.st.wout_step = 1, self.n_cols
        iv = self.rows
        self.st.rows = &iv[0]
        v = self.coefs
        self.st.coefs = &v[0]
        self.st.wsum = self.st.clast = self.st.paid = self.st.w_pick = NULL
        if self._bufs[1] is not None:
            v = self._bufs[1]
            self.st.wsum = &v[0]
        if self._bufs[2] is not None:
            v = self._bufs[2]
            self.st.clast = &v[0]
        if self._bufs[3] is not None:
            v = self._bufs[3]
            self.st.paid = &v[0]
        if self.w_pick is not None:
            if self.w_pick.shape != self._new_pick().shape:
                raise ValueError(f"w_pick has shape {self.w_pick.shape}, not "
                                 f"{self._new_pick().shape}")
            v = self.w_pick.reshape(-1)
            self.st.w_pick = &v[0]

    def _each(self, values):
        """One value an output: the value for R = 1, else an array of R."""
        return values[0] if self.n_out == 1 else np.array(values)

    @property
    def t(self):
        """Iterations done."""
        return self.st.t

    @property
    def l1(self):
        """The l1 term's weight (0: none)."""
        return self.prm.l1

    @property
    def k(self):
        """Mini-batch size."""
        return self.prm.k

    @property
    def Q(self):
        """The maintained sum_j (|lam_j| / S)^q (S = `lam_scale`, 1 for p = 2), each output's."""
        return self._each([self.outs[c].Q + self.outs[c].Q_comp for c in range(self.n_out)])

    @property
    def lam_scale(self):
        """S: u and Q are kept for lam / S (p < 2; always 1 for p = 2), each output's."""
        return self._each([self.outs[c].S if self.prm.p_kind != P_TWO and self.outs[c].S > 0.0
                           else 1.0 for c in range(self.n_out)])

    @property
    def scale(self):
        """c_t, with w_t = c_t * u, each output's."""
        return self._each([self.outs[c].c for c in range(self.n_out)])

    @property
    def loss_sum(self):
        """Sum of the sampled (weighted) losses at the pre-update iterates (every output's)."""
        return self.st.loss_sum

    @property
    def consumed(self):
        """Rows consumed so far."""
        return self.st.consumed

    @property
    def norm_w(self):
        """||w_t||_p from Q in O(1); R outputs: (sum_r ||w_r||_p^2)^(1/2)."""
        cdef double Qv, total = 0.0, norm
        cdef Py_ssize_t c
        for c in range(self.n_out):
            Qv = self.outs[c].Q + self.outs[c].Q_comp
            # ||c u||_p = c (sum_j |u_j|^p)^(1/p) = c Q^(1/p), as (q - 1) p = q
            norm = self.outs[c].c * pow(Qv, 1.0 / self.prm.p) if Qv > 0.0 else 0.0
            if self.n_out == 1:
                return norm
            total += norm * norm
        return sqrt(total)

    def exact_Q(self):
        """sum_j (|lam_j| / S)^q recomputed from scratch, each output's (a test hook for the
        drift)."""
        cdef DualVector dv
        got = []
        for c in range(self.n_out):
            pgs_dual(&dv, &self.prm, &self.st, self.n_cols, c)
            got.append(dual_exact_Q(&dv))
        return self._each(got)

    def set_B(self, B):
        """The radius of the domain, ||w||_p <= B (B <= 0: unbounded): one for every output,
        or one each (one-vs-rest problems: the kernel projects each output on its own)."""
        for c, b in enumerate(np.broadcast_to(np.asarray(B, dtype=np.float64), (self.n_out,))):
            self.outs[c].B = b

    def set_t_pick(self, long long t_pick):
        """Choose (again) which future iteration's iterate to keep."""
        if t_pick > 0 and self.w_pick is None:
            self.w_pick = self._new_pick()
            self._bind()
        self.prm.t_pick = t_pick

    def _prepare_sampler(self, Py_ssize_t n_rows, object sample_weight):
        """Build the sampler for this data set (alias table, permutation) once."""
        cdef double[::1] dv
        cdef int64_t[::1] iv
        if n_rows == self._n_rows and sample_weight is self._weights:
            return
        self._n_rows = n_rows
        self._weights = sample_weight
        pgs_sampler_init(&self.smp, self.sampling)
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

    def _iterate_to(self, double[:, :] out, bint average):
        """The last iterate w = c u, or with `average` the mean of the iterates (0 before
        any is summed: t = 0, or a parallel worker given no step), of every output into
        the columns of out, shape (n_cols, R), any strides, in one pass over the vectors
        (output by output, each pass over a block would read every line of it). Element by
        element, so out may be the outputs' wsum or clast themselves."""
        cdef Py_ssize_t R = self.n_out, c, j
        cdef DualVector* dvs
        cdef double tt = self.st.rho_sum
        if out.shape[0] != self.n_cols or out.shape[1] != R:
            raise ValueError(f"out must have shape ({self.n_cols}, {R})")
        if average and self.st.wsum == NULL:
            raise ValueError("this solver does not keep the average")
        dvs = <DualVector*>malloc(R * sizeof(DualVector))
        if dvs == NULL:
            raise MemoryError()
        for c in range(R):
            pgs_dual(&dvs[c], &self.prm, &self.st, self.n_cols, c)
        with nogil:
            for j in range(self.n_cols):
                for c in range(R):
                    if not average:
                        out[j, c] = dvs[c].c * dual_u(&dvs[c], j)
                    else:
                        out[j, c] = dual_average_at(&dvs[c], j, tt) if tt > 0.0 else 0.0
        free(dvs)

    cdef double _rebuild(self, DualVector* dv, Py_ssize_t c) noexcept nogil:
        """Output c's dv: u, S and Q rebuilt from its lam, then c at this state's t (O(n)):
        `set_lam`'s and `_write_w_of`'s; the scale's tsig."""
        cdef double tsig = (1.0 / self.st.zs if self.prm.schedule == SCHED_ASGD
                            else (<double>self.st.t + self.prm.t_offset) * self.prm.sigma)
        if dv.kind == P_TWO:
            dual_recompute_Q(dv)
        else:
            dual_rescale(dv)
        dual_set_scale(dv, tsig)
        dual_project(dv, self.outs[c].B, tsig)
        return tsig

    def _write_w_of(self, lam, double[:, :] out):
        """out = the w that each output's scale and projection make of the dual vectors
        `lam` (shape (n_cols, R): `Solver.sparse_lam`'s, the l1 term's truncation applied),
        rebuilt as `set_lam` rebuilds a state, on copies (the state is untouched; 0 at
        tsig 0); out of shape (n_cols, R)."""
        cdef DualVector dv
        cdef double[::1] lv, uv = np.empty(self.n_cols), wv = np.empty(self.n_cols)
        cdef Py_ssize_t c, j
        lam = np.asarray(lam, dtype=np.float64).reshape(self.n_cols, -1)
        if lam.shape[1] != self.n_out or out.shape[0] != self.n_cols or \
                out.shape[1] != self.n_out:
            raise ValueError(f"lam and out must have shape ({self.n_cols}, {self.n_out})")
        for c in range(self.n_out):
            lv = np.array(lam[:, c])
            pgs_dual(&dv, &self.prm, &self.st, self.n_cols, c)
            dv.lam, dv.stride, dv.wstride = &lv[0], 1, 1
            dv.u = dv.lam if dv.kind == P_TWO else NULL if dv.kind == P_Q3 else &uv[0]
            dv.wsum = dv.clast = dv.paid = NULL
            dv.l1, dv.l1_Q, dv.C = 0, False, 0.0
            with nogil:
                if self._rebuild(&dv, c) > 0.0:
                    dual_write_w(&dv, &wv[0])
                else:
                    memset(&wv[0], 0, self.n_cols * sizeof(double))
                for j in range(self.n_cols):
                    out[j, c] = wv[j]

    def set_lam(self, lam, long long t):
        """Set lam (shape (n_cols,), or (n_cols, R); None: as it is) and t, and rebuild u,
        S, Q and c of every output from them (O(n)): the parallel engines' merged state (its
        average's C is 0; at p < 2 nothing owed to the l1 term)."""
        cdef DualVector dv
        cdef Py_ssize_t c
        if lam is not None:
            if np.shape(lam) != self.lam.shape:
                raise ValueError(f"lam has shape {np.shape(lam)}, not {self.lam.shape}")
            self.lam[...] = lam
        self.st.t = t
        for c in range(self.n_out):
            if self.paid is not None:
                (self.paid if self.n_out == 1 else self.paid[:, c])[...] = self.outs[c].U
            pgs_dual(&dv, &self.prm, &self.st, self.n_cols, c)
            with nogil:
                self._rebuild(&dv, c)
            _dual_to_state(&dv, &self.outs[c])

    def _scalars(self):
        """The state's scalars, as a dict: what the outputs share, and each output's own (a
        float for R = 1, else an array of R; see `pgs.engine.solver.Solver.get_state`)."""
        st = &self.st
        outs = [self.outs[c] for c in range(self.n_out)]        # (each as a dict)
        own = {key: self._each([one[key] for one in outs]) for key in OUTPUT_SCALARS}
        return dict(t=st.t, consumed=st.consumed, pos=st.pos, loss_sum=st.loss_sum,
                    rng=self.rng_state, t_pick=self.prm.t_pick, zs=st.zs,
                    rho_sum=st.rho_sum, **own)

    def _set_scalars(self, dict state):
        """Restore what `_scalars` gave (an output's missing scalar: its start's)."""
        cdef int a
        cdef Py_ssize_t c
        cdef dict one
        self.prm.t_pick = state["t_pick"]
        self._n_rows = -1
        self.st.loss_sum = state["loss_sum"]
        self.st.t = state["t"]
        self.st.consumed = state["consumed"]
        self.st.pos = state["pos"]
        self.st.zs = state.get("zs", 1.0)
        self.st.rho_sum = state.get("rho_sum", <double>self.st.t)
        # (.get: a state of lam alone, whose scalars set_lam rebuilds, or an older one; a
        # state before U_Q: Q of lam itself)
        values = {key: np.broadcast_to(state.get(key, start), (self.n_out,))
                  for key, start in OUTPUT_SCALARS.items()}
        for c in range(self.n_out):
            one = self.outs[c]              # (as a dict: its radius B stays)
            one.update({key: v[c] for key, v in values.items()})
            self.outs[c] = one
        for a in range(4):
            self.st.rng[a] = state["rng"][a]

    @property
    def rng_state(self):
        """The PRNG state before the next unconsumed draw, as 4 uint64 words."""
        return np.array([self.st.rng[0], self.st.rng[1], self.st.rng[2], self.st.rng[3]],
                        dtype=np.uint64)


def run_solver(SolverCore s, const double[:, :] y, const floating_t[::1] data,
               const index_t[::1] indices, const index_t[::1] indptr, long long t_end):
    """Run solver `s` to iteration `t_end` over X's CSR buffers, the GIL released: its status.
    `y` has a row for each row of X, read where it lies (any row stride): one column (a
    target, or a K-output loss's class), or R binary problems' R targets side by side."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t n_y = (1 if s.loss_id == L.LOSS_MULTINOMIAL
                           or s.loss_id == L.LOSS_CRAMMER_SINGER else s.n_out)
    cdef const floating_t* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const index_t* ip = &indices[0] if indices.shape[0] > 0 else NULL
    cdef int status = PGS_OK
    if y.shape[0] != n_rows or y.shape[1] != n_y:
        raise ValueError(f"y has shape {(y.shape[0], y.shape[1])}, not ({n_rows}, {n_y}): a "
                         f"row for each row of X (R binary problems: their R targets)")
    if (n_y > 1 and y.strides[1] != 8) or y.strides[0] % 8:
        raise ValueError("y's targets of a row must be adjacent doubles")
    if s.st.t < t_end:
        with nogil:
            status = _dispatch(s.loss_id, dp, ip, &indptr[0], &y[0, 0], y.strides[0] // 8,
                               n_rows, s.n_cols, &s.prm, &s.st, t_end, &s.smp)
    return status


# ------------------------------------------------------------- checks and helpers

def powers(const double[::1] a, double q_minus_1):
    """a^q_minus_1 elementwise (a >= 0, contiguous float64), as the kernel takes general
    p's powers: four at a time where ``SIMD_POWERS`` is true (tests and benches)."""
    out = np.empty(a.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    if a.shape[0]:
        with nogil:
            pgs_pow_n(&a[0], &o[0], a.shape[0], q_minus_1)
    return out


cdef inline uint64_t _mix(uint64_t z) noexcept nogil:
    """SplitMix64's finaliser: a row index to 64 well-mixed bits."""
    z += 0x9E3779B97F4A7C15ULL
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


def row_norms(const floating_t[::1] data, const index_t[::1] indptr, double q,
              Py_ssize_t stride=1, Py_ssize_t first=0):
    """``||x_i||_2^2`` and ``||x_i||_q^2`` of each CSR row, or of about one row in `stride`,
    the GIL released.

    Parameters
    ----------
    data, indptr : ndarray
        The CSR values (float32/64) and index pointer (int32/64).
    q : float
        The dual exponent (> 1); |x|^q by the kernel's vector power (a^3 for q = 3).
    stride, first : int
        With ``stride > 1`` only the rows whose index in the whole X (`first` is the first
        row's) hashes to a multiple of `stride` are read: the same rows however X is
        split, and no period of the rows' order can bias them.

    Returns
    -------
    sq, sq_q : ndarray of float64
        One value a row read, in row order (for q = 2 the same array), from the row's
        entries alone: the same bits however X is split into rows.
    """
    cdef Py_ssize_t i, j, lo, end, n, k = 0, m = indptr.shape[0] - 1
    cdef double s, t
    cdef double a[POW_CHUNK]
    cdef const floating_t* x = &data[0] if data.shape[0] > 0 else NULL
    if stride < 1 or first < 0:
        raise ValueError(f"stride must be >= 1 and first >= 0, got {stride} and {first}")
    sq_arr = np.empty(m)
    sq_q_arr = sq_arr if q == 2.0 else np.empty(m)
    cdef double[::1] sq = sq_arr, sq_q = sq_q_arr
    with nogil:
        for i in range(m):
            if stride > 1 and _mix(<uint64_t>(first + i)) % stride != 0:
                continue
            s = t = 0.0
            lo, end = indptr[i], indptr[i + 1]
            while lo < end:             # (in chunks of a row, for the vector power)
                n = min(<Py_ssize_t>POW_CHUNK, end - lo)
                for j in range(n):
                    a[j] = fabs(x[lo + j])
                    s += a[j] * a[j]
                    if q == 3.0:
                        t += a[j] * a[j] * a[j]
                if q != 2.0 and q != 3.0:
                    pgs_pow_n(a, a, n, q)
                    for j in range(n):
                        t += a[j]
                lo += n
            sq[k] = s
            if q != 2.0:
                sq_q[k] = pow(t, 2.0 / q)
            k += 1
    sq_arr = sq_arr[:k]
    return sq_arr, (sq_arr if q == 2.0 else sq_q_arr[:k])


def dense_row_counts(const floating_t[:, ::1] X):
    """The non-zeros of each row of a C-ordered dense `X` (NaN counts: the kernel's checks
    see it), as the CSR index pointer: int64 of length rows + 1. With `dense_fill`, X as
    CSR in two passes, the GIL released: scipy's conversion (through COO and a 2-D
    nonzero) takes 2.6x as long on MNIST (bench/results/dense.md)."""
    cdef Py_ssize_t i, j, m = X.shape[0], n = X.shape[1]
    indptr_arr = np.zeros(m + 1, dtype=np.int64)
    cdef int64_t[::1] indptr = indptr_arr
    with nogil:
        for i in range(m):
            indptr[i + 1] = indptr[i]
            for j in range(n):
                indptr[i + 1] += X[i, j] != 0
    return indptr_arr


def dense_fill(const floating_t[:, ::1] X, floating_t[::1] data, index_t[::1] indices):
    """Fill the CSR `data` and `indices` of `X` (sized by `dense_row_counts`), row by row
    in column order, the GIL released."""
    cdef Py_ssize_t i, j, k = 0, m = X.shape[0], n = X.shape[1]
    with nogil:
        for i in range(m):
            for j in range(n):
                if X[i, j] != 0:
                    data[k] = X[i, j]
                    indices[k] = <index_t>j
                    k += 1


def mean_loss(const double[::1] z, const double[:] y, int loss_id, double eps,
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


def py_multi_loss(int loss_id, const double[::1] z, Py_ssize_t y):
    """The compiled K-output loss of margins `z` (K >= 2) for class index `y`: (value, its
    gradient in z as a new array) (a test hook)."""
    g = np.array(z, dtype=np.float64)
    cdef double[::1] gv = g
    if gv.shape[0] < 2 or not 0 <= y < gv.shape[0]:
        raise ValueError(f"need K >= 2 margins and 0 <= y < K, got K={gv.shape[0]}, y={y}")
    if loss_id == L.LOSS_MULTINOMIAL:
        return L.multi_dloss(<Multinomial*>NULL, &gv[0], gv.shape[0], y), g
    if loss_id == L.LOSS_CRAMMER_SINGER:
        return L.multi_dloss(<CrammerSinger*>NULL, &gv[0], gv.shape[0], y), g
    raise ValueError(f"loss_id={loss_id} is not a K-output loss")


def py_loss(int loss_id, double z, double y, double eps, bint deriv=False):
    """The compiled loss value, or with `deriv` its derivative (a test hook)."""
    cdef double v
    cdef double d = L.loss_at(loss_id, z, y, eps, &v)
    return d if deriv else v
