"""Running the kernel: the solver's life cycle and status, chunked calls that Ctrl-C
stops, and rounds of workers whose states are merged (threads here, Dask in pgs.dask)."""
