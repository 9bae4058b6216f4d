#!/usr/bin/env bash
# Every built-in elementwise and reduction op (bf16, H200) baked with the template's CLI and run through its own V0
# harness (test_kernel.py --no-timing), six at a time (or the PATTERN:OP arguments alone): correctness only, so parallel runs are fine. One line per op,
# with each case that did not pass (its status and error).
set -u
out=${1:?usage: v0_builtins.sh OUT_DIR [PATTERN:OP ...]  (default: every built-in elementwise and reduction op)}
shift
mkdir -p "$out"
one() {
  pattern=$1 op=$2 out=$3
  dir=$(mktemp -d) && python3 -m cookiecutter "$(pwd)" --no-input -o "$dir" "pattern=$pattern" "op=$op" op_name=ws \
    run_baseline=no >/dev/null 2>&1 && (cd "$dir/ws" && timeout 500 python3 test_kernel.py --no-timing >/dev/null 2>&1)
  rc=$?
  cp "$dir/ws/results/results.json" "$out/$op.json" 2>/dev/null
  echo "$op rc=$rc $(python3 -c "import json,sys; r=json.load(open('$out/$op.json')); print('all_passed', r['all_passed'], 'cases', len(r['cases']), 'max_rel_err', r['max_rel_err'], *(f\"| {c['name']} {c['status']} {c.get('error', '')[:200]}\" for c in r['cases'] if c['status'] != 'PASS'))" 2>/dev/null)"
}
export -f one
if [ $# -gt 0 ]; then
  for job in "$@"; do echo "${job%%:*} ${job#*:}"; done > /tmp/v0_jobs
else
  for op in add mul silu gelu relu silu_mul; do echo "elementwise $op"; done > /tmp/v0_jobs
  for op in sum mean max softmax rmsnorm; do echo "reduction $op"; done >> /tmp/v0_jobs
fi
xargs -P 6 -L 1 bash -c 'one "$0" "$1" '"$out" < /tmp/v0_jobs
