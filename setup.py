"""Which folders ship, and under which names (the metadata is in pyproject.toml).

codegen/ and targets/ sit beside polyarray/ in the repository but install as
its subpackages polyarray.codegen and polyarray.targets: one top-level name in
site-packages, which a user's own codegen.py or targets.py cannot shadow.
"""
from setuptools import find_packages, setup

MOVED = {"polyarray.codegen": "codegen", "polyarray.targets": "targets"}


def packages():
    found = find_packages(include=["polyarray", "polyarray.*"])
    for name, folder in MOVED.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(where=folder)]
    return found


# py.typed: the package has inline type hints (PEP 561); numpy_differences.md:
# what `python -m polyarray differences` prints, and error messages cite
setup(packages=packages(), package_dir=MOVED,
      package_data={"polyarray": ["py.typed", "numpy_differences.md"]})
