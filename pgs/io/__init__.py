"""The svmlight / libsvm reader and writer, and the atomic file writer they share with
the model files and the command line."""

import os
import tempfile


def write_atomic(path, write):
    """Call ``write(fh)`` on a temporary binary file beside `path`, synced, then renamed over
    `path`: a failed or interrupted write leaves `path` as it was and no temporary file."""
    fd, tmp = tempfile.mkstemp(prefix=".pgs-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
