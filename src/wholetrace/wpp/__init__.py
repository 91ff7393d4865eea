"""Analyses on whole program paths (grammars of traces): grammar queries and minimal hot subpaths."""
