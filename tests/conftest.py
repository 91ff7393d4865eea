"""Make the helper modules in tests/ (corpus, genprogs, oracles/) importable from any test."""

import os
import sys

_TESTS = os.path.dirname(os.path.abspath(__file__))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
