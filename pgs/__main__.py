"""`python -m pgs`: the `pgs` command line (`python -m pgs demo` runs the built-in example)."""

import sys

from pgs._cli import main

if __name__ == "__main__":
    sys.exit(main())
