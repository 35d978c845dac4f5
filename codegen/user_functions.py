"""User C functions: the device side of ``pa.elementwise_kernel`` and
``pa.reduction_kernel`` (CuPy's ``ElementwiseKernel``/``ReductionKernel``).

A custom op is no new node type: it is a ``Call`` in an IndexLambda
expression (or the operation of a ``Reduce``) to a typed C function that
loopy emits as a preamble, as ``cfuncs.PaFunction`` does for our helpers.
So it fuses with its neighbours like any ufunc.  The function's name,
``pa_u_<kernel>_<digest>_<role>``, carries a digest of everything that
makes its C source (parameter types, statements, preamble), so node
digests, intern keys and program keys change with the C text, and no
generated code depends on anything but that text.

``register`` keeps each function's ``UserFunction`` (and the NumPy
reference the user gave, if any: it is not part of the digest) in a
process-wide table that lowering and the NumPy target read by name.  It
imports no loopy (the frontend builds custom kernels with NumPy alone);
their loopy side is ``user_callables``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pymbolic.primitives as p
from polyarray.ir.expr import called_functions

PREFIX = "pa_u_"
MARKER = "/* polyarray custom kernel: "
# a raw kernel's source (``raw.source_after``) between these lines
RAW_MARK = "/* raw kernel {name!r} ({language}, pa.raw_kernel) */"
RAW_END = "/* end of raw kernel {name!r} */"
LANGUAGES = {"cuda": "CUDA", "opencl": "OpenCL"}      # of raw kernels, as said


@dataclass(frozen=True)
class UserFunction:
    """One C function of a custom kernel.

    ``params``: ((C name, dtype), ...) taken by value; ``variables``: the
    local variables declared first (a kernel's outputs, which the statements
    assign); ``returns``: the C expression returned (an output's name, or
    the user's expression); ``typedefs``: ((placeholder, dtype), ...) so the
    statements may name ``T``; ``kind``: "elementwise_kernel" or
    "reduction_kernel"; ``role``: out<k>, map, reduce, identity, post<k>."""
    kernel: str
    kind: str
    role: str
    params: tuple
    variables: tuple
    statements: str
    returns: str
    result: np.dtype
    typedefs: tuple = ()
    preamble: str = ""
    partner: str = ""       # a combine's identity function (in the digest, not the C)
    reference: str = ""     # the NumPy reference's code (``reference_key``), digest only

    @property
    def digest(self) -> str:
        text = repr((self.kernel, self.kind, self.role,
                     tuple((n, np.dtype(d).str) for n, d in self.params),
                     tuple((n, np.dtype(d).str) for n, d in self.variables),
                     self.statements, self.returns, np.dtype(self.result).str,
                     tuple((n, np.dtype(d).str) for n, d in self.typedefs), self.preamble,
                     self.partner) + ((self.reference,) if self.reference else ()))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.kernel}_{self.digest}_{self.role}"

    def c_source(self, typename, qualifier) -> str:
        """The definition; ``typename(dtype)`` spells a value of ``dtype`` as
        the target stores it (booleans as bytes: ``emit/cfuncs.storage_dtype``),
        ``qualifier`` is the dialect's for a helper (``static inline``)."""
        T = typename
        params = ", ".join(f"{T(d)} {n}" for n, d in self.params) or "void"
        qual = qualifier
        lines = [f"{MARKER}{self.kernel} ({self.kind}, {self.role}) */",
                 f"{qual} {T(self.result)} {self.name}({params})", "{"]
        lines += [f"  typedef {T(d)} {n};" for n, d in self.typedefs]
        lines += [f"  {T(d)} {n};" for n, d in self.variables]
        if self.statements:
            lines += ["  " + line for line in self.statements.rstrip().rstrip(";").splitlines()]
            lines[-1] += ";"
        lines += [f"  return ({T(self.result)}) ({self.returns});", "}", ""]
        return "\n".join(lines)


_FUNCTIONS: dict = {}       # C name -> UserFunction
_REFERENCES: dict = {}      # C name -> the user's NumPy reference (or None)


def reference_key(fn) -> str:
    """A reference's code as text (bytecode, constants, names; nested code
    objects by their own key): one C kernel given two references is two
    functions, each with its NumPy meaning, and the same code in another
    process gives the same key (no addresses)."""
    import types
    if fn is None:
        return ""
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"{type(fn).__module__}.{type(fn).__qualname__}"

    def text(c):
        consts = tuple(text(k) if isinstance(k, types.CodeType) else repr(k)
                       for k in c.co_consts)
        return hashlib.sha256(c.co_code + repr((consts, c.co_names)).encode()).hexdigest()
    return text(code)[:16]


def register(fn: UserFunction, reference=None) -> str:
    """Record ``fn`` with its reference (whose code is part of the name, so
    two references of one C kernel are two functions); returns the name."""
    if reference is not None:
        import dataclasses
        fn = dataclasses.replace(fn, reference=reference_key(reference))
    name = fn.name
    _FUNCTIONS[name] = fn
    if reference is not None or name not in _REFERENCES:
        _REFERENCES[name] = reference
    return name


def restore(fn: UserFunction, reference=None) -> None:
    """Record ``fn`` as another process registered it (a pickled DAG's
    custom kernels): under its name as made there."""
    _FUNCTIONS.setdefault(fn.name, fn)
    if _REFERENCES.get(fn.name) is None:
        _REFERENCES[fn.name] = reference


# custom kernels whose neighbouring elements share work: a work-item that
# computes a run of this many neighbours computes the shared part once (the C
# compiler merges the inlined calls).  Philox4x32's random blocks: 4 words,
# shared by up to 4 elements (polyarray/ops/random.py).
SHARED_RUNS = {"philox4x32_10": 4, "philox4x32_10_word": 4}


def shared_run(expr) -> int:
    """The longest run of neighbours that share work among the custom
    kernels ``expr`` calls (1: none)."""
    run = 1
    for name in called_functions(expr):
        if isinstance(name, str) and name.startswith(PREFIX):
            for kernel, n in SHARED_RUNS.items():
                if name.startswith(f"{PREFIX}{kernel}_"):
                    run = max(run, n)
    return run


def is_user_function(name) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX) and name in _FUNCTIONS


def lookup(name) -> UserFunction:
    return _FUNCTIONS[name]


def reference_of(name):
    return _REFERENCES.get(name)


def any_registered() -> bool:
    return bool(_FUNCTIONS)


def user_calls(expr) -> list:
    """The user functions an IndexLambda expression calls, in order."""
    return [name for name in called_functions(expr) if is_user_function(name)]


def custom_kernel_names(source: str) -> list:
    """The custom kernels whose functions a generated source defines
    (for build errors: the compiler's message names our function)."""
    names = []
    for line in source.splitlines():
        if line.startswith(MARKER):
            kernel = line[len(MARKER):].split(" (", 1)[0]
            if kernel not in names:
                names.append(kernel)
    return names


def build_error_note(source: str, message: str) -> str:
    """What a failed device build says about the user's code in the
    generated ``source``: "" where it has none; else the lines of custom
    kernels' functions and raw kernels (``pa.raw_kernel``) that the
    compiler's message points at (clang's ``file.cl:11:5``, nvcc's
    ``file.cu(11)``), or where each of them is."""
    import re
    lines = source.splitlines()
    pieces = _user_code(lines)
    if not pieces:
        return ""
    found = []
    for m in re.finditer(r"\.(?:cl|cu|cpp|c)[:(](\d+)", message):
        n = int(m.group(1))
        owner = [what for first, last, what in pieces if first <= n <= last]
        if owner and n <= len(lines):
            entry = f"{owner[-1]}, line {n}: {lines[n - 1].strip()}"
            if entry not in found:
                found.append(entry)
    if not found:
        custom = custom_kernel_names(source)
        found = [f"custom kernels in this program: {', '.join(custom)}"] if custom else []
        found += [what for _, _, what in pieces if what.startswith("raw")]
    return "the device compiler refused the user's code in this program:\n  " + \
        "\n  ".join(found)


def _user_code(lines) -> list:
    """``[(first line, last line, what)]`` of the user's code in a source:
    a custom kernel's functions run to the next piece (or the end), a raw
    kernel to its end marker."""
    import re
    marks = []
    for k, line in enumerate(lines, 1):
        m = re.fullmatch(r"/\* raw kernel '(\w+)' \((\w+), pa\.raw_kernel\) \*/", line)
        if line.startswith(MARKER):
            marks.append((k, None, f"custom kernel {line[len(MARKER):].split(' */')[0]}"))
        elif m:
            end = next((j for j in range(k, len(lines) + 1)
                        if lines[j - 1] == RAW_END.format(name=m.group(1))), len(lines) + 1)
            language = LANGUAGES.get(m.group(2), m.group(2))
            marks.append((k, end - 1, f"raw kernel {m.group(1)!r} ({language}, lines "
                                      f"{k + 1}-{end - 1} of prog.source)"))
    return [(k, last if last is not None else (nxt[0] - 1 if nxt else len(lines)), what)
            for (k, last, what), nxt in zip(marks, marks[1:] + [None])]


# -- Reduce.op of a custom reduction ------------------------------------
# ``Reduce.op`` is the combine function's name (an identifier, so kernel
# names built from it stay valid); its digest covers the identity's name.

def is_user_reduce(op) -> bool:
    return isinstance(op, str) and op.startswith(PREFIX)


def identity_call(op, functions) -> p.Call:
    """The identity of a custom reduction as an expression (empty ones)."""
    identity = lookup(op).partner
    functions.add(identity)
    return p.Call(p.Variable(identity), ())


def lower_user_call(name, args, functions):
    """``name(*args)`` (``args``: (expr, dtype), already of the parameter
    types) -> ``(loopy call, result dtype)``."""
    functions.add(name)
    return p.Call(p.Variable(name), tuple(e for e, _ in args)), np.dtype(lookup(name).result)


__all__ = ["UserFunction", "any_registered", "build_error_note", "custom_kernel_names",
           "identity_call", "is_user_function", "is_user_reduce", "lookup", "lower_user_call",
           "reference_of", "register", "user_calls"]
