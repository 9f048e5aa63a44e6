"""`pgs.dask.PGSClassifier` and `pgs.dask.PGSRegressor`: the scikit-learn estimators, whose
`fit` also takes row-chunked dask arrays (trained by `pgs.dask.train`'s rounds on their
shards)."""

import inspect

import dask.array as da
import numpy as np
from sklearn.utils import assert_all_finite, check_consistent_length, column_or_1d
from sklearn.utils.validation import validate_data

from pgs import estimators as E
from pgs.dask.client import DEFAULT_TIMEOUT, get_client
from pgs.dask.training import _fetch, _partition, train
from pgs.rules.docstrings import fill_doc


class _DaskFit:
    """`fit` on a dask X: the estimator's own `fit` with X kept on the cluster, validated
    by its shape (`_validate`) and trained by `pgs.dask.train` (`_train_function`). In-memory
    input is fitted as by the parent class; a `partial_fit` batch is gathered to the client."""

    def fit(self, X, y, sample_weight=None):
        """Fit on in-memory or dask arrays (see `pgs.dask.PGSClassifier`); returns self."""
        if isinstance(X, da.Array):
            y, sample_weight = (_fetch(get_client(), a, DEFAULT_TIMEOUT, what)
                                if isinstance(a, da.Array) else a
                                for a, what in ((y, "y"), (sample_weight, "sample_weight")))
        return super().fit(X, y, sample_weight)

    def partial_fit(self, X, y, *args, **kwargs):
        """`partial_fit` of the parent class; a dask batch is gathered to the client."""
        if isinstance(X, da.Array):
            X = _fetch(get_client(), X, DEFAULT_TIMEOUT, "X")
        return super().partial_fit(X, y, *args, **kwargs)

    def _validate(self, X, *y, reset, y_numeric=False):
        if not (isinstance(X, da.Array) and y):       # (in memory, or a prediction's X)
            return super()._validate(X, *y, reset=reset, y_numeric=y_numeric)
        X = _partition(X)       # (the row chunks' sizes known: X's shape is)
        validate_data(self, X, skip_check_array=True, reset=reset)   # (n_features_in_)
        y = column_or_1d(y[0], warn=True)      # (scikit-learn's checks of y, as for X in memory)
        if y_numeric:
            y = y.astype(np.float64) if y.dtype.kind == "O" else y
            assert_all_finite(y, input_name="y")
        check_consistent_length(X, y)
        return X, y

    def _train_function(self, X):
        """What trains on `X`: `pgs.dask.train` on X's own chunks (one shard each, on
        `get_client()`'s client) for a dask X, else the parent's."""
        if not isinstance(X, da.Array):
            return super()._train_function(X)

        def on_the_cluster(X, y, n_jobs, **kwargs):     # (the shards are X's chunks)
            return train(X, y, client=get_client(), merge_every=self.merge_every, **kwargs)
        return on_the_cluster


def _init_for(parent):
    """An ``__init__`` with the parameters of `parent`'s plus `merge_every` (keyword-only,
    default None)."""
    params = {name: par.default for name, par in inspect.signature(parent).parameters.items()}
    return E._init_with({**params, "merge_every": None})


@fill_doc("dask_estimator", "classifier", "estimator")
class PGSClassifier(_DaskFit, E.PGSClassifier):
    """`pgs.PGSClassifier` whose `fit` also takes dask arrays (dask-ml's convention).

    With a dask X (row-chunks of scipy.sparse CSR or NumPy), the one-vs-rest problems are
    trained together, each as `pgs.dask.train` would train it, one shard per row-chunk, on
    `pgs.dask.get_client()`'s client; y and sample_weight are gathered to it. With one
    chunk the model equals `pgs.PGSClassifier`'s bit for bit. Prediction takes in-memory X.

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
