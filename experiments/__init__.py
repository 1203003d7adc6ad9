"""Experiments behind docs/results: the runs and the reports made from them (experiments/README.md)."""
