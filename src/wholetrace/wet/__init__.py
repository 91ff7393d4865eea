"""Whole execution traces (Zhang & Gupta): the capture log of ``full`` mode and what is built on it."""
