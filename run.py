"""`python run.py --config config.yml`: the paper's command line, the same as `optimas run`."""

import sys

from runner.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
