"""pgs on a Dask cluster: `train` and `read_svmlight` for row-chunked dask arrays, and the
estimators (``pip install "pgs[dask]"``). X is a dask array whose row-chunks are
scipy.sparse CSR matrices or NumPy arrays (dask-ml's convention), y a dask array with the
same row chunks; the chunks stay on the workers that hold them. Without a `client`
argument the current client is used, else a `LocalCluster` of one single-threaded worker
process per core, kept for the session. The user guide's docs/guide/dask.md is the
walk-through.
"""

try:
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:
    raise ImportError(
        f'pgs.dask needs dask and distributed: install them with pip install "pgs[dask]" '
        f"({exc})"
    ) from exc

from pgs.dask.client import close_local_cluster, get_client
from pgs.dask.reader import read_svmlight
from pgs.dask.training import train

# (and PGSClassifier, PGSRegressor: loaded on first access, they need scikit-learn)
__all__ = ["close_local_cluster", "get_client", "read_svmlight", "train"]


def __getattr__(name):
    # The estimators need scikit-learn: loaded on first access (as in pgs/__init__.py).
    if name in ("PGSClassifier", "PGSRegressor"):
        try:
            from pgs.dask import estimators
        except ImportError as exc:
            raise ImportError(f"pgs.dask.{name} needs scikit-learn: install it with "
                              f"pip install \"pgs[sklearn]\" ({exc})") from exc
        return getattr(estimators, name)
    raise AttributeError(f"module 'pgs.dask' has no attribute {name!r}")
