"""Data: download the decaNLP corpora and turn them into Parquet with Apache Beam.

Knows nothing of training or evaluation; shares only `deca.registry`, `deca.config` and `deca.schema`.
"""
