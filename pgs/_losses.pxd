# The loss layer: value and derivative of every built-in loss as `cdef inline`
# functions, so that the solver's loop inlines them (a virtual method per
# sample costs 10-30 %, scikit-learn issue #15123; a switch on the id, one a run, is
# within noise: bench/results/one_loop.md).
#
# Every loss is a function of the margin ``z = <w, x>`` and the target ``y``.
# ``eps`` is the loss's shape parameter (Huber's delta, the width of the
# epsilon-insensitive tube, the smoothing width of the smoothed hinge); losses
# without one ignore it.
#
# The solver's loop is a fused function over a loss family's "tag" struct: the binary
# losses (`Binary`: each row's derivative by `loss_deriv`, a switch on the id that the
# branch predictor resolves, as the id is one a run) and the two K-output losses
# (`multi_dloss`), so Cython emits one loop per family. Adding a loss: its inline pair
# below, one line in LossId and in `loss_value` and `loss_deriv`, and its row in `LOSSES`
# of pgs/rules/losses.py (name, task, bounds, epsilon, probabilities), which every
# Python layer reads.
#
# Downstream Cython code can `cimport pgs._losses` and call these directly.

from libc.math cimport exp, log, log1p, fabs, NAN

cdef struct Binary:             # one of the losses of one margin, by id (`loss_deriv`)
    char _unused
cdef struct Multinomial:        # K outputs (multi_dloss); y is the class index
    char _unused
cdef struct CrammerSinger:
    char _unused

ctypedef fused loss_tag:
    Binary
    Multinomial
    CrammerSinger

# Integer ids, in the order of the table `LOSSES` in pgs/rules/losses.py.
cdef enum LossId:
    LOSS_HINGE = 0
    LOSS_LOGISTIC = 1
    LOSS_SQUARED = 2
    LOSS_SQUARED_HINGE = 3
    LOSS_SMOOTH_HINGE = 4
    LOSS_MODIFIED_HUBER = 5
    LOSS_HUBER = 6
    LOSS_EPSILON_INSENSITIVE = 7
    LOSS_ABSOLUTE = 8
    LOSS_MULTINOMIAL = 9
    LOSS_CRAMMER_SINGER = 10
    N_LOSSES = 11


# ---------------------------------------------------------------- classification

cdef inline double hinge_loss(double z, double y, double eps) noexcept nogil:
    cdef double r = 1.0 - y * z
    return r if r > 0.0 else 0.0

cdef inline double hinge_dloss(double z, double y, double eps) noexcept nogil:
    return -y if y * z < 1.0 else 0.0


cdef inline double logistic_loss(double z, double y, double eps) noexcept nogil:
    # log(1 + exp(-m)) without overflow for any finite m (|m| up to 1e300).
    cdef double m = y * z
    if m > 0.0:
        return log1p(exp(-m))
    return -m + log1p(exp(m))

cdef inline double logistic_dloss(double z, double y, double eps) noexcept nogil:
    # -y / (1 + exp(m)), written so that exp never overflows.
    cdef double m = y * z
    cdef double e
    if m > 0.0:
        e = exp(-m)
        return -y * e / (1.0 + e)
    return -y / (1.0 + exp(m))


cdef inline double squared_hinge_loss(double z, double y, double eps) noexcept nogil:
    cdef double r = 1.0 - y * z
    return r * r if r > 0.0 else 0.0

cdef inline double squared_hinge_dloss(double z, double y, double eps) noexcept nogil:
    cdef double r = 1.0 - y * z
    return -2.0 * y * r if r > 0.0 else 0.0


cdef inline double smooth_hinge_loss(double z, double y, double eps) noexcept nogil:
    # Quadratically smoothed hinge with smoothing width eps (> 0):
    # 0 for m >= 1, (1 - m)^2 / (2 eps) for 1 - eps < m < 1, 1 - m - eps/2 below.
    cdef double m = y * z
    if m >= 1.0:
        return 0.0
    if m <= 1.0 - eps:
        return 1.0 - m - 0.5 * eps
    return (1.0 - m) * (1.0 - m) / (2.0 * eps)

cdef inline double smooth_hinge_dloss(double z, double y, double eps) noexcept nogil:
    cdef double m = y * z
    if m >= 1.0:
        return 0.0
    if m <= 1.0 - eps:
        return -y
    return -y * (1.0 - m) / eps


cdef inline double modified_huber_loss(double z, double y, double eps) noexcept nogil:
    # Zhang (2004), as scikit-learn: quadratic near the margin, linear below -1.
    cdef double m = y * z
    if m >= 1.0:
        return 0.0
    if m >= -1.0:
        return (1.0 - m) * (1.0 - m)
    return -4.0 * m

cdef inline double modified_huber_dloss(double z, double y, double eps) noexcept nogil:
    cdef double m = y * z
    if m >= 1.0:
        return 0.0
    if m >= -1.0:
        return -2.0 * y * (1.0 - m)
    return -4.0 * y


# -------------------------------------------------------------------- regression

cdef inline double squared_loss(double z, double y, double eps) noexcept nogil:
    cdef double r = z - y
    return r * r

cdef inline double squared_dloss(double z, double y, double eps) noexcept nogil:
    return 2.0 * (z - y)


cdef inline double huber_loss(double z, double y, double eps) noexcept nogil:
    cdef double r = z - y
    cdef double a = fabs(r)
    if a <= eps:
        return 0.5 * r * r
    return eps * a - 0.5 * eps * eps

cdef inline double huber_dloss(double z, double y, double eps) noexcept nogil:
    cdef double r = z - y
    if r > eps:
        return eps
    if r < -eps:
        return -eps
    return r


cdef inline double epsilon_insensitive_loss(double z, double y, double eps) noexcept nogil:
    cdef double a = fabs(z - y) - eps
    return a if a > 0.0 else 0.0

cdef inline double epsilon_insensitive_dloss(double z, double y, double eps) noexcept nogil:
    cdef double r = z - y
    if r > eps:
        return 1.0
    if r < -eps:
        return -1.0
    return 0.0


cdef inline double absolute_loss(double z, double y, double eps) noexcept nogil:
    return fabs(z - y)

cdef inline double absolute_dloss(double z, double y, double eps) noexcept nogil:
    cdef double r = z - y
    if r > 0.0:
        return 1.0
    if r < 0.0:
        return -1.0
    return 0.0


# ------------------------------------------------------- dispatch by tag or by id

cdef inline double loss_value(int loss_id, double z, double y, double eps) noexcept nogil:
    """Value of the loss with id `loss_id` (a switch on the id)."""
    if loss_id == LOSS_HINGE:
        return hinge_loss(z, y, eps)
    elif loss_id == LOSS_LOGISTIC:
        return logistic_loss(z, y, eps)
    elif loss_id == LOSS_SQUARED:
        return squared_loss(z, y, eps)
    elif loss_id == LOSS_SQUARED_HINGE:
        return squared_hinge_loss(z, y, eps)
    elif loss_id == LOSS_SMOOTH_HINGE:
        return smooth_hinge_loss(z, y, eps)
    elif loss_id == LOSS_MODIFIED_HUBER:
        return modified_huber_loss(z, y, eps)
    elif loss_id == LOSS_HUBER:
        return huber_loss(z, y, eps)
    elif loss_id == LOSS_EPSILON_INSENSITIVE:
        return epsilon_insensitive_loss(z, y, eps)
    elif loss_id == LOSS_ABSOLUTE:
        return absolute_loss(z, y, eps)
    # A K-output loss of two classes is its binary twin on z = z_1 - z_0, y = +-1
    # (docs/design.md 6d); the loop takes K margins (multi_dloss).
    elif loss_id == LOSS_MULTINOMIAL:
        return logistic_loss(z, y, eps)
    return hinge_loss(z, y, eps)


cdef inline double loss_deriv(int loss_id, double z, double y, double eps) noexcept nogil:
    """Derivative of the loss with id `loss_id` (a switch on the id: the loop's, once a
    row)."""
    if loss_id == LOSS_HINGE:
        return hinge_dloss(z, y, eps)
    elif loss_id == LOSS_LOGISTIC:
        return logistic_dloss(z, y, eps)
    elif loss_id == LOSS_SQUARED:
        return squared_dloss(z, y, eps)
    elif loss_id == LOSS_SQUARED_HINGE:
        return squared_hinge_dloss(z, y, eps)
    elif loss_id == LOSS_SMOOTH_HINGE:
        return smooth_hinge_dloss(z, y, eps)
    elif loss_id == LOSS_MODIFIED_HUBER:
        return modified_huber_dloss(z, y, eps)
    elif loss_id == LOSS_HUBER:
        return huber_dloss(z, y, eps)
    elif loss_id == LOSS_EPSILON_INSENSITIVE:
        return epsilon_insensitive_dloss(z, y, eps)
    elif loss_id == LOSS_ABSOLUTE:
        return absolute_dloss(z, y, eps)
    elif loss_id == LOSS_MULTINOMIAL:
        return logistic_dloss(z, y, eps)
    return hinge_dloss(z, y, eps)


# ------------------------------------------------- K outputs (multiclass, docs/design.md 6d)

cdef inline double multi_dloss(loss_tag* tag, double* z, Py_ssize_t K,
                               Py_ssize_t y) noexcept nogil:
    """The loss of a row of class y (0 <= y < K, K >= 2) at its K margins z, which are
    replaced by the derivatives g_c = d loss / d z_c (the tag a compile-time choice).

    Multinomial: log sum_c exp z_c - z_y, g = softmax(z) - e_y, with the max subtracted
    (exp never overflows) and g_y = -sum_{c != y} softmax_c (no cancellation near 1).
    Crammer-Singer: max(0, 1 + max_{c != y} z_c - z_y); where positive g_y = -1 and
    g_r = +1 for the most violating r (else 0).
    """
    cdef Py_ssize_t c, r = 0 if y != 0 else 1
    cdef double zmax = z[0], zy = z[y], s = 0.0, other = 0.0, v
    if loss_tag is Multinomial:
        for c in range(1, K):
            if z[c] > zmax:
                zmax = z[c]
        for c in range(K):
            z[c] = exp(z[c] - zmax)
            s += z[c]
            if c != y:
                other += z[c]
        for c in range(K):
            z[c] /= s
        z[y] = -other / s
        return log1p(other) if zy == zmax else (zmax - zy) + log(s)
    elif loss_tag is CrammerSinger:
        for c in range(K):
            if c != y and z[c] > z[r]:
                r = c
        v = 1.0 + z[r] - zy
        for c in range(K):
            z[c] = 0.0
        if v > 0.0:
            z[y] = -1.0
            z[r] = 1.0
            return v
        return 0.0
    return NAN
