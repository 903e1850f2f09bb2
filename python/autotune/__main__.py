"""``python -m autotune ...``: the ``autotune`` command line (tune, cover, verify, best,
export, report, ...).

The command line is the ``autotune`` executable, not this extension: it runs candidate kernels
in worker processes of itself (isolation, so a kernel that crashes the GPU context fails alone),
which needs a real executable, and it keeps the command-line crates (clap, plotters, indicatif)
out of the Python extension. Wheels built by ``scripts/python-wheel.sh`` carry it in
``autotune/_bin/``; this module runs, in this order, that one, the file ``AUTOTUNE_BIN`` names,
or ``autotune`` on ``PATH`` (``cargo install --path .`` in the repository), replacing this
process so that exit codes, signals and Ctrl-C are the executable's own.
"""

import os
import shutil
import sys

__all__ = ["find_binary", "main"]


def find_binary():
    """The ``autotune`` executable this module runs, or ``None``."""
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "autotune")
    chosen = os.environ.get("AUTOTUNE_BIN")
    for path in (bundled, chosen):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("autotune")


def main(argv=None):
    """Runs the command line with ``argv`` (default: this process's arguments)."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = find_binary()
    if exe is None:
        sys.stderr.write(
            "Error: the autotune executable is not installed with this package (a wheel built by "
            "`pip install ./python` carries the runtime only).\n"
            "hint: install a wheel from scripts/python-wheel.sh, or run `cargo install --path .` "
            "in the repository, or set AUTOTUNE_BIN to the executable\n")
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
