"""Test helper: the peak of the allocations tracemalloc sees (numpy's buffers) during a call."""

import tracemalloc


def traced_peak(fn):
    """(peak bytes allocated while fn() ran, over what was allocated before; fn's result)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, result
