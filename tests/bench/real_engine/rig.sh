#!/usr/bin/env bash
# The whole loop against a real engine on a real GPU: `transformers serve` on the device's H200,
# driven by Plateau as an operator would (config, server start, GPU panel, sweep, A/B, A/A) and
# measured against SGLang's own bench_serving. Figures land in $OUT (docs/real-engine.md quotes
# them). Two parts, each inside the device's 10-minute limit:
#   bash tests/bench/real_engine/rig.sh 1   # model, start, GPU panel vs nvidia-smi, sweep, bench_serving
#   bash tests/bench/real_engine/rig.sh 2   # restarts with real flags, interleaved A/B, A/A across boots
#   bash tests/bench/real_engine/rig.sh 3   # Plateau's client vs bench_serving, interleaved pairs
#   bash tests/bench/real_engine/rig.sh 4   # warm-up load on a fresh boot, then the boot floor (--aa)
# Needs: an NVIDIA GPU, python3 with torch + transformers 5.x, and Plateau's and transformers
# serve's missing packages as cp312 wheels in .whl/ (docs/real-engine.md lists them), plus a
# torch-free copy of sglang/benchmark in .whl/sg (for tests/support/sglang_bench.py).
set -uo pipefail
part=${1:-1}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# Everything is written under $W and packed into $OUT/rig$part.tgz at the end (the device
# returns at most 8 files).
W=/tmp/rig/out$part
mkdir -p "$W" /tmp/rig
OUT_DIR=${OUT:-/tmp/rig-out}
OUT=$W
if [ ! -d /tmp/site/fastapi ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$repo"/.whl/*.whl >/dev/null 2>&1 || { echo "wheel install failed"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$repo:$repo/.whl/sg HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
export PLATEAU_DB=/tmp/rig/history.db XDG_CONFIG_HOME=/tmp/rig/xdg XDG_CACHE_HOME=/tmp/rig/cache
plateau() { python3 -c 'import sys; from console.cli import main; sys.exit(main())' "$@"; }
model=/tmp/model
[ -f $model/config.json ] || python3 "$repo"/tests/bench/real_engine/make_model.py $model >/dev/null 2>&1
cfg=/tmp/rig/config.toml
cat > $cfg <<TOML
default_host = "h200"
[[hosts]]
name = "h200"
local = true
profile = "cb"
run_dir = "/tmp/rig/run"
python = "python3"

[profiles.cb]
engine = "transformers-serve"
launch = ["transformers", "serve"]
model_path = "$model"
port = 8000
flags = { continuous-batching = true, device = "cuda:0", dtype = "bfloat16", log-level = "info" }

[profiles.cb-graphs]
engine = "transformers-serve"
launch = ["transformers", "serve"]
model_path = "$model"
port = 8000
flags = { continuous-batching = true, device = "cuda:0", dtype = "bfloat16", log-level = "info", cb-use-cuda-graph = true }

[profiles.cb-small-batch]
engine = "transformers-serve"
launch = ["transformers", "serve"]
model_path = "$model"
port = 8000
flags = { continuous-batching = true, device = "cuda:0", dtype = "bfloat16", log-level = "info", cb-max-batch-tokens = 256 }

[sweeps.rig]
concurrency = [1, 8, 32, 128, 256]
input_len = 256
output_len = 128
prompts_per_concurrency = 2
endpoint = "completions"

[sweeps.warm]
concurrency = [8]
input_len = 256
output_len = 128
prompts_per_concurrency = 4
endpoint = "completions"
warmup_load = { concurrency = 8, prompts = 32, max_rounds = 6 }

[sweeps.cold]
concurrency = [8]
input_len = 256
output_len = 128
prompts_per_concurrency = 4
endpoint = "completions"

[sweeps.ab]
concurrency = [16, 64]
input_len = 256
output_len = 64
prompts_per_concurrency = 2
endpoint = "completions"
TOML
export PLATEAU_CONFIG=$cfg
t() { local s=$SECONDS; "$@"; echo "[$((SECONDS - s)) s] $*" | cut -c1-200 >>"$OUT/timings.txt"; }

if [ "$part" = 1 ]; then
  t plateau config check $cfg >"$OUT/config_check.txt" 2>&1
  t plateau server start h200 --profile cb >"$OUT/server_start.txt" 2>&1
  t plateau server status h200 >"$OUT/server_status.txt" 2>&1
  # GPU panel vs nvidia-smi over the same 12 s of load (a 64-stream step running meanwhile)
  plateau sweep h200 --preset rig --concurrency 64 --num-prompts 512 --db /tmp/rig/warm.db >/dev/null 2>&1 &
  load=$!
  sleep 8
  plateau gpus h200 --json --count 12 --interval 1 >"$OUT/gpus_plateau.jsonl" 2>/dev/null &
  nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,clocks.sm --format=csv,noheader,nounits -l 1 >"$OUT/gpus_smi.csv" 2>/dev/null &
  smi=$!
  sleep 12; kill $smi 2>/dev/null; wait $load
  python3 "$repo"/tests/bench/real_engine/compare_gpus.py "$OUT/gpus_plateau.jsonl" "$OUT/gpus_smi.csv" "$OUT/gpus_compare.json"
  t plateau sweep h200 --preset rig --json >"$OUT/sweep_cb.json" 2>"$OUT/sweep_cb.err"
  tail -5 "$OUT/sweep_cb.err"
  # Plateau's client and bench_serving through one relay (bench_serving sends fields the server refuses)
  python3 "$repo"/tests/bench/real_engine/strip_proxy.py 8100 http://127.0.0.1:8000 $model >/tmp/rig/proxy.log 2>&1 &
  sleep 2
  for c in 1 8 32 128; do
    n=$((c * 4)); [ $n -lt 16 ] && n=16
    t python3 "$repo"/tests/support/sglang_bench.py --backend vllm --base-url http://127.0.0.1:8100 \
      --dataset-name random-ids --random-input-len 256 --random-output-len 128 --random-range-ratio 1.0 \
      --num-prompts $n --max-concurrency $c --model $model --tokenizer $model --disable-ignore-eos \
      --output-file "$OUT/bench_serving.jsonl" >"$OUT/bench_serving_c$c.txt" 2>&1
    t plateau sweep --url http://127.0.0.1:8100 --server-engine transformers-serve --model $model \
      --endpoint completions --concurrency $c --num-prompts $n --input-len 256 --output-len 128 \
      --no-flush --json --db /tmp/rig/vs.db >"$OUT/plateau_c$c.json" 2>"$OUT/plateau_c$c.err"
  done
  plateau server stop h200 >"$OUT/server_stop.txt" 2>&1
  cp /tmp/rig/run/logs/*.log "$OUT/" 2>/dev/null; ls /tmp/rig/run >"$OUT/run_dir.txt" 2>&1
elif [ "$part" = 3 ]; then
  # Plateau's client vs bench_serving, interleaved: the same server and relay, pairs in
  # alternating order, repeats until the 10-minute command limit nears (a pair's two runs see
  # the same server state, so the pair's ratio is the figure; the engine drifts between pairs).
  t plateau server start h200 --profile cb >"$OUT/server_start.txt" 2>&1
  python3 "$repo"/tests/bench/real_engine/strip_proxy.py 8100 http://127.0.0.1:8000 $model >/tmp/rig/proxy.log 2>&1 &
  sleep 2
  bench() {
    python3 "$repo"/tests/support/sglang_bench.py --backend vllm --base-url http://127.0.0.1:8100 \
      --dataset-name random-ids --random-input-len 256 --random-output-len 128 --random-range-ratio 1.0 \
      --num-prompts "$2" --max-concurrency "$1" --model $model --tokenizer $model --disable-ignore-eos \
      --output-file "$OUT/bench_serving.jsonl" >>"$OUT/bench_serving.txt" 2>&1
  }
  ours() {
    plateau sweep --url http://127.0.0.1:8100 --server-engine transformers-serve --model $model \
      --endpoint completions --concurrency "$1" --num-prompts "$2" --input-len 256 --output-len 128 \
      --no-flush --json --db /tmp/rig/vs.db >"$OUT/plateau_r$3_c$1.json" 2>>"$OUT/plateau.err"
  }
  for r in 1 2 3 4; do
    for c in 1 8 32; do
      n=$((c * 4)); [ $n -lt 8 ] && n=8
      [ $SECONDS -gt 470 ] && break 2
      if [ $((r % 2)) = 1 ]; then t bench $c $n; t ours $c $n $r; else t ours $c $n $r; t bench $c $n; fi
      echo "pair r=$r c=$c done at ${SECONDS}s" >>"$OUT/timings.txt"
    done
  done
  plateau server stop h200 >"$OUT/server_stop.txt" 2>&1
elif [ "$part" = 4 ]; then
  # Issue 40's detectors on the real engine: a fresh boot's warm-up load (rounds until a round
  # shows no warm-up and its TPOT holds), a sweep right after it, then the boot floor (A/A on
  # fresh boots). Time-boxed to the command's 10 minutes.
  t plateau server start h200 --profile cb >"$OUT/server_start.txt" 2>&1
  t plateau sweep h200 --preset warm --json >"$OUT/sweep_warm.json" 2>"$OUT/sweep_warm.err"
  t plateau sweep h200 --preset cold --json >"$OUT/sweep_after.json" 2>"$OUT/sweep_after.err"
  left=$((540 - SECONDS))
  [ $left -gt 120 ] && t timeout $left python3 -c 'import sys; from console.cli import main; sys.exit(main())' \
    ab h200 --aa --a cb --preset ab --concurrency 16 --repeats 2 --json >"$OUT/aa.json" 2>"$OUT/aa.err"
  plateau server stop h200 >"$OUT/server_stop.txt" 2>&1
  cp /tmp/rig/run/logs/*.log "$OUT/" 2>/dev/null
else
  t plateau ab h200 --a cb --b cb-graphs --preset ab --repeats 2 --interleave --json >"$OUT/ab_graphs.json" 2>"$OUT/ab_graphs.err"
  tail -3 "$OUT/ab_graphs.err"
  t plateau ab h200 --a cb --b cb --preset ab --repeats 2 --interleave --json >"$OUT/aa.json" 2>"$OUT/aa.err"
  tail -3 "$OUT/aa.err"
  t plateau server start h200 --profile cb-small-batch >"$OUT/start_small.txt" 2>&1
  t plateau sweep h200 --preset rig --concurrency 8,64,256 --json >"$OUT/sweep_small.json" 2>"$OUT/sweep_small.err"
  plateau server stop h200 >/dev/null 2>&1
fi
cp /tmp/rig/history.db /tmp/rig/vs.db "$W/" 2>/dev/null
mkdir -p "$OUT_DIR"
tar czf "$OUT_DIR/rig$part.tgz" -C "$W" .
cat "$OUT/timings.txt"
