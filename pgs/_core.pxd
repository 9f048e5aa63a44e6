# Public C-level API of the Primal Gradient Solver kernel: the one entry point pgs's own
# solver (SolverCore, run_solver) runs too.
#
# Downstream Cython code can `cimport pgs._core` and drive the solver over its own CSR
# buffers: pgs_init (parameters), pgs_state_init (a zeroed state of R >= 1 outputs with
# your buffers), pgs_sampler_init (how rows are drawn), pgs_run_f64_i64 (iterations),
# pgs_dual (an output of the state as a DualVector of pgs/_dual.pxd: w by dual_write_w, Q
# by dual_exact_Q). The caller owns the buffers; the kernel never raises and never
# touches Python objects, so it runs with the GIL released (it allocates only the scratch
# of R > 1 outputs, for the length of a call).

from libc.stdint cimport int64_t, uint64_t

from pgs._dual cimport DualVector

# Status codes returned by the kernel (errors are flags, never exceptions).
cdef enum PGSStatus:
    PGS_OK = 0
    # a margin or the scale became inf or NaN, or a row had a column index outside
    # [0, n_cols - 1) or a non-finite value (the kernel stops before using that row)
    PGS_NONFINITE = 1
    PGS_BAD_SAMPLER = 3  # the sampler lacks a buffer its mode needs
    PGS_NO_MEMORY = 4    # the scratch of R > 1 outputs could not be allocated
    # (pgs_run_f64_i64 returns -1 for a loss_id that names no loss, a K-output loss of
    # one output, or l1 > 0 at p < 2 without paid)


cdef enum Schedule:
    SCHED_PGS = 0
    SCHED_ASGD = 1


cdef struct PGSParams:
    double p                 # norm of the regulariser, in (1, 2]
    double q                 # dual exponent p / (p - 1)
    double sigma             # regularisation strength (> 0)
    double B                 # radius of the domain ||w||_p <= B; <= 0 means unbounded (each
    #                          output's at the start: PGSOutput.B)
    double icpt              # value of the implicit constant column; 0 for no intercept
    double eps               # the loss's shape parameter (ignored by most losses)
    Py_ssize_t k             # mini-batch size
    int p_kind               # a PKind of pgs/_dual.pxd
    int average              # nonzero: maintain the running average of the iterates
    # nonzero (p < 1.2, set by pgs_init): the average kept by spans, in wsum and clast;
    # else in one vector, wsum (clast unused)
    int average_spans
    long long t_pick         # the iteration whose iterate is copied to w_pick (0: none)
    int track_loss           # nonzero: add each sampled loss (at w_{t-1}) to loss_sum
    long long recompute_every  # coordinate updates between exact recomputations of Q
    double ratio_hi          # p < 2: |lam_j| / S beyond this would overflow u_j: rescale
    double t_offset          # w_t = grad r*(lam / ((t + t_offset) sigma)); 0 is the paper's
    int schedule             # a Schedule (docs/design.md 6c): SCHED_PGS, eta_t = 1 / ((t + t0)
    double eta0              # sigma), uniform average; SCHED_ASGD, eta0 (1 + sigma eta0 t)^-3/4
    double icpt_rate         # > 0: a free (unregularised) bias b, moved by icpt_rate eta_t
    double l1                # > 0: an l1 term l1 ||w||_1 (the features'), by lazy truncation


cdef struct PGSOutput:
    # One output's own scalars (PGSState.outs: R of them). w_j = c u_j (pgs_dual and
    # dual_write_w write it); the dual vector's scalars are `DualVector`'s (pgs/_dual.pxd).
    double Q                 # sum_j (|lam_j| / S)^q, maintained incrementally ...
    double Q_comp            # ... with Neumaier compensation
    double Q_abs             # p < 2: sum of the terms added to Q since its exact value
    double S                 # p < 2: the unit of lam in u and Q (0 means 1)
    double c                 # current scale: w_t = c * u
    double C                 # the average: sum of c_s since C last restarted at 0
    long long n_updates      # coordinate updates since Q was last recomputed exactly
    # l1 > 0 (docs/sparse.md): U sums the l1 term's amounts, l1 gw a step (gw: the
    # gradient's weight, 1 for the paper's step). p = 2 reads each feature's lam_j truncated
    # towards 0 by U (dual averaging; paid unused). p < 2 truncates lam itself: paid_j is
    # what coordinate j has paid of U, what 0 stops stays owed; a margin reads lam_j as its
    # debt leaves it (p = 1.5, k = 1; else the batch pays first) and an update pays it.
    double U
    # p = 2 with l1 and B: Q sums the features' lam_j truncated by U_Q, the U of Q's last
    # exact recomputation (pgs/_dual.pxd, DualVector)
    double U_Q
    double b                 # the free bias (0 unless prm.icpt_rate > 0) ...
    double b_sum             # ... its weighted sum over the averaged iterates ...
    double b_pick            # ... and its value at t_pick
    double B                 # the radius ||w||_p <= B (<= 0: unbounded; prm.B at the start)


cdef struct PGSState:
    # R >= 1 outputs over the same rows (R = 1: a binary problem or a regression; a K-output
    # loss's classes; R binary problems, e.g. one-vs-rest): what they share once, their
    # vectors in shared buffers and R PGSOutputs.
    #
    # Coordinates j = 0 .. n_cols - 1, n_cols = n_features + 1 (the last one is the
    # intercept column). Output r's lam_j is lam[r * out_step + stride * j]; its u_j, per p
    # (prm.p_kind):
    #   p = 2:   u is lam (the same buffer);
    #   p = 1.5: no u is kept (u unused, may be NULL): u_j = t |t|, t = lam_j / S, is
    #            computed where it is read (dual_u);
    #   other p: u_j = u[r * out_step + stride * j] = sign(lam_j) (|lam_j| / S)^(q-1), in
    #            its own buffer (stride 1), or lam and u interleaved in one buffer (u =
    #            buf, lam = buf + 1, strides doubled: an update finds lam_j on the line its
    #            margin read u_j from; SolverCore's).
    # Two layouts (pgs_state_init's default: the first): output-major (each output's
    # vectors contiguous: stride 1, out_step n_cols), or feature-major, a block (each
    # feature's R coordinates adjacent: stride R, out_step 1; a row's R margins and updates
    # share its features' cache lines, docs/multiclass.md). wsum, clast and paid follow
    # wstride and wout_step alike.
    double* lam              # dual accumulator lambda = -sum_t lambda_t
    double* u
    Py_ssize_t n_out         # R
    PGSOutput* outs          # R of them
    Py_ssize_t stride
    Py_ssize_t out_step
    Py_ssize_t wstride
    Py_ssize_t wout_step
    # The average (NULL unless average): without prm.average_spans the sum of the
    # iterates is C u - wsum (clast unused); with it wsum is the lazily folded sum and
    # clast_j the C of coordinate j's last fold (see pgs/_dual.pxd).
    double* wsum
    double* clast
    double* w_pick           # receives w_{t_pick} (NULL unless t_pick > 0): output r's at
    #                          w_pick + r n_cols
    double* paid             # l1 > 0 at p < 2 (PGSOutput.U): zeroed
    int64_t* rows            # scratch, length k: the batch's row indices
    double* coefs            # scratch, length k R: the batch's -loss'/k, output r's at k r
    long long t              # iterations done
    long long consumed       # rows consumed in all
    long long pos            # next position in the permutation / cyclic order
    double loss_sum          # sum of the sampled losses, every output's (when track_loss)
    double zs                # SCHED_ASGD: the dual point is zs * lam (1 at the start)
    double rho_sum           # the sum of the averaged iterates' weights
    uint64_t rng[4]          # xoshiro256** state before the next unconsumed draw


cdef enum SamplingMode:     # how rows are drawn
    SAMPLE_IID = 0          # uniform with replacement (the paper's), or by alias table
    SAMPLE_PERMUTATION = 1  # a fresh random order every pass, without replacement
    SAMPLE_CYCLIC = 2       # rows in the given order (a chosen sequence: those rows of X)


cdef struct PGSSampler:      # (the caller's buffers, as the state's)
    int mode                 # a SamplingMode
    const double* alias_prob  # iid by weight: Vose alias table (NULL: uniform)
    const int64_t* alias_idx
    const double* row_scale  # permutation / cyclic by weight: gradient factor per row
    double grad_scale        # gradient factor for every row (the mean weight with alias)
    int64_t* perm            # permutation mode: the order, length n_rows (st.pos = n_rows
    #                          shuffles it first)


cdef void pgs_init(PGSParams* prm, double p, double sigma, double B, double icpt,
                   double eps, Py_ssize_t k, long long t_pick, int average,
                   Py_ssize_t n_cols) noexcept nogil

cdef void pgs_state_init(PGSState* st, const PGSParams* prm, Py_ssize_t n_out,
                         PGSOutput* outs, double* lam, double* u, int64_t* rows,
                         double* coefs, const uint64_t* rng, Py_ssize_t n_cols) noexcept nogil

cdef void pgs_sampler_init(PGSSampler* smp, int mode) noexcept nogil

cdef void pgs_dual(DualVector* dv, const PGSParams* prm, const PGSState* st,
                   Py_ssize_t n_cols, Py_ssize_t r) noexcept nogil

# Iterations st.t + 1 .. t_end; a PGSStatus. `_dispatch` of pgs/_core.pyx (the loop
# SolverCore and run_solver run) for float64 data and int64 indices.
cdef int pgs_run_f64_i64(int loss_id, const double* data, const int64_t* indices,
                         const int64_t* indptr, const double* y, Py_ssize_t n_rows,
                         Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                         long long t_end, const PGSSampler* smp) noexcept nogil
