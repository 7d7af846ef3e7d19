"""locklab: mutexes chosen at run time, and the tools that measure them."""

__version__ = "0.1.0"
