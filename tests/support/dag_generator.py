"""Command line of the differential fuzzer; the code is the ``tests/fuzz`` package.

    python tests/support/dag_generator.py --target opencl --n 2000 --start 0
    python tests/support/dag_generator.py --target cuda --n 2000 --minimize
    python tests/support/dag_generator.py --target cuda-nvcc --n 300   # CUDA source, no GPU
    python tests/support/dag_generator.py --target opencl --seed 1234 --show   # the script
    python tests/support/dag_generator.py --programs --target opencl --n 300   # pa.jit functions
    python tests/support/dag_generator.py --programs --target numpy --seed 16 --show

prints every failing seed (layout, short description, first mismatch or
exception, and with ``--minimize`` the smallest failing sub-expression) and a
summary line "N passed, M failed".  The package's public names are re-exported
here: the scripts printed for large cases say ``from dag_generator import
make_case``.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (_HERE, os.path.dirname(_HERE)):      # support/, and tests/ (the fuzz package)
    if _path not in sys.path:
        sys.path.insert(0, _path)

from fuzz import *  # noqa: E402,F401,F403
from fuzz.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
