#!/usr/bin/env bash
# An MLflow tracking server for one machine or a small team, without Docker: SQLite holds runs and
# metrics, a folder holds artifacts, and the server proxies artifact access.
#
#   bash infra/mlflow/server.sh [STORE_DIR] [PORT] [HOST]      # defaults: ./mlflow-server 5000 127.0.0.1
#   export MLFLOW_TRACKING_URI=http://127.0.0.1:5000          # then train / evaluate / compare log there
#
# HOST=0.0.0.0 serves the network: put it behind an authenticating proxy, and list the names clients
# use in MLFLOW_ALLOWED_HOSTS. The project's default without a server is sqlite:///mlflow.db in the
# repository (`mlflow ui --backend-store-uri sqlite:///mlflow.db` browses it).
set -euo pipefail
STORE=${1:-mlflow-server}
PORT=${2:-5000}
HOST=${3:-127.0.0.1}
MLFLOW=${MLFLOW:-mlflow}
if ! command -v "$MLFLOW" >/dev/null; then
  here=$(cd "$(dirname "$0")/../.." && pwd)
  MLFLOW="$here/.venv/bin/mlflow"
fi
mkdir -p "$STORE/artifacts"
STORE=$(cd "$STORE" && pwd)
ALLOWED=${MLFLOW_ALLOWED_HOSTS:-localhost,localhost:$PORT,127.0.0.1,127.0.0.1:$PORT}
# MLflow 3 also starts a job runner and its queue consumers (GenAI scorer jobs), which the project does not
# use: off unless asked for (they cost a few processes and seconds of startup).
export MLFLOW_SERVER_ENABLE_JOB_EXECUTION=${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false}
echo "MLflow tracking server: http://$HOST:$PORT  (store: $STORE)"
exec "$MLFLOW" server \
  --backend-store-uri "sqlite:///$STORE/mlflow.db" \
  --artifacts-destination "$STORE/artifacts" \
  --serve-artifacts \
  --host "$HOST" \
  --port "$PORT" \
  --workers "${MLFLOW_WORKERS:-1}" \
  --allowed-hosts "$ALLOWED"
