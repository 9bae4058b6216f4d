. benchmarks/device_setup.sh
R=$PWD; mkdir -p /tmp/w && cd /tmp/w
python3 -m cookiecutter $R --no-input -o /tmp/w pattern=reduction op=rmsnorm gpu=H200 op_name=rms run_baseline=yes 2>&1 | tail -3
python3 -m cookiecutter $R --no-input -o /tmp/w pattern=elementwise op=silu_mul gpu=H200 op_name=sm run_baseline=yes 2>&1 | tail -3
for w in rms sm; do python3 -c "import json; r=json.load(open('/tmp/w/$w/results/results.json')); print(r.get('all_passed'), r.get('kernel_import_s'), [(c['name'], c['status'], c.get('first_call_s'), c.get('call_us'), c.get('torch_call_us'), c.get('call_bound')) for c in r['cases']])"; grep -n "call bound" -A6 /tmp/w/$w/baseline_report.md | head -12; done
cd $R && timeout 400 python3 -m pytest -q tests/test_gpu.py -k "elementwise or reduction" -x 2>&1 | tail -5
