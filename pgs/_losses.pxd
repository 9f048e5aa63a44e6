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
# losses (`Binary`: each row's derivative by `loss_at`, a switch on the id that the
# branch predictor resolves, as the id is one a run) and the two K-output losses
# (`multi_dloss`), so Cython emits one loop per family. Adding a loss: its inline function
# below, one line in LossId and in `loss_at`, and its row in `LOSSES` of
# pgs/rules/losses.py (name, task, bounds, epsilon, probabilities), which every
# Python layer reads.
#
# Downstream Cython code can `cimport pgs._losses` and call these directly: `loss_at` and
# `loss_value` by id, each loss by name, `multi_dloss`.

from libc.math cimport exp, log, log1p, fabs, NAN

cdef struct Binary:             # one of the losses of one margin, by id (`loss_at`)
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


# Each loss is one function of the margin z, the target y and eps: its derivative in z,
# and with `value` set its value there (the loop asks only when it tracks the loss:
# logistic's costs a log).

# ---------------------------------------------------------------- classification

cdef inline double hinge(double z, double y, double eps, double* value) noexcept nogil:
    cdef double r = 1.0 - y * z
    if value != NULL:
        value[0] = r if r > 0.0 else 0.0
    return -y if y * z < 1.0 else 0.0


cdef inline double logistic(double z, double y, double eps, double* value) noexcept nogil:
    # log(1 + exp(-m)) and -y / (1 + exp(m)), m = y z, without overflow for any finite m
    # (|m| up to 1e300)
    cdef double m = y * z
    cdef double e
    if m > 0.0:
        e = exp(-m)
        if value != NULL:
            value[0] = log1p(e)
        return -y * e / (1.0 + e)
    e = exp(m)
    if value != NULL:
        value[0] = -m + log1p(e)
    return -y / (1.0 + e)


cdef inline double squared_hinge(double z, double y, double eps, double* value) noexcept nogil:
    cdef double r = 1.0 - y * z
    if value != NULL:
        value[0] = r * r if r > 0.0 else 0.0
    return -2.0 * y * r if r > 0.0 else 0.0


cdef inline double smooth_hinge(double z, double y, double eps, double* value) noexcept nogil:
    # Quadratically smoothed hinge with smoothing width eps (> 0):
    # 0 for m >= 1, (1 - m)^2 / (2 eps) for 1 - eps < m < 1, 1 - m - eps/2 below.
    cdef double m = y * z
    if m >= 1.0:
        if value != NULL:
            value[0] = 0.0
        return 0.0
    if m <= 1.0 - eps:
        if value != NULL:
            value[0] = 1.0 - m - 0.5 * eps
        return -y
    if value != NULL:
        value[0] = (1.0 - m) * (1.0 - m) / (2.0 * eps)
    return -y * (1.0 - m) / eps


cdef inline double modified_huber(double z, double y, double eps, double* value) noexcept nogil:
    # Zhang (2004), as scikit-learn: quadratic near the margin, linear below -1.
    cdef double m = y * z
    if m >= 1.0:
        if value != NULL:
            value[0] = 0.0
        return 0.0
    if m >= -1.0:
        if value != NULL:
            value[0] = (1.0 - m) * (1.0 - m)
        return -2.0 * y * (1.0 - m)
    if value != NULL:
        value[0] = -4.0 * m
    return -4.0 * y


# -------------------------------------------------------------------- regression

cdef inline double squared(double z, double y, double eps, double* value) noexcept nogil:
    cdef double r = z - y
    if value != NULL:
        value[0] = r * r
    return 2.0 * (z - y)


cdef inline double huber(double z, double y, double eps, double* value) noexcept nogil:
    cdef double r = z - y
    cdef double a = fabs(r)
    if value != NULL:
        value[0] = 0.5 * r * r if a <= eps else eps * a - 0.5 * eps * eps
    if r > eps:
        return eps
    if r < -eps:
        return -eps
    return r


cdef inline double epsilon_insensitive(double z, double y, double eps,
                                       double* value) noexcept nogil:
    cdef double r = z - y
    cdef double a = fabs(r) - eps
    if value != NULL:
        value[0] = a if a > 0.0 else 0.0
    if r > eps:
        return 1.0
    if r < -eps:
        return -1.0
    return 0.0


cdef inline double absolute(double z, double y, double eps, double* value) noexcept nogil:
    cdef double r = z - y
    if value != NULL:
        value[0] = fabs(z - y)
    if r > 0.0:
        return 1.0
    if r < 0.0:
        return -1.0
    return 0.0


# ------------------------------------------------------------------- by id

cdef inline double loss_at(int loss_id, double z, double y, double eps,
                           double* value) noexcept nogil:
    """The derivative of the loss with id `loss_id` at (z, y), and with `value` its value
    there (a switch on the id: the loop's, once a row). A K-output loss of two classes is
    its binary twin on z = z_1 - z_0, y = +-1 (docs/design.md 6d; the loop takes K
    margins: `multi_dloss`)."""
    if loss_id == LOSS_HINGE:
        return hinge(z, y, eps, value)
    elif loss_id == LOSS_LOGISTIC:
        return logistic(z, y, eps, value)
    elif loss_id == LOSS_SQUARED:
        return squared(z, y, eps, value)
    elif loss_id == LOSS_SQUARED_HINGE:
        return squared_hinge(z, y, eps, value)
    elif loss_id == LOSS_SMOOTH_HINGE:
        return smooth_hinge(z, y, eps, value)
    elif loss_id == LOSS_MODIFIED_HUBER:
        return modified_huber(z, y, eps, value)
    elif loss_id == LOSS_HUBER:
        return huber(z, y, eps, value)
    elif loss_id == LOSS_EPSILON_INSENSITIVE:
        return epsilon_insensitive(z, y, eps, value)
    elif loss_id == LOSS_ABSOLUTE:
        return absolute(z, y, eps, value)
    elif loss_id == LOSS_MULTINOMIAL:
        return logistic(z, y, eps, value)
    return hinge(z, y, eps, value)


cdef inline double loss_value(int loss_id, double z, double y, double eps) noexcept nogil:
    """The value of the loss with id `loss_id` at (z, y) (`loss_at`'s)."""
    cdef double v
    loss_at(loss_id, z, y, eps, &v)
    return v


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
