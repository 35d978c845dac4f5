"""Corrections installed into loopy before any kernel is generated: where
loopy's own output would depend on the process (hash seeds, set order) or
print a division C computes otherwise, these make it one function of the
kernel.

  ilp_order.py       one nesting of ILP loops in every process
  hash_order.py      barrier comments and affine terms in one order
  exact_division.py  subscript divisions that C computes as written

and ``codegen/complex_types.py`` gives the OpenCL and CUDA targets the
complex dtypes they lack (type names, typedefs, constants, conversions).

``install()`` installs them all (idempotent); ``lower_program`` calls it
first.  ``caches.without_loopy_caches`` is the conditions a lowering runs
loopy under: its disk caches off (their keys confuse constants' types), its
warnings logged, the cyclic collector paused."""
from __future__ import annotations


def install():
    from .exact_division import install as exact_division
    from .hash_order import install as hash_order
    from .ilp_order import install as ilp_order
    ilp_order()         # loopy's ilp loop order, fixed
    hash_order()        # barrier comments, affine terms
    exact_division()    # subscript divisions as C computes them
    from ..complex_types import install as complex_types
    complex_types()     # complex dtypes in the OpenCL and CUDA targets
