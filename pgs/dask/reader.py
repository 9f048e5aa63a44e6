"""`pgs.dask.read_svmlight`: svmlight files parsed on the workers, block by block, into
row-chunked dask arrays (scipy.sparse CSR chunks of X, NumPy chunks of y)."""

import contextlib
import errno
import io
import itertools
import operator
import os
from glob import has_magic
from types import SimpleNamespace

import dask
import dask.array as da
import fsspec
import numpy as np
import scipy.sparse as sp
from dask.bytes import read_bytes
from dask.utils import parse_bytes
from fsspec.core import get_fs_token_paths

from pgs.dask.client import gather, get_client, wait_for
from pgs.io import svmlight


def _parse(source, where, dtype, min_index, max_index):
    """One block parsed by `pgs.io.svmlight`'s parser (errors naming it `where`), its feature
    indices as written."""
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    with source if hasattr(source, "open") else contextlib.nullcontext(source) as f:
        return svmlight._parse_file(f, dtype=dtype, multilabel=False, require_qid=False,
                                    min_index=min_index, max_index=max_index, n_threads=1,
                                    name=where)


def _finish_block(p, shift, n_features):
    """The block's CSR with its indices shifted down by `shift` and `n_features` columns."""
    if shift:
        p = SimpleNamespace(**{**vars(p), "indices": p.indices - shift})  # (p is kept as it is)
    return svmlight._to_csr(p, n_features)


def _meta(p):
    """The small facts of a parsed block."""
    return SimpleNamespace(n_rows=p.n_rows, nnz=p.nnz, min_index=p.min_index,
                           max_index=p.max_index, at_limit=p.at_limit)


def _expand(paths):
    """The files named by a path, a glob or a list of them, in sorted order per pattern."""
    if isinstance(paths, (list, tuple)):
        if not paths:
            raise ValueError("paths is an empty list")
        return [found for p in paths for found in _expand(p)]
    if not isinstance(paths, str) and not hasattr(paths, "__fspath__"):
        raise TypeError(f"paths must be a path, a glob pattern or a list of them, "
                        f"got {type(paths).__name__}")
    paths = str(paths)
    fs, _, found = get_fs_token_paths(paths, mode="rb")
    if not has_magic(paths) and not (found and fs.exists(found[0])):
        # (as pgs.load_svmlight says it)
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), paths)
    if not found:
        raise FileNotFoundError(f"no file matches {paths!r}")
    prefix = paths.split("://", 1)[0] + "://" if "://" in paths else ""
    return [p if "://" in p or not prefix else prefix + p for p in found]


def _blocks(path, blocksize, dtype, min_index, max_index):
    """Delayed parses of one file: each `blocksize` bytes split at line ends, or the whole
    file when it is compressed (decompressed as it is read on the worker)."""
    if os.path.splitext(path)[1].lower() in svmlight._OPENERS:  # (which cannot be split)
        if "://" in path:
            source = fsspec.open(path, mode="rb", compression="infer")
        else:
            source = path       # (pgs decompresses it as it parses)
        # (not pure: the key would name the path only, not the file's contents)
        return [dask.delayed(_parse, pure=False)(source, path, dtype, min_index, max_index)]
    blocks = read_bytes(path, delimiter=b"\n", blocksize=blocksize, sample=False)[1][0]
    n = len(blocks)
    # (one block: the file's own name and line numbers, as pgs.load_svmlight gives them)
    return [dask.delayed(_parse, pure=True)(
                raw, path if n == 1 else f"{path} (block {i + 1} of {n}; line numbers "
                f"count from the block's first line)", dtype, min_index, max_index)
            for i, raw in enumerate(blocks)]


def read_svmlight(paths, *, n_features=None, dtype=np.float64, zero_based="auto",
                  blocksize="64MiB", client=None):
    """Read svmlight / libsvm files on the workers into row-chunked dask arrays.

    Each file is cut into blocks of about `blocksize` bytes at line ends (a compressed file
    is one block); each block is parsed by `pgs.load_svmlight`'s parser where its task runs,
    and kept there, ready for `pgs.dask.train`. The files are parsed once, by this call (the
    arrays returned are persisted, with known chunk sizes).

    Parameters
    ----------
    paths : str, path-like or list of them
        Files or glob patterns (``"data/part-*.svm"``); a pattern's files are taken in
        sorted order. Any file system fsspec knows (``s3://...``) as long as the
        workers can read it: a local path must exist on every worker.
    n_features, dtype, zero_based
        As for `pgs.load_svmlight_files`, over all the files.
    blocksize : int or str, default "64MiB"
        Bytes per block of an uncompressed file (a block ends at the first line end after
        it). The blocks are the chunks of X and y.
    client : distributed.Client, optional
        See `pgs.dask.get_client`.

    Returns
    -------
    X : dask.array.Array, shape (n_samples, n_features)
        One row-chunk per block, each a scipy.sparse CSR matrix (blocks that hold no
        row are left out).
    y : dask.array.Array of float64, shape (n_samples,)
        With the same row chunks.

    Raises
    ------
    ValueError, TypeError
        As `pgs.load_svmlight` raises them, with its messages; a malformed line names the
        file, and the block and the line within it when the file is cut in blocks.
    FileNotFoundError
        For a missing file (as `pgs.load_svmlight`), or a pattern no file matches.

    See Also
    --------
    pgs.load_svmlight : the same files read into memory in one process (the same X).
    """
    # (the checks, limits and messages of pgs.load_svmlight)
    dt, lowest, highest = svmlight.check_format_args(n_features, dtype, zero_based)
    try:
        blocksize = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    except ValueError:
        raise ValueError(f"blocksize must be a number of bytes (e.g. 67108864 or "
                         f"'64MiB'), got {blocksize!r}") from None
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)) \
            or blocksize < 1:
        raise ValueError(f"blocksize must be a number of bytes >= 1, got {blocksize!r}")
    client = get_client(client)

    files = _expand(paths)
    per_file = [_blocks(f, int(blocksize), dt.type, lowest, highest) for f in files]
    parsed = client.compute([b for blocks in per_file for b in blocks])
    meta = gather(client, client.map(_meta, parsed), what="the files' blocks")

    # The indexing decision and the width, over all files (as load_svmlight_files).
    ends = list(itertools.accumulate(map(len, per_file), initial=0))
    one_based, n_features = svmlight.columns(
        [meta[a:b] for a, b in itertools.pairwise(ends)], zero_based, n_features)

    keep = [j for j, m in enumerate(meta) if m.n_rows > 0] or [0]
    rows = [meta[j].n_rows for j in keep]
    xs = client.map(_finish_block, [parsed[j] for j in keep], shift=int(one_based),
                    n_features=n_features)
    ys = client.map(operator.attrgetter("y"), [parsed[j] for j in keep])
    wait_for(client, xs + ys, what="the files' blocks")
    del parsed
    x_meta = sp.csr_matrix((0, n_features), dtype=dt)
    X = da.concatenate([da.from_delayed(f, shape=(r, n_features), dtype=dt, meta=x_meta)
                        for f, r in zip(xs, rows, strict=True)])
    y = da.concatenate([da.from_delayed(f, shape=(r,), dtype=np.float64, meta=np.empty(0))
                        for f, r in zip(ys, rows, strict=True)])
    return X, y
