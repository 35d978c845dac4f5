from setuptools import setup

LOOPY = ["loopy>=2025.2,<2026", "islpy>=2025.2.5,<2026", "pymbolic>=2025.1"]

setup(
    name="polyarray",
    version="0.1.0",
    description="NumPy-style lazy arrays lowered to fused Loopy kernels for "
                "OpenCL (PyOpenCL) and CUDA (PyCUDA), with NumPy as the reference",
    # one top-level package: codegen/ and targets/ install as its subpackages
    packages=["polyarray", "polyarray.codegen", "polyarray.codegen.ir", "polyarray.targets"],
    package_dir={"polyarray.codegen": "codegen", "polyarray.codegen.ir": "codegen/ir",
                 "polyarray.targets": "targets"},
    python_requires=">=3.10",
    install_requires=["numpy>=2.0", "pymbolic>=2025.1", "platformdirs"],
    extras_require={
        "opencl": LOOPY + ["pyopencl>=2024.1"],
        "cuda": LOOPY + ["pycuda>=2024.1"],
        "test": ["pytest>=7", "hypothesis>=6"],
    },
)
