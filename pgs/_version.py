"""The package version (a leaf module: the file format writes it into every model)."""

__version__ = "0.1.0"
