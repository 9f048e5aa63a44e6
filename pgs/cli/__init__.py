"""The `pgs` command line."""
