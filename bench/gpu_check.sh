#!/usr/bin/env bash
# The GPU checks of the fast path (issue 27), as one script for a GPU machine with PyTorch and no network:
#   1. bench/model.py --device cuda: fp32 and bf16 rows (training steps on SQuAD- and SST-shaped batches at
#      the paper's token budget, greedy decoding 256 x 50 steps), with peak GPU memory, TFLOP/s and MFU;
#   2. a 5-minute single-task SST run with the README's GloVe recipe in bf16 (experiments/sst_ablation.py),
#      with its validation EM, tokens/s, peak GPU memory and MFU every --every iterations.
# Prepare on the development machine with `.venv/bin/python bench/gpu_pack.py` (fills .gpu/), carry .gpu, then
#   bash bench/gpu_check.sh                     # results in $OUT (or .gpu/out): bench.txt, sst.log, env.txt
# DEVICE=cpu MINUTES=0.2 STEPS=1 bash bench/gpu_check.sh   runs the same script briefly on a CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.gpu/out}
DEVICE=${DEVICE:-cuda}
MINUTES=${MINUTES:-5}
STEPS=${STEPS:-20}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH=".gpu/site:.${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
  date -u; nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
} 2>&1 | tee "$OUT/env.txt"

echo "== bench/model.py --device $DEVICE" | tee "$OUT/bench.txt"
$PY bench/model.py --device "$DEVICE" --configs fp32,bf16 --raw .gpu/corpora --steps "$STEPS" --warmup 3 \
  --threads 8 2>&1 | tee -a "$OUT/bench.txt"
bench=$?

echo "== SST, $MINUTES minutes, bf16, GloVe recipe" | tee "$OUT/sst.log"
$PY experiments/sst_ablation.py --device "$DEVICE" --minutes "$MINUTES" --every 200 --ema 0.99 \
  --workdir .gpu/work --overlay infra/params/glove.yaml --set model.word_vectors=.gpu/glove \
  --set train.precision=bf16 --threads 8 2>&1 | tee -a "$OUT/sst.log"
sst=$?
echo "bench exit $bench, sst exit $sst"
exit $((bench || sst))
