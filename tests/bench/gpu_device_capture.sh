#!/usr/bin/env bash
# Real-GPU capture, run on the device machine from a tree holding console/ and tests/bench/
# ($OUT set; pydantic wheels in .whl/ for the `plateau gpus` step, optional):
#   bash tests/bench/gpu_device_capture.sh [OLD_AGENT.py]
# Records nvidia-smi's own readings (topo -m, p2p, nvlink, dmon, a query loop) and the agent's
# JSON lines (NVML and smi backends), idle and under load on EVERY GPU (bf16 matmuls, an NCCL
# all-reduce between all GPUs, pinned host-to-GPU copies: tests/bench/gpu_load.py), plus the
# agent's cost per sample (bench_gpu_agent_nvml.py, against OLD_AGENT.py when given). The
# "under load" readings start only once every rank reports it is in its loop (a ready file),
# and the script checks the load is still running after them. Everything lands in
# $OUT/capture.tar.gz; a summary goes to stdout.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OLD=${1:-}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
C=$(mktemp -d)
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
A="$(cat console/gpu/agent.py)"
# SMI_FIELDS is one list: take that list (the old line joined the list of lists: TypeError).
F=$(python3 -c "import ast;t=ast.parse(open('console/gpu/agent.py').read());print(','.join([ast.literal_eval(n.value) for n in t.body if isinstance(n,ast.Assign) and getattr(n.targets[0],'id','')=='SMI_FIELDS'][0]))")
{
  uname -a; nproc; python3 -V
  python3 -m pip show nvidia-ml-py 2>/dev/null | head -3
  nvidia-smi -L
} > "$C/env.txt" 2>&1
nvidia-smi > "$C/smi.txt" 2>&1
nvidia-smi --query-gpu="$F" --format=csv,noheader,nounits > "$C/smi_query_idle.csv" 2>&1
nvidia-smi topo -m > "$C/topo_m.txt" 2>&1
for k in r n; do nvidia-smi topo -p2p $k > "$C/topo_p2p_$k.txt" 2>&1; done
nvidia-smi nvlink -s > "$C/nvlink_s.txt" 2>&1
ag() { local name=$1; shift; python3 -c "$A" "$@" > "$C/$name.jsonl" 2> "$C/$name.err"; \
  echo "rc=$?" >> "$C/$name.err"; }
ag agent_idle --backend nvml --count 4 --interval 0.5 --pcie gpm
ag agent_smi_idle --backend smi --count 2 --interval 0.5
python3 tests/bench/bench_gpu_agent_nvml.py --samples 40 ${OLD:+--before "$OLD"} \
  > "$C/bench_idle.jsonl" 2> "$C/bench_idle.err"
# Load on every GPU; wait (bounded) for every rank to be in its loop.
python3 tests/bench/gpu_load.py --seconds 130 --ready "$C/load.ready" > "$C/load.out" 2>&1 &
LP=$!
for _ in $(seq 1 180); do [ -f "$C/load.ready" ] && break; kill -0 $LP 2>/dev/null || break; sleep 1; done
[ -f "$C/load.ready" ] || { echo "load never became ready"; cat "$C/load.out"; }
sleep 2  # past the first all-reduce burst: steady state
nvidia-smi nvlink -gt d > "$C/nvlink_gt_a.txt" 2>&1
ag agent_load --backend nvml --count 12 --interval 1.0 --pcie gpm &
AP=$!
nvidia-smi dmon -c 10 -s pucvmet > "$C/dmon.txt" 2>&1 &
timeout 11 nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,clocks.sm,memory.used,temperature.gpu,clocks_event_reasons.active,pcie.link.gen.gpucurrent --format=csv -l 1 > "$C/smi_loop.csv" 2>&1
wait $AP
nvidia-smi nvlink -gt d > "$C/nvlink_gt_b.txt" 2>&1
nvidia-smi --query-gpu="$F" --format=csv,noheader,nounits > "$C/smi_query_load.csv" 2>&1
nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits > "$C/smi_apps_load.csv" 2>&1
python3 tests/bench/bench_gpu_agent_nvml.py --samples 40 ${OLD:+--before "$OLD"} \
  > "$C/bench_load.jsonl" 2> "$C/bench_load.err"
ag agent_smi_load --backend smi --count 2 --interval 0.5
if python3 -c "import pydantic" 2>/dev/null; then
  python3 tests/bench/gpu_plateau_gpus.py --once > "$C/plateau_gpus_once.txt" 2>&1
  echo "rc=$?" >> "$C/plateau_gpus_once.txt"
fi
kill -0 $LP 2>/dev/null && echo "load still running after the readings: yes" > "$C/load_alive.txt" \
  || echo "load still running after the readings: NO (readings may be partly idle)" > "$C/load_alive.txt"
wait $LP
tar -C "$C" -czf "$OUT/capture.tar.gz" .
cat "$C/load_alive.txt" "$C/load.out" | grep -v Warning | tail -8
cat "$C/topo_m.txt" | head -3
cat "$C/bench_idle.jsonl" "$C/bench_load.jsonl" "$C"/bench_*.err | cut -c1-400
for f in "$C"/agent_*.jsonl; do echo "$(basename $f): $(python3 -c "
import json,sys
c=[json.loads(l)['cost_ms'] for l in open('$f') if l.startswith('{\"type\":\"sample\"')]
print(len(c), 'samples, cost_ms', [round(x,2) for x in c])")"; done
cat "$C/plateau_gpus_once.txt" 2>/dev/null; tail -n 3 "$C"/*.err
