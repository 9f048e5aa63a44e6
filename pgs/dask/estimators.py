"""`pgs.dask.PGSClassifier` and `pgs.dask.PGSRegressor`: the scikit-learn estimators, whose
`fit` also takes row-chunked dask arrays (each problem trained by `pgs.dask.train`)."""

import inspect

import dask.array as da

from pgs import estimators as E
from pgs.dask.client import DEFAULT_TIMEOUT, get_client
from pgs.dask.training import DaskRows, _fetch, _partition, shape_only_csr, train
from pgs.rules.docstrings import fill_doc


class _DaskFit:
    """`fit` on dask arrays: the estimator's own `fit` runs on an empty stand-in X of the same
    shape (all it reads of X), and `_fit_many` trains each problem on the dask X with
    `pgs.dask.train`. In-memory input is fitted as by the parent class."""

    _dask_X = None

    def fit(self, X, y, sample_weight=None):
        """Fit on in-memory or dask arrays (see `pgs.dask.PGSClassifier`); returns self."""
        if not isinstance(X, da.Array):
            return super().fit(X, y, sample_weight)
        client = get_client()
        if isinstance(y, da.Array):
            y = _fetch(client, y, DEFAULT_TIMEOUT, "y")
        if isinstance(sample_weight, da.Array):
            sample_weight = _fetch(client, sample_weight, DEFAULT_TIMEOUT, "sample_weight")
        X = _partition(X)
        self._dask_X, self._client = X, client
        try:
            return super().fit(shape_only_csr(X.shape), y, sample_weight)
        finally:
            self._dask_X = self._client = None

    def _rows(self, X, n_jobs):
        """Where ``sigma="auto"`` trains: the dask X's shards (`pgs.dask.training.DaskRows`)."""
        if self._dask_X is None:
            return super()._rows(X, n_jobs)
        return DaskRows(self._dask_X, self._client, merge_every=self.merge_every)

    def _fit_many(self, X, targets, warm_models, n_jobs, **kw):
        if self._dask_X is None:
            return super()._fit_many(X, targets, warm_models, n_jobs, **kw)
        # (known_classes: every problem of a fit holds both its targets, or all K classes)
        del kw["known_classes"], kw["k_above_rows"]
        return [train(self._dask_X, target, client=self._client, merge_every=self.merge_every,
                      warm_start=warm, **kw)
                for target, warm in zip(targets, warm_models or [None] * len(targets),
                                        strict=True)]


def _init_for(parent):
    """An ``__init__`` with the parameters of `parent`'s plus `merge_every` (keyword-only,
    default None)."""
    params = {name: par.default for name, par in inspect.signature(parent).parameters.items()}
    return E._init_with({**params, "merge_every": None})


@fill_doc("dask_estimator", "classifier", "estimator")
class PGSClassifier(_DaskFit, E.PGSClassifier):
    """`pgs.PGSClassifier` whose `fit` also takes dask arrays (dask-ml's convention).

    With a dask X (row-chunks of scipy.sparse CSR or NumPy), each one-vs-rest problem is
    trained by `pgs.dask.train`, one shard per row-chunk, on `pgs.dask.get_client()`'s
    client; y and sample_weight are gathered to it. With one chunk the model equals
    `pgs.PGSClassifier`'s bit for bit. Prediction takes in-memory X.

    Parameters
    ----------
    {parameters}
    """

    __init__ = _init_for(E.PGSClassifier)


@fill_doc("dask_estimator", "regressor", "estimator")
class PGSRegressor(_DaskFit, E.PGSRegressor):
    """`pgs.PGSRegressor` whose `fit` also takes dask arrays (see `PGSClassifier`).

    Parameters
    ----------
    {parameters}
    """

    __init__ = _init_for(E.PGSRegressor)
