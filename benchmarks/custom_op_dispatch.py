"""Host cost of a torch custom op's dispatch, by how it is registered: what a workspace's torch.ops.<op_name>.run adds
to its kernel's own run(). Runs on any machine (CPU tensors, a kernel that only allocates its output).

    python3 benchmarks/custom_op_dispatch.py            # prints the table (microseconds per call)

Registrations, each of one schema `(Tensor a, Tensor b, Tensor c, Tensor d) -> Tensor` and the same kernel:
    direct       the kernel called as a Python function (the floor: what run() itself costs here)
    custom_op    torch.library.custom_op (what the workspace package used before 2026-12-04)
    Library      torch.library.Library: define + impl for the device key, no Autograd kernel (backprop would
                 treat the output as constant, with only a warning at backward time)
    Library+ag   Library plus a Python Autograd kernel that refuses inputs requiring grad and redispatches below
                 autograd (the workspace package's registration now: {{cookiecutter.op_name}}/__init__.py)
each called eagerly (torch.ops.ns.run.default) in grad mode, under torch.no_grad() and under torch.inference_mode(),
and ten calls in a row inside torch.compile(fullgraph=True). Best of 5 rounds of back-to-back calls.
Result on this repository's CPU machine: benchmarks/2026-12-04-custom-op-dispatch.md. The GPU path adds the
kernel's own run() (its TVM-FFI launch) to every row; the dispatch itself does not depend on the device.
"""

from __future__ import annotations

import torch
from sweep_common import host_us  # this folder's: the one host-time loop of the benchmarks


def per_call_us(fn, n: int = 20000) -> float:
    return host_us(fn, n, warmup=200)


def kernel(a, b, c, d):
    return torch.empty_like(a)


def register() -> dict:
    """namespace -> how it was registered; every op computes `kernel`."""
    schema = "(Tensor a, Tensor b, Tensor c, Tensor d) -> Tensor"
    torch.library.custom_op("kb_bench_co::run", kernel, mutates_args=(), schema=schema)
    torch.library.register_fake("kb_bench_co::run", kernel)
    libs = {}
    for ns, autograd in (("kb_bench_lib", False), ("kb_bench_libag", True)):
        lib = libs[ns] = torch.library.Library(ns, "DEF")
        lib.define(f"run{schema}")
        lib.impl("run", kernel, "CPU")
        torch.library.register_fake(f"{ns}::run", kernel, lib=lib)
        if autograd:
            default = getattr(torch.ops, ns).run.default

            def no_gradient(*inputs, default=default):
                if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
                    raise RuntimeError("no gradient")
                with torch._C._AutoDispatchBelowAutograd():
                    return default(*inputs)

            lib.impl("run", no_gradient, "Autograd")
    return {"custom_op": "kb_bench_co", "Library": "kb_bench_lib", "Library+ag": "kb_bench_libag", "_libs": libs}


def main() -> int:
    names = register()
    x = [torch.randn(4) for _ in range(4)]
    rows = {"direct": {"grad": per_call_us(lambda: kernel(*x))}}
    for label in ("custom_op", "Library", "Library+ag"):
        op = getattr(torch.ops, names[label]).run.default
        row = rows[label] = {"grad": per_call_us(lambda op=op: op(*x))}
        with torch.no_grad():
            row["no_grad"] = per_call_us(lambda op=op: op(*x))
        with torch.inference_mode():
            row["inference_mode"] = per_call_us(lambda op=op: op(*x))

        def ten(a, b, c, d, op=op):
            for _ in range(10):
                a = op(a, b, c, d)
            return a

        compiled = torch.compile(ten, fullgraph=True)
        row["10 calls compiled"] = per_call_us(lambda compiled=compiled: compiled(*x), 2000)
    cols = ["grad", "no_grad", "inference_mode", "10 calls compiled"]
    print(f"torch {torch.__version__}; microseconds per call (best of 5 rounds)\n")
    print("| registration | " + " | ".join(cols) + " |\n|---" + "|---" * len(cols) + "|")
    for label, row in rows.items():
        print(f"| {label} | " + " | ".join(f"{row[c]:.2f}" if c in row else "-" for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
