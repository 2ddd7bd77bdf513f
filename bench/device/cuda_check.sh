#!/usr/bin/env bash
# The CUDA path on a lent GPU host (torch as installed there, OpLens from this tree and the .vsix's bundled
# libraries: the host reaches no registry). Run by the device tool: `bash bench/device/cuda_check.sh`, $OUT kept.
set -u
export PYTHONPATH=$PWD/server:$PWD/bundled/libs
OUT=${OUT:-/tmp/oplens-device}
mkdir -p "$OUT"
python -c "import torch,sys;print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), sys.version.split()[0])"
python - <<'PY'
import re
from torch.autograd import _KinetoEvent
used = sorted(set(re.findall(r'\bk\.(\w+)', open('server/oplens/worker/events.py').read())))
print('_KinetoEvent attributes used:', used, 'missing here:', [a for a in used if not hasattr(_KinetoEvent, a)])
PY
timeout 240 python -m oplens profile examples/rmsnorm.py::rmsnorm_naive --args "make_inputs()" --iters 10 --out "$OUT/runs"
echo "rc=$?"
timeout 200 python -m oplens profile e2e/workspace/tinypkg/mlp.py::GatedMLP.forward --args "make_inputs(64, 1024)" --iters 10 \
  --out "$OUT/runs" --json "$OUT/pkg.json" > /dev/null
echo "rc=$?"
python - "$OUT/pkg.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r['target']['module'], r['backend']['name'], '|', r['backend']['note'], '| device us', round(r['totals']['self_device_us'], 1))
print([(ln['line'], round(ln['self_device_us'], 1)) for ln in r['lines'] if ln['self_device_us']], r.get('device_time', {}).get('source'))
PY
timeout 240 python -m oplens compare examples/rmsnorm.py::rmsnorm_naive examples/rmsnorm.py::rmsnorm_fused --args "make_inputs()" \
  --iters 10 --out "$OUT/runs" | tail -6
echo "rc=$?"
