#!/usr/bin/env bash
# The training job on a Ray cluster: what `ray job submit` (infra/ray/cluster.yaml, infra/README.md) and the
# KubeRay RayJob (infra/ray/rayjob.yaml) run on the head node. It works from the repository's root.
#
#   bash infra/ray/train_job.sh [PARAMS_OVERLAY.yaml ...]     # the pipeline (below)
#   bash infra/ray/train_job.sh train [DECA TRAIN OPTIONS]    # only `deca train`, e.g.
#       bash infra/ray/train_job.sh train --params run.yaml --run-name two-nodes --set train.num_workers=2
#
# The pipeline:
# 1. merges the overlays (e.g. infra/params/paper.yaml infra/params/gpu.yaml) into params.yaml;
# 2. `dvc repro --pull --allow-missing` up to report: stages whose inputs are unchanged are skipped or
#    pulled from the DVC remote (only the data the changed stages need), the others run here;
#    `deca train` inside connects to the running cluster (RAY_ADDRESS is set in a Ray job);
# 3. pushes the new checkpoint and results to the DVC remote.
# `train` runs `deca train` alone against the cluster: the data and vocabulary must already be where the
# params say, on storage every node sees, as must train.storage_dir (the checkpoints). The slow test
# test_ray_cluster.py (under tests/) submits it to a two-node cluster and kills a node mid-run.
# MLFLOW_TRACKING_URI should name the team's tracking server (infra/mlflow/), reachable from every node.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DVC_NO_ANALYTICS=1 RAY_USAGE_STATS_ENABLED=0
PYTHON=${PYTHON:-python}
DVC=${DVC:-dvc}
DECA=${DECA:-deca}

if [ "${1:-}" = "train" ]; then
  shift
  if [ -z "${RAY_ADDRESS:-}" ]; then
    echo "warning: RAY_ADDRESS is not set (not inside a Ray job?): deca train starts a local Ray" >&2
  fi
  exec "$DECA" train "$@"
fi

if [ ! -d .git ]; then
  # A copy without git history (a container image, a synced folder): DVC works without an SCM.
  "$DVC" config --local core.no_scm true
fi
if [ "$#" -gt 0 ]; then
  "$PYTHON" -m infra.overlay --write "$@"
fi
"$DVC" repro --pull --allow-missing report
"$DVC" push || echo "warning: dvc push failed (no default remote?); results stay in this workspace" >&2
"$DVC" metrics show
