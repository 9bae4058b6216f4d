"""Environment for compiling FlyDSL kernels to AMD ISA (gfx942 / gfx950) on a machine with no AMD GPU and no ROCm.

FlyDSL lowers through MLIR's ROCDL target, which links the kernel object with ``$ROCM_PATH/llvm/bin/ld.lld``
and looks for AMD device libraries under ``$ROCM_PATH/amdgcn/bitcode``. Without a GPU it must also run with
``COMPILE_ONLY=1`` (compile, never launch) and be told the target (``ARCH`` / ``FLYDSL_GPU_ARCH``), because there
is no HIP runtime to ask. When ``ROCM_PATH`` is unset this builds a stand-in ROCm tree in a cache folder from two
Debian packages (``apt-get install lld-19 rocm-device-libs``)::

    ~/.cache/kbaseline/rocm-fake/llvm/bin/ld.lld  ->  /usr/lib/llvm-19/bin/ld.lld   (lld-19)
    ~/.cache/kbaseline/rocm-fake/amdgcn           ->  /usr/lib/x86_64-linux-gnu/amdgcn  (rocm-device-libs)

LLD must be 19 or newer: lld-14 rejects the code objects ("unknown abi version"). ``KBASELINE_LD_LLD`` names a
specific ld.lld to use instead of searching. When a piece is missing, ``RocmEnvError`` says in one line what and
how to fix it.

It also holds both ends of the compile child that every FlyDSL cell's ``compile_only`` runs (through
``flydsl_runtime.compile_isa`` and ``flydsl_runtime.child_main``): ``compile_isa`` starts the kernel file as a
child (``python kernel.py --emit-isa ISA_PATH ...``) in that environment with FlyDSL's ISA dump switched on,
and the child hands the dumped ISA back through ``save_dumped_isa``. A child process, because FlyDSL must see
COMPILE_ONLY before it initialises, and because its MLIR bindings abort a process that already holds CuTe
DSL's (two copies of MLIR's Python types). A process that already runs in this environment (``compiles_here``)
compiles in itself (``compile_here``): a batch of compiles pays FlyDSL's imports once.

    python tools/rocm_env.py gfx950      # prints `export KEY=value` lines for a shell, or the one-line error
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from pathlib import Path

ARCHS = ("gfx942", "gfx950")
MIN_LLD_MAJOR = 19
FIX = "apt-get install lld-19 rocm-device-libs"
LLD_CANDIDATES = (
    "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld-19",
    *[f"/usr/lib/llvm-{v}/bin/ld.lld" for v in range(20, 31)],
)
AMDGCN_PATTERNS = (
    "/usr/lib/*-linux-gnu/amdgcn", "/usr/lib/amdgcn", "/usr/share/amdgcn",
    "/usr/lib/llvm-*/lib/clang/*/lib/amdgcn",
)


DUMP_SWITCHES = {"FLYDSL_DEBUG_DUMP_ASM": "1", "FLYDSL_RUNTIME_ENABLE_CACHE": "0"}  # a compile dumps its final ISA,
# compiled afresh (FlyDSL's disk cache would dump nothing), into FLYDSL_DUMP_DIR: compile_isa's and compile_here's


class RocmEnvError(RuntimeError):
    """A piece of the compile-only toolchain is missing; the message is one line with the fix."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kbaseline" / "rocm-fake"


def lld_major(path: str | os.PathLike) -> int | None:
    """Major version that `ld.lld --version` reports ('Debian LLD 19.1.7 ...' -> 19), or None."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"LLD (\d+)\.", out)
    return int(found.group(1)) if found else None


def find_lld(candidates=LLD_CANDIDATES) -> str:
    """An ld.lld of LLVM >= 19: $KBASELINE_LD_LLD if set, else the first candidate that exists."""
    override = os.environ.get("KBASELINE_LD_LLD")
    if override:
        candidates = (override,)
    for path in candidates:
        if Path(path).is_file():
            major = lld_major(path)
            if major is None or major < MIN_LLD_MAJOR:
                raise RocmEnvError(f"rocm_env: {path} is LLD {major or '?'}, FlyDSL needs LLD >= {MIN_LLD_MAJOR} "
                                   f"(older ones fail with 'unknown abi version'); fix: {FIX}")
            return str(path)
    looked = override or "/usr/lib/llvm-{19..30}/bin/ld.lld"
    raise RocmEnvError(f"rocm_env: no ld.lld (LLD >= {MIN_LLD_MAJOR}) found at {looked}; fix: {FIX}")


def find_amdgcn(patterns=AMDGCN_PATTERNS) -> str:
    """The device-libs folder holding bitcode/ocml.bc (Debian: /usr/lib/x86_64-linux-gnu/amdgcn)."""
    for pattern in patterns:
        for folder in sorted(glob.glob(pattern)):
            if (Path(folder) / "bitcode" / "ocml.bc").is_file():
                return folder
    raise RocmEnvError(f"rocm_env: no AMD device libs (amdgcn/bitcode/ocml.bc) found under {', '.join(patterns)}; "
                       f"fix: {FIX}")


def _link(link: Path, target: str) -> None:
    """Point `link` at `target`, replacing whatever was there (atomic rename, safe against a concurrent run)."""
    if link.is_symlink() and os.readlink(link) == target:
        return
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    tmp.replace(link)


def fake_rocm_path(cache_dir: str | os.PathLike | None = None, lld_candidates=LLD_CANDIDATES,
                   amdgcn_patterns=AMDGCN_PATTERNS) -> Path:
    """Build (or refresh) the stand-in ROCm tree and return its root."""
    lld = find_lld(lld_candidates)
    amdgcn = find_amdgcn(amdgcn_patterns)
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    (root / "llvm" / "bin").mkdir(parents=True, exist_ok=True)
    _link(root / "llvm" / "bin" / "ld.lld", lld)
    _link(root / "amdgcn", amdgcn)
    return root


def rocm_env(arch: str, environ: dict | None = None, cache_dir: str | os.PathLike | None = None, **find) -> dict:
    """A copy of `environ` (default os.environ) set up to compile FlyDSL for `arch` with no GPU.

    Adds COMPILE_ONLY=1, ARCH and FLYDSL_GPU_ARCH = arch, and ROCM_PATH: the caller's when set (it must hold
    llvm/bin/ld.lld), otherwise the stand-in tree from fake_rocm_path().
    """
    if arch not in ARCHS:
        raise ValueError(f"rocm_env: arch must be one of {', '.join(ARCHS)}, got {arch!r}")
    env = dict(os.environ if environ is None else environ)
    rocm = env.get("ROCM_PATH")
    if rocm:
        if not (Path(rocm) / "llvm" / "bin" / "ld.lld").is_file():
            raise RocmEnvError(f"rocm_env: ROCM_PATH={rocm} has no llvm/bin/ld.lld; unset ROCM_PATH to use a "
                               f"stand-in built from Debian packages ({FIX})")
    else:
        rocm = str(fake_rocm_path(cache_dir, **find))
    env.update(COMPILE_ONLY="1", ARCH=arch, FLYDSL_GPU_ARCH=arch, ROCM_PATH=rocm)
    return env


def compile_isa(kernel_file: str | os.PathLike, args: list[str], arch: str, isa_path: str | os.PathLike,
                timeout: float = 600) -> str:
    """Run `python kernel_file --emit-isa ISA_PATH *args` for `arch` with no GPU; return the ISA it wrote."""
    import tempfile

    isa_path = Path(isa_path).resolve()
    isa_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flydsl-dump-") as dump:
        env = {**rocm_env(arch), **DUMP_SWITCHES, "FLYDSL_DUMP_DIR": dump}
        done = subprocess.run([sys.executable, str(Path(kernel_file).resolve()), "--emit-isa", str(isa_path), *args],
                              env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-12:]
        raise RuntimeError(f"FlyDSL compile for {arch} failed (exit {done.returncode}):\n" + "\n".join(tail))
    return isa_path.read_text()


def compiles_here(arch: str) -> bool:
    """Whether this process runs in rocm_env(arch)'s environment (set before it started: a batch of compiles, the
    bake's `test_kernel.py --compile-only`, a shell that ran this file's export lines), so that it may compile for
    arch itself: FlyDSL has initialised, or will, in compile-only mode for that target."""
    env = os.environ
    return (env.get("COMPILE_ONLY") == "1" and env.get("ARCH") == arch == env.get("FLYDSL_GPU_ARCH")
            and bool(env.get("ROCM_PATH")))


_COMPILED: dict = {}  # (emit, args) -> ISA text: what compile_here compiled in this process


def compile_here(emit, args: list[str], isa_path: str | os.PathLike) -> str:
    """compile_isa in this process (compiles_here): emit(*args) with FlyDSL's ISA dump on, into a fresh folder, and
    the dump written to isa_path; FlyDSL's line per dumped file is not printed (the child's output was not either).
    FlyDSL keeps what it compiled in memory and dumps nothing when asked again, so the ISA of each (emit, args) is
    kept here too; a reloaded kernel.py has a new emit, and compiles afresh."""
    import contextlib
    import io
    import tempfile
    from unittest import mock

    key, isa_path = (emit, tuple(args)), Path(isa_path)
    isa_path.parent.mkdir(parents=True, exist_ok=True)
    if key not in _COMPILED:
        with (tempfile.TemporaryDirectory(prefix="flydsl-dump-") as dump,
              mock.patch.dict(os.environ, {**DUMP_SWITCHES, "FLYDSL_DUMP_DIR": dump})):  # restored after
            with contextlib.redirect_stdout(io.StringIO()):
                emit(*args)
            _COMPILED[key] = save_dumped_isa(isa_path)
    isa_path.write_text(_COMPILED[key])
    return _COMPILED[key]


def save_dumped_isa(isa_path: str | os.PathLike) -> str:
    """Child side of compile_isa: gather the final ISA FlyDSL dumped for each compiled kernel into isa_path."""
    dumps = sorted(Path(os.environ["FLYDSL_DUMP_DIR"]).glob("*/*final_isa.s"))
    if not dumps:
        raise RuntimeError(f"no ISA dump under {os.environ['FLYDSL_DUMP_DIR']}: was anything compiled?")
    text = "".join(f"; ---- {d.parent.name}/{d.name}\n{d.read_text()}" if len(dumps) > 1 else d.read_text()
                   for d in dumps)
    Path(isa_path).write_text(text)
    return text


def main(argv: list[str]) -> int:
    arch = argv[0] if argv else "gfx942"
    try:
        env = rocm_env(arch)
    except (RocmEnvError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    for key in ("COMPILE_ONLY", "ARCH", "FLYDSL_GPU_ARCH", "ROCM_PATH"):
        print(f"export {key}={env[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
