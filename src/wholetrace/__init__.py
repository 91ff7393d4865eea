"""wholetrace: record the whole execution of a Python program and query it fast."""

__version__ = "0.1.0"
