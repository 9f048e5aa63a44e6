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
from libc.string cimport memcpy, memset

import numpy as np

cimport pgs._losses as L
from pgs._losses cimport loss_tag, Binary, Multinomial, CrammerSinger
from pgs._dual cimport (
    DualVector, floating_t, index_t, P_TWO, P_Q3, P_GENERAL, SPANS_Q, U_MAX, PGS_PREFETCH,
    POW_CHUNK,
    pgs_powers_init, pgs_powers_simd, pgs_pow_n, dual_kind, dual_dot, dual_add, dual_maintain,
    dual_set_scale, dual_project, dual_add_to_average, dual_write_w, dual_average_to,
    dual_average_at, dual_u,
    dual_truncate, dual_exact_Q, dual_renormalise, dual_rescale, dual_recompute_Q,
    dual_one_block, dual_dot_block, dual_add_block_two, dual_maintain_block,
    dual_add_to_average_block,
)
from pgs._random cimport xoshiro_bounded, xoshiro_next, xoshiro_shuffle


pgs_powers_init()

# True where general p's powers are taken four at a time with AVX2 (pgs/_powers.h).
SIMD_POWERS = bool(pgs_powers_simd())


# ------------------------------------------------------------------ the dual vector

cdef void pgs_dual(DualVector* dv, const PGSParams* prm, const PGSState* st,
                   Py_ssize_t n_cols) noexcept nogil:
    """The dual vector of a run: the state's buffers and scalars (O(1))."""
    dv.lam = st.lam
    dv.u = NULL if prm.p_kind == P_Q3 else st.u      # (p = 1.5: computed from lam)
    dv.stride = st.stride if st.stride > 0 else 1
    dv.wstride = st.wstride if st.wstride > 0 else 1
    dv.wsum = st.wsum if prm.average else NULL
    dv.clast = st.clast if prm.average and prm.average_spans else NULL
    dv.n = n_cols
    dv.kind = prm.p_kind
    dv.p = prm.p
    dv.q = prm.q
    dv.ratio_hi = prm.ratio_hi
    dv.S = st.S if prm.p_kind != P_TWO and st.S > 0.0 else 1.0
    dv.inv_S = 1.0 / dv.S
    dv.Q = st.Q
    dv.Q_comp = st.Q_comp
    dv.Q_abs = st.Q_abs
    dv.n_updates = st.n_updates
    dv.recompute_every = prm.recompute_every
    dv.c = st.c
    dv.C = st.C
    dv.l1 = prm.l1 > 0.0
    dv.paid = st.paid if dv.l1 and prm.p_kind != P_TWO else NULL
    dv.U = st.U
    dv.l1_Q = dv.l1 and prm.p_kind == P_TWO and prm.B > 0.0
    dv.U_Q = st.U_Q


cdef void _dual_to_state(const DualVector* dv, PGSState* st) noexcept nogil:
    """The run's scalars back into the state (its buffers are the state's own)."""
    st.Q = dv.Q
    st.Q_comp = dv.Q_comp
    st.Q_abs = dv.Q_abs
    st.S = dv.S
    st.n_updates = dv.n_updates
    st.c = dv.c
    st.C = dv.C
    st.U = dv.U
    st.U_Q = dv.U_Q


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
                        PGSState** sts) noexcept nogil:
    """Row i's -loss'(z, y_i) times its weight / k into sts[c].coefs[r] for its K margins
    z (the K-output losses overwrite z; row i's class at y[y_stride i]; K binary problems:
    output c's target at y[y_stride i + c]);
    the sampled loss added up if tracked (the K-output losses' in sts[0])."""
    cdef Py_ssize_t c
    cdef double v
    if smp.row_scale != NULL:
        g_scale *= smp.row_scale[i]
    if loss_tag is Multinomial or loss_tag is CrammerSinger:
        v = L.multi_dloss(tag, z, K, <Py_ssize_t>y[y_stride * i])
        for c in range(K):
            sts[c].coefs[r] = -z[c] * g_scale
        if prm.track_loss:
            sts[0].loss_sum += v * g_scale * prm.k
    else:
        for c in range(K):
            sts[c].coefs[r] = -L.loss_at(loss_id, z[c], y[y_stride * i + c], prm.eps,
                                         &v if prm.track_loss else NULL) * g_scale
            if prm.track_loss:
                sts[c].loss_sum += v * g_scale * prm.k


cdef inline void _scale(double* v, Py_ssize_t n, Py_ssize_t stride, double f) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(n):
        v[stride * j] *= f


cdef int _pgs_loop(loss_tag* tag, int loss_id, const floating_t* data,
                   const index_t* indices, const index_t* indptr, const double* y,
                   Py_ssize_t y_stride, Py_ssize_t n_rows, Py_ssize_t n_cols,
                   const PGSParams* prm, PGSState** sts, Py_ssize_t n_out, DualVector* dvs,
                   double* zk, long long t_end, const PGSSampler* smp) noexcept nogil:
    """Run PGS iterations st.t + 1 .. t_end (Figure 1 of the paper, docs/design.md section 2).

    All k margins of a batch are taken at w_{t-1}; then the k rows' updates are
    applied one after the other (rows may repeat and share columns). A K-output loss
    (docs/design.md 6d) takes every row's K margins, then its K coefficients, then each
    class's updates: class c is sts[c] with its dual vector dvs[c] (n_out = K, zk
    scratch of 5 K), the K vectors one block (each feature's K coordinates adjacent);
    sts[0] holds what the classes share (t, the rows, the PRNG, the schedule), copied
    to the others at the end. K binary problems run alike (each its own coefficient,
    target and radius B, prm[c] output c's parameters, the same but for B; row i's K
    targets side by side from y[y_stride i]; a row's class, or its one target, at
    y[y_stride i]). One output (dvs and zk unused) keeps its dual vector a local and takes
    its margins by `dual_dot`, whose strides are constants.
    """
    cdef DualVector dv1
    cdef Draws dr
    cdef double z1[1]
    cdef PGSState* st = sts[0]
    cdef DualVector* dv = &dv1
    cdef double* z = z1
    cdef Py_ssize_t K = 1
    cdef Py_ssize_t k = prm.k
    cdef Py_ssize_t r, c
    cdef int64_t i, nxt
    cdef double tsig, eta = 0.0, gw = 1.0, gsum, rho, root
    cdef double g_scale = smp.grad_scale / <double>k
    cdef bint updated, prepaid, one_block = False, wide = False
    cdef Py_ssize_t n_nz
    cdef int status = PGS_OK
    if n_out > 1:
        K, dv, z = n_out, dvs, zk
    if smp.mode == SAMPLE_PERMUTATION and smp.perm == NULL:
        return PGS_BAD_SAMPLER
    for c in range(K):
        pgs_dual(&dv[c], &prm[c], sts[c], n_cols)     # (one-vs-rest: each its own B)
    one_block = K > 1 and dual_one_block(dv, K)
    wide = one_block and dv[0].kind == P_TWO     # (the updates too)
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
                z[c] = dv[c].c * z[c] + sts[c].b
                if not isfinite(z[c]):
                    status = PGS_NONFINITE        # nothing of the batch is applied
            if status != PGS_OK:
                break
            _coefs(tag, loss_id, z, K, r, i, y, y_stride, g_scale, smp, prm, sts)
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
                    z[K + c] = sts[c].coefs[r] * gw
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
                    if sts[c].coefs[r] != 0.0:
                        i = st.rows[r]
                        # (prepaid: the batch paid this step's debts, its rows add only)
                        dual_add(&dv[c], data, indices, indptr[i], indptr[i + 1],
                                 sts[c].coefs[r] * gw, prm.icpt, not prepaid)
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
            dual_project(&dv[c], prm[c].B, tsig)     # (one-vs-rest: each its own B)
            if prm.icpt_rate > 0.0:
                gsum = 0.0
                for r in range(k):
                    gsum += sts[c].coefs[r]
                sts[c].b += prm.icpt_rate * eta * gsum          # (plain SGD)
            if not (isfinite(dv[c].c) and isfinite(sts[c].b)):
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
                sts[c].b_sum += rho * sts[c].b
            st.rho_sum += rho
        if st.t == prm.t_pick:
            for c in range(K):
                dual_write_w(&dv[c], sts[c].w_pick)
                sts[c].b_pick = sts[c].b

    _draws_end(&dr, smp, st)
    for c in range(K):
        _dual_to_state(&dv[c], sts[c])
        if c > 0:                           # (what the outputs share)
            sts[c].t, sts[c].consumed, sts[c].pos = st.t, st.consumed, st.pos
            sts[c].zs, sts[c].rho_sum = st.zs, st.rho_sum
            if loss_tag is Multinomial or loss_tag is CrammerSinger:
                sts[c].loss_sum = st.loss_sum
            memcpy(sts[c].rng, st.rng, sizeof(st.rng))
    return status


cdef int _dispatch(int loss_id, const floating_t* data, const index_t* indices,
                   const index_t* indptr, const double* y, Py_ssize_t y_stride,
                   Py_ssize_t n_rows, Py_ssize_t n_cols, const PGSParams* prm, PGSState** sts,
                   Py_ssize_t n_out, DualVector* dvs, double* zk, long long t_end,
                   const PGSSampler* smp) noexcept nogil:
    """Select the loop compiled for `loss_id` (once per call, not per sample); -1 for
    an id that names no loss, K > 1 outputs without their buffers, a K-output loss with
    one, one output of a block, or l1 > 0 at p < 2 without the states' paid."""
    cdef Py_ssize_t c
    if n_out < 1 or (n_out > 1 and (dvs == NULL or zk == NULL)):
        return -1
    if loss_id == L.LOSS_MULTINOMIAL or loss_id == L.LOSS_CRAMMER_SINGER:
        if n_out < 2:
            return -1
    elif n_out == 1 and sts[0].wstride > 1:
        return -1
    for c in range(n_out):
        if prm.l1 > 0.0 and prm.p_kind != P_TWO and sts[c].paid == NULL:
            return -1
    return _by_loss(loss_id, data, indices, indptr, y, y_stride, n_rows, n_cols, prm, sts,
                    n_out, dvs, zk, t_end, smp)


cdef int _by_loss(int loss_id, const floating_t* data, const index_t* indices,
                  const index_t* indptr, const double* y, Py_ssize_t y_stride,
                  Py_ssize_t n_rows, Py_ssize_t n_cols, const PGSParams* prm, PGSState** sts,
                  Py_ssize_t n_out, DualVector* dvs, double* zk, long long t_end,
                  const PGSSampler* smp) noexcept nogil:
    """`_dispatch`'s loop for `loss_id` (-1: none): one a loss family (`pgs/_losses.pxd`)."""
    if loss_id == L.LOSS_MULTINOMIAL:
        return _pgs_loop(<Multinomial*>NULL, loss_id, data, indices, indptr,
                         y, y_stride, n_rows, n_cols, prm, sts, n_out, dvs, zk, t_end, smp)
    if loss_id == L.LOSS_CRAMMER_SINGER:
        return _pgs_loop(<CrammerSinger*>NULL, loss_id, data, indices, indptr,
                         y, y_stride, n_rows, n_cols, prm, sts, n_out, dvs, zk, t_end, smp)
    if 0 <= loss_id < L.LOSS_MULTINOMIAL:
        return _pgs_loop(<Binary*>NULL, loss_id, data, indices, indptr,
                         y, y_stride, n_rows, n_cols, prm, sts, n_out, dvs, zk, t_end, smp)
    return -1


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


cdef void pgs_state_init(PGSState* st, double* lam, double* u, int64_t* rows,
                         double* coefs, const uint64_t* rng) noexcept nogil:
    """Zero `st` and bind the caller's buffers: lam and u of length n_cols (zeroed by the
    caller; see pgs/_core.pxd for u per p), rows and coefs of length k, and the PRNG's
    four words (all zero, xoshiro's fixed point, is replaced). The average and the
    picked iterate are off (NULL)."""
    cdef int a
    memset(st, 0, sizeof(PGSState))
    st.lam = lam
    st.u = u
    st.stride = 1
    st.rows = rows
    st.coefs = coefs
    for a in range(4):
        st.rng[a] = rng[a]
    if (rng[0] | rng[1] | rng[2] | rng[3]) == 0:
        st.rng[0] = 0x9E3779B97F4A7C15ULL
    st.zs = 1.0


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
    """The public entry point: `_dispatch` for float64 data, int64 indices (pgs/_core.pxd)."""
    return _dispatch(loss_id, data, indices, indptr, y, 1, n_rows, n_cols, prm, &st, 1,
                     NULL, NULL, t_end, smp)


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


cdef class SolverCore:
    """The compiled state of one PGS run: the dual vector's buffers and scalars, t, the
    PRNG and the sampler, bound to the C structs the loop runs on. `pgs.engine.solver.Solver`
    adds the Python-level life cycle (runs, iterates, states) and documents the
    arguments. For p < 2 but 1.5, `lam` and `u` are strided views of one buffer (u_j
    and lam_j share a cache line); p = 1.5 keeps no u (None: computed from lam).

    Output `out` of a block of `n_out` (R) outputs run by one loop (a K-output loss's
    classes, or R binary problems over the same rows) has its vectors in blocks that keep
    each feature's R coordinates adjacent, allocated by output 0 and shared by the others
    (`block_of`, output 0): its `lam`, `u`, `wsum`, `clast` and `paid` are views at stride
    R (lam and u 2 R: interleaved) of them.
    """
    cdef PGSParams prm
    cdef PGSState st
    cdef PGSSampler smp
    cdef readonly int loss_id
    cdef readonly int sampling
    cdef readonly Py_ssize_t n_cols, n_out, out
    cdef readonly object lam, u, wsum, clast, rows, coefs, paid
    cdef public object w_pick, perm
    cdef object _blocks       # the buffers of (lam and u, wsum, clast, paid); None: not kept
    cdef object _weights, _alias_prob, _alias_idx, _row_scale
    cdef Py_ssize_t _n_rows

    def __cinit__(self, Py_ssize_t n_features, int loss_id, double p, double sigma,
                  double B, double icpt, double eps, Py_ssize_t k, long long t_pick,
                  bint average, uint64_t[::1] rng_state, int sampling=0,
                  bint track_loss=False, double t_offset=0.0, int schedule=SCHED_PGS,
                  double eta0=0.0, double icpt_rate=0.0, double l1=0.0, Py_ssize_t n_out=1,
                  Py_ssize_t out=0, SolverCore block_of=None):
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
        if n_out < 1 or not 0 <= out < n_out or (out > 0) != (block_of is not None):
            raise ValueError(f"output {out} of {n_out}: output 0 allocates the block, "
                             f"the others need it as block_of")
        self.loss_id = loss_id
        self.sampling = sampling
        self.n_cols = n_features + 1
        pgs_init(&self.prm, p, sigma, B, icpt, eps, k, t_pick, average, self.n_cols)
        self.prm.track_loss = track_loss
        self.prm.t_offset = t_offset
        self.prm.schedule = schedule
        self.prm.eta0 = eta0
        self.prm.icpt_rate = icpt_rate
        self.prm.l1 = l1
        pgs_state_init(&self.st, NULL, NULL, NULL, NULL, &rng_state[0])   # (_bind's)
        pgs_sampler_init(&self.smp, SAMPLE_IID)
        self.n_out, self.out = n_out, out
        cdef Py_ssize_t R = n_out, size = self.n_cols * n_out
        # (p = 1.5 computes u_j = t |t| from lam where it reads it: one array, as p = 2;
        # only an average kept by spans has clast, pgs/_dual.pxd; p = 2 reads lam truncated
        # by U alone, docs/sparse.md)
        sizes = ((2 if self.prm.p_kind == P_GENERAL else 1) * size, size if average else None,
                 size if self.prm.average_spans else None,
                 size if l1 > 0.0 and self.prm.p_kind != P_TWO else None)
        self._blocks = (tuple(None if n is None else np.zeros(n) for n in sizes)
                        if block_of is None else block_of._blocks)
        if tuple(None if b is None else b.shape[0] for b in self._blocks) != sizes:
            raise ValueError("block_of was built with other arguments")
        buf = self._blocks[0]
        if self.prm.p_kind == P_GENERAL:
            self.u, self.lam = buf[2 * out::2 * R], buf[2 * out + 1::2 * R]
        else:
            self.lam = buf[out::R]
            self.u = self.lam if self.prm.p_kind == P_TWO else None
        self.wsum, self.clast, self.paid = (None if b is None else b[out::R]
                                            for b in self._blocks[1:])
        self.rows = np.zeros(k, dtype=np.int64)
        self.coefs = np.zeros(k)
        self.w_pick = np.zeros(self.n_cols) if t_pick > 0 else None
        self.perm = None
        self._n_rows = -1
        self._bind()

    def _bind(self):
        """Point the C state at the numpy buffers this object owns (again)."""
        cdef double[::1] v = self._blocks[0]
        cdef int64_t[::1] iv
        cdef Py_ssize_t R = self.n_out, o = self.out
        if self.prm.p_kind == P_GENERAL:            # (lam and u interleaved)
            self.st.u, self.st.lam, self.st.stride = &v[2 * o], &v[2 * o + 1], 2 * R
        else:
            self.st.lam, self.st.stride = &v[o], R
            self.st.u = self.st.lam if self.prm.p_kind == P_TWO else NULL
        self.st.wstride = R
        iv = self.rows
        self.st.rows = &iv[0]
        v = self.coefs
        self.st.coefs = &v[0]
        self.st.wsum = NULL
        self.st.clast = NULL
        self.st.w_pick = NULL
        self.st.paid = NULL
        if self._blocks[1] is not None:
            v = self._blocks[1]
            self.st.wsum = &v[o]
        if self._blocks[2] is not None:
            v = self._blocks[2]
            self.st.clast = &v[o]
        if self._blocks[3] is not None:
            v = self._blocks[3]
            self.st.paid = &v[o]
        if self.w_pick is not None:
            v = self.w_pick
            self.st.w_pick = &v[0]

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
        """The maintained sum_j (|lam_j| / S)^q (S = `lam_scale`, 1 for p = 2)."""
        return self.st.Q + self.st.Q_comp

    @property
    def lam_scale(self):
        """S: u and Q are kept for lam / S (p < 2; always 1 for p = 2)."""
        return self.st.S if self.prm.p_kind != P_TWO and self.st.S > 0.0 else 1.0

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
        # ||c u||_p = c (sum_j |u_j|^p)^(1/p) = c Q^(1/p), as (q - 1) p = q
        return self.st.c * pow(Qv, 1.0 / self.prm.p)

    def exact_Q(self):
        """sum_j (|lam_j| / S)^q recomputed from scratch (a test hook for the drift)."""
        cdef DualVector dv
        pgs_dual(&dv, &self.prm, &self.st, self.n_cols)
        return dual_exact_Q(&dv)

    def set_B(self, double B):
        """The radius of the domain, ||w||_p <= B (B <= 0: unbounded): one output of a block
        of one-vs-rest problems takes its problem's own (the kernel projects each output on
        its own B)."""
        self.prm.B = B

    def set_t_pick(self, long long t_pick):
        """Choose (again) which future iteration's iterate to keep."""
        if t_pick > 0 and self.w_pick is None:
            self.w_pick = np.zeros(self.n_cols)
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

    def _average_to(self, double[::1] out):
        """The average into out (which may be wsum or clast: see `dual_average_to`); 0
        before any iterate is summed (t = 0, or a parallel worker given no step)."""
        cdef DualVector dv
        if not self.st.rho_sum > 0.0:
            out[:] = 0.0
            return
        pgs_dual(&dv, &self.prm, &self.st, self.n_cols)
        with nogil:
            dual_average_to(&dv, &out[0], self.st.rho_sum)

    def _write_w(self, double[::1] out):
        """out = w_t = c u (any p)."""
        cdef DualVector dv
        pgs_dual(&dv, &self.prm, &self.st, self.n_cols)
        with nogil:
            dual_write_w(&dv, &out[0])

    cdef double _rebuild(self, DualVector* dv) noexcept nogil:
        """dv's u, S and Q rebuilt from its lam, then c at this state's t (O(n)): `set_lam`'s
        and `_write_w_of`'s; the scale's tsig."""
        cdef double tsig = (1.0 / self.st.zs if self.prm.schedule == SCHED_ASGD
                            else (<double>self.st.t + self.prm.t_offset) * self.prm.sigma)
        if dv.kind == P_TWO:
            dual_recompute_Q(dv)
        else:
            dual_rescale(dv)
        dual_set_scale(dv, tsig)
        dual_project(dv, self.prm.B, tsig)
        return tsig

    def _write_w_of(self, lam, double[::1] out):
        """out = the w that this run's scale and projection make of the dual vector `lam`
        (length n_cols: `Solver.sparse_lam`'s, the l1 term's truncation applied), rebuilt
        as `set_lam` rebuilds a state, on copies (the state is untouched; 0 at tsig 0)."""
        cdef DualVector dv
        cdef double[::1] lv = np.array(lam, dtype=np.float64)
        cdef double[::1] uv = np.empty(self.n_cols)
        if lv.shape[0] != self.n_cols or out.shape[0] != self.n_cols:
            raise ValueError("lam and out must have length n_cols")
        pgs_dual(&dv, &self.prm, &self.st, self.n_cols)
        dv.lam, dv.stride, dv.wstride = &lv[0], 1, 1
        dv.u = dv.lam if dv.kind == P_TWO else NULL if dv.kind == P_Q3 else &uv[0]
        dv.wsum = dv.clast = dv.paid = NULL
        dv.l1, dv.l1_Q, dv.C = 0, False, 0.0
        with nogil:
            if self._rebuild(&dv) > 0.0:
                dual_write_w(&dv, &out[0])
            else:
                memset(&out[0], 0, self.n_cols * sizeof(double))

    def set_lam(self, lam, long long t):
        """Set lam (None: as it is, a block's written for all its outputs at once) and t,
        and rebuild u, S, Q and c from them (O(n)): the parallel engines' merged state (its
        average's C is 0; at p < 2 nothing owed to the l1 term)."""
        cdef DualVector dv
        cdef Py_ssize_t j
        cdef const double[::1] v
        if lam is not None and lam.shape[0] != self.n_cols:
            raise ValueError("lam has the wrong length")
        self.st.t = t
        if self.paid is not None:
            self.paid[:] = self.st.U
        pgs_dual(&dv, &self.prm, &self.st, self.n_cols)
        if lam is not None:
            v = lam
            for j in range(self.n_cols):
                dv.lam[dv.stride * j] = v[j]
        with nogil:
            self._rebuild(&dv)
        _dual_to_state(&dv, &self.st)

    def _params(self):
        """Constants of the run (a dict; t_pick: the iteration whose iterate is kept)."""
        return dict(icpt=self.prm.icpt, schedule=self.prm.schedule, eta0=self.prm.eta0,
                    icpt_rate=self.prm.icpt_rate, q=self.prm.q, t_pick=self.prm.t_pick,
                    l1=self.prm.l1, p=self.prm.p, sigma=self.prm.sigma, B=self.prm.B,
                    t_offset=self.prm.t_offset)

    def _scalars(self):
        """The state's scalars, as a dict (see `pgs.engine.solver.Solver.get_state`)."""
        st = &self.st
        return dict(Q=st.Q, Q_comp=st.Q_comp, Q_abs=st.Q_abs, C=st.C, c=st.c, S=st.S,
                    t=st.t, n_updates=st.n_updates, consumed=st.consumed, pos=st.pos,
                    loss_sum=st.loss_sum, rng=self.rng_state, t_pick=self.prm.t_pick,
                    zs=st.zs, b=st.b, b_sum=st.b_sum, b_pick=st.b_pick, rho_sum=st.rho_sum,
                    U=st.U, U_Q=st.U_Q)

    def _set_scalars(self, dict state):
        """Restore what `_scalars` gave."""
        cdef int a
        self.prm.t_pick = state["t_pick"]
        self._n_rows = -1
        # (.get: a state of lam alone, whose scalars set_lam rebuilds, or an older one)
        self.st.Q = state.get("Q", 0.0)
        self.st.Q_comp = state.get("Q_comp", 0.0)
        self.st.Q_abs = state.get("Q_abs", 0.0)
        self.st.C = state["C"]
        self.st.c = state.get("c", 0.0)
        self.st.S = state.get("S", 1.0)
        self.st.loss_sum = state["loss_sum"]
        self.st.t = state["t"]
        self.st.n_updates = state.get("n_updates", 0)
        self.st.consumed = state["consumed"]
        self.st.pos = state["pos"]
        self.st.zs = state.get("zs", 1.0)
        self.st.b = state.get("b", 0.0)
        self.st.b_sum = state.get("b_sum", 0.0)
        self.st.b_pick = state.get("b_pick", 0.0)
        self.st.rho_sum = state.get("rho_sum", <double>self.st.t)
        self.st.U = state.get("U", 0.0)
        self.st.U_Q = state.get("U_Q", 0.0)     # (a state before U_Q: Q of lam itself)
        for a in range(4):
            self.st.rng[a] = state["rng"][a]

    @property
    def rng_state(self):
        """The PRNG state before the next unconsumed draw, as 4 uint64 words."""
        return np.array([self.st.rng[0], self.st.rng[1], self.st.rng[2], self.st.rng[3]],
                        dtype=np.uint64)


def _iterates_block(list outputs, double[:, :] out, bint average):
    """The last iterate, or with `average` the average, of K outputs (`SolverCore`s, in
    order: output c's into column c of out, shape (n_cols, K), any strides) in one pass
    over their vectors, each element as `SolverCore._write_w` or `_average_to` takes it
    (output by output, each pass over a block would read every line of it)."""
    cdef Py_ssize_t K = len(outputs), c, j
    cdef SolverCore s
    cdef DualVector* dvs
    cdef double* tts
    cdef bint fits = K > 0 and out.shape[1] == K
    for c in range(K):
        s = outputs[c]                  # (anything but a SolverCore: a TypeError)
        fits = fits and s.n_cols == out.shape[0]
    if not fits:
        raise ValueError("out must have shape (n_cols, K), n_cols that of every output")
    dvs = <DualVector*>malloc(K * sizeof(DualVector))
    tts = <double*>malloc(K * sizeof(double))
    if dvs == NULL or tts == NULL:
        free(dvs)
        free(tts)
        raise MemoryError()
    for c in range(K):
        s = outputs[c]
        pgs_dual(&dvs[c], &s.prm, &s.st, s.n_cols)
        tts[c] = s.st.rho_sum
    with nogil:
        for j in range(out.shape[0]):
            for c in range(K):
                if not average:
                    out[j, c] = dvs[c].c * dual_u(&dvs[c], j)
                else:
                    out[j, c] = dual_average_at(&dvs[c], j, tts[c]) if tts[c] > 0.0 else 0.0
    free(dvs)
    free(tts)


cdef struct Turn:             # one problem of a lock-step run, as the loop sees it
    int loss_id
    Py_ssize_t n_cols
    const double* y
    Py_ssize_t y_stride      # row i's target(s) from y[y_stride i]
    const PGSParams* prm     # its K outputs' parameters (`_pgs_loop`)
    PGSState** sts           # its K states (K = 1 but for the K-output losses) ...
    Py_ssize_t n_out
    DualVector* dvs          # ... and K dual vectors and margins (the loop's scratch)
    double* zk
    const PGSSampler* smp


def _lockstep(list solvers, list ys, const floating_t[::1] data, const index_t[::1] indices,
              const index_t[::1] indptr, long long t_end, long long block):
    """Run each problem in turn `block` iterations, until all reach t_end: (index of the
    first that failed or -1, its status). A problem is a solver, or a tuple of K solvers
    built alike, run by one loop with output 0's sampler: a K-output loss's classes, or K
    binary problems. Its y has a row for each row of X, read where it lies (any row
    stride): one column (a target, or a K-output loss's class), or K binary problems' K
    targets side by side. One problem with block = t_end is a plain run."""
    cdef Py_ssize_t a, c, n = len(solvers), failed = -1, n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t n_all = sum(len(s) if isinstance(s, tuple) else 1 for s in solvers)
    cdef int status = PGS_OK
    cdef long long te = t_end
    cdef SolverCore s
    cdef const double[:, :] yv
    cdef Py_ssize_t n_y
    cdef const floating_t* dp = &data[0] if data.shape[0] > 0 else NULL
    cdef const index_t* ip = &indices[0] if indices.shape[0] > 0 else NULL
    cdef Turn* turns = <Turn*>malloc(n * sizeof(Turn))
    cdef PGSState** sts = <PGSState**>malloc(n_all * sizeof(PGSState*))
    cdef DualVector* dvs = <DualVector*>malloc(n_all * sizeof(DualVector))
    cdef double* zk = <double*>malloc(5 * n_all * sizeof(double))
    cdef PGSParams* prms = <PGSParams*>malloc(n_all * sizeof(PGSParams))
    try:
        if turns == NULL or sts == NULL or dvs == NULL or zk == NULL or prms == NULL:
            raise MemoryError()
        n_all = 0
        for a in range(n):
            group = solvers[a] if isinstance(solvers[a], tuple) else (solvers[a],)
            yv = ys[a]                          # (the lists keep both alive)
            s = group[0]
            n_y = (1 if s.loss_id == L.LOSS_MULTINOMIAL or s.loss_id == L.LOSS_CRAMMER_SINGER
                   else len(group))
            if yv.shape[0] != n_rows or yv.shape[1] != n_y:
                raise ValueError(f"y has shape {(yv.shape[0], yv.shape[1])}, not ({n_rows}, "
                                 f"{n_y}): a row for each row of X (K binary problems: "
                                 f"their K targets)")
            if (n_y > 1 and yv.strides[1] != 8) or yv.strides[0] % 8:
                raise ValueError("y's targets of a row must be adjacent doubles")
            for c in range(len(group)):
                s = group[c]
                sts[n_all + c] = &s.st
                prms[n_all + c] = s.prm
                te = min(te, s.st.t)
            s = group[0]
            turns[a] = Turn(s.loss_id, s.n_cols, &yv[0, 0], yv.strides[0] // 8, &prms[n_all],
                            &sts[n_all], len(group), &dvs[n_all], &zk[5 * n_all], &s.smp)
            n_all += len(group)
        with nogil:
            while te < t_end and failed < 0:
                te = te + block if t_end - te > block else t_end
                for a in range(n):
                    status = _dispatch(turns[a].loss_id, dp, ip, &indptr[0], turns[a].y,
                                       turns[a].y_stride, n_rows, turns[a].n_cols, turns[a].prm,
                                       turns[a].sts, turns[a].n_out, turns[a].dvs, turns[a].zk,
                                       te, turns[a].smp)
                    if status != PGS_OK:
                        failed = a
                        break
        return (failed, status)
    finally:
        free(turns)
        free(sts)
        free(dvs)
        free(zk)
        free(prms)


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
