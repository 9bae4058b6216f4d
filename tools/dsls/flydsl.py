"""FlyDSL (flydsl) for AMD CDNA3 and CDNA4: what every FlyDSL cell shares, frozen into op.json.

A DSL module says which architectures it compiles for, how its workspaces find and check a GPU, the words its
ISA uses, its limits, the facts every cell of it relies on, and which workspace files it brings
(``{{cookiecutter.op_name}}/dsl/flydsl/``: the shared runtime of its cells and tools/rocm_env.py, the stand-in
ROCm tree that lets FlyDSL compile on a CPU).
"""

NAME = "flydsl"
LABEL = "FlyDSL"
PACKAGE = "flydsl==0.4.2 (ROCm torch)"
ARCHS = {"cdna3": "gfx942", "cdna4": "gfx950"}  # architecture -> compile target
DEVICE = {"vendor": "amd", "label": "AMD", "torch_backend": "hip"}  # ROCm torch: torch.version.hip is set
COMPILE_AT_BAKE = True  # no AMD GPU here: the bake compiles to real ISA, so the records can say "compiled for"
MAX_BUFFER_BYTES = 2**31  # buffer descriptors: 32-bit num_records and per-lane byte offsets
MAX_ELEMENTS = 2**31  # element indices are int32 (the byte limit above is as strict for fp8, stricter for the rest)
WIKI_NAMES = ["flydsl", "fly-dsl", "fly_dsl"]
ISA = {
    "family": "amdgpu",  # tools/isa_metrics.py reads the AMDGPU assembly and its metadata
    "tensor_core": "v_mfma",
    "cores": "matrix cores (MFMA)",
    "vec128_load": "global_load_dwordx4 / buffer_load_dwordx4",
    "vec128_store": "global_store_dwordx4 / buffer_store_dwordx4",
}
PROFILE = "rocprofv3 --kernel-trace --stats -d results/rocprof -- python test_kernel.py --no-timing"

FACTS = [
    "Compile-only needs COMPILE_ONLY=1 ARCH=<gfx> FLYDSL_GPU_ARCH=<gfx> and a ROCM_PATH with llvm/bin/ld.lld "
    "(LLD >= 19) and amdgcn/bitcode; tools/rocm_env.py builds one from Debian lld-19 + rocm-device-libs. Without "
    "COMPILE_ONLY, FlyDSL aborts the process when there is no HIP runtime.",
    "FlyDSL and CuTe DSL cannot be loaded into one process (nanobind duplicate-type abort): compile FlyDSL in a "
    "child process (tools/rocm_env.compile_isa).",
    "fx.rocdl.make_buffer_tensor(t, max_size=False) sets num_records = the tensor's bytes; out-of-range buffer "
    "loads read 0 and stores are dropped, checked per dword. The bound is the whole tensor: a row edge inside "
    "the tensor is not out of range.",
]

# What every FlyDSL cell's ISA must (not) contain, on top of its own markers (tools/patterns/<p>/flydsl.toml)
ISA_MARKERS = {"required": [{"text": ".private_segment_fixed_size: 0", "meaning": "no scratch memory per lane"}],
               "forbidden": [{"text": "scratch_", "meaning": "scratch loads/stores: register spills"}]}
