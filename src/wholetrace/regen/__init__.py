"""Regeneration of block traces from reduced recordings (witness traces, branch outcomes)."""
