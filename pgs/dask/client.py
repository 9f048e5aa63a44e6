"""Which `distributed` client `pgs.dask` works with: the one given, the current one, or a
`LocalCluster` of the machine's cores started once and kept for the session."""

import threading

import distributed

from pgs.io.svmlight import usable_cpus

_LOCAL = None          # the (cluster, client) pgs.dask started, if any
_LOCAL_LOCK = threading.Lock()


def get_client(client=None):
    """The client to run on.

    Parameters
    ----------
    client : distributed.Client, optional
        Used as given; by default the current client (`distributed.get_client`), else a
        `LocalCluster` of one single-threaded worker process per usable core, started
        on first use and kept for the session. For a real cluster, create the client
        first: ``Client("tcp://scheduler:8786")``.

    Returns
    -------
    distributed.Client
    """
    global _LOCAL
    if client is not None:
        if not isinstance(client, distributed.Client):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        return client
    try:
        return distributed.get_client()
    except ValueError:                # no current client
        pass
    with _LOCAL_LOCK:
        if _LOCAL is None or _LOCAL[1].status in ("closing", "closed"):
            # (a process per worker keeps the workers' Python parts apart too)
            cluster = distributed.LocalCluster(n_workers=usable_cpus(), processes=True,
                                               threads_per_worker=1, dashboard_address=":0")
            # (the default client from now on, so that X.compute() works; it talks to the local
            # workers directly, as the shards' actor calls always do)
            _LOCAL = (cluster, distributed.Client(cluster, direct_to_workers=True))
        return _LOCAL[1]


def close_local_cluster():
    """Close the `LocalCluster` pgs.dask started, if any (it also closes at exit)."""
    global _LOCAL
    with _LOCAL_LOCK:
        if _LOCAL is not None:
            cluster, client = _LOCAL
            _LOCAL = None
            client.close()
            cluster.close()


#: Seconds any one wait of pgs.dask (a round of training, the parse of a file's blocks) may
#: last by default: past it, TimeoutError.
DEFAULT_TIMEOUT = 600.0


def check_timeout(timeout):
    """`timeout` as a float > 0 (seconds), or None for `DEFAULT_TIMEOUT`."""
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    return float(timeout)


def wait_for(client, futures, timeout=DEFAULT_TIMEOUT, what="the tasks"):
    """Wait at most `timeout` seconds for `futures` on `client` (TimeoutError naming `what`
    past it); the first failed one re-raises its task's exception here."""
    try:
        with client.as_current():
            distributed.wait(futures, timeout=timeout)
    except TimeoutError:
        left = sum(not f.done() for f in futures)
        raise TimeoutError(f"pgs.dask: {what} did not finish within timeout={timeout:g} s "
                           f"({left} of {len(futures)} tasks still waiting; are there "
                           f"workers? raise timeout= for longer tasks)") from None
    for f in futures:
        if f.status == "error":
            f.result()


def gather(client, futures, timeout=DEFAULT_TIMEOUT, what="the tasks"):
    """`client.gather(futures)` once they are done, waiting `timeout` seconds at most."""
    wait_for(client, futures, timeout, what)
    return client.gather(futures)
