"""CuTe DSL (nvidia-cutlass-dsl) for NVIDIA Hopper: what every CuTe DSL cell shares, frozen into op.json.

A DSL module says which architectures it compiles for, how its workspaces find and check a GPU, the words its
ISA uses, its limits, the facts every cell of it relies on, and which workspace files it brings
(``{{cookiecutter.op_name}}/dsl/cutedsl/``: the shared runtime of its cells).
"""

NAME = "cutedsl"
LABEL = "CuTe DSL"
PACKAGE = "nvidia-cutlass-dsl==4.8.1 apache-tvm-ffi==0.1.15.post2"  # TVM-FFI: the launch path of every cell
ARCHS = {"hopper": "sm_90a"}  # architecture -> compile target
DEVICE = {"vendor": "nvidia", "label": "NVIDIA", "torch_backend": "cuda"}  # torch.version.hip is None
COMPILE_AT_BAKE = False  # a Hopper workspace compiles on first use or with `test_kernel.py --compile-only`
MAX_BUFFER_BYTES = None  # no buffer descriptors: 64-bit pointers
# Layouts are Int32: every element offset of a tensor must fit int32. (TMA's own limits are looser: 2^32 elements
# per dimension, row strides a multiple of 16 bytes (the GEMM pattern checks K for that) and under 2^40 bytes.)
MAX_ELEMENTS = 2**31
WIKI_NAMES = ["cutedsl", "cute-dsl", "cute_dsl"]
ISA = {
    "family": "ptx",  # tools/isa_metrics.py reads PTX, or SASS when cuobjdump/nvdisasm are present
    "tensor_core": "wgmma.mma_async / HGMMA",
    "cores": "tensor cores",
    "vec128_load": "ld.global.v4 / LDG.E.128",
    "vec128_store": "st.global.v4 / STG.E.128",
}
PROFILE = "ncu --clock-control none --set full -k 'regex:{kernel}' -c 1 python test_kernel.py --case {case} --no-timing"

FACTS = [
    "CUTE_DSL_ARCH=sm_90a must be set before `import cutlass`; unset, CuTe DSL 4.8.1 targets sm_100a.",
    "`cute.compile` does not cache: kernel.py keeps its own dict of compiled kernels.",
    "Compile-only needs no GPU: placeholder pointers (`make_ptr`) or fake tensors (`make_fake_compact_tensor`) and "
    "`make_fake_stream()`; `options='--keep-ptx'` keeps the PTX, written only into an existing CUTE_DSL_DUMP_DIR "
    "(then `compiled.artifacts.PTX` is that file's path, otherwise the text).",
    "`options='--enable-tvm-ffi'` makes the compiled launcher a TVM-FFI function that takes torch tensors: its C "
    "wrapper checks dtype, shape symbols, alignment and device per call, ~6 us a call on the H200, where "
    "`from_dlpack` per call costs ~59 us. It needs apache-tvm-ffi (0.1.15+ with CuTe DSL 4.8.1); torch older "
    "than 2.10 also wants torch-c-dlpack-ext for the fast DLPack exchange.",
    "`make_fake_stream(use_tvm_ffi_env_stream=True)` takes torch's current stream at every call: graph capture and "
    "`torch.cuda.stream(...)` work with no stream argument.",
]

# What every CuTe DSL cell's PTX must (not) contain, on top of its own markers (tools/patterns/<p>/cutedsl.toml)
ISA_MARKERS = {"required": [],
               "forbidden": [{"text": ".local", "meaning": "local memory: register spills or a stack array"}]}
