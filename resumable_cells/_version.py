"""The package's version, read by the build (hatch) and `--version`."""

__version__ = "0.1.0"
