#!/usr/bin/env bash
# The GPU check of issues 35 and 44, as one script for a GPU machine with PyTorch and no network. Each stage writes
# its own file to $OUT (at most 8 files come back) before the next starts, runs under a time limit, and later
# stages run even if one fails. In the issue's order:
#   1. tests.txt     the exactness and synchronisation tests on the GPU (packing, static/graphed greedy decoding,
#                    set_sync_debug_mode over a training step and decoding steps)
#   2. speedcheck.txt, speedcheck_results.jsonl, speedcheck_summary.md
#                    ../shared/speedcheck with DEVICE=cuda: the original MQAN and this project side by side on the
#                    same batches, ROUNDS rounds, fp32, then greedy decoding with --proj-opt cuda_graphs=1
#   3. profile.txt   bench/gpu_profile.py: per phase the step time, kernels, launches, host synchronisations, busy
#      profile.json  time and floor, with the CUDA-graph switch off and on
#   4. train.txt     short SST training runs (bf16, GloVe recipe) with train.bucketing budget / exact, if time is left
# The stage of issue 45 that follows this speed check is experiments/grid.sh, a separate device call: the runs
# docs/results/records/plan.json plans (python -m experiments.plan), 8 at a time, each writing its per-example
# record, the whole call within 11 minutes, stopped and continued across calls.
# env.txt names the GPU, driver, torch and CUDA, the commit (COMMIT, passed from where the tree was sent: the lent
# machine's .git may be stale) and a digest of the code that ran (the same command here checks it).
# Knobs: ROUNDS, STEPS, MINUTES, BUDGET_S, TEST_ARGS, SC_VARIANTS (graphs_all: one variant, every case, with the
# switch on), PROFILE_FIRST=1, PROFILE_CONFIGS, PROFILE_ARGS, TRAIN_BUCKETING ("" skips the training runs).
# Prepare here with `.venv/bin/python -m bench.gpu_pack` (fills the git-ignored .gpu/), carry .gpu, then on the
# GPU machine `COMMIT=$(git rev-parse --short HEAD) bash bench/gpu_check.sh`. Rehearse here, small: OUT=/tmp/gco
#   DEVICE=cpu ROUNDS=1 STEPS=1 MINUTES=0.1 PROFILE_ARGS="--budget 1500 --decode-batch 16 --decode-steps 5
#   --warmup 1" SC_WORK=<a WORK built with STEPS=1> CASES="train:sst decode:sst" bash bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.gpu/out}
DEVICE=${DEVICE:-cuda}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-10}
MINUTES=${MINUTES:-0.75}
BUDGET_S=${BUDGET_S:-540}   # stop starting stages after this many seconds
PY=${PYTHON:-python3}
START=$SECONDS
mkdir -p "$OUT"
export PYTHONPATH="$PWD/.gpu/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
left() { echo $((BUDGET_S - (SECONDS - START))); }
stage() {  # stage NAME FILE SECONDS COMMAND...: run with a limit (at most what is left), log to FILE
  local name=$1 file=$2 limit=$3; shift 3
  local l; l=$(left)
  if [ "$l" -lt 20 ]; then echo "== $name: skipped, ${l}s left" | tee -a "$file"; return 1; fi
  [ "$limit" -gt "$l" ] && limit=$l
  echo "== $name (limit ${limit}s, $(date -u +%T))" | tee -a "$file"
  timeout "$limit" "$@" >>"$file" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - START))s" | tee -a "$file"
  tail -4 "$file"
  return $rc
}
{
  date -u; nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
  echo "commit ${COMMIT:-$(git log -1 --format=%h 2>/dev/null) (from git here, maybe stale)}"
  echo "code digest $(bash bench/code_digest.sh)"; uptime
  lscpu 2>/dev/null | grep '^Model name'
  echo "bf16 units: $(grep -owE 'amx_bf16|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
} 2>&1 | tee "$OUT/env.txt"

stage tests "$OUT/tests.txt" 150 $PY -m pytest -q -p no:cacheprovider -o addopts= tests/mqan/test_syncs.py \
  tests/mqan/test_static_decode.py tests/mqan/test_packing.py ${TEST_ARGS:-}

speedcheck() {
  export WORK=${SC_WORK:-$PWD/.gpu/speedcheck_work} PY DEVICE SKIP_BENCH=1 INTERLEAVED=0 ROUNDS RESULTS=$OUT/speedcheck_results.jsonl
  if [ "${SC_VARIANTS:-fp32 cuda_graphs}" = graphs_all ]; then  # one variant: every case, decoding with the switch on
    stage "speedcheck cuda graphs, all cases" "$OUT/speedcheck.txt" 300 env VARIANT=cuda_graphs_all \
      PROJ_ARGS="--proj-opt cuda_graphs=1" bash .gpu/speedcheck/run_all.sh
  else
    stage "speedcheck fp32" "$OUT/speedcheck.txt" 300 env VARIANT=fp32 bash .gpu/speedcheck/run_all.sh
    stage "speedcheck cuda graphs" "$OUT/speedcheck.txt" 200 env VARIANT=cuda_graphs CASES="decode:squad decode:sst" \
      PROJ_ARGS="--proj-opt cuda_graphs=1" bash .gpu/speedcheck/run_all.sh
  fi
  [ -f "$WORK/summary.md" ] && cp "$WORK/summary.md" "$OUT/speedcheck_summary.md"
}

profile() {
  stage profile "$OUT/profile.txt" 200 $PY -m bench.gpu_profile --device "$DEVICE" --raw .gpu/corpora --steps "$STEPS" \
    --warmup 3 --configs "${PROFILE_CONFIGS:-fp32,fp32+graphs,bf16,bf16+graphs}" --bucketing budget,exact \
    --json "$OUT/profile.json" ${PROFILE_ARGS:-}
}

if [ -n "${PROFILE_FIRST:-}" ]; then profile; speedcheck; else speedcheck; profile; fi

for bucketing in ${TRAIN_BUCKETING-budget exact}; do
  stage "SST $MINUTES min, bucketing $bucketing" "$OUT/train.txt" 120 $PY -m experiments.sst_ablation --device "$DEVICE" \
    --minutes "$MINUTES" --every 200 --ema 0.99 --workdir .gpu/work --overlay infra/params/glove.yaml \
    --set model.word_vectors=.gpu/glove --set train.precision=bf16 --set train.bucketing=$bucketing \
    --set train.cuda_graphs=true --threads 8
done
echo "done after $((SECONDS - START))s"
