#!/usr/bin/env bash
# A digest of the code a GPU check ran (the Python files of every room and bench/), printed by bench/gpu_check.sh
# into env.txt; run here at a commit to check that it is the code that ran there.
cd "$(dirname "$0")/.." && find mqan train infer eval pipelines deca bench -name '*.py' -not -path '*/__pycache__/*' \
  | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16
