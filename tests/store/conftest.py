"""Fixtures for the store tests (the helpers live in store_helpers.py)."""

from store_helpers import wt  # noqa: F401  (re-exported fixture)
