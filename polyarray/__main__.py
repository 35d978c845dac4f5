"""``python -m polyarray``: the environment, for bug reports
(``pa.print_environment_info()``); ``python -m polyarray differences``:
where polyarray differs from NumPy (the document that error messages cite,
shipped with the package)."""
import sys

from .inspect.environment import print_environment_info


def differences() -> str:
    """The text of ``numpy_differences.md``, from the installed package."""
    from importlib.resources import files
    return files("polyarray").joinpath("numpy_differences.md").read_text(encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["differences"]:
        print(differences())
    elif sys.argv[1:]:
        sys.exit("usage: python -m polyarray [differences]")
    else:
        print_environment_info()
