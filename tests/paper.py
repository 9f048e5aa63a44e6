"""The PGS paper's algorithm as the tests run it against their references.

`pgs.train`'s defaults are the fastest set-up measured in bench/ (the averaged-SGD
schedule, a free intercept, ...). The tests that check the paper's algorithm itself
(Figure 1, the offset t0, the parallel rounds of docs/design.md 6b) run it with the preset
`pgs.PAPER`, a fixed sigma and the last iterate, and override what they test.
"""

import numpy as np
import scipy.sparse as sp

import pgs
from pgs.training import fit as F

#: The paper's set-up with a fixed sigma and the last iterate (pgs.train's defaults
#: before the schedules).
PAPER_RUN = dict(pgs.PAPER, sigma=1e-4, iterate="last")


def train(X, y, **kwargs):
    """`pgs.train` with `PAPER_RUN` under `kwargs`."""
    return pgs.train(X, y, **{**PAPER_RUN, **kwargs})


def fit(X, y, **kwargs):
    """`pgs.training.fit.fit` (its test hook: known_classes) with `PAPER_RUN` under `kwargs`."""
    return F.fit(X, y, **{**PAPER_RUN, **kwargs})


def rows_of(X, rows):
    """X's rows `rows`, in that order (rows repeat), as X's kind of matrix with its dtypes
    (a CSR matrix keeps its index dtype, which scipy's indexing may change)."""
    if not sp.issparse(X):
        return np.asarray(X)[rows]
    X = sp.csr_matrix(X)
    starts, lengths = X.indptr[rows], np.diff(X.indptr)[rows]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(X.indptr.dtype)
    take = (np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])).astype(np.intp)
    A = sp.csr_matrix((X.data[take], X.indices[take], indptr), shape=(len(rows), X.shape[1]))
    A.indices, A.indptr = X.indices[take], indptr      # (the constructor may downcast them)
    return A


def on_rows(X, y, rows, **kwargs):
    """`train` on the chosen `rows` of X, one after the other: X's rows `rows` read in order
    (cyclic sampling), each iteration's k the next k of them."""
    return train(rows_of(X, rows), np.asarray(y)[rows], **{"sampling": "cyclic", **kwargs})


def prepare(X, y, **kwargs):
    """`pgs.training.fit.prepare` with `PAPER_RUN` under `kwargs`."""
    return F.prepare(X, y, **{**PAPER_RUN, **kwargs})
