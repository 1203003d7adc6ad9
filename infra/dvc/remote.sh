#!/usr/bin/env bash
# Set the DVC remote that holds the pipeline's data and models (raw corpora, prepared Parquet, vocabulary,
# checkpoints, predictions): everything `dvc push` uploads and `dvc pull` / `dvc repro --pull` fetch.
#
#   bash infra/dvc/remote.sh URL [NAME]        (run inside the repository; NAME defaults to "storage")
#     URL: s3://BUCKET/decanlp | gs://BUCKET/decanlp | azure://CONTAINER/decanlp |
#          ssh://HOST/srv/dvc/decanlp | /mnt/shared/dvc/decanlp (a directory: local disk or a shared
#          filesystem; created if missing, stored as an absolute path)
#   dvc push --run-cache     # after `make run` / `dvc repro`: outputs and the run cache
#   dvc pull vocab prepare   # on another machine: the prepared data without rerunning Beam
#
# Idempotent: running it again (same or other URL) replaces the remote NAME and keeps it the default.
# The remote goes into .dvc/config (committed: every clone knows where the data lives); credentials never
# do: use the cloud SDK's usual environment or profile, or `dvc remote modify --local NAME ...`.
# Cloud remotes need DVC's plugin for them, with the pinned DVC: pip install "dvc[s3]==3.67.1" (gs, azure, ssh).
set -euo pipefail
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
  -*) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
if [ "$#" -gt 2 ]; then
  echo "error: expected URL [NAME], got $# arguments (see --help)" >&2
  exit 2
fi
URL=$1
NAME=${2:-storage}
DVC=${DVC:-dvc}
if ! command -v "$DVC" >/dev/null; then
  DVC="$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin/dvc"
fi
export DVC_NO_ANALYTICS=1

case "$URL" in
  s3://*) plugin=dvc_s3; extra=s3 ;;
  gs://*) plugin=dvc_gs; extra=gs ;;
  azure://*) plugin=dvc_azure; extra=azure ;;
  ssh://*) plugin=dvc_ssh; extra=ssh ;;
  *://*) echo "error: unsupported remote URL $URL (use s3://, gs://, azure://, ssh:// or a directory)" >&2; exit 2 ;;
  *) plugin=""; extra=""
     # A directory: absolute, so that every clone (wherever it lives) finds the same one.
     mkdir -p "$URL"
     URL=$(cd "$URL" && pwd) ;;
esac

"$DVC" remote add --default --force "$NAME" "$URL"
# Uploads and downloads in parallel; checksums are verified on pull.
"$DVC" remote modify "$NAME" jobs 8
if [ -n "$plugin" ]; then
  PY=$(dirname "$(command -v "$DVC")")/python
  if ! "$PY" -c "import $plugin" 2>/dev/null; then
    echo "note: DVC needs its $extra plugin for this remote: pip install \"dvc[$extra]==3.67.1\"" >&2
  fi
fi
"$DVC" remote list
