"""Renderers: each turns a `Trace` (or what a query computed from it) into text, behind one interface."""
