"""Shared core of the decaNLP pipeline: the task registry, the typed config and the data schema.

`pipelines/` (data), `train/` (MQAN on Ray) and `eval/` (metrics) depend on this package and never
on each other, except that `train/` calls `eval/` to validate.
"""
