"""locklab: mutexes chosen at run time, and the tools that measure them."""

from importlib import metadata

try:
    __version__ = metadata.version("locklab")
except metadata.PackageNotFoundError:  # run from the source tree, not installed
    __version__ = "0+source"
