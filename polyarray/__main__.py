"""``python -m polyarray``: the environment, for bug reports
(``pa.print_environment_info()``)."""
from .environment import print_environment_info

if __name__ == "__main__":
    print_environment_info()
