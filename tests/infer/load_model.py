"""Load an MLflow model folder in this fresh process and print its answers to a JSON list of requests, as
one JSON line (tests/infer/test_model_code.py). With --block-train, any import of the project's train
package fails first, as on a machine that has only the model's code.

    python tests/infer/load_model.py MODEL_DIR REQUESTS.json [--block-train]
    python tests/infer/load_model.py --check-block
"""
import json
import sys


class BlockTrain:
    """A meta path finder that refuses `train` and its modules."""

    def find_spec(self, name, path=None, target=None):
        if name == "train" or name.startswith("train."):
            raise ImportError(f"blocked: {name}")
        return None


def main(argv: list[str]) -> int:
    if "--block-train" in argv or "--check-block" in argv:
        sys.meta_path.insert(0, BlockTrain())
    if "--check-block" in argv:
        try:
            import train  # noqa: F401
        except ImportError:
            print("import train: blocked")
            return 0
        return 1
    import mlflow
    import pandas as pd

    folder, requests = argv[0], json.loads(open(argv[1], encoding="utf-8").read())
    model = mlflow.pyfunc.load_model(folder, model_config={"device": "cpu"})
    print(json.dumps(model.predict(pd.DataFrame(requests)).to_dict("records")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
