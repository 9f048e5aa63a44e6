"""`python -m pgs` / `pgs`: the command line (`pgs demo` runs the built-in example)."""

import sys

from pgs.cli.main import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
