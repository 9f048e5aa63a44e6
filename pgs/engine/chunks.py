"""Long runs in chunks, so that Ctrl-C stops every long call within a fraction of a second.

A SIGINT waits until the compiled kernel returns, so the solvers (which resume exactly: a
chunked run is bit-identical to an unsplit one) advance a chunk at a time; between chunks
Python runs its signal handlers and a worker thread checks whether it must stop.
`run_on_threads` keeps the main thread, the only one signals reach, waiting in short slices,
and `interrupts_to` turns Ctrl-C there into a request to stop.
"""

import contextlib
import signal
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

#: Work per chunk, in non-zeros read (times the outputs they update): some milliseconds
#: of kernel time, far below the 0.5 s a Ctrl-C may take, far above a call's overhead.
#: The rounds' workers (`pgs.engine.rounds.run_shard`) take a quarter of it.
CHUNK_WORK = 2**22
#: Seconds the main thread waits at a time for worker threads (then checks signals).
WAIT_SLICE = 0.05


class Stopped(Exception):
    """Raised in a worker thread whose run was stopped (another worker failed, or the
    main thread was interrupted); never reaches the caller."""


def run_chunked(step_to, t, t_end, work_per_step, stop=None):
    """Advance a run from step `t` to `t_end` by calls ``step_to(t_next)`` (the kernel, which
    raises on failure), each `CHUNK_WORK` / `work_per_step` steps further at most (the
    non-zeros a step reads, times the outputs updated); `Stopped` at a chunk once `stop` is
    set."""
    step = max(1, int(CHUNK_WORK / max(float(work_per_step), 1.0)))
    while t < t_end:
        if stop is not None and stop.is_set():
            raise Stopped
        t = min(t + step, t_end)
        step_to(t)


def wait_or_stop(futures, stop):
    """The results of `futures`, in order, waiting in slices of `WAIT_SLICE` s so that Ctrl-C
    reaches the main thread; on an interruption or a worker's error `stop` is set, and the
    exception propagates once the others have left at their next chunk."""
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=WAIT_SLICE, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()          # a worker's error, at once
        return [future.result() for future in futures]
    except BaseException:
        stop.set()
        wait(futures)
        raise


@contextlib.contextmanager
def interrupts_to(stop):
    """Within the block, Ctrl-C sets `stop` (the workers leave at their next chunk) and
    KeyboardInterrupt is raised as the block ends, instead of wherever the main thread is:
    raised inside concurrent.futures' loops over its locks (`wait` acquires each future's),
    it can leave one held, and the worker that completes that future then waits forever.
    Only in the main thread under Python's own handler (another is the caller's)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    interrupted = threading.Event()

    def on_sigint(signum, frame):
        interrupted.set()
        stop.set()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if interrupted.is_set():
            raise KeyboardInterrupt     # (over the workers' Stopped)


def run_on_threads(work, n):
    """``work(g, stop)`` for g in range(n) on n threads; their results, in order
    (`wait_or_stop`; Ctrl-C: `interrupts_to`)."""
    stop = threading.Event()
    with interrupts_to(stop), ThreadPoolExecutor(max_workers=n) as pool:
        return wait_or_stop([pool.submit(work, g, stop) for g in range(n)], stop)
