"""`pgs.dask.train`: parallel PGS by merging dual states, with shards on Dask workers."""
