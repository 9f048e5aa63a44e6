"""Training: validated arguments to a fitted model (pgs.train, the sigma search, CSGD)."""
