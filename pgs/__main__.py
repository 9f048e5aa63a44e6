"""`python -m pgs`: train on a built-in generated data set and print a report."""

from pgs._demo import run_demo

if __name__ == "__main__":
    run_demo()
