"""Make the helper modules in tests/ (corpus, genprogs, oracles/) importable from any test, and
give every recording the tests start one instrumented-code cache of their own."""

import os
import sys
import tempfile

_TESTS = os.path.dirname(os.path.abspath(__file__))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# Shared by the xdist workers and kept between runs (keys change with the instrumenter's
# source), so most recordings after the first run go through the cached, relocated path.
os.environ.setdefault("WHOLETRACE_CACHE_DIR", os.path.join(tempfile.gettempdir(), "wholetrace-test-cache"))
