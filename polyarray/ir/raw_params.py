"""A C parameter list read as a raw kernel's parameters: which are input
arrays, output arrays and scalars, and their NumPy dtypes.  The frontend
reads a user's kernel's with it (``ops/raw.py``, ``pa.raw_kernel``), code
generation its own kernels' (``codegen/emit/scan_kernels.py``,
``sort_kernels.py``)."""
from __future__ import annotations

import re

import numpy as np

# C type -> NumPy dtype, per language (CUDA: LP64 Linux, as nvcc's host side)
_COMMON = {"float": "float32", "double": "float64", "int": "int32", "unsigned int": "uint32",
           "unsigned": "uint32", "short": "int16", "unsigned short": "uint16",
           "char": "int8", "signed char": "int8", "unsigned char": "uint8",
           "long long": "int64", "unsigned long long": "uint64", "int8_t": "int8",
           "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16", "int32_t": "int32",
           "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64"}
C_TYPES = {
    "cuda": {**_COMMON, "long": "int64", "unsigned long": "uint64", "size_t": "uint64",
             "ptrdiff_t": "int64", "bool": "bool"},
    "opencl": {**_COMMON, "long": "int64", "unsigned long": "uint64", "uchar": "uint8",
               "ushort": "uint16", "uint": "uint32", "ulong": "uint64"},
}
# words that say where a pointer points or how it may be used, not what it holds
_QUALIFIERS = {"__global", "global", "__restrict__", "__restrict", "restrict", "volatile",
               "__constant", "constant", "__private", "private", "struct"}
C_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")


def parse_params(text, language, kname):
    """``((role, name, C type, dtype str), ...)`` of a C parameter list: a
    pointer to const (or ``__constant``) is an input array, another pointer
    an output array, anything else a scalar."""
    params = []
    for k, raw in enumerate(p.strip() for p in text.split(",")):
        if not raw or raw == "void" and k == 0:
            continue
        before, star, after = raw.replace("*", " * ", 1).partition("*")
        if "*" in after or "[" in raw:
            raise ValueError(f"raw kernel {kname!r}: parameter {raw!r}: only plain pointers "
                             "and scalars can be parameters")
        words = before.split()
        name_words = after.split() if star else words[-1:]
        if not star:
            words = words[:-1]
        name = name_words[-1] if name_words else ""
        if not C_IDENTIFIER.match(name):
            raise ValueError(f"raw kernel {kname!r}: cannot read parameter {raw!r} "
                             "(expected 'type name' or 'type *name')")
        if {"__local", "local"} & set(words):
            raise ValueError(f"raw kernel {kname!r}: parameter {name!r} is local memory; "
                             "declare local arrays inside the kernel")
        const = "const" in words or "__constant" in words or "constant" in words
        ctype = " ".join(w for w in words if w not in _QUALIFIERS and w != "const")
        table = C_TYPES[language]
        if ctype not in table:
            raise TypeError(f"raw kernel {kname!r}: parameter {name!r} has type {ctype!r}, "
                            f"which polyarray cannot pass ({language} types it knows: "
                            f"{', '.join(sorted(table))})")
        role = ("in" if const else "out") if star else "scalar"
        params.append((role, name, ctype, np.dtype(table[ctype]).str))
    names = [p[1] for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"raw kernel {kname!r}: two parameters have one name: {names}")
    return tuple(params)
