"""Write the workspace README.md from op.json: what the op is, its roofline position, ISA targets, how to run it.

    python tools/readme.py          # (re)write README.md from op.json, reference/gpu_specs.json and kernel.py

The peaks are gpu_specs.json's as tools/wiki_route.py checks them against the gpu-wiki (a figure only the wiki gives
is used, and the README says it is the wiki's).

The template's bake calls it once (tools/run_baseline.py --bake). Every number in the README is derived here from
op.json and the cited specs with the same helpers the report uses (compute_utilization, isa_metrics), and the
design paragraph is the one at the top of kernel.py's docstring (its second paragraph), so it is written once.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import compute_utilization
import files
import isa_metrics
import versions
import wiki_route

WS = Path(__file__).resolve().parent.parent


def _doc(path: Path) -> str:
    return ast.get_docstring(ast.parse(files.read_text(path))) or ""


def design_paragraph(kernel_file: Path) -> str:
    """The kernel docstring's summary paragraph: the text after its title line, up to the next blank line."""
    doc = _doc(kernel_file)
    parts = [p.strip() for p in doc.split("\n\n")]
    return " ".join(parts[1].split()) if len(parts) > 1 else "(kernel.py has no design paragraph)"


def headline(op: dict, specs: dict) -> dict:
    """The headline case on the roofline (compute_utilization's rule and math), with the measured ceilings."""
    case = compute_utilization.headline_case(op)
    flops, nbytes = compute_utilization.case_work(op, case)
    roof = compute_utilization.roofline(op["gpu"], op["dtype"], flops, nbytes, specs)
    measured = specs.get("measured", {}).get(op["gpu"], {})
    peak = compute_utilization.gpu_spec(op["gpu"], specs)[1]["dense_tflops"].get(op["dtype"], {})
    return {**roof, "case": case["name"], "flops": flops, "bytes": nbytes,
            "peak_from": peak["source"]["title"] if peak.get("from_wiki") else None,
            "command": compute_utilization.command(op, case, roof["roofline_floor_us"] / 1e3),
            "copy_gbps": measured.get("device_copy_gbps"), "matmul_tflops": measured.get("cublas_bf16_8192_tflops")}


def roofline_text(op: dict, h: dict) -> str:
    gpu, dtype = op["gpu"], op["dtype"]
    text = (f"Headline case `{h['case']}`: {h['flops']:.3g} FLOP over {h['bytes']:.3g} bytes of compulsory traffic "
            f"(`{op['formulas']['flops']}` FLOP, `{op['formulas']['bytes']}` bytes), an arithmetic intensity of "
            f"{h['arithmetic_intensity']:.1f} FLOP/byte.")
    if h["ridge_point"]:
        cited = (f"the peak is the figure of {h['peak_from']}, as `reference/gpu_specs.json` has none, the bandwidth "
                 "cited there" if h["peak_from"] else "both cited in `reference/gpu_specs.json`")
        text += (f" The {gpu}'s ridge point is {h['ridge_point']:.0f} FLOP/byte ({h['peak_tflops']} TFLOP/s dense "
                 f"{dtype} over {h['peak_bandwidth_gbps']} GB/s; {cited}), so the op "
                 f"is **{h['bound']}-bound** and no kernel can beat {h['roofline_floor_us']:.1f} µs on this case.")
    else:
        text += (f" {gpu} has no cited dense {dtype} compute peak, so there is no ridge point; at "
                 f"{h['peak_bandwidth_gbps']} GB/s of HBM (cited in `reference/gpu_specs.json`) no kernel can beat "
                 f"{h['roofline_floor_us']:.1f} µs on this case.")
    if h["bound"] != "compute":
        seen = f" (about {h['copy_gbps']:.0f} GB/s on an H200 here)" if h["copy_gbps"] else ""
        text += (" The realistic ceiling is the measured device-to-device copy, not the datasheet: the harness times a "
                 f"1 GiB copy in the same run and the report gives \"% of copy\"{seen}.")
    else:
        seen = (f" (cuBLAS measured {h['matmul_tflops']:.0f} TFLOP/s for bf16 8192³ on an H200 here)"
                if h["matmul_tflops"] else "")
        text += f" The realistic ceiling is the vendor library on the same inputs{seen}; the report gives the ratio to it."
    return text + " `plans/v0_plan.md` lists each case's bytes, FLOP and roofline floor."


def render(ws: Path, op: dict) -> str:
    specs = wiki_route.cited_specs(compute_utilization.load_specs(ws / "reference" / "gpu_specs.json"), op)
    fw, device = op["framework_info"], op["device"]
    h = headline(op, specs)
    inputs = ", ".join(f"`{name}`" for name in op["inputs"])
    if fw["compile_at_bake"]:
        provenance = (f"The kernel has been compiled to real `{op['target']}` ISA on a CPU and never run on "
                      f"{device['label']} hardware (the template's authors have no such GPU): the first "
                      f"`python tools/run_baseline.py` on an {op['gpu']} is its first correctness check and its first timing.")
    else:
        provenance = "The template's cells were checked and timed on an H200 (`benchmarks/` in the template repository)."
    targets = isa_metrics.targets(op, specs)
    lines = [
        f"# {op['op_name']}: `{op.get('title', op['op'])}` ({op['pattern']}, {op['dtype']}) for {op['gpu']}", "",
        f"A V0 kernel workspace generated by kbaseline: a baseline kernel in {fw['label']} for {op['gpu']} "
        f"({op['arch']}, `{op['target']}`), its PyTorch reference, a harness that checks and times it, and the records "
        f"(plan, report, memory) that later optimization iterations build on. {provenance}", "",
        "## What the op computes", "", f"`{op['math']}`", "",
        f"Inputs, in order: {inputs}; output {op['output']}, {op['dtype']}. {op['semantics']} `reference.py` holds the "
        "PyTorch ground truth; `op.json` lists every case's shape.", "",
        "## Where it sits on the roofline", "", roofline_text(op, h), "",
        "## Why the kernel is shaped this way", "", design_paragraph(ws / "kernel.py"), "",
        "The docstring at the top of `kernel.py` explains it in full: tiling, layouts, data movement and the numbers.", "",
        "## ISA optimization targets", "",
        "Each target follows from the roofline position above and the cited specs. `python tools/isa_metrics.py` "
        "measures the compiled kernel against them, and `tools/run_baseline.py` records target, current value and "
        "whether it is met in `memory/v0.json` (`isa_metric_progress`).", "",
        "| metric | target | why | source |", "|---|---|---|---|",
        *[f"| {t['metric']} | {t['target']} | {t['why']} | {t['source']} |" for t in targets], "",
        "## Files", "", "| file | what it is |", "|---|---|",
        "| `kernel.py` | the baseline kernel; `run(*inputs, out=None)`, `compile_only(case, out_dir)`, `describe(case)` |",
        f"| `{op['framework']}_runtime.py`, `host.py` | what every {fw['label']} kernel shares (compiling, compile-only "
        "dumps), and what every kernel shares (op.json, dtype names, argument checks) |",
        "| `reference.py` | the PyTorch reference (`reference`), the timed torch baseline (`baseline`), the input "
        "generator (`make_inputs`) |",
        "| `test_kernel.py` | correctness per case (SIGALRM timeout, NaN-poisoned output) and timing against torch |",
        "| `op.json` | the op spec every script reads: shapes, dtype, tolerance, FLOP/byte formulas, ISA markers |",
        "| `plans/v0_plan.md` | Phase 1: semantics, target, framework facts, cases with roofline floors |",
        "| `baseline_report.md` | Phase 4: configuration, correctness, performance; \"NOT RUN\" until run on a GPU |",
        "| `memory/v0.json` | the iteration record, validated by `reference/v_iteration.schema.json` |",
        "| `results/` | raw JSON of the last run, and `roofline.png` |",
        *[f"| `tools/{path.name}` | {_doc(path).splitlines()[0].rstrip(':')} |" for path in sorted((ws / "tools").glob("*.py"))],
        "| `reference/` | the memory schema and `gpu_specs.json` (dense peaks, each with its datasheet) |",
    ]
    if op["reference"]["source"] == "user":
        lines.append(f"| `user_logic.py` | your PyTorch logic, copied from `{op['reference']['original']}` |")
    lines += [
        "", "## Run it", "",
        f"On a machine with the target's GPU and `{fw['package']}`, torch, jsonschema and matplotlib installed:", "",
        "```bash",
        "python tools/run_baseline.py                 # the whole V0 flow: test, measure, report, memory, commit",
        "python tools/iterate.py --action '...' --category tiling   # after editing kernel.py: V1, V2, ... (below)",
        "python test_kernel.py                        # correctness + timing only; results/results.json",
        f"python test_kernel.py --case {h['case']} --no-timing",
        "TEST_TIMEOUT_SEC=60 python test_kernel.py --timeout 900",
        f"python test_kernel.py --compile-only         # no GPU needed: compile for {op['target']}, check the ISA markers",
        "```", "",
        "From PyTorch, `kernel.run(*inputs, out=None)` takes the op's inputs in the order above and runs on the "
        "current stream, so it works inside `torch.cuda.stream(...)` and CUDA-graph capture. To call it from a "
        "`torch.compile`d model, import this workspace as a package from its parent folder (`import "
        f"{op['op_name']}`) and call its custom op, registered on import: `torch.ops.{op['op_name']}.run("
        f"{', '.join(op['inputs'])})` (kernel.run on CUDA; `torch.compile(fullgraph=True)` and CUDA graphs take it; "
        "`__init__.py` says how).", "",
    ]
    if h["peak_tflops"]:
        lines += ["Measure one result by hand with the workflow's command. Here it is filled in with the headline case "
                  "and its roofline-floor time; put in your measured latency from `results/results.json`:", "",
                  "```bash", h["command"], "python tools/memory_manager.py read --workspace .", "```", ""]
    else:
        lines += [f"`tools/compute_utilization.py` refuses a \"% of peak\" for {op['gpu']}: with no cited dense peak it "
                  "would be a guess. The report gives GB/s and % of the measured copy instead; `python "
                  "tools/memory_manager.py read --workspace .` shows the record.", ""]
    lines += [f"Profile it ({device['label']}):", "", "```bash", fw["profile"].format(case=h["case"]), "```", "",
              "## After V0: versions, and the kernel in your model", "",
              "Edit `kernel.py`, then `python tools/iterate.py --action \"what you changed\" --category <category>` "
              "on the GPU: every case as V0 runs them, the new kernel against the previous version's (read back from "
              "its commit) launch by launch in one process, next to torch eager and torch.compile, ISA progress, "
              "profile evidence (ncu where it can read the counters, else torch.profiler), and a gate: a PASS is "
              "committed as `V<N>: <action>`, a failed attempt is recorded masked and not committed. Its docstring "
              "has the details; the table below and `results/versions.png` follow the records.", "",
              f"From the folder above this one, `import {op['op_name']}` gives `run` (kernel.run), `reference`, "
              f"`OP` (this op.json) and the torch custom op `torch.ops.{op['op_name']}.run({', '.join(op['inputs'])})` "
              "(on CUDA the kernel, on the CPU the reference; a fake rule for torch.compile), which works with "
              "`torch.compile(fullgraph=True)` and CUDA graphs. Several workspaces import side by side: "
              "`__init__.py` keeps their same-named modules apart.", "",
              *versions.table_lines(ws),
              *user_logic_section(op, inputs),
              "## Without a GPU", "",
              f"Nothing is reported as passing unless it ran: on a machine without a {device['label']} GPU the report, "
              "the memory and `results/results.json` say NOT RUN and why. `python test_kernel.py --compile-only` still "
              "compiles the kernel and checks its ISA.", "",
              f"## Next levers for this pattern on {op['arch']}", "",
              *[f"{i}. {lever}" for i, lever in enumerate(op["levers"], 1)]]
    return "\n".join(lines) + "\n"


def input_rows(program: dict) -> list[str]:
    """One line per input of a lowered program (op.json `lowered`): its shape, dtype and how the kernel reads it."""
    lines = []
    for i in program.get("inputs", []):
        width = i.get("width", 1)
        parts = [v for v in program.get("views", []) if v["input"] == i["name"]]
        if i["kind"] in ("a", "b"):
            how = "an operand of the matmul head, K-major"
        elif i["kind"] == "scalar":
            how = f"one value ({'0-d' if not i.get('dims') else '[1]'}), read once per thread"
        elif i["kind"] == "per_row" and program.get("head") != "matmul":
            shape = f"[{', '.join(map(str, i.get('names') or i.get('dims') or ['M']))}]"
            x_names = next((x.get("names") for x in program["inputs"] if x["kind"] == "row"), None) or []
            left = [d for d in x_names[:-1] if d not in i.get("names", x_names)]
            how = f"{shape}, one value per row of x, read once per row" + (
                f", the same for the rows of {', '.join(left)} (found by strides: no copy)" if left else
                " (contiguous)")
        elif i["kind"] in ("vector", "per_row"):
            how = "[N], the same for every row" if i["kind"] == "vector" else "[M], one value per row of C"
        elif width > 1:
            read = " and ".join(f"columns {v['index']}, {v['index'] + width}, {v['index'] + 2 * width}, ..." if v["how"] == "lane" else
                                f"columns [{v['index']}N, {v['index'] + 1}N)" for v in parts)
            how = f"[..., {width}N], read in parts: {read or 'none used'}"
        elif program.get("rank"):  # the function names a dim by position: x's rank is the traced one
            how = (f"[M, N] only (rank {program['rank']}: the function names a dim by its position, which is the "
                   "last dim at this rank only), one row per row of the output")
        else:
            how = "[..., N], one row per row of the output, any rank (M = the product of the leading dims)"
        how = _named(program, i, how)
        lines.append(f"- `{i['name']}`{' (bool mask, one byte per element)' if i.get('dtype') == 'bool' else ''}: "
                     f"{how}")
    if program.get("heads"):
        lines.append(f"- the function views x's rows as heads of {program['heads']}: the kernel's rows are the heads "
                     f"(M = x's rows x N / {program['heads']}), and its [N] vectors are one head long")
    for k, o in enumerate(program.get("outputs", [])):
        if isinstance(o["value"], list):
            lines.append(f"- output {k} is written whole from its {len(o['value'])} "
                         + ("halves, side by side" if o["how"] == "part" else "interleaved lanes") +
                         " (a case's N is this row's length)")
    return lines


def _named(program: dict, spec: dict, how: str) -> str:
    """An input's line with its dim names when x was annotated with them (an N-D function): which of x's dims a
    broadcast input leaves out, and so which rows of it each row of x reads."""
    x = next((i for i in program.get("inputs", []) if i["kind"] == "row"), {})
    if "names" not in spec or "names" not in x or spec["kind"] == "per_row":
        return how
    dims, names = x["names"], spec["names"]
    if names == dims:
        return f"[{', '.join(dims)}]: " + how.removeprefix("[..., N], ")
    left = [d for d in dims[:-1] if d not in names]
    return (f"[{', '.join(names)}], broadcast over {', '.join(left)}: row r of x reads its row of "
            f"({', '.join(d for d in dims[:-1] if d in names)}), found by strides (0 over {', '.join(left)}); no copy"
            + (f"; {how.split(', read in parts: ')[1]}" if ", read in parts: " in how else ""))


def user_logic_section(op: dict, inputs: str) -> list[str]:
    """"Your own op": how pytorch_logic becomes this kernel (or why it did not), and the rule for its parameters."""
    lines = ["## Your own op", ""]
    low = op.get("lowering", {})
    if op["pattern"] == "decode_attention":
        return lines + decode_logic_section(op, low)
    if low.get("status") == "lowered":
        program = "a matmul head and a pointwise epilogue" if low.get("class") == "gemm" else \
            "a small pointwise/reduction program"
        lines += [f"This kernel computes your `{low['function']}` ({low['file']}, copied here as `user_logic.py`). It "
                  f"was traced (torch.fx `make_fx`, symbolic sizes), lowered to {program} "
                  f"({low['steps']} steps; reductions: {', '.join(low['reductions']) or 'none'}) and generated into "
                  f"`lowered.py`: the compute of the {op['pattern']} cell, every line beside the line of yours it "
                  "came from. `kernel.py` keeps the hand-written data movement around it. Edit your function and "
                  "re-bake to change the kernel; `lowered.py` is not meant to be edited.", "",
                  "Its inputs, in your parameters' order (what `kernel.run` takes), and how each maps onto the "
                  "kernel's rows (x is the first row input; N is the output's row length):", "",
                  *input_rows(op.get("lowered") or {}), ""]
    elif low:
        lines += [f"`{low['function']}` is this workspace's reference, but the kernel is the built-in "
                  f"`{op['op']}`: {low['reason']}. Its cases FAIL wherever the two differ.", ""]
    vectors = ", ".join(f"`{n}`" for n in op["lowering_rule"]["vector_names"])
    per_row = ", ".join(f"`{n}`" for n in op["lowering_rule"].get("per_row_names", []))
    lines += [
        "How a function's parameters become the kernel's inputs (`pytorch_logic=file.py:function`):", "",
        "- a parameter with a default (`eps=1e-6`, `temperature: float = 0.7`) is a constant, traced at its default;",
        "- the inputs keep your parameters' order: `kernel.run` takes them exactly as your function does;",
        "- a tensor parameter has x's shape [M, N] (the first such one is x), except a vector [N] broadcast over the "
        f"rows: named {vectors} or `*_weight`/`*_bias`, or "
        "annotated `w: \"[N]\"`; an annotation `\"[M, N]\"` forces a row input whatever the name;",
        "- one value per row (a per-token scale, a padding mask, a one-logit gate) is annotated `s: \"[M]\"` or "
        "`\"[M, 1]\"` (beside an N-D x, its leading dims: `attention_mask: \"[B, S]\"` over `\"[B, S, D]\"`; or "
        "some of them, the same for the rows of the others: a per-sample `\"[B]\"` or per-channel `\"[C]\"` over "
        "`\"[B, C, H, W]\"`), and read once per row (`x * s[:, None]`, `x.masked_fill(~mask[..., None], 0)`);",
        "- a one-element tensor (a learned `alpha`) is a runtime scalar, read once per thread: annotate it "
        "`alpha: \"[]\"` (0-d) or `\"[1]\"`, or give it a tensor default (`alpha=torch.tensor(1.0)`);",
        "- a boolean mask keeps its dtype (one byte per element, read as such): a parameter named `mask`, `*_mask` "
        "or `mask_*`, or annotated with `bool` (`keep: \"[M, N] bool\"`); `\"[M, N] float\"` keeps a float mask "
        "of that name;",
        "- `*args`/`**kwargs` are refused: each input needs a name;",
        "- tensors of any rank are rows of their last dim; annotate x with its dims' names (`q: \"[B, S, H, D]\"`) "
        "and each input the function broadcasts with the names it has (`cos: \"[S, D]\"`: a subset of x's, in "
        "x's order, ending in x's last; `1` for a dim of size 1): the kernel reads its rows through strides, 0 over "
        "the dims it leaves out; a view of x's rows as heads (`q.view(*q.shape[:-1], -1, head_dim)`) runs rows of "
        "`head_dim`, with its [N] vectors one head long;",
        "- a row read in halves or interleaved lanes (`x.chunk(2, -1)`, `rotate_half`, `x[..., ::2]`, its pairs "
        "`x.reshape(*x.shape[:-1], -1, 2)[..., j]`) is loaded as "
        "those pieces, and an output built of them (`torch.cat`, `torch.stack(..., -1).flatten(-2)`) is written "
        "whole, piece by piece; annotate `x: \"[M, 2N]\"` when x is twice as wide as the output;",
        "- a GEMM (a function that calls a matmul): its first two tensor parameters are the operands, a [M, K] and "
        "b [N, K] (both K-major, nn.Linear's layout), whatever their names; the others are epilogue inputs on "
        "C = a @ b^T [M, N]: C's shape by default, a vector [N] by the names above or `\"[N]\"`, one value per row "
        f"[M] when annotated `\"[M]\"` (`\"[M, 1]\"`: passed in that shape) or named {per_row} or `*_row_scale`; "
        "a scalar (annotated `\"[]\"`, or a tensor default) is refused.", "",
        "What lowers: any DAG of pointwise ops (`+ - * /`, `neg`, `abs`, `reciprocal`, `pow`, `square`, `exp`, `exp2`, "
        "`expm1`, `log`, `log1p`, `sqrt`, `rsqrt`, `tanh`, `sigmoid`, `erf`, `sin`, `cos`, `round`, `floor`, "
        "`ceil`, `trunc`, `silu`, `gelu` (both forms), `relu`, `prelu`, `leaky_relu`, `softplus`, `clamp` (and "
        "in-place ops such as `clamp_`/`mul_`/`F.silu(h, inplace=True)` on values the function made), `minimum`/"
        "`maximum`, `where`/`masked_fill` with a comparison or a mask, `isnan`/`isinf`/`isfinite`, `nan_to_num`, "
        "`xlogy`, `logaddexp`/`logaddexp2`, casts), reductions over the last dim (`sum`, `nansum`, `mean`, "
        "`amax`/`max(dim).values`, `amin`, `var`/`std`, `logsumexp`, `norm`; `any`/`all` and counts of booleans) and the "
        "composites built of them (`softmax`, `log_softmax`, `F.rms_norm`, `F.layer_norm`, `F.normalize`), with one "
        "or more outputs of x's shape or one value per row. GEMM epilogues: one matmul at the head (`a @ b.T`, "
        "`torch.matmul(a, b.t())`, `torch.mm`, `F.linear(a, b)`, `F.linear(a, b, bias)`), then the pointwise ops "
        "above on its result (bias, activation, residual, column or row scale, a cast), one output C [M, N]. A "
        "function that uses anything else (a reduction over rows, a cumulative op, a selection such as `topk`/`sort`/"
        "`argmax`/`gather`/`embedding`, a transpose of the output, slices other than halves or lanes of the "
        "row, inputs with dims x does not have (a GQA k beside q), a branch on the sizes (`if x.shape[-1] > 1024:`); "
        "in a GEMM a second matmul, a "
        "matmul after other work, a reduction, a non-K-major `a @ b`, a batched matmul, several outputs) is refused "
        "at bake time with the torch op and your line; with `pattern=auto` the bake stops there, with a named "
        "pattern it keeps that pattern's built-in kernel.", "",
        f"With a built-in op, the harness passes this op's inputs ({inputs}) to your function by name when your "
        "parameters carry those names, otherwise by position, in that order.", "",
    ]
    return lines


def decode_logic_section(op: dict, low: dict) -> list[str]:
    """"Your own op" of a decode-attention workspace: the variant lowered into the decode kernel, and the rule."""
    lines = []
    if low.get("status") == "lowered":
        lines += [f"This kernel computes your `{low['function']}` ({low['file']}, copied here as `user_logic.py`). It "
                  "was traced (torch.fx `make_fx` at small prime sizes, so that every view of B, Hkv, G, S and D is "
                  "told apart) and recognised as decode attention; its variant was lowered into `lowered.py`: the "
                  "scale kernel.py folds into q, `score()` (the work on each score), `keep()` (per-key masks), "
                  "`key_range()` (the keys a sequence can attend: the kernel never reads the others) and `sink()` "
                  "(a logit that joins the softmax denominator), each line beside the line of yours it came from. "
                  "`kernel.py` keeps the split-KV data movement, the GQA head groups and the merge. Edit your "
                  "function and re-bake to change the kernel; `lowered.py` is not meant to be edited.", "",
                  "Its inputs, in your parameters' order (what `kernel.run` takes):", "",
                  *[f"- `{name}`: {words}" for name, words in low["input_words"].items()], ""]
    elif low:
        lines += [f"`{low['function']}` is this workspace's reference, but the kernel is the built-in "
                  f"`{op['op']}`: {low['reason']}. Its cases FAIL wherever the two differ.", ""]
    return lines + [
        "How a decode-attention function lowers (`pytorch_logic=file.py:function`, `pattern=auto`):", "",
        "- its tensors are q [B, Hq, D], k_cache and v_cache [B, S, Hkv, D] (the usual cache layout) and seq_lens "
        "[B] int32, in any order and under any names: K is the cache q meets in the first product, V the one the "
        "probabilities meet; other tensors are vectors with one value per query head [Hq] (ALiBi slopes, sinks), or "
        "per sequence when annotated `\"[B]\"`; parameters with defaults are constants;",
        "- the forms users write are read alike: `einsum`, `matmul` with `view`/`transpose`, GQA by "
        "`repeat_interleave` (transformers' `repeat_kv`) or a grouped view, `masked_fill`/`where` with `-inf` or "
        "the dtype's min, additive masks, `F.scaled_dot_product_attention` (with `scale=`, `enable_gqa=True` and a "
        "boolean or additive `attn_mask` built from positions), a softmax in fp32 or in the dtype;",
        "- the function must mask the keys at or past seq_lens[b] (stale cache slots): the kernel never reads them;",
        "- a mask that bounds the key positions by the sequence alone (a sliding window `kpos > len - 1 - W`, a "
        "prefix) becomes a key range, so the skipped keys are never loaded; other masks apply per key;",
        "- a sink is a logit per head concatenated to the scores before the softmax and dropped after it "
        "(gpt-oss); a max subtracted before the softmax is dropped (the softmax does not see it).", "",
        "Refused in one line, with the torch op and your line: a second softmax, a softmax over another dim, a "
        "reduction of the scores, a table lookup (a learned [S, S] bias), random ops (dropout in training), "
        "work on q or the cache before q.k^T (RoPE: apply it before the call), an output epilogue after P.V.", "",
        "Not served yet: paged KV caches (a block table) and prefill (many query tokens). With a paged cache, gather "
        "the pages into the [B, S, Hkv, D] layout (or bake one workspace per page size with the pages as the batch); "
        "for prefill, use FlexAttention or a flash-attention library: this kernel is one query token per sequence.", "",
        f"With a built-in op, the harness passes this op's inputs ({', '.join(op['inputs'])}) to your function by name "
        "when your parameters carry those names, otherwise by position, in that order.", "",
    ]


def write(ws: Path, op: dict) -> Path:
    return files.write_doc(ws, "README.md", render(ws, op))


def main() -> int:
    write(WS, files.load_json(WS / "op.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
