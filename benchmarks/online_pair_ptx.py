"""The online pair's compiled form, on a CPU: per plan of the H200 softmax workspace, the PTX's bar.sync, st.async
and ex2 counts, ptxas's registers and spills, and describe()'s shared memory, with ONLINE_EXCHANGE off, then on.

    .venv/bin/python benchmarks/online_pair_ptx.py     # a markdown table (benchmarks/2026-12-06-online-pair-cpu.md)

No GPU: the kernels are compiled, never run. ptxas must be on PATH (sm_90a).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from sweep_common import bake, load_workspace

SHAPES = ((131072, 8), (32768, 8), (262144, 8), (32000, 4096), (8192, 32768), (5120, 16384))  # (N, M): each plan kind
COUNTS = {"bar.sync": r"bar\.sync", "st.async": r"st\.async", "ex2": r"ex2\.approx"}


def compiled(kernel, dims, online: bool, tmp: Path) -> dict:
    kernel.ONLINE_EXCHANGE = online
    kernel._compiled.clear()  # the knob is read at trace time: no cached launcher of the other setting
    ptx = kernel.compile_only({"dims": dims}, str(tmp / f"{online}"))
    return {**counted(ptx, tmp / f"{dims[1]}_{online}.ptx"), "smem": kernel.describe({"dims": dims})["smem_bytes"]}


def counted(ptx: str, path: Path, counts: dict = COUNTS) -> dict:
    """Each pattern's count in the PTX, and ptxas's registers and spill stores (the PTX written to path)."""
    path.write_text(ptx)
    log = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(path), "-o", "/dev/null"], capture_output=True,
                         text=True, check=True).stderr
    made = {name: len(re.findall(pattern, ptx)) for name, pattern in counts.items()}
    made["registers"] = int(re.search(r"Used (\d+) registers", log)[1])
    made["spills"] = int(re.search(r"(\d+) bytes spill stores", log)[1])
    return made


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    kernel, _ = load_workspace(bake(tmp, "reduction", "softmax"))
    print("| plan (N, M) | bar.sync | st.async | ex2 | registers, spills | shared memory (bytes) |")
    print("|---|---|---|---|---|---|")
    for n, m in SHAPES:
        off, on = (compiled(kernel, [m, n], online, tmp) for online in (False, True))
        cfg = kernel.plan(n, 8, m)
        plan = (f"cluster {cfg['cluster']} x " if cfg["cluster"] > 1 else "one CTA, ") + \
            f"{cfg['threads']} x {cfg['chunks']}" + (f" @{cfg['min_ctas']}" if cfg.get("min_ctas") else "") + \
            (", direct" if cfg.get("direct") else "")
        cells = [f"{off[k]} / {on[k]}" for k in COUNTS]
        print(f"| {plan} ({n}, {m}) | {' | '.join(cells)} | {off['registers']} / {on['registers']}, "
              f"{max(off['spills'], on['spills'])} | {off['smem']} / {on['smem']} |")


if __name__ == "__main__":
    main()
