#!/usr/bin/env bash
# The training job on a Ray cluster: what `ray job submit` (infra/ray/cluster.yaml) and the KubeRay
# RayJob (infra/ray/rayjob.yaml) run on the head node, from the repository's root.
#
#   bash infra/ray/train_job.sh [PARAMS_OVERLAY.yaml ...]
#
# 1. merges the overlays (e.g. infra/params/paper.yaml infra/params/gpu.yaml) into params.yaml;
# 2. `dvc repro --pull --allow-missing` up to report: stages whose inputs are unchanged are skipped or
#    pulled from the DVC remote (only the data the changed stages need), the others run here;
#    `deca train` inside connects to the running cluster (RAY_ADDRESS is set in a Ray job);
# 3. pushes the new checkpoint and results to the DVC remote.
# MLFLOW_TRACKING_URI should name the team's tracking server (infra/mlflow/).
set -euo pipefail
cd "$(dirname "$0")/../.."
export DVC_NO_ANALYTICS=1 RAY_USAGE_STATS_ENABLED=0
PYTHON=${PYTHON:-python}
DVC=${DVC:-dvc}

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
