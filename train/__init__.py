"""Training: MQAN in PyTorch, trained on every task at once with Ray Train, tracked in MLflow.

Reads the processed Parquet and the vocabulary; calls `eval` to validate.
"""
