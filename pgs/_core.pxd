# Public C-level API of the Primal Gradient Solver kernel.
#
# Downstream Cython code can `cimport pgs._core` and drive the solver over its
# own CSR buffers:
#
#     from pgs._core cimport PGSParams, PGSState, pgs_init, pgs_run_f64_i64
#
# The caller owns the state's buffers (the kernel allocates only scratch space, freed
# before it returns); it never raises and never touches Python objects, so it can
# run with the GIL released. Start from
# pgs_init (parameters) and pgs_state_init (a zeroed state with your buffers).

from libc.stdint cimport int64_t, uint64_t

# How the exponent q - 1 of the dual mapping is evaluated (see pgs_init).
cdef enum PKind:
    P_TWO = 0       # p = 2: u is lambda itself
    P_Q3 = 1        # p = 1.5 (q = 3): |l|^2, a multiply
    P_Q225 = 2      # p = 1.8 (q = 2.25): |l| * sqrt(sqrt(|l|))
    P_GENERAL = 3   # any other p in (1, 2): pow()

# Status codes returned by the kernel (errors are flags, never exceptions).
cdef enum PGSStatus:
    PGS_OK = 0
    # A margin or the iterate's scale became inf or NaN; also a row read had a column
    # index outside [0, n_cols - 1) or a non-finite value (the kernel stops before
    # using that row).
    PGS_NONFINITE = 1
    PGS_BAD_ROW = 2      # a row index of a fixed sequence is outside [0, n_rows)
    PGS_BAD_SAMPLER = 3  # the sampler lacks a buffer its mode needs
    PGS_NO_MEMORY = 4    # a scratch buffer of a batch could not be allocated

# How rows are drawn (see PGSSampler).
cdef enum SamplingMode:
    SAMPLE_IID = 0          # uniform with replacement (the paper's), or by alias table
    SAMPLE_PERMUTATION = 1  # a fresh random order every pass, without replacement
    SAMPLE_CYCLIC = 2       # rows in the given order
    SAMPLE_FIXED = 3        # a caller-given sequence (a test hook)


cdef struct PGSParams:
    double p                 # norm of the regulariser, in (1, 2]
    double q                 # dual exponent p / (p - 1)
    double sigma             # regularisation strength (> 0)
    double B                 # radius of the domain ||w||_p <= B; <= 0 means unbounded
    double icpt              # value of the implicit constant column; 0 for no intercept
    double eps               # the loss's shape parameter (ignored by most losses)
    Py_ssize_t k             # mini-batch size
    # nonzero: a batch's step is summed per column, then applied once per column (a
    # scratch of n_cols, st.delta; the only mode that uses n_threads). pgs_init sets
    # it for k >= 16 (p = 2: k >= 2048; p = 1.5 without the average: 1024); 0 updates row
    # by row. Both paths are the same algorithm, rounded in another order. (The Python
    # Solver also updates p = 1.8, other p (with the average: p >= 1.2) and p = 1.5 with
    # the average row by row, for k < 2048 (p = 1.5: 1024), when the data's batches
    # repeat few columns.)
    int by_column
    int p_kind               # a PKind
    int average              # nonzero: maintain the running average of the iterates
    # nonzero (p < 1.2, set by pgs_init): the average kept by spans, in wsum and clast;
    # else in one vector, wsum (clast unused)
    int average_spans
    long long t_pick         # the iteration whose iterate is copied to w_pick (0: none)
    int track_loss           # nonzero: add each sampled loss (at w_{t-1}) to loss_sum
    int n_threads            # threads for batches by column (1: serial)
    long long recompute_every  # coordinate updates between exact recomputations of Q
    double ratio_hi          # p < 2: |lam_j| / S beyond this would overflow u_j: rescale
    double t_offset          # w_t = grad r*(lam / ((t + t_offset) sigma)); 0 is the paper's


cdef struct PGSState:
    # Arrays of length n_cols = n_features + 1 (the last one is the intercept column).
    double* lam              # dual accumulator lambda = -sum_t lambda_t
    # u = sign(lam) (|lam| / S)^(q-1); the same buffer as lam when p = 2. For p = 1.5
    # the kernel computes it from lam during a run and writes it out before
    # pgs_run_f64_i64 returns (pgs_sync_u).
    double* u
    # The average (NULL unless average). Without prm.average_spans (p >= 1.2) clast is
    # unused and the sum of the iterates is C u - wsum. With it (p < 1.2), wsum is the
    # lazily folded sum of the iterates and clast_j the C of coordinate j's last fold.
    # (See _fold_average in _core.pyx.)
    double* wsum
    double* clast
    double* w_pick           # receives w_{t_pick} (NULL unless t_pick > 0)
    int64_t* rows            # scratch, length k: the batch's row indices
    double* coefs            # scratch, length k: the batch's -loss'/k
    # scratch for batches of k >= 16 rows, length n_cols, all zero, 64-byte aligned
    # (NULL: the kernel allocates one for each call)
    double* delta
    double Q                 # sum_j (|lam_j| / S)^q, maintained incrementally ...
    double Q_comp            # ... with Neumaier compensation
    double C                 # the average: sum of c_s since C last restarted at 0
    double c                 # current scale: w_t = c * u
    # p < 2: the unit of lam in u and Q, so that (|lam| / S)^q neither overflows
    # nor underflows for large q (0 means 1)
    double S
    long long t              # iterations done
    long long n_updates      # coordinate updates since Q was last recomputed exactly
    long long consumed       # rows consumed in all (indexes a fixed sequence)
    long long pos            # next position in the permutation / cyclic order
    double loss_sum          # sum of the sampled losses (when track_loss)
    double Q_abs             # p < 2: sum of the terms added to Q since its exact value
    uint64_t rng[4]          # xoshiro256** state before the next unconsumed draw
    # NULL, or (p = 1.8 row by row: see pgs_lu_wanted) 2 n_cols doubles with
    # lu[2j] = u_j and lu[2j + 1] = lam_j, which the loop then reads and writes instead
    # of lam and u: a row's update finds lam_j on the line its margin read u_j from.
    # The caller packs it before a run and unpacks it after (pgs_lu_pack / _unpack,
    # which do nothing where it is not wanted); pgs_state_init leaves it NULL. (The
    # Solver uses it up to 2^21 columns: two more vectors of n_cols doubles.)
    double* lu


cdef struct PGSSampler:
    int mode                 # a SamplingMode
    const double* alias_prob  # iid by weight: Vose alias table (NULL: uniform)
    const int64_t* alias_idx
    const double* row_scale  # permutation / cyclic by weight: gradient factor per row
    double grad_scale        # gradient factor for every row (the mean weight with alias)
    int64_t* perm            # permutation mode: the current order, length n_rows
    const int64_t* fixed     # fixed mode: the row sequence
    long long n_fixed        # its length


cdef void pgs_init(PGSParams* prm, double p, double sigma, double B, double icpt,
                   double eps, Py_ssize_t k, long long t_pick, int average,
                   Py_ssize_t n_cols) noexcept nogil

cdef void pgs_state_init(PGSState* st, double* lam, double* u, int64_t* rows,
                         double* coefs, const uint64_t* rng) noexcept nogil

cdef double pgs_exact_Q(const PGSParams* prm, const PGSState* st,
                        Py_ssize_t n_cols) noexcept nogil

cdef void pgs_sync_u(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil
cdef bint pgs_lu_wanted(const PGSParams* prm) noexcept nogil
cdef void pgs_lu_pack(const PGSParams* prm, PGSState* st, Py_ssize_t n_cols) noexcept nogil
cdef void pgs_lu_unpack(const PGSParams* prm, PGSState* st,
                        Py_ssize_t n_cols) noexcept nogil

cdef int pgs_run_f64_i64(int loss_id, const double* data, const int64_t* indices,
                         const int64_t* indptr, const double* y, Py_ssize_t n_rows,
                         Py_ssize_t n_cols, const PGSParams* prm, PGSState* st,
                         long long t_end, const int64_t* fixed_rows) noexcept nogil
