"""`python -m pgs` / `pgs`: train on a built-in generated data set and print a report."""

import sys

from pgs._demo import run_demo


def main(argv=None):
    """Entry point of the `pgs` command (`pgs demo`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["demo"]):
        print("usage: pgs demo", file=sys.stderr)
        return 2
    run_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
