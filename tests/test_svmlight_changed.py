"""pgs.load_svmlight on a file that changes while it is read: an exception, never a signal."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pgs

# Reads a plain file again and again while another thread truncates it at a random
# moment; prints how the reads ended. A reader that memory-maps the file dies here by
# SIGBUS (touching a mapped page past the new end of the file).
TRUNCATE_WHILE_READING = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    import pgs

    path, seconds = sys.argv[1], float(sys.argv[2])
    rng = np.random.default_rng(0)
    rows = [b"%d " % (i % 2) + b" ".join(b"%d:%.17g" % (j + 1, rng.random())
                                         for j in range(0, 400, 7)) + b"\\n"
            for i in range(2000)]
    text = b"".join(rows) * 8  # ~13 MB: several blocks
    outcomes = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with open(path, "wb") as fh:
            fh.write(text)
        delay = rng.uniform(0, 0.02)
        cut = int(rng.integers(0, len(text)))

        def truncate():
            time.sleep(delay)
            os.truncate(path, cut)

        t = threading.Thread(target=truncate)
        t.start()
        try:
            X, y = pgs.load_svmlight(path, n_threads=int(rng.integers(1, 3)))
            outcome = "read"
        except (ValueError, OSError) as exc:
            assert path in str(exc), exc
            outcome = type(exc).__name__
        t.join()
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(outcomes)
""")


def test_file_truncated_while_read_raises_not_crashes(tmp_path):
    path = tmp_path / "shrinking.svm"
    out = subprocess.run([sys.executable, "-c", TRUNCATE_WHILE_READING, str(path), "4"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    outcomes = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own output
    assert sum(outcomes.values()) >= 5, outcomes


def test_file_shorter_than_when_opened_is_an_oserror(tmp_path, monkeypatch):
    """Deterministic: the file loses its tail between the size check and the reading."""
    path = tmp_path / "cut.svm"
    text = b"".join(b"%d 1:%d 7:0.5\n" % (i % 2, i) for i in range(2000))
    path.write_bytes(text)
    real_fstat = os.fstat

    def fstat_then_truncate(fd):
        st = real_fstat(fd)
        os.truncate(path, len(text) // 2)  # after the reader has taken the size
        return st

    monkeypatch.setattr(os, "fstat", fstat_then_truncate)
    with pytest.raises(OSError, match=rf"{path}: the file changed while being read"):
        pgs.load_svmlight(path, n_threads=1)


def test_file_grown_while_read_is_an_oserror(tmp_path, monkeypatch):
    path = tmp_path / "grow.svm"
    text = b"".join(b"%d 1:%d 7:0.5\n" % (i % 2, i) for i in range(2000))
    path.write_bytes(text)
    real_fstat = os.fstat
    calls = []

    def fstat_then_append(fd):
        st = real_fstat(fd)
        if not calls:
            with open(path, "ab") as fh:
                fh.write(b"1 1:1\n")
        calls.append(1)
        return st

    monkeypatch.setattr(os, "fstat", fstat_then_append)
    with pytest.raises(OSError, match="changed while being read"):
        pgs.load_svmlight(path, n_threads=1)
    monkeypatch.setattr(os, "fstat", real_fstat)
    X, y = pgs.load_svmlight(path)
    assert X.shape[0] == 2001 and np.array_equal(y[:4], [0, 1, 0, 1])
