"""`nklab run|bench|profile FILE.py:FUNCTION ...` run here: the nklab command
re-executes itself as `python3 -m nklab._cli ...`, and the same C command code
runs with the Python kernel."""
import sys

from . import _nklab

if __name__ == "__main__":
    sys.stdout.flush()
    sys.exit(_nklab._cli_main(sys.argv[1:]))
