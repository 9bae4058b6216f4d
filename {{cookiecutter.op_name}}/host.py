"""Host-side helpers that every kernel.py shares, whatever its DSL: the op spec, dtype names, argument checks.

Copied into every workspace beside kernel.py (and beside the DSL's own runtime, `cutedsl_runtime.py` or
`flydsl_runtime.py`). A kernel's `run()` validates its arguments here before it launches, so every cell
refuses a bad call with the same words. Nothing here knows a DSL or a GPU: the GPU's facts (target,
compute units) reach the kernel through op.json, which the template wrote once at bake time.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

OP_PATH = Path(__file__).with_name("op.json")
OP: dict = json.loads(OP_PATH.read_text()) if OP_PATH.is_file() else {}  # {} outside a workspace

DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "int8": "int8",  # torch name -> op.json
               "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8"}  # e4m3: OCP (sm_90a, gfx950), fnuz (gfx942)
DTYPE_BITS = {"bf16": 16, "fp16": 16, "fp32": 32, "fp8": 8, "int8": 8}
# an output's op.json dtype -> torch's (fp8 has two torch dtypes and is never an output)
TORCH_DTYPES = {name: torch_name for torch_name, name in DTYPE_NAMES.items() if name != "fp8"}


def is_fp8(tensor) -> bool:
    """Whether a tensor holds e4m3 values (either flavour)."""
    return DTYPE_NAMES.get(str(tensor.dtype).removeprefix("torch.")) == "fp8"


def dtype_of(tensor, op: str, allowed=("bf16", "fp16", "fp32")) -> str:
    """The op.json name of a tensor's dtype ('bf16', ...), or a TypeError that lists what the kernel takes."""
    name = DTYPE_NAMES.get(str(tensor.dtype).removeprefix("torch."))
    if name not in allowed:
        raise TypeError(f"{op}: dtype {tensor.dtype} is not supported ({', '.join(allowed)})")
    return name


def check_aligned(op: str, tensors, access: str) -> None:
    """Every tensor starts on a 16-byte boundary, as the 128-bit accesses of `access` need."""
    if any(t.data_ptr() % 16 for t in tensors):
        raise ValueError(f"{op}: every tensor must start on a 16-byte boundary ({access}); pass a .clone()")


def check_count(op: str, inputs, n: int) -> None:
    """`op` was given exactly n input tensors."""
    if len(inputs) != n:
        raise ValueError(f"{op} takes {n} input(s), got {len(inputs)}")


def check_tensor(op: str, name: str, t, shape, like) -> None:
    """`t` is a contiguous tensor of `shape`, of like's dtype and on like's device."""
    shape = tuple(shape)
    if tuple(t.shape) != shape or t.dtype != like.dtype or not t.is_contiguous() or t.device != like.device:
        raise ValueError(f"{op}: {name} must be a contiguous {shape} tensor of dtype {like.dtype} on {like.device}")


def out_tensor(op: str, out, shape, like):
    """`out` once check_tensor passes it, or a new tensor of `shape` with like's dtype and device when it is None."""
    if out is None:
        import torch

        return torch.empty(tuple(shape), dtype=like.dtype, device=like.device)
    check_tensor(op, "out", out, shape, like)
    return out


def rows_of(op: str, x) -> tuple[int, int, int]:
    """(M, N, row stride) of a non-empty 2-D GPU tensor whose last dim is contiguous (rows may be padded)."""
    if x.dim() != 2 or not x.is_cuda:
        raise ValueError(f"{op}: x must be a 2-D GPU tensor [M, N], got shape {tuple(x.shape)} on {x.device}")
    m, n = x.shape
    if m == 0 or n == 0:
        raise ValueError(f"{op}: empty input {tuple(x.shape)}")
    if n > 1 and x.stride(1) != 1:
        raise ValueError(f"{op}: the last dim must be contiguous (stride 1), got strides {x.stride()}")
    ld = x.stride(0) if m > 1 else n
    if ld < n:
        raise ValueError(f"{op}: row stride {ld} < N={n} (overlapping rows)")
    return m, n, ld


OUTPUT_SHAPES = {"row": lambda m, n: (m, n), "reduced": lambda m, n: (m,), "reduced_keepdim": lambda m, n: (m, 1)}


def lowered_out_shapes(lowered, m: int, n: int) -> list:
    """Each output's 2-D shape over M rows of N: a row output [M, r*N] (r = lowered.OUT_WIDTHS: RoPE's whole row
    from its halves), a reduced one [M] or [M, 1]."""
    return [OUTPUT_SHAPES[kind](m, n * r) for kind, r in zip(lowered.OUTPUTS, lowered.OUT_WIDTHS)]


def lowered_outputs(out):
    """run()'s `out` of a lowered op as a tuple in lowered.OUTPUTS order: given as one tensor or a tuple/list."""
    return out if isinstance(out, tuple) else tuple(out) if isinstance(out, list) else (out,)


def out_dtypes(names) -> list:
    """Each output's torch dtype by its op.json name (lowered.OUT_DTYPES, op.json output_dtypes), None for "input"
    (x's): fp32, or a quantizer's int8 / fp8 storage (e4m3fn, the dtype the function itself casts to)."""
    import torch

    return [None if name == "input" else getattr(torch, TORCH_DTYPES.get(name, "float8_e4m3fn")) for name in names]


def empty_likes(names) -> tuple:
    """A run()'s makers of outputs of x's shape, one per output (names: lowered.OUT_DTYPES): torch.empty_like, or a
    partial of it with the output's dtype, so that each is a C call with no Python frame in between (torch's cheapest
    allocation: 0.85 us on a CPU, against 0.9 for new_empty and more for a lambda around either)."""
    import functools

    import torch

    return tuple(torch.empty_like if d is None else functools.partial(torch.empty_like, dtype=d)
                 for d in out_dtypes(names))


def lowered_stores(outputs, widths, hows) -> tuple[tuple, tuple]:
    """(stores, first) of a lowered op's outputs (lowered.OUTPUTS, OUT_WIDTHS, OUT_HOW), for every row cell: compute()
    returns OUT_WIDTHS[o] results per output o, its pieces in order, from results[first[o]]; `stores` has one
    (o, how, j) per register fragment a row output is stored from: a "whole" output's one, a wide output's (RoPE's
    [M, r*N] row) "part" j from its own (at column j*N), or its "lane"s (o, "lane", 0), ONE fragment r*VEC wide per
    chunk that its r results fill interleaved (piece j at j, j + r, ...), stored with 128-bit accesses: the loads'
    lanes, the other way."""
    stores, first, k = [], [], 0
    for o, (kind, r, how) in enumerate(zip(outputs, widths, hows)):
        first.append(k)
        if kind == "row":
            stores += [(o, how, j) for j in range(r)] if how == "part" else [(o, how, 0)]
        k += r
    return tuple(stores), tuple(first)


def lowered_x(lowered) -> int:
    """The index of x among a lowered op's inputs: the first "row" input in the user's parameter order."""
    return lowered.KINDS.index("row")


def lowered_viewer(lowered, flat_per_row: bool = True, mask_bytes: bool = True):
    """run()'s view of its inputs as a compiled launcher takes them, built once per lowered module: a bool mask as its
    bytes (uint8, a view: no copy) unless mask_bytes is False (a launcher compiled on bool takes the mask as it is),
    a 0-d scalar as shape (1,), one value per row ([M, 1], [B, S]) as its M values (a
    view where its layout allows; a layout that does not is the check's to refuse), unless flat_per_row is False (a
    launcher compiled on x's leading shape takes them as they are). None when every input goes as it is. The
    returned function touches only the inputs that can change (a per-row gate among three inputs: one), so the hot
    path pays for those alone; the inputs themselves are untouched."""
    import torch

    def mask(t):
        return t.view(torch.uint8) if t.dtype == torch.bool else t

    def scalar(t):
        return t.view(1) if t.dim() == 0 else t

    def per_row(t):
        return t.view(-1) if t.dim() != 1 and t.is_contiguous() else t

    by_kind = {"scalar": scalar, "per_row": per_row} if flat_per_row else {"scalar": scalar}
    steps = tuple((i, view) for i, (kind, kept) in enumerate(zip(lowered.KINDS, lowered.DTYPES))
                  for view in ((mask,) if kept == "bool" and mask_bytes else ()) +
                  ((by_kind[kind],) if kind in by_kind else ()))
    if not steps:
        return None

    def views(inputs):
        inputs = list(inputs)
        for i, view in steps:  # a per-row mask: its bytes, then its M values
            if i < len(inputs):  # too few inputs: the count check says so, in its own words
                inputs[i] = view(inputs[i])
        return inputs

    return views


def bool_masks(lowered, inputs):
    """The inputs with each mask given as its bytes (uint8) viewed as torch.bool, or None when none is: for a
    launcher compiled on bool masks, whose wrapper refuses the bytes (the contract takes either)."""
    import torch

    if not any(kept == "bool" and i < len(inputs) and inputs[i].dtype == torch.uint8
               for i, kept in enumerate(lowered.DTYPES)):
        return None
    return [t.view(torch.bool) if kept == "bool" and t.dtype == torch.uint8 else t
            for t, kept in zip(inputs, lowered.DTYPES)]


def heads_viewer(lowered):
    """run()'s route for heads of c (lowered.HEADS: a QK-norm's ``q.view(T, -1, head_dim)`` inside the function),
    built once per lowered module: a function of (inputs, out) that returns the inputs with each row input given
    the function's own view [*lead, H, c], or None when host.rows_nd must view them instead (a row input strided
    or of no whole number of heads, whose words rows_nd has; an out not contiguous or not in the function's own
    shape, [*lead, H, c], [*lead, H, 1] or [*lead, H]). Contiguous, [*lead, H, c] is the T*H rows of c a row cell
    runs, and its outputs come in the function's shape with no reshape back. None for a program with no heads, or
    with inputs other than rows, vectors and scalars (rows_nd's to line up)."""
    c = heads_of(lowered)
    if not c:
        return None
    rows = tuple(i for i, kind in enumerate(lowered.KINDS) if kind == "row")
    drops = tuple(int(kind == "reduced") for kind in lowered.OUTPUTS)  # each output's rank below the view's
    count, x = len(lowered.INPUTS), lowered_x(lowered)

    def view(inputs, out):
        if len(inputs) != count:
            return None
        for i in rows:
            t = inputs[i]
            if not (t.dim() and t.shape[-1] % c == 0 and t.is_contiguous()):
                return None
        if out is not None:
            outs = lowered_outputs(out)
            rank = inputs[x].dim() + 1
            for o, d in zip(outs, drops):
                if o.dim() != rank - d or not o.is_contiguous():
                    return None
            if len(outs) != len(drops):
                return None
        viewed = list(inputs)
        for i in rows:  # [T, H*c] (the common q) by its one leading extent: 0.4 us less than unpacking its shape
            t = inputs[i]
            shape = t.shape
            viewed[i] = t.view(shape[0], -1, c) if len(shape) == 2 else t.view(*shape[:-1], -1, c)
        return viewed

    return view


def heads_of(lowered) -> int:
    """c, for a program whose rows are heads of c (lowered.HEADS) among inputs a row cell can take in the function's
    own view of them: rows, vectors and scalars, none read in parts; else 0 (host.rows_nd lines the others up)."""
    c = lowered.HEADS
    if not c or not set(lowered.KINDS) <= {"row", "vector", "scalar"} or any(w != 1 for w in lowered.WIDTHS):
        return 0
    return c


def kept(lowered, name: str, make):
    """make(lowered), built once per lowered module and kept on the module itself, as `name`. On the module, not in
    a dict keyed by id(lowered): a module that is gone can leave its id to another (a test's stand-in), which would
    then get its constants."""
    space = vars(lowered)
    if name not in space:
        space[name] = make(lowered)
    return space[name]


def check_rank(lowered, x) -> None:
    """x of the rank the function was lowered at, when it names a dim by position (lowered.RANK: ``x.mean(dim=1)``
    is x's last dim at rank 2 only; tools/lower/capture.py bound_rank); of any rank when RANK is None."""
    if lowered.RANK is not None and x.dim() != lowered.RANK:
        raise ValueError(f"{lowered.SOURCE}: the function names a dim by its position (dim=1, x[:, :d]), x's last dim "
                         f"only at rank {lowered.RANK}; got x of shape {tuple(x.shape)}: pass x as [M, N] rows "
                         "(x.reshape(-1, x.shape[-1])), or name the dim from the end (dim=-1, x[..., :d])")


def check_heads(lowered, x) -> None:
    """x's last dim a whole number of heads of c, for a function that views it so (lowered.HEADS)."""
    if lowered.HEADS and x.shape[-1] % lowered.HEADS:
        raise ValueError(f"{lowered.SOURCE}: x's last dim {x.shape[-1]} is not a whole number of heads of "
                         f"{lowered.HEADS} (the function views it as [..., -1, {lowered.HEADS}])")


def rows_nd(lowered, run_2d, inputs, out):
    """run_2d (a row cell's run on [M, N] rows) on inputs of any rank: a lowered op's rows are x's last dim, so rank
    3 or more ([B, S, H, D], a QK-norm over heads) is M = B*S*H rows of D, and a function that views x's rows as
    heads of c (lowered.HEADS: ``q.view(T, -1, head_dim)``) is M = T*H rows of c. Each row input (and each `out`) is
    viewed as 2-D (a view; reshape copies only leading dims that do not collapse), a broadcast input (cos [S, D]
    against q [B, S, H, D]) as broadcast_rows makes it, and the outputs come back in x's leading shape: a row output
    [..., N], a reduced one [...] or [..., 1] (a 1-D x is one row). A plain 2-D x goes straight to run_2d.

    Host cost: this runs on every call with an N-D x, so what does not depend on the call (which inputs change, and
    how) is worked out once per module (_rows_nd_plan), and the loop touches only those inputs."""
    check_count(lowered.SOURCE, inputs, len(lowered.INPUTS))
    xi, own_rows, steps = kept(lowered, "_rows_nd", _rows_nd_plan)
    x = inputs[xi]
    check_rank(lowered, x)
    dim = x.dim()
    if dim == 2 and own_rows:
        return run_2d(*inputs, out=out)
    if dim == 0:
        raise ValueError(f"{lowered.SOURCE}: x must be a tensor of rows (rank >= 1), got a 0-d tensor")
    check_heads(lowered, x)
    lead = view_lead(lowered, x)
    flat, given = _flat_rows(lowered, inputs, out, steps)
    if out is not None:  # written through 2-D views of them; handed back as given, as torch's out= does
        run_2d(*flat, out=given)
        outs = lowered_outputs(out)
        return outs[0] if len(outs) == 1 else outs
    got = run_2d(*flat)
    if len(lowered.OUTPUTS) == 1:
        return _in_lead(got, lowered.OUTPUTS[0], lead)
    return tuple(_in_lead(t, kind, lead) for t, kind in zip(got, lowered.OUTPUTS))


def flat_rows(lowered, inputs, out):
    """(inputs, out) of an x of rank 3 or more, or of heads of c (x [*lead, H*c] as passed, or [*lead, H, c] as the
    function views it), as rows_nd hands them to a row cell ([M, N] rows, per-row inputs [M]): for a cell that
    launches on the tensors themselves, so that its first call checks them in the words of every other cell."""
    return _flat_rows(lowered, inputs, out, kept(lowered, "_rows_nd", _rows_nd_plan)[2])


def _flat_rows(lowered, inputs, out, steps):
    heads, x = lowered.HEADS, inputs[lowered_x(lowered)]
    flat = list(inputs)
    for i, kind in steps:
        t = flat[i]
        flat[i] = t.reshape(-1, heads or t.shape[-1]) if kind == "row" else (t.reshape(-1) if t.dim() != 1 else t) \
            if kind == "per_row" else broadcast_rows(lowered, x, t, i)  # a per-row input may come viewed
    if out is None:
        return flat, None
    given = tuple(t.view(-1, heads or t.shape[-1]) if kind == "row" else t.view(-1, 1) if kind == "reduced_keepdim"
                  else t.view(-1) for t, kind in zip(lowered_outputs(out), lowered.OUTPUTS))
    return flat, given if len(given) > 1 else given[0]


def _rows_nd_plan(lowered) -> tuple[int, bool, tuple]:
    """rows_nd's constants of a lowered module: x's index; whether its rows are x's own (no heads, no input
    broadcast over them); and each input that becomes 2-D rows, as (index, kind): the rest (vectors, scalars) go
    as they are."""
    kinds = lowered.KINDS
    return (lowered_x(lowered), not lowered.HEADS and not {"broadcast", "broadcast_per_row"} & set(kinds),
            tuple((i, kind) for i, kind in enumerate(kinds) if kind in ("row", "per_row", "broadcast",
                                                                        "broadcast_per_row")))


def view_lead(lowered, x) -> tuple:
    """x's leading shape as the function sees its rows: x.shape[:-1], or with heads of c (lowered.HEADS)
    [*x.shape[:-1], H]."""
    heads = lowered.HEADS
    return (*x.shape[:-1], x.shape[-1] // heads) if heads else tuple(x.shape[:-1])


def lead_shape(kind: str, lead: tuple, n: int) -> tuple:
    """An output's shape over x's leading shape `lead` (OUTPUT_SHAPES past M): a row output [*lead, n], a reduced one
    [*lead] or [*lead, 1]."""
    return (*lead, *OUTPUT_SHAPES[kind](1, n)[1:])


def _in_lead(t, kind: str, lead: tuple):
    """An output of 2-D rows back in x's leading shape (lead_shape)."""
    return t.reshape(lead_shape(kind, lead, t.shape[-1]))


def broadcast_rows(lowered, x, t, i: int):
    """Input i, which the function broadcasts over some of x's leading dims (lowered.DIMS names them: cos [S, D]
    against q [B, S, H, D]), as a [L0, L1, L2, W] view of itself whose row r (x's row-major order over L0, L1, L2) is
    the row of t the function pairs with x's row r: stride 0 over the dims it is broadcast over. x's leading dims
    are merged where both strides allow (two broadcast dims, or two that t holds contiguously) and padded with 1s
    to three; a row cell's layout then finds each row's start from the strides, with no copy. One value per row
    broadcast the same way ("broadcast_per_row": a per-sample [B] over [B, C, H, W]) is an [L0, L1, L2] view: its
    element for row r."""
    dims, names = lowered.DIMS[lowered_x(lowered)], lowered.DIMS[i]
    if x.dim() != len(dims):  # its dims are paired with x's by name: x [B*S*H, D] would pair cos's S with nothing
        raise ValueError(f"{lowered.SOURCE}: {lowered.INPUTS[lowered_x(lowered)]} must be [{', '.join(dims)}] as the "
                         f"function names its dims (its other inputs broadcast by them), got {tuple(x.shape)}")
    if t.dim() != len(names):
        raise ValueError(f"{lowered.SOURCE}: {lowered.INPUTS[i]} must be [{', '.join(names)}], got {tuple(t.shape)}")
    sizes, strides = [], []
    for d, size in zip(dims[:-1], x.shape[:-1]):
        k = names.index(d) if d in names else None
        if k is not None and t.shape[k] != size:
            raise ValueError(f"{lowered.SOURCE}: {lowered.INPUTS[i]}'s {d} is {t.shape[k]}, x's {size}")
        stride = 0 if k is None or size == 1 else t.stride(k)
        if sizes and (strides[-1] == stride * size):  # merges into the dim before (stride 0 with 0, or contiguous)
            sizes[-1], strides[-1] = sizes[-1] * size, stride
        else:
            sizes.append(size)
            strides.append(stride)
    if len(sizes) > 3:
        raise ValueError(f"{lowered.SOURCE}: {lowered.INPUTS[i]} is broadcast over x's dims in more than three "
                         "alternating groups; the kernel's rows take three")
    pad = 3 - len(sizes)
    if lowered.KINDS[i] == "broadcast_per_row":
        return t.as_strided((*[1] * pad, *sizes), (*[0] * pad, *strides))
    return t.as_strided((*[1] * pad, *sizes, t.shape[-1]), (*[0] * pad, *strides, t.stride(-1)))


def lowered_operands(lowered, inputs, out, out_shapes, rows_contiguous: bool):
    """(dtype, outputs) of a lowered op (the workspace's lowered.py; tests/lowered_examples/CONTRACT.md).

    Inputs come in the user's parameter order (lowered.INPUTS). x is the first "row" input; every "row" input is
    [M, width*N] (lowered.WIDTHS: 1, or r for an input the function reads in r parts), a "vector" input is [N] (N =
    x.shape[-1] / x's width), a "scalar" input holds one element (0-d or [1]); each
    is of x's dtype on x's device, except a mask (lowered.DTYPES "bool"), which is torch.bool (or its bytes, uint8).
    Rows are contiguous (rows_contiguous: the elementwise cell) or 2-D with a contiguous last dim (the reduction
    cell, rows_of), vectors are contiguous. Output i has shape out_shapes[i] and lowered.OUT_DTYPES[i] ("input":
    x's dtype, "fp32", "int8", "fp8": out_dtypes); outputs are the checked `out` tensors (None, one tensor, or a tuple/list) or new ones. Every
    tensor starts on a 16-byte boundary when rows_contiguous (128-bit accesses throughout), on its element size
    otherwise (the reduction cell picks its vector width from the pointers)."""
    import torch

    op = lowered.SOURCE
    check_count(op, inputs, len(lowered.INPUTS))
    x = inputs[lowered_x(lowered)]
    check_rank(lowered, x)  # the row cells see 2-D rows here: rows_nd checked the rank they came in at
    dtype = dtype_of(x, op)
    if x.dim() == 0 or not x.is_cuda:
        raise ValueError(f"{op}: x must be a GPU tensor of rank >= 1, got shape {tuple(x.shape)} on {x.device}")
    n = x.shape[-1] // lowered.WIDTHS[lowered_x(lowered)]  # the row length N: a wide x is r*N
    for name, kind, kept, width, t in zip(lowered.INPUTS, lowered.KINDS, lowered.DTYPES, lowered.WIDTHS, inputs):
        if kind == "row" and not rows_contiguous:
            rows_of(op, t)
        if kind.startswith("broadcast") and (t.dim() != (4 if kind == "broadcast" else 3) or
                                             t.shape[0] * t.shape[1] * t.shape[2] != x.shape[0]):
            raise ValueError(f"{op}: {name} (broadcast over x's rows) must come as broadcast_rows makes it, got "
                             f"{tuple(t.shape)}: call run() with the inputs as the function takes them")
        shape = {"row": (*x.shape[:-1], n * width), "vector": (n * width,), "scalar": (), "per_row": x.shape[:-1],
                 "broadcast": (*t.shape[:3], n * width), "broadcast_per_row": tuple(t.shape[:3])}[kind]
        dtypes = (torch.bool, torch.uint8) if kept == "bool" else (x.dtype,)
        if (tuple(t.shape) != shape and not (kind == "scalar" and t.numel() == 1 and t.dim() <= 1)
                and not (kind == "per_row" and tuple(t.shape) == (*shape, 1))) \
                or t.dtype not in dtypes or t.device != x.device or not (
                t.is_contiguous() or kind in ("row", "broadcast") and not rows_contiguous and t.stride(-1) == 1
                or kind == "broadcast_per_row"):
            what = "a one-element" if kind == "scalar" else f"a contiguous {tuple(shape)} (or {(*shape, 1)})" \
                if kind == "per_row" else f"a contiguous {shape}"
            raise ValueError(f"{op}: {name} ({kind}) must be {what} tensor of dtype {dtypes[0]} on {x.device}, got "
                             f"{tuple(t.shape)} {t.dtype} on {t.device}")
    given = None if out is None else lowered_outputs(out)
    if given is not None and len(given) != len(lowered.OUTPUTS):
        raise ValueError(f"{op}: out must hold {len(lowered.OUTPUTS)} tensor(s), one per output {lowered.OUTPUTS}")
    outputs = tuple(
        out_tensor(op, given[i] if given else None, shape,
                   x if kind == "input" else SimpleNamespace(dtype=out_dtypes(lowered.OUT_DTYPES)[i], device=x.device))
        for i, (shape, kind) in enumerate(zip(out_shapes, lowered.OUT_DTYPES)))
    align = 16 if rows_contiguous else x.element_size()
    loaded = [t for t, kind in zip(inputs, lowered.KINDS) if kind != "scalar"]
    if any(t.data_ptr() % (align if rows_contiguous else t.element_size()) for t in (*loaded, *outputs)):
        raise ValueError(f"{op}: every tensor must start on a {align}-byte boundary; pass a .clone()")
    return dtype, outputs


def matmul_dims(a, b, out, access: str, out_dtype=None):
    """(dtype, M, N, K, out) of out[M, N] = a[M, K] @ b[N, K]^T: bf16/fp16/fp8 GPU tensors, K-major, 16-byte rows and
    starts; out of out_dtype (default a's: a bf16 out for fp8 inputs is the caller's choice)."""
    dtype = dtype_of(a, "matmul", ("bf16", "fp16", "fp8"))
    if b.dtype != a.dtype:
        raise TypeError(f"matmul: a and b must both be bf16, fp16 or fp8 of one dtype, got {a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"matmul: need a [M,K] and b [N,K], got {tuple(a.shape)} and {tuple(b.shape)}")
    (m, k), n = a.shape, b.shape[0]
    like = a if out_dtype is None else SimpleNamespace(dtype=out_dtype, device=a.device)
    out = out_tensor("matmul", out, (m, n), like)
    if not all(t.is_cuda and t.is_contiguous() for t in (a, b)):
        raise ValueError("matmul: a and b must be contiguous GPU tensors")
    if (k * a.element_size()) % 16 or any(t.data_ptr() % 16 for t in (a, b, out)):
        raise ValueError(f"matmul: K*{a.element_size()} bytes must be a multiple of 16 and every tensor 16-byte "
                         f"aligned ({access}); got K={k}")
    return dtype, m, n, k, out


def epilogue_dims(names) -> list[list]:
    """op.json's dims of each named GEMM epilogue input, as the tracer took them: [M, N] (row), [N] (vector), [M] or
    [M, 1] (per_row); sized() turns them into a shape."""
    if not names:  # the built-in matmul (fp8 too): no epilogue inputs, and no program in op.json
        return []
    dims = {i["name"]: i["dims"] for i in OP["lowered"]["inputs"]}
    return [dims[name] for name in names]


def sized(dims, m, n) -> tuple:
    """dims in M and N (and literal 1s) -> a shape; m and n may be ints or a compile's shape symbols."""
    return tuple({"M": m, "N": n}.get(d, d) for d in dims)


def epilogue_operands(op: str, names, kinds, tensors, m: int, n: int, dtype, device) -> None:
    """A GEMM epilogue's inputs (tests/lowered_examples/CONTRACT_GEMM.md) in the shapes op.json gives them
    (epilogue_dims), contiguous, 16-byte aligned, on `device`, of `dtype` (C's) or, for vector/per_row, fp32."""
    import torch

    for name, kind, t, dims in zip(names, kinds, tensors, epilogue_dims(names)):
        shape = sized(dims, m, n)
        dtypes = (dtype,) if kind == "row" else (dtype, torch.float32)
        if tuple(t.shape) != shape or t.dtype not in dtypes or t.device != device or not t.is_contiguous():
            raise ValueError(f"{op}: {name} ({kind}) must be a contiguous {shape} tensor of dtype "
                             f"{' or '.join(map(str, dtypes))} on {device}")
        if t.data_ptr() % 16:
            raise ValueError(f"{op}: {name} must start on a 16-byte boundary; pass a .clone()")


def scale_operands(op: str, scales, device) -> None:
    """fp8's per-tensor scales: scale_a and scale_b, one-element fp32 tensors on `device`."""
    import torch

    for name, t in zip(("scale_a", "scale_b"), scales):
        if tuple(t.shape) != (1,) or t.dtype != torch.float32 or t.device != device:
            raise ValueError(f"{op}: {name} must be a float32 tensor of shape (1,) on {device}, got "
                             f"{tuple(t.shape)} {t.dtype} on {t.device}")


def fp8_format(op: str, tensors, fp8) -> None:
    """a and b of an fp8 GEMM are of `fp8`, the e4m3 the target's matrix cores read (gfx942: float8_e4m3fnuz, bias 8;
    sm_90a and gfx950: float8_e4m3fn, bias 7): the same byte is a value twice or half as large in the other."""
    if any(t.dtype != fp8 for t in tensors):
        raise TypeError(f"{op}: a and b must both be {fp8} (this GPU's fp8 e4m3), got "
                        f"{' and '.join(str(t.dtype) for t in tensors)}")


def decode_dims(op: str, q, k_cache, v_cache, seq_lens, out, access: str):
    """(dtype, B, Hq, Hkv, S, D, out) of decode attention: q[B, Hq, D], k/v_cache[B, S, Hkv, D], seq_lens[B] int32.

    q may have any batch stride that keeps its rows on 16 bytes (its heads and D contiguous): a model's q is often
    a view into the fused QKV projection's output, qkv[:, :Hq * D].view(B, Hq, D), and a copy would cost a launch."""
    if q.dim() != 3 or k_cache.dim() != 4 or v_cache.shape != k_cache.shape:
        raise ValueError(f"{op}: expects q[B, Hq, D], k_cache/v_cache[B, S, Hkv, D], seq_lens[B]")
    (B, Hq, D), (Bk, S, Hkv, Dk) = q.shape, k_cache.shape
    dtype = dtype_of(q, op, ("bf16", "fp16"))
    if not k_cache.dtype == v_cache.dtype == q.dtype:
        raise TypeError(f"{op}: q/k_cache/v_cache must all be bf16 or fp16, got {q.dtype}, {k_cache.dtype}, "
                        f"{v_cache.dtype}")
    if Bk != B or Dk != D or D not in (64, 128, 256) or Hq % Hkv:
        raise ValueError(f"{op}: shapes q{tuple(q.shape)} k{tuple(k_cache.shape)}: need equal B and D, D in "
                         "64/128/256, Hq a multiple of Hkv")
    if tuple(seq_lens.shape) != (B,) or str(seq_lens.dtype) != "torch.int32":
        raise ValueError(f"{op}: seq_lens must be int32 of shape ({B},), got {seq_lens.dtype} {tuple(seq_lens.shape)}")
    if not all(t.is_cuda and t.is_contiguous() for t in (k_cache, v_cache, seq_lens)) or not q.is_cuda:
        raise ValueError(f"{op}: every input must be a contiguous GPU tensor (q: heads and D contiguous)")
    if q.stride(2) != 1 or q.stride(1) != D or q.stride(0) % (16 // q.element_size()):
        raise ValueError(f"{op}: q{tuple(q.shape)} has strides {q.stride()}: need ({16 // q.element_size()}k, {D}, 1), "
                         "its heads and D contiguous with 16-byte rows (a view of a fused QKV output is fine); "
                         "pass q.clone(memory_format=torch.contiguous_format)")
    out = out_tensor(op, out, q.shape, q)
    check_aligned(op, (q, k_cache, v_cache, out), access)
    return dtype, B, Hq, Hkv, S, D, out


def decode_operands(op: str, lowered, inputs, out, access: str):
    """A lowered decode variant's run(*inputs) arguments by their ROLES (tests/lowered_examples/CONTRACT_DECODE.md):
    (dtype, B, Hq, Hkv, S, D, out, (q, k_cache, v_cache, seq_lens), vectors), each vector checked [Hq] ("head") or
    [B] ("batch"), contiguous, on q's device; vectors keep their own float dtype (the kernels convert on load)."""
    check_count(op, inputs, len(lowered.INPUTS))
    by_role = {role: t for role, t in zip(lowered.ROLES, inputs) if role in ("q", "k", "v", "lens")}
    q, k_cache, v_cache, seq_lens = (by_role[r] for r in ("q", "k", "v", "lens"))
    dtype, B, Hq, Hkv, S, D, out = decode_dims(op, q, k_cache, v_cache, seq_lens, out, access)
    vectors = [t for role, t in zip(lowered.ROLES, inputs) if role in ("head", "batch")]
    for name, role, t in zip(lowered.VECTORS, [r for r in lowered.ROLES if r in ("head", "batch")], vectors):
        want = (Hq,) if role == "head" else (B,)
        if tuple(t.shape) != want or not t.is_floating_point() or not t.is_contiguous() or t.device != q.device:
            raise ValueError(f"{op}: {name} must be a contiguous float tensor of shape {want} ({'one value per query head' if role == 'head' else 'one value per sequence'}) on {q.device}, got {t.dtype} {tuple(t.shape)} on {t.device}")
    return dtype, B, Hq, Hkv, S, D, out, (q, k_cache, v_cache, seq_lens), vectors


def reference_for(built_in: dict):
    """The workspace's reference function: the user's own (op.json reference.source == "user"), else the built-in
    one of op.json's op.

    The user's function is called with this op's inputs by parameter name when its parameters carry the inputs'
    names (op.json `inputs`), otherwise by position in that order (op.json reference.mapping says which).
    """
    if not OP:
        return None  # outside a workspace (the template repo's tests pick built_in[op] themselves)
    ref = OP["reference"]
    if ref["source"] != "user":
        return built_in[OP["op"]]
    import importlib

    user_function = getattr(importlib.import_module(Path(ref["file"]).stem), ref["function"])
    names = OP["inputs"]

    def user_reference(*inputs):
        if ref["mapping"] == "by name":
            return user_function(**dict(zip(names, inputs)))
        return user_function(*inputs)

    user_reference.__doc__ = f"The user's `{ref['function']}` ({ref['original']}), given {', '.join(names)} {ref['mapping']}."
    return user_reference


def lowered_lengths(n: int, heads: int | None = None, r: int | None = None) -> tuple[int, int]:
    """(the kernel's row length, a row input's length per unit of its width) for a lowered case whose last dim is
    n, the output row's length: n itself; n / r for a wide output (RoPE's row of D is r = 2 halves of D/2, and its
    inputs are 2 halves wide); heads of c (a QK-norm viewing [T, H*c] as [T, H, c]) run rows of c, while x keeps its
    n. `heads` and `r` come from lowered.py (HEADS, OUT_WIDTHS) in a kernel, from op.json's program (None) here."""
    if heads is None and r is None:
        program = OP.get("lowered") or {}
        heads = program.get("heads")
        r = next((len(o["value"]) if isinstance(o["value"], list) else 1 for o in program.get("outputs", [])
                  if o["shape"] == "row"), 1)
    return (heads, n) if heads else (n // r, n // r)


def lowered_names() -> list | None:
    """x's dim names when the function's x was annotated with them (``q: "[B, S, H, D]"``), else None."""
    return next((i.get("names") for i in (OP.get("lowered") or {}).get("inputs", []) if i["kind"] == "row"), None)


def lowered_input(draw, name: str, row, n: int, lead: tuple = ()):
    """A fresh input `name` of a lowered op (op.json `kinds`, `input_dtypes`): `row(width, names)` makes a row input
    whose last dim is width units (width 1, or r for an input the function reads in r parts), of its own dims when
    `names` says it is broadcast over some of x's, a vector is [width*n], a scalar is
    one element in the shape the function takes it (0-d or [1]), one value per row is x's leading dims `lead` (and
    a 1 when the function takes it so). A mask (bool) is True with
    probability 3/4 and True at each row's first element, so that a masked softmax always has something to
    normalise (torch gives NaN for a fully masked row, and NaN fails any case)."""
    kind = (OP.get("kinds") or {}).get(name, "row")
    spec = next((i for i in (OP.get("lowered") or {}).get("inputs", []) if i["name"] == name), {})  # {}: built-in
    if kind == "scalar":
        t = draw(*spec.get("dims", []))
    elif kind == "per_row":  # x's leading dims (or its own of them, by name: op.json's kinds are the program's), 1s
        names, one = per_row_form(name)  # the function takes it in ([M, 1], [B, S, 1], [1, C, 1])
        sizes = dict(zip(lowered_names()[:-1], lead)) if names else {}
        t = draw(*([1 if d == "1" else sizes[d] for d in names] if names else [*lead, *([1] if one else [])]))
    elif kind == "row":
        names = spec.get("names")  # broadcast over some of x's dims: made in its own dims (the row cell's inputs)
        t = row(spec.get("width", 1), names) if names and names != lowered_names() else row(spec.get("width", 1))
    else:
        t = draw(n * spec.get("width", 1))
    if (OP.get("input_dtypes") or {}).get(name) != "bool":
        return t
    import torch

    mask = torch.rand(t.shape, device=t.device) > 0.25
    mask[..., 0] = True
    return mask


def per_row_form(name: str) -> tuple:
    """How the function takes its one-value-per-row input `name` (op.json): (its own dims by name, or None for x's
    leading dims; whether it ends in a 1, as [M, 1] or [B, S, 1])."""
    spec = next((i for i in (OP.get("lowered") or {}).get("inputs", []) if i["name"] == name), {})
    return spec.get("names"), str((spec.get("dims") or ["M"])[-1]) == "1"


def randn(generator, dtype, device):
    """A standard-normal tensor factory on one generator: fresh, never-zero inputs (zeros hide unwritten outputs)."""
    import torch

    def draw(*shape):
        return torch.randn(shape, dtype=dtype, device=device, generator=generator)

    return draw
