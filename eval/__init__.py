"""Evaluation: the ten decaNLP metrics and the decaScore, scored against the processed Parquet gold.

Knows nothing of the model.
"""
