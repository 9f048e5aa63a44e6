"""The PGS paper's algorithm as the tests run it against their references.

`pgs.train`'s defaults are the fastest set-up measured in bench/ (the averaged-SGD
schedule, a free intercept, ...). The tests that check the paper's algorithm itself
(Figure 1, the offset t0, the parallel rounds of docs/design.md 6b) run it with the preset
`pgs.PAPER`, a fixed sigma and the last iterate, and override what they test.
"""

import pgs
from pgs.training import fit as F

#: The paper's set-up with a fixed sigma and the last iterate (pgs.train's defaults
#: before the schedules).
PAPER_RUN = dict(pgs.PAPER, sigma=1e-4, iterate="last")


def train(X, y, **kwargs):
    """`pgs.train` with `PAPER_RUN` under `kwargs`."""
    return pgs.train(X, y, **{**PAPER_RUN, **kwargs})


def fit(X, y, **kwargs):
    """`pgs.training.fit.fit` (its test hooks: fixed_rows, ...) with `PAPER_RUN` under `kwargs`."""
    return F.fit(X, y, **{**PAPER_RUN, **kwargs})


def prepare(X, y, **kwargs):
    """`pgs.training.fit.prepare` with `PAPER_RUN` under `kwargs`."""
    return F.prepare(X, y, **{**PAPER_RUN, **kwargs})
