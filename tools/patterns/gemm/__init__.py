"""The GEMM pattern: C = A . B^T with both operands K-major (nn.Linear's layout), everything it knows.

Template side: the registry reads this module; the workspace gets its facts through op.json. The workspace side
of the pattern is ``{{cookiecutter.op_name}}/patterns/gemm/`` (reference.py and one kernel per DSL).
"""

from __future__ import annotations

from tools import shapes
from tools.catalog import DTYPES as DTYPE_FACTS
from tools.catalog import InputError

PROMPT = "GEMM: C = A @ B^T (nn.Linear layout)"
DEFAULT_OP = "matmul"
DTYPES = ["bf16", "fp16", "fp8"]  # fp8: e4m3 a and b with per-tensor fp32 scales, bf16 out (OPS' by_dtype)
SHAPES_HELP = "MxNxK shapes separated by ';', e.g. '4096x4096x4096;8192x8192x8192'"

OPS = {
    "matmul": {"inputs": ["a", "b"], "flops": "2*M*N*K", "bytes": "(M*K + N*K + M*N)*elem_bytes", "out": "[M, N]",
               "math": "c[M, N] = a[M, K] @ b[N, K]^T  (both K-major, as nn.Linear; fp32 accumulation)",
               "by_dtype": {"fp8": {
                   "inputs": ["a", "b", "scale_a", "scale_b"],
                   "bytes": "(M*K + N*K)*elem_bytes + M*N*2 + 8",
                   "bytes_note": "A, B read once (1 byte each), C written once in bf16, the two fp32 scales",
                   "math": "c[M, N] = bf16(scale_a * scale_b * (a[M, K] @ b[N, K]^T))  (e4m3 a and b, both "
                           "K-major; per-tensor fp32 scales; fp32 accumulation)",
                   "phase1": {
                       "inputs": "`a` [M, K] and `b` [N, K] in e4m3 (float8_e4m3fn; float8_e4m3fnuz on gfx942), "
                                 "both K-major, and `scale_a`, `scale_b`: fp32 tensors of shape (1,) on the GPU, the "
                                 "per-tensor dequantisation scales; output `c` [M, N] bf16, row-major.",
                       "precision": "e4m3 products accumulated into fp32 registers by the tensor cores (on Hopper the fp8 "
                                    "WGMMA adds its products at a reduced internal precision, and the kernel keeps "
                                    "the whole K loop in those accumulators: cuBLASLt's fast-accumulation mode); "
                                    "scale_a * scale_b applied to the fp32 accumulator; one bf16 rounding on the "
                                    "store. Tolerance: the inputs are exact e4m3 values and the reference "
                                    "dequantises them in float64, so quantisation is not an error here; what "
                                    "remains is the accumulation and the bf16 rounding of C (<= 2^-9 per element, "
                                    "~1e-3 as a norm ratio): bf16's 1e-2, which a sign or scale error or a lost "
                                    "K-tile exceeds by far.",
                       "shapes": "any M, N, K >= 1 with K a multiple of 16 (16-byte rows of 1-byte elements)."},
               }}},
}
FORMULA_NOTES = {"flops": "one multiply-add (2 FLOP) per (m, n, k)",
                 "bytes": "A, B read once and C written once: the compulsory traffic (re-reads served by L2 are not "
                          "counted)"}

PHASE1 = {
    "inputs": "`a` [M, K] and `b` [N, K], both K-major (row-major with K contiguous), as nn.Linear stores "
              "activations and weights; output `c` [M, N], row-major.",
    "shapes": "any M, N, K >= 1 with K a multiple of 16 bytes of elements (TMA row alignment); the cases below.",
    "precision": "inputs and output in the dtype; products accumulated in fp32 registers by the tensor cores; "
                 "one rounding on the store.",
    "masks": "none; no bias, no activation (fuse those in the epilogue in a later version).",
    "boundaries": "M or N not a multiple of the tile: TMA zero-fills out-of-range loads and clips "
                  "out-of-range stores, so partial tiles need no padding; K tails likewise.",
    "special": "no special values handling beyond IEEE: NaN/Inf propagate through the dot products.",
}
BASELINE = ("`a @ b.T` (cuBLAS) is the timed baseline; for fp8, `torch._scaled_mm` with the same scales "
            "(cuBLASLt, its default accumulation)")
WIKI_WORDS = ["gemm", "matmul", "wgmma", "mfma", "tensor core", "tma"]
# the gpu-wiki's operator families of this pattern (its JSON records' scope.operator_family, matched exactly)
WIKI_FAMILIES = ["gemm"]
ISA_TARGETS = {"kind": "compute", "tensor_core": True, "vec_stores": False}

DEFAULT_SHAPES = {
    # square, LLM projections (N or K = 14336), and skinny decode-like M (memory-bound)
    "representative": ["8192x8192x8192", "4096x4096x4096", "4096x14336x4096", "4096x4096x14336",
                       "16x8192x8192", "64x8192x8192", "128x8192x8192"],
    # the last seven exercise the CuTe DSL cell's small-M regimes at their edges: GEMV row buckets 2 and 4 with
    # odd N and a K tail; the swapped tiles (C^T = B . A^T) at each width (16, 32, 64) with M short of it:
    # split-K with a partial tile of B's rows and odd N (33, 24), with an uneven last split over a partial K tile
    # (5), with 16 splits (16x256); unsplit with a K tail (64)
    "boundary": ["1000x1000x64", "1x4096x4096", "4095x4097x4096", "129x8x8", "2x1001x4104", "3x4097x4104",
                 "33x4097x4096", "64x8192x4136", "16x256x8192", "5x4096x4136", "24x1001x8192"],
    # fp8's K is a multiple of 16 (16-byte rows of 1-byte elements): the same edges with K rounded up to 16, and
    # K-tails of fp8's 128-element K-tiles (4160) and of the GEMV's 16-element chunks (4112)
    "boundary_fp8": ["1000x1000x64", "1x4096x4096", "4095x4097x4096", "129x8x16", "2x1001x4112", "3x4097x4112",
                     "33x4097x4096", "64x8192x4160", "16x256x8192", "5x4096x4160", "24x1001x8192"],
}


def cases(text: str, role: str, dtype: str) -> list[dict]:
    """`MxNxK` items -> cases with M, N, K; K must give 16-byte rows."""
    out = []
    align = 16 // DTYPE_FACTS[dtype]["bytes"]
    for item in shapes.items(text):
        m, n, k = shapes.dims(item, (3,), "4096x4096x4096 (M x N x K)")
        if k % align:
            raise InputError(f"shapes: '{item}': K={k} is not a multiple of {align}: rows of A and B "
                             f"must be 16-byte aligned ({align} {dtype} elements) for TMA / dwordx4 buffer loads, so "
                             f"pad K to {-(-k // align) * align}")
        out.append(shapes.case(role, item.lower(), [m, n, k], {"M": m, "N": n, "K": k}, dtype))
    return out


def tensors(case: dict, op: str) -> dict[str, tuple[int, int]]:
    """Every tensor the op reads or writes: name -> (elements, bytes per element)."""
    v = case["vars"]
    c_bytes = 2 if v["elem_bytes"] == 1 else v["elem_bytes"]  # fp8 writes bf16
    return {"A [M,K]": (v["M"] * v["K"], v["elem_bytes"]), "B [N,K]": (v["N"] * v["K"], v["elem_bytes"]),
            "C [M,N]": (v["M"] * v["N"], c_bytes)}


def largest_buffer(case: dict) -> int:
    """Bytes of the largest operand: A, B or C."""
    return max(b * e for b, e in tensors(case, "matmul").values())
