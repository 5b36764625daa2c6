#!/usr/bin/env bash
# Real-GPU capture for issues 5/9, run on the device machine (repo root, $OUT set):
#   bash tests/bench/gpu_device_capture.sh
# Records raw nvidia-smi outputs and agent JSON lines (NVML and smi backends, PCIe off /
# inline / thread / gpm, idle and under a bf16 matmul + H2D copy load) into $OUT/capture.tar.gz.
set -u
C=$(mktemp -d)
A="$(cat console/gpu/agent.py)"
F=$(python3 -c "import ast,sys;t=ast.parse(open('console/gpu/agent.py').read());print(','.join(ast.literal_eval(n.value) for n in t.body if isinstance(n,ast.Assign) and getattr(n.targets[0],'id','')=='SMI_FIELDS'))")
{
  uname -a; nproc; python3 -V
  python3 -m pip show nvidia-ml-py 2>/dev/null | head -3
  nvidia-smi -L
} > "$C/env.txt" 2>&1
nvidia-smi -q > "$C/smi_q.txt" 2>&1
nvidia-smi --query-gpu="$F" --format=csv,noheader,nounits > "$C/smi_query.csv" 2>&1
nvidia-smi --query-gpu="$F" --format=csv > "$C/smi_query_header.csv" 2>&1
nvidia-smi --query-gpu=index,clocks_throttle_reasons.active,pcie.link.gen.current --format=csv,noheader,nounits > "$C/smi_query_oldnames.csv" 2>&1
nvidia-smi --query-gpu=index,bogus.field --format=csv,noheader,nounits > "$C/smi_query_bogus.txt" 2>&1; echo "exit=$?" >> "$C/smi_query_bogus.txt"
nvidia-smi topo -m > "$C/topo_m.raw" 2>&1
for k in r w n a p; do nvidia-smi topo -p2p $k > "$C/topo_p2p_$k.raw" 2>&1; done
nvidia-smi nvlink -s > "$C/nvlink_s.txt" 2>&1; echo "exit=$?" >> "$C/nvlink_s.txt"
nvidia-smi nvlink -gt d > "$C/nvlink_gt.txt" 2>&1; echo "exit=$?" >> "$C/nvlink_gt.txt"
TIMEFORMAT="%R s wall %U user %S sys"
ag() { local name=$1; shift; { time python3 -c "$A" "$@" > "$C/$name.jsonl" 2> "$C/$name.err"; \
  echo "rc=$?" > "$C/$name.rc"; } 2> "$C/$name.time"; cat "$C/$name.rc" >> "$C/$name.time"; }
ag nvml_idle_off --backend nvml --count 8 --interval 0.25 --pcie off
ag nvml_idle_inline --backend nvml --count 8 --interval 0.25 --pcie inline
ag nvml_idle_thread --backend nvml --count 8 --interval 0.25 --pcie thread --pcie-period 0.25
ag nvml_idle_gpm --backend nvml --count 8 --interval 0.25 --pcie gpm
ag smi_idle --backend smi --count 4 --interval 0.25
# Load: bf16 matmuls plus pinned host->device copies (PCIe traffic), ~14 s.
cat > "$C/load.py" <<'PY'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
h = torch.empty(256 * 2**20, dtype=torch.uint8).pin_memory(); d = torch.empty_like(h, device="cuda")
end = time.time() + 14
while time.time() < end:
    for _ in range(20): a @ b
    d.copy_(h, non_blocking=True)
    torch.cuda.synchronize()
PY
python3 "$C/load.py" > "$C/load.out" 2>&1 &
LP=$!
sleep 4
ag nvml_load_gpm --backend nvml --count 8 --interval 0.5 --pcie gpm
ag nvml_load_inline --backend nvml --count 6 --interval 0.5 --pcie inline
ag smi_load --backend smi --count 3 --interval 0.5
nvidia-smi topo -m > "$C/topo_m_load.raw" 2>&1
wait $LP
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > "$C/smi_q_after.txt" 2>&1
ag nvml_cooldown --backend nvml --count 6 --interval 1.0 --pcie thread
tar -C "$C" -czf "$OUT/capture.tar.gz" .
ls -la "$C"
for f in "$C"/*.time; do echo "$(basename $f): $(tr '\n' ' ' < $f)"; done
for f in "$C"/*.jsonl; do echo "$(basename $f): $(python3 -c "
import json,sys
c=[json.loads(l)['cost_ms'] for l in open('$f') if l.startswith('{\"type\":\"sample\"')]
print(len(c), 'samples, cost_ms', [round(x,2) for x in c])")"; done
head -c 600 "$C/nvml_load_gpm.jsonl" | tail -c 300; echo
tail -1 "$C/nvml_load_gpm.jsonl" | head -c 1600; echo
cat "$C/env.txt"; cat "$C"/*.err | head -20
