"""The file MLflow runs to build a logged deca model ("models from code", infer/mlflow_model.py).

It is copied into every logged model; loading the model runs it with the model's code/ folder on sys.path.
"""
import mlflow

from infer.mlflow_model import DecaModel

mlflow.models.set_model(DecaModel())
