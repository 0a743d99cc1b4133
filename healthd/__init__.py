"""healthd: does what your assistant remembers still match the project?"""

from healthd._version import __version__

__all__ = ["__version__"]
