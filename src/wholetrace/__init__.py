"""wholetrace: record the whole execution of a Python program and query it fast.

PYTEST_DONT_REWRITE: the pytest plugin's distribution is not rewritten by pytest (it may
already be imported, by ``wholetrace record -m pytest``).
"""

__version__ = "0.1.0"
