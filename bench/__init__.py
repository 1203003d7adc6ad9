"""Benchmarks: speed, memory, scale and fault cases, side by side in one run (bench/README.md)."""
