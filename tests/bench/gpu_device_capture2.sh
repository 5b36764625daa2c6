#!/usr/bin/env bash
# Second real-GPU capture (device machine, repo root, $OUT set, pydantic wheels carried in .whl):
#   bash tests/bench/gpu_device_capture2.sh
# raw `nvidia-smi --query-gpu` CSV for the smi parser, compute-apps under load, and the
# collector + `plateau gpus` code path over LocalTransport with real NVML.
set -u
C=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
F=$(python3 -c "import ast;t=ast.parse(open('console/gpu/agent.py').read());print(','.join([ast.literal_eval(n.value) for n in t.body if isinstance(n,ast.Assign) and getattr(n.targets[0],'id','')=='SMI_FIELDS'][0]))")
echo "$F" > "$C/smi_fields.txt"
nvidia-smi --query-gpu="$F" --format=csv,noheader,nounits > "$C/smi_query_idle.csv" 2>&1
nvidia-smi --query-gpu="$F" --format=csv > "$C/smi_query_header.csv" 2>&1
# Load on every GPU (matmuls + NCCL all-reduce + H2D copies); read "under load" only once
# every rank says it is in its loop (the old script slept 4 s while torch was still starting).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 tests/bench/gpu_load.py --seconds 30 --ready "$C/load.ready" > "$C/load.out" 2>&1 &
LP=$!
for _ in $(seq 1 180); do [ -f "$C/load.ready" ] && break; kill -0 $LP 2>/dev/null || break; sleep 1; done
[ -f "$C/load.ready" ] || { echo "load never became ready"; cat "$C/load.out"; }
nvidia-smi --query-gpu="$F" --format=csv,noheader,nounits > "$C/smi_query_load.csv" 2>&1
nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits > "$C/smi_apps_load.csv" 2>&1
cat > "$C/gpus.py" <<'PY'
import argparse, asyncio, sys
from console.commands.gpus import run
def ns(**kw):
    base = dict(host=None, demo=False, local=True, once=False, count=0, json=False,
                interval=0.5, backend=None, no_pcie=False, sim_gpus=None, sim_state=None)
    base.update(kw); return argparse.Namespace(**base)
mode = sys.argv[1]
if mode == "table":
    asyncio.run(run(ns(once=True)))
elif mode == "json":
    asyncio.run(run(ns(count=4, json=True)))
PY
python3 "$C/gpus.py" table > "$C/plateau_gpus_table.txt" 2>&1; echo "rc=$?" >> "$C/plateau_gpus_table.txt"
python3 "$C/gpus.py" json > "$C/plateau_gpus_json.jsonl" 2> "$C/plateau_gpus_json.err"; echo "rc=$?" >> "$C/plateau_gpus_json.err"
kill -0 $LP 2>/dev/null || echo "WARNING: the load ended before the last reading"
wait $LP
tar -C "$C" -czf "$OUT/capture2.tar.gz" .
cat "$C/smi_query_load.csv" "$C/smi_apps_load.csv" "$C/plateau_gpus_table.txt" "$C/plateau_gpus_json.err"
cut -c1-300 "$C/plateau_gpus_json.jsonl"
