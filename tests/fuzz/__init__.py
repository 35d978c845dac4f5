"""Seed-reproducible random DAGs for differential testing.

``random_dag(seed) -> (outputs, bindings)`` builds a random polyarray
program from one integer seed; ``make_case(seed)`` returns the same program
as a ``Case`` that also carries NumPy's own answer (``case.expected``) and a
standalone Python script that rebuilds it (``case.script()``).  The command
line (long runs, minimizing, one seed's script) is ``tests/support/dag_generator.py``.

How a DAG is built.  Every operation is one line of Python source, such as
``v7 = ((v3 ^ v5) != 0).sum(axis=1)``, evaluated twice: with ``xp = polyarray``
on lazy arrays (the program under test) and with ``xp = numpy`` on the
bindings' values (the expected answer, computed by NumPy itself rather than by
polyarray's numpy target).  So the script printed for a failing seed is
exactly the program that failed, and NumPy's values are known for every
intermediate while the DAG is built: the generator uses them to keep every
case well defined:

* float -> int casts only of finite values in range (C leaves others
  undefined; NumPy's result is platform-dependent);
* integer ``//`` and ``%`` only by nonzero divisors, never MIN // -1;
* integer ``**`` only with exponents in 0..5 (negative ones raise);
* gathers only with in-bounds indices (negative in-bounds ones included);
  out-of-bounds checking is tested elsewhere;
* inexact float32 values never flow into float64 results (whose tolerance
  is float64's);
* sin and cos read exact values, or inexact ones within +-16
  (``ops_values.periodic_safe``): a large value's rounding becomes their
  absolute error;
* float sums and products only where no order can overflow (or a product
  underflow to 0): whether a result is 0, inf or NaN must not depend on the
  order (``exactness.reduction_order_safe``); float running sums and
  products (``cumsum``, ``cumprod``) also only where NumPy's sequential
  rounding is well within the tolerance (``exactness.scan_rounding_safe``);
* float values that decide something discrete (comparisons, truth tests,
  casts to integers, argmax/argmin, floor/rint/sign, ``//`` and ``%``) only
  where they are exact: every operation leading to them is exact in any
  evaluation order (no rounding), so fused multiply-adds, reduction orders
  and math libraries cannot change the answer.  Each float value carries a
  grid exponent ``e`` (all its values are multiples of 2**-e) or None
  (inexact); arithmetic checks its magnitude against the mantissa.

Integers (all widths, with values that overflow 8- and 16-bit intermediates)
are compared exactly, so wrapping must match NumPy's bit for bit.

Placeholder names come from a hostile list (C, C++, OpenCL and CUDA keywords,
macros and builtins; every name prefix the code generator uses; pairs such as
``x`` and ``p_x``) as often as from ordinary names.

Modules: ``dtypes`` and ``names`` (what is drawn from), ``exactness`` (float
grid exponents), ``case`` (``Entry``, ``Case``), ``builder`` (``_Builder``),
``ops_values``/``ops_shapes``/``ops_leaves``/``ops_functions`` (the op
generators; ``ops_functions``: NumPy's composed functions, ``ops_leaves``:
``pa.random`` draws among the leaves), ``generate``
(the ``OPS`` table, ``make_case``), ``runner`` (checking, workers, CLI).

A second generator writes random NumPy *functions* for ``pa.jit`` (writes to
arguments and views, ``out=``, created arrays, loops, graph breaks, NumPy's
errors): ``programs`` (``make_program``, ``Program``), ``program_inputs``
(arguments and their layouts), ``program_exprs`` (exact expressions, keys),
``program_statements``/``program_arrays``/``program_flow`` (the statement
generators: writes; views and creations; control flow, graph breaks and
errors), ``program_check`` (the differential check, minimizing); ``tests/fuzz/test_random_programs.py`` and
``dag_generator.py --programs`` run it.
"""
import os
import sys

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.dirname(_TESTS) not in sys.path:         # run as a script from anywhere
    sys.path.insert(0, os.path.dirname(_TESTS))
if _TESTS not in sys.path:                          # helpers.py, conftest.py
    sys.path.insert(0, _TESTS)

from fuzz.case import Case, Entry  # noqa: E402
from fuzz.dtypes import BOOL, DTYPES, FLOAT_DTYPES, INT_DTYPES, NARROW  # noqa: E402
from fuzz.generate import OPS, make_case, random_dag  # noqa: E402
from fuzz.names import GENERATED_NAMES, HOSTILE_NAMES, HOSTILE_PAIRS  # noqa: E402
from fuzz.runner import check_case, layouts, main, minimize, run_seed  # noqa: E402

__all__ = ["BOOL", "DTYPES", "FLOAT_DTYPES", "GENERATED_NAMES", "HOSTILE_NAMES",
           "HOSTILE_PAIRS", "INT_DTYPES", "NARROW", "OPS", "Case", "Entry", "check_case",
           "layouts", "main", "make_case", "minimize", "random_dag", "run_seed"]
