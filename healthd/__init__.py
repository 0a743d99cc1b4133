"""healthd: does what your assistant remembers still match the project?"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("healthd")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
