"""Hand-written kernels as DAG nodes (``pa.raw_kernel``): the parameter
list read and checked, and one ``RawKernelOutput`` node per declared output
of a launch.  The kernel itself is the user's C; every check that can be
made without a compiler is made here, at the user's line: parameter types
against the arrays' dtypes, output declarations, scalar values, launch
sizes."""
from __future__ import annotations

import numbers
import re

import numpy as np

from polyarray.ir import nodes as N
from polyarray.ir.raw_params import C_IDENTIFIER, parse_params
from .creation import _normalize_shape, as_node

LANGUAGES = ("cuda", "opencl")

_RESERVED = re.compile(r"(k\d+_|pa_|p\d|lid$|gid$|bIdx$|tIdx$)")


def _strip_comments(source):
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)


def signature(source, name, language):
    """The parameter list of kernel ``name`` in ``source`` (the text between
    its parentheses)."""
    head = r"__global__" if language == "cuda" else r"(?:__kernel|\bkernel)"
    attrs = r"(?:(?:__launch_bounds__\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\))\s*)*"
    pattern = (head + r"\s+" + attrs + r"void\s+" + attrs + re.escape(name)
               + r"\s*\(([^)]*)\)")
    found = re.findall(pattern, _strip_comments(source), flags=re.S)
    decl = ("__global__ void" if language == "cuda" else "__kernel void") + f" {name}(...)"
    if not found:
        raise ValueError(f"raw kernel {name!r}: the {language} source defines no "
                         f"'{decl}'; check the name, or pass params=")
    if len(found) > 1:
        raise ValueError(f"raw kernel {name!r}: the source defines '{decl}' {len(found)} "
                         "times; pass params= for the one to launch")
    return found[0]


def make_spec(source, name, language, params=None, reference=None) -> N.RawKernelSpec:
    """The kernel's description, checked: the language, the name (a C
    identifier that no generated name can be), the parameters (read from
    ``source`` unless ``params`` is given)."""
    if language not in LANGUAGES:
        raise ValueError(f"raw kernel {name!r}: language must be 'cuda' or 'opencl', "
                         f"got {language!r}")
    if not isinstance(source, str) or not isinstance(name, str):
        raise TypeError("pa.raw_kernel(source, name): both must be strings")
    if not C_IDENTIFIER.match(name) or _RESERVED.match(name):
        raise ValueError(f"raw kernel name {name!r} must be a C identifier that does not "
                         "start with k<digits>_, pa_ or p<digit> (polyarray's own names)")
    if not re.search(r"\b" + re.escape(name) + r"\b", _strip_comments(source)):
        raise ValueError(f"raw kernel {name!r} is not defined in its source")
    if reference is not None and not callable(reference):
        raise TypeError(f"raw kernel {name!r}: reference must be a function, "
                        f"got {type(reference).__name__}")
    text = signature(source, name, language) if params is None else params
    if not isinstance(text, str):
        raise TypeError(f"raw kernel {name!r}: params must be a C parameter list as a "
                        f"string, e.g. 'const float *x, float *out, int n'")
    parsed = parse_params(text, language, name)
    if not any(role == "out" for role, *_ in parsed):
        raise ValueError(f"raw kernel {name!r} has no output: declare outputs as pointers "
                         "to non-const (inputs as pointers to const)")
    return N.RawKernelSpec(language, name, source, parsed, reference)


def _dtype_fits(ctype_dtype, dtype):
    """A pointer of ``ctype_dtype`` reads arrays of ``dtype`` as they are
    stored (bool arrays are bytes 0/1)."""
    c, d = np.dtype(ctype_dtype), np.dtype(dtype)
    return c == d or (c == np.uint8 and d == np.bool_)


def _scalar_value(kname, name, dtype, value):
    """A Python number that ``dtype`` holds exactly (floats: any real)."""
    dtype = np.dtype(dtype)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if dtype.kind in "iub":
        if not isinstance(value, (numbers.Integral, np.integer)):
            raise TypeError(f"raw kernel {kname!r}: scalar {name!r} ({dtype.name}) must be "
                            f"an integer, got {value!r}")
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        value = int(value)
        if info is not None and not info.min <= value <= info.max:
            raise OverflowError(f"raw kernel {kname!r}: scalar {name!r} = {value} does not "
                                f"fit {dtype.name}")
        return value
    if not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"raw kernel {kname!r}: scalar {name!r} ({dtype.name}) must be a "
                        f"real number, got {value!r}")
    return float(value)


def _sizes(kname, what, value):
    if isinstance(value, (numbers.Integral, np.integer)):
        value = (value,)
    try:
        value = tuple(value)
    except TypeError:
        raise TypeError(f"raw kernel {kname!r}: {what} must be an int or a tuple of up to "
                        f"3 ints, got {value!r}") from None
    if not 1 <= len(value) <= 3 or not all(
            isinstance(n, (numbers.Integral, np.integer)) and not isinstance(n, bool)
            for n in value):
        raise TypeError(f"raw kernel {kname!r}: {what} must be an int or a tuple of up to 3 "
                        f"ints, got {value!r}")
    if any(n < 0 for n in value) or (what == "block" and any(n == 0 for n in value)):
        raise ValueError(f"raw kernel {kname!r}: {what} {value!r} must be positive")
    return tuple(int(n) for n in value)


def _declared(kname, outputs, out_params):
    """``((shape, dtype str), ...)`` from ``outputs``: a list of ``(shape,
    dtype)``, or one pair."""
    if isinstance(outputs, tuple) and len(outputs) == 2 and not isinstance(outputs[1], tuple):
        outputs = [outputs]
    try:
        pairs = [tuple(o) for o in outputs]
    except TypeError:
        pairs = None
    if pairs is None or not all(len(p) == 2 for p in pairs):
        raise TypeError(f"raw kernel {kname!r}: outputs must be a list of (shape, dtype) "
                        f"pairs, got {outputs!r}")
    if len(pairs) != len(out_params):
        raise ValueError(f"raw kernel {kname!r}: outputs declares {len(pairs)} output(s), but "
                         f"the kernel has {len(out_params)} output parameter(s) "
                         f"({', '.join(p[1] for p in out_params)}: pointers to non-const)")
    decl = []
    for (shape, dtype), (_, pname, ctype, cdt) in zip(pairs, out_params):
        shape = _normalize_shape(shape, f"raw kernel {kname!r}: the shape of output {pname!r}")
        dtype = np.dtype(dtype)
        if not _dtype_fits(cdt, dtype):
            raise TypeError(f"raw kernel {kname!r}: output {pname!r} is declared {dtype.name}, "
                            f"but its parameter is {ctype} * ({np.dtype(cdt).name})")
        decl.append((shape, dtype.str))
    return tuple(decl)


def check_arguments(spec, n_inputs, scalars) -> None:
    """Refuse a launch whose arguments are not the kernel's (``n_inputs``
    input arrays, ``scalars`` by name), naming its parameters and what was
    given: before the user's ``outputs``/``grid``/``block`` functions are
    called with them, where a missing one would fail inside the lambda."""
    kname = spec.name
    ins = [p[1] for p in spec.params if p[0] == "in"]
    wanted = [p[1] for p in spec.params if p[0] == "scalar"]
    problems = []
    if n_inputs < len(ins):
        problems.append("missing input array" + "s" * (len(ins) - n_inputs > 1) + " "
                        + ", ".join(map(repr, ins[n_inputs:])))
    elif n_inputs > len(ins):
        problems.append(f"it takes {len(ins)} input array(s), got {n_inputs}")
    missing = [n for n in wanted if n not in scalars]
    if missing:
        problems.append("missing scalar argument" + "s" * (len(missing) > 1) + " "
                        + ", ".join(map(repr, missing)))
    unknown = sorted(set(scalars) - set(wanted))
    if unknown:
        problems.append(f"it has no scalar parameter {unknown[0]!r}")
    if not problems:
        return
    free = [p[1] for p in spec.params if p[0] != "out"]
    given = ins[:n_inputs] + [n for n in free if n in scalars]
    raise TypeError(
        f"raw kernel {kname!r} is called as {kname}({', '.join(free)}) (input arrays: "
        f"{', '.join(ins) or 'none'}; scalars: {', '.join(wanted) or 'none'}, also by "
        f"keyword); got {', '.join(given) or 'no arguments'}: {'; '.join(problems)}")


def call(spec, inputs, scalars, outputs, grid, block) -> tuple:
    """The output nodes of one launch of ``spec``: ``inputs`` (array-likes,
    one per input parameter, in order), ``scalars`` (name -> number, one per
    scalar parameter), ``outputs`` (declared shapes and dtypes), ``grid``
    and ``block`` (ints or tuples: work-groups, work-items per group)."""
    kname = spec.name
    check_arguments(spec, len(inputs), scalars)
    in_params = [p for p in spec.params if p[0] == "in"]
    nodes = []
    for x, (_, pname, ctype, cdt) in zip(inputs, in_params):
        node = as_node(x)
        if not _dtype_fits(cdt, node.dtype):
            raise TypeError(f"raw kernel {kname!r}: input {pname!r} is {ctype} * "
                            f"({np.dtype(cdt).name}), but the array is {node.dtype.name}; "
                            f"pass x.astype({np.dtype(cdt).name!r})")
        nodes.append(node)
    wanted = {p[1]: p for p in spec.params if p[0] == "scalar"}
    values = tuple((n, _scalar_value(kname, n, p[3], scalars[n])) for n, p in wanted.items())
    decl = _declared(kname, outputs, [p for p in spec.params if p[0] == "out"])
    grid, block = _sizes(kname, "grid", grid), _sizes(kname, "block", block)
    if 0 in grid and any(0 not in shape for shape, _ in decl):
        raise ValueError(f"raw kernel {kname!r}: grid {grid} launches nothing, but its "
                         "outputs have elements (a grid of 0 is for empty outputs)")
    return tuple(N.RawKernelOutput.make(shape, np.dtype(dt), spec, tuple(nodes), values, decl,
                                        grid, block, k)
                 for k, (shape, dt) in enumerate(decl))
