"""DAG -> fused Loopy kernels: code generation's face (docs/DESIGN.md, "Pipeline").

``lower_program(outputs, target)`` (``pipeline.py``: its steps in pipeline
order, plan, buffer names, kernels, code, launch list) gives ``Lowered``
(``lowered.py``): plain data, plus each kernel's loopy objects for
inspection, so targets cache it on disk and launch it themselves.  This
module holds what the steps share: placeholders' device names
(``c_name``), the new-kernel budget (``kernel_budget``), loopy's caches off
while lowering, and the compile caches' key (``program_key``).
"""
from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager

import numpy as np

from polyarray.ir import nodes as N

log = logging.getLogger("polyarray.codegen")

# the most kernels one lowering may generate anew (None: any number); pa.jit
# sets it (``kernel_budget``), and runs on the host a function that needs more
_KERNEL_BUDGET = contextvars.ContextVar("polyarray_kernel_budget", default=None)


class TooManyKernels(Exception):
    """A lowering needed more new kernels than ``kernel_budget`` allows:
    code whose every step is a kernel of its own (loops over shrinking
    slices, offsets per iteration), where generating them would cost more
    than it saves."""


@contextmanager
def kernel_budget(limit):
    """Lowerings inside may generate at most ``limit`` distinct kernels
    (kernels that are the same code on other buffers count once); more
    raises ``TooManyKernels`` before any is generated."""
    token = _KERNEL_BUDGET.set(limit)
    try:
        yield
    finally:
        _KERNEL_BUDGET.reset(token)

def c_name(name: str) -> str:
    """The device-code name of the placeholder ``name``: ``p<len>_<name>``.

    Every placeholder gets the prefix, so no user name can be a C, OpenCL or
    CUDA keyword, macro or builtin, and none can equal a generated name
    (kernels ``k<n>_...``, buffers ``data<n>``/``out<n>``/``t<n>``, loops,
    temporaries: none of them starts with ``p`` and a digit).  The length
    makes it injective even against names derived by suffixing (``x_r``,
    ``x_fetch``): ``p1_x_r`` can be no placeholder's name, since a name
    of length 1 is one character.  Names outside C's alphabet (``π``) are
    ``p<len>x_<utf-8 hex>``.  ``prog.source`` lists the mapping."""
    if name.isascii() and name.isidentifier():
        return f"p{len(name)}_{name}"
    # a Python identifier outside C's alphabet (``π``): its UTF-8 bytes in hex
    return f"p{len(name)}x_{name.encode().hex()}"


def index_dtype_for(order):
    big = any(n.size > 2**31 - 1 for n in order)
    return np.dtype(np.int64) if big else np.dtype(np.int32)


def data_nodes(order):
    return [n for n in order if isinstance(n, N.DataWrapper)]


def without_loopy_caches(fn):
    """Run ``fn`` with loopy's disk caches off, and the warnings of loopy
    and islpy logged (``logs.routed_warnings``), not shown to users.
    polyarray caches whole programs under its own keys (``program_key``);
    loopy's keys (``LoopyKeyBuilder``) hash ``np.uint64(0)``,
    ``np.float64(0)`` and ``0`` alike, so a kernel that differs from a cached
    one only in a constant's type got the cached kernel's code (a uint64
    product rounded through double: fuzzer seeds 85 and 167)."""
    from functools import wraps

    @wraps(fn)
    def run(*args, **kwargs):
        import loopy as lp
        from .logs import routed_warnings
        with lp.CacheMode(False), routed_warnings(log, "lowering"), collector_paused():
            return fn(*args, **kwargs)
    return run


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused (reference counting still
    frees what lowering drops).  Lowering allocates millions of small
    objects; each gen-2 collection they trigger walks every object of the
    process (loopy, islpy, numpy and the user's DAG): a third of the
    lowering of a chain of 2000 ops went there.  A collector someone
    else paused stays paused; concurrent lowerings may re-enable it early
    (harmless: only the saving is lost)."""
    import gc
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def program_key(outputs) -> str:
    """The compile caches' key of the computation: each node's
    ``local_digest`` (its own structure, children and data values aside) in
    topological order, with its children's positions in that order, then the
    outputs' positions.  So equal DAGs get one key in any process, and a DAG
    that differs in structure or sharing (``a + a`` against ``a + b``) gets
    another; data values are left out (they are passed as kernel arguments),
    so re-running with new data reuses the kernels.  O(N)."""
    import hashlib
    order = N.topological_order(outputs)
    num = {id(n): k for k, n in enumerate(order)}
    h = hashlib.sha256(b"polyarray-program-v2")
    for n in order:
        h.update(f"{n.local_digest}{[num[id(c)] for c in n.children()]}\n".encode())
    h.update(repr([num[id(o)] for o in outputs]).encode())
    return h.hexdigest()


# the data lowering hands a target, and the pipeline that makes it (below the
# definitions above, which both import)
from .lowered import BufferSpec, KernelInfo, Lowered           # noqa: E402,F401
from .pipeline import (LAUNCHES_PER_NEW_KERNEL, REPEATING_MAX_KERNELS,  # noqa: E402,F401
                       lower_program, repeating_budget)
