"""A user's Triton kernel, as a kernel demo: fused residual add + RMSNorm (test data, not a kernel of kbaseline's).

Written for kbaseline's tests and benchmarks/bench_demo.py in the style of the well-known fused-norm kernels
(one program per row, the row held in registers as one power-of-two block, fp32 statistics): it computes what
`fused_add_rmsnorm_torch.fused_add_rmsnorm` computes, h = x + residual and y = RMSNorm(h) * weight, and returns
(h, y). The workspace baked with it as `kernel_demo` checks V0 against it and times it beside V0 on the GPU; at bake
time it is only read (its jit function, BLOCK_N, the grid), never imported.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _fused_add_rmsnorm_kernel(X, R, W, H, Y, stride_x, stride_r, stride_h, stride_y, N, eps,
                              BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(H + row * stride_h + cols, h.to(H.dtype.element_ty), mask=mask)
    var = tl.sum(h * h, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    normed = (h * rstd).to(Y.dtype.element_ty).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (normed * w).to(Y.dtype.element_ty), mask=mask)


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    """h = x + residual, y = rmsnorm(h) * weight over the last dim; returns (h, y). Rows may be padded (stride)."""
    n = x.shape[-1]
    x2, r2 = x.reshape(-1, n), residual.reshape(-1, n)
    m = x2.shape[0]
    h = torch.empty((m, n), dtype=x.dtype, device=x.device)
    y = torch.empty_like(h)
    BLOCK_N = triton.next_power_of_2(n)
    num_warps = min(max(BLOCK_N // 256, 1), 16)
    _fused_add_rmsnorm_kernel[(m,)](x2, r2, weight, h, y, x2.stride(0), r2.stride(0), h.stride(0), y.stride(0), n, eps,
                                    BLOCK_N=BLOCK_N, num_warps=num_warps)
    return h.view(*x.shape[:-1], n), y.view(*x.shape[:-1], n)
