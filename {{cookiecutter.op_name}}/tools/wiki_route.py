"""Phase 2 of the workflow: this op's route through the user's gpu-wiki, in either of its layouts, and its peaks.

    python tools/wiki_route.py            # print the route of this workspace's op.json (`--json` for the dict)

The gpu-wiki users have is the `gpu-wiki/` folder of alibaba/atrex-kernel-agent, in one of two layouts, told apart
by what is on disk:

- **json** (its main): `hardware_wiki/records/index.json` (spec-sheet, arch-feature and instruction records, each
  fact with its evidence class) and `kernel_wiki/records/index.json` (technique-card, anti-strategy, symptom-card
  and doc records, each with a scope: vendor, arch, dsl, operator family). The route reads the two indexes
  directly; the wiki's own query tools are another project's scripts and are never imported.
- **markdown** (its tags v0.1.0, v0.2.0): `README.md` holds the five-tier table (P0 hardware specs, P1
  vendor-common, P2 architecture, P3 DSL, P4 pitfalls and reference articles) whose cells name folders and files,
  brace lists included (`hardware_specs_{mi300x,hopper}.md`); every folder has a `README.md` whose table rows (or
  bullets) link its files and sub-folders with a description. The route expands the brace lists, starts from the
  tier paths that are this op's, and enters each folder through its README, adding what the root README's own
  tables of files list under it; a folder is never listed from the disk.

**The architecture is a hard boundary** (the wiki's own rule). op.json's `wiki` block names this op's vendor, its
architecture's names (`hopper`/`sm90`/`sm_90a`/`h200`, `cdna3`/`gfx942`/`mi308x`, ...), its DSL's names and the
names of every other vendor, architecture and GPU. A folder or file whose path names another one and none of ours
is not this op's; under the vendor folder only `common`/`generic`, this DSL's and this architecture's folders are
(so `nvidia/gluon/sm90/` is not a CuTe DSL op's); a sub-folder whose README row describes only another
architecture (`hands-on/`: "Blackwell (SM100) ...") is not entered. A JSON record is this op's when its scope's
arch is ours (or lists ours), or is `generic` within our vendor, and its DSL is ours or `any`; a spec-sheet only
when its product is this GPU.

Tiers, markdown: P0 the spec doc whose file or row names the GPU (else its architecture); P1 the vendor-common
folder; P2 the tier table's architecture folders plus every folder named for this architecture inside the P1 and
P3 folders; P3 the DSL folder plus the reference folder its README says the material moved to (a `>` line); P4 the
pitfalls in scope, plus the other P4 folders' documents whose name or description has one of the pattern's words.
JSON: P0 the spec-sheet, P1 vendor-wide docs matching the op family, P2 the architecture's arch-features and
instructions this kernel uses (its ISA markers and keywords) and its docs, P3 this DSL's docs, P4 the technique
cards and anti-strategies matching the op family. A record written for another operator family is never listed;
a cross-operator one matches when its tags or title carry the pattern's words, except the docs of this DSL and
architecture, which are their reference and always listed. Symptom cards answer a profiler's symptom, which a V0
does not have yet: they are left for the optimization iterations.

Each routed entry is {path, id, text}: the file (markdown doc or JSON record; always one that exists), the record
id (None for a markdown doc) and a one-line description (the README row that lists the doc; the record's title).
`missing` holds what the index names for this op but the disk lacks: tier-table paths (after brace expansion, no
globs, no code trees) or record ids whose file is absent.

Peaks: `wiki_peaks` reads the GPU's figures from the P0 doc (only from the section whose heading names the GPU) or
from the GPU's spec-sheet record (with its evidence class); `cited_specs` lays them beside
reference/gpu_specs.json, our cited datasheets: a figure both give is checked (a disagreement is kept beside both
figures, never resolved silently: ours stays in use), and a figure only the wiki gives is used, labelled as the
wiki's. `peak_lines` says so in words for the plan, the report and compute_utilization.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
from pathlib import Path

import files

TIERS = {"P0": "hardware spec", "P1": "vendor-common", "P2": "architecture", "P3": "DSL",
         "P4": "pitfalls, techniques and reference docs"}
AGREE = 0.01  # the wiki's figure agrees with ours within 1% (vendors round: "2.5 PFLOP/s" for 2516.6 TFLOP/s)
CODE_TREES = ("reference-kernels", "reference-projects", "3rdparty")  # source trees, not documents
RECORD_TYPES = ("spec-sheet", "arch-feature", "instruction", "doc", "technique-card", "anti-strategy")
_ARCH_LIKE = re.compile(r"(?<![a-z0-9])(sm\d{2,3}[a-z]?|gfx\d{3,4}[a-z]?|cdna\d|rdna\d)(?![a-z0-9])")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)[^)]*\)")
_CODE = re.compile(r"`([^`\s]+)`")
_TIER_CELL = re.compile(r"\**P([0-4])\**")
_HEADING = re.compile(r"^(#+)\s+(.*)")


# --------------------------------------------------------------------------------------------
# names: op.json's `wiki` block as tests on paths, descriptions and records
# --------------------------------------------------------------------------------------------

def _norm(text: str) -> str:
    """Lower case, `sm_90` read as `sm90`, `-`/`_` as spaces: the form every name and word is compared in."""
    return re.sub(r"[-_]", " ", re.sub(r"sm[_-](?=\d)", "sm", text.lower()))


def _named(text: str, names) -> bool:
    """A name of `names` stands as a whole word in text: 'h20' is not in 'h200'."""
    t = _norm(text)
    return any(re.search(rf"(?<![a-z0-9]){re.escape(_norm(n))}(?![a-z0-9])", t) for n in names)


def _mentions(text: str, words) -> bool:
    """A word of `words` starts a word of text: 'vectoriz' is in 'vectorized loads'."""
    t = _norm(text)
    return any(re.search(rf"(?<![a-z0-9]){re.escape(_norm(w))}", t) for w in words)


class Scope:
    """What is this op's: built from op.json's `wiki` block (tools/spec.py writes it from the catalogue)."""

    def __init__(self, op: dict):
        w = op["wiki"]
        self.gpu, self.vendor, self.arch = w["gpu"], w["vendor"], w["arch"]
        self.own, self.others, self.other_vendors = w["arch_names"], w["other_arch_names"], w["other_vendors"]
        self.dsl, self.families = w["dsl_names"], set(w["families"])
        self.words = [*w["words"], op["op"].lower()]
        self.isa = [_isa_form(m["text"]) for m in op["isa_markers"]["required"]] + [
            _isa_form(x) for x in [*w["words"], *w["families"]]]
        self.under_vendor = {"common", "generic", *map(_norm, self.dsl), *map(_norm, self.own)}

    def foreign(self, text: str) -> bool:
        """text names another architecture (or GPU) and none of ours."""
        t = _norm(text)
        other = _named(t, self.others) or any(m not in self.own for m in _ARCH_LIKE.findall(t))
        return other and not _named(t, self.own)

    def path_ok(self, rel: str) -> bool:
        """A wiki path (relative to its root) is this op's: no other vendor; no other architecture unless ours is
        named too; under our vendor's folder, only its common, DSL and architecture folders."""
        if _named(rel, self.other_vendors) or self.foreign(rel):
            return False
        dirs = [_norm(p) for p in Path(rel).parts[:-1]] + ([] if "." in Path(rel).name else [_norm(Path(rel).name)])
        return all(dirs[i + 1] in self.under_vendor for i, d in enumerate(dirs[:-1]) if d == self.vendor)


def _isa_form(text: str) -> str:
    return re.sub(r"[-_:\s]+", ".", text.lower()).strip(".")


def _isa_match(key: str, vocab: list[str]) -> bool:
    """An instruction mnemonic or feature slug is one this kernel uses: equal, a prefix either way, or a run of
    whole tokens inside (`cp.async` and the marker `cp.async.bulk.tensor`; `mfma` and `v.mfma.f32.16x16x16`)."""
    k = _isa_form(key)
    return any(k == v or (min(len(k), len(v)) >= 3 and (v.startswith(k) or k.startswith(v)))
               or f".{k}." in f".{v}." for v in vocab)


# --------------------------------------------------------------------------------------------
# markdown layout
# --------------------------------------------------------------------------------------------

def _plain(text: str) -> str:
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _CODE.sub(lambda m: m.group(1), text).replace("**", "").replace("__", "")
    return re.sub(r"\s+", " ", text).strip(" -*:|—–;,")


def _refs(text: str) -> list[tuple[str, str]]:
    """(link text, target) of the markdown links and path-like `code` spans of text, web links left out."""
    out = [(t, ref) for t, ref in _LINK.findall(text)] + [("", c) for c in _CODE.findall(text)
                                                           if "/" in c or c.endswith(".md")]
    return [(t, r) for t, r in out if "://" not in r and not r.startswith(("#", "mailto:"))]


def expand(ref: str) -> list[str]:
    """Brace lists, as a shell expands them: `a/{x,y}/b_{1,2}.md` -> four paths."""
    m = re.search(r"\{([^{}]*)\}", ref)
    if not m:
        return [ref]
    return [out for alt in m.group(1).split(",") for out in expand(ref[:m.start()] + alt.strip() + ref[m.end():])]


class _Markdown:
    """One markdown wiki: its READMEs parsed once each, every row a {refs, subject, text, tier, pointer}."""

    def __init__(self, wiki: Path, scope: Scope):
        self.wiki, self.scope, self._rows = wiki, scope, {}

    def rel(self, path: Path) -> str:
        return path.relative_to(self.wiki).as_posix() if path != self.wiki else "."

    def rows(self, readme: Path) -> list[dict]:
        if readme not in self._rows:
            self._rows[readme] = self._parse(readme) if readme.is_file() else []
        return self._rows[readme]

    def _parse(self, readme: Path) -> list[dict]:
        rows = []
        for line in files.read_text(readme, errors="replace").splitlines():
            s = line.strip()
            if s.startswith("|"):
                cells = [c.strip() for c in s.strip("|").split("|")]
                tier = next((f"P{m.group(1)}" for c in cells if (m := _TIER_CELL.fullmatch(c))), None)
                with_refs = [i for i, c in enumerate(cells) if _refs(c)]
                if not with_refs:
                    continue
                subject = with_refs[0]
                named = [t for t, r in _refs(cells[subject]) if t and not r.rstrip("/").endswith(_plain(t).rstrip("/"))]
                rest = [_plain(c) for i, c in enumerate(cells) if i != subject and not _TIER_CELL.fullmatch(c)]
                text = " — ".join([*map(_plain, named), *(c for c in rest if c and not c.isdigit())])
                refs = [r for c in cells for _t, r in _refs(c)]
                rows.append({"refs": refs, "subject": [r for _t, r in _refs(cells[subject])], "text": text,
                             "tier": tier, "pointer": False})
            elif re.match(r"^(?:[-*+]|\d+\.)\s", s) or s.startswith(">"):
                refs = _refs(s)
                first = min((m for rx in (_LINK, _CODE) for m in rx.finditer(s)), key=lambda m: m.start(), default=None)
                if refs and first:
                    rows.append({"refs": [r for _t, r in refs], "subject": [refs[0][1]], "text": _plain(s[first.end():]),
                                 "tier": None, "pointer": s.startswith(">")})
        return rows

    def resolve(self, ref: str, base: Path) -> Path | None:
        """A README's ref as an existing path inside the wiki: against the README's folder, then the wiki root."""
        ref = ref.split("#")[0]
        if not ref or ref.startswith(("/", "~")) or any(ch in ref for ch in "*?{}<>"):
            return None
        for root in (base, self.wiki):
            path = (root / ref).resolve()
            if path.exists() and path.is_relative_to(self.wiki):
                return path
        return None

    def text(self, path: Path) -> str:
        """A doc's one line: the row that lists it in its own folder's README, else in any README read so far;
        a README's: the row that lists its folder, else its title."""
        subject = path.parent if path.name == "README.md" else path
        near = [p / "README.md" for p in subject.parents if p.is_relative_to(self.wiki)]  # nearest folder first
        for readme in [*near, *self._rows]:
            for row in self.rows(readme):
                if row["text"] and any(self.resolve(r, readme.parent) == subject for r in row["subject"]):
                    return row["text"][:240]
        if path.name == "README.md" and path.is_file():
            for line in files.read_text(path, errors="replace").splitlines():
                if m := _HEADING.match(line):
                    return _plain(m.group(2))
        return ""

    def children(self, folder: Path) -> list[Path]:
        """What a folder's README lists inside it, then what the root README's tables list inside it."""
        out = []
        for readme in (folder / "README.md", self.wiki / "README.md"):
            for row in self.rows(readme):
                if row["tier"] or row["pointer"]:
                    continue
                for ref in row["refs"]:
                    path = self.resolve(ref, readme.parent)
                    if path and path.is_relative_to(folder) and path != folder and path not in out:
                        out.append(path)
        return out

    def pointers(self, readme: Path) -> list[Path]:
        """The folders a README's `>` lines point to ("full articles have moved to ...")."""
        return [p for row in self.rows(readme) if row["pointer"] for r in row["refs"]
                if (p := self.resolve(r, readme.parent)) and self.scope.path_ok(self.rel(p))]

    def folder(self, folder: Path, seen: set, depth: int = 4) -> list[Path]:
        """A folder's docs, entered through READMEs: its README, the in-scope files it lists and, recursively, the
        in-scope sub-folders it lists (not one whose row describes only another architecture)."""
        if folder in seen or depth < 0:
            return []
        seen.add(folder)
        docs = [folder / "README.md"] if (folder / "README.md").is_file() else []
        for child in self.children(folder):
            sub = child.parent if child.name == "README.md" else child
            if sub != folder and sub.is_dir():
                if self.scope.path_ok(self.rel(sub)) and not self.scope.foreign(self.text(sub / "README.md")):
                    docs += self.folder(sub, seen, depth - 1)
            elif child.suffix == ".md" and self.scope.path_ok(self.rel(child)):
                docs.append(child)
        return docs

    def tier_rows(self) -> dict[str, list[tuple[str, Path | None]]]:
        """The tier table: per tier, every path it names (brace lists expanded) with its existing file or None."""
        out = {t: [] for t in TIERS}
        for row in self.rows(self.wiki / "README.md"):
            if row["tier"]:
                for ref in row["refs"]:
                    for one in expand(ref):
                        out[row["tier"]].append((one, self.resolve(one, self.wiki)))
        return out

    def route(self) -> tuple[dict[str, list[Path]], list[str]]:
        sc = self.scope
        named = self.tier_rows()
        starts = {t: [p for ref, p in refs if p and not ref.startswith(CODE_TREES) and sc.path_ok(self.rel(p))]
                  for t, refs in named.items()}
        missing = sorted({ref for refs in named.values() for ref, p in refs
                          if p is None and not ref.startswith(("/", "~", *CODE_TREES))
                          and not any(ch in ref for ch in "*?{}") and sc.path_ok(ref.rstrip("/"))})
        tiers: dict[str, list[Path]] = {t: [] for t in TIERS}
        seen: set = set()
        # P0: the spec docs the tier names, those its folders list, those the root README's tables list
        specs = []
        for p in starts["P0"]:
            holder = p.parent if p.is_file() else p
            specs += [p] if p.is_file() else []
            specs += [d for d in self.folder(holder, set()) if d.name != "README.md"]
        specs = [d for d in dict.fromkeys(specs) if sc.path_ok(self.rel(d))]
        exact = [d for d in specs if _named(d.name, [sc.gpu])] or [d for d in specs if _named(self.text(d), [sc.gpu])]
        tiers["P0"] = exact or [d for d in specs if _named(d.name, sc.own)]

        def arch_split(start: Path, docs: list[Path], tier: str):
            for d in docs:
                inside = d.relative_to(start).parent.as_posix() if d.is_relative_to(start) else ""
                tiers["P2" if _named(inside, sc.own) else tier].append(d)

        for tier in ("P1", "P3"):
            for start in starts[tier]:
                arch_split(start, self.folder(start, seen), tier)
        for start in starts["P2"]:
            tiers["P2"] += self.folder(start, seen)
        # P2 and P3 follow their READMEs' "moved to" pointers: the architecture's and the DSL's full articles
        done: set = set()
        while todo := [(t, d) for t in ("P2", "P3") for d in tiers[t] if d.name == "README.md" and d not in done]:
            for tier, readme in todo:
                done.add(readme)
                for target in self.pointers(readme):
                    arch_split(target, self.folder(target, seen), tier)
        for start in starts["P4"]:
            docs = self.folder(start, set())
            if "pitfall" in start.name:
                tiers["P4"] += docs
            else:
                tiers["P4"] += [d for d in docs if d.name != "README.md"
                                and _mentions(f"{d.stem} {self.text(d)}", sc.words)]
        return tiers, missing


# --------------------------------------------------------------------------------------------
# JSON layout
# --------------------------------------------------------------------------------------------

def _load_index(path: Path) -> list[dict]:
    return files.load_json(path)["records"] if path.is_file() else []


def _json_route(wiki: Path, sc: Scope) -> tuple[dict[str, list[dict]], list[str], list[Path]]:
    hw, kw = wiki / "hardware_wiki", wiki / "kernel_wiki"
    indexes = [p for p in (hw / "records" / "index.json", kw / "records" / "index.json") if p.is_file()]
    tiers: dict[str, list[dict]] = {t: [] for t in TIERS}
    missing: list[str] = []

    def add(tier: str, store: Path, rec: dict, text: str, rank: float = 0.0):
        path = store / rec["path"]
        if path.is_file():
            tiers[tier].append({"path": path, "id": rec["id"], "text": text, "rank": rank})
        else:
            missing.append(rec["id"])

    sheets = []
    for rec in _load_index(hw / "records" / "index.json"):
        sm = [_norm(a) for a in [rec.get("sm_arch") or "", *(rec.get("available_sm_arch") or [])] if a]
        if rec.get("vendor") != sc.vendor or not (rec.get("arch") == sc.arch or set(sm) & set(sc.own)):
            continue  # another vendor's or architecture's facts, and `generic` sheets describe no part
        if rec["type"] == "spec-sheet":
            sheets.append(rec)
        elif rec["type"] in ("arch-feature", "instruction"):
            key = rec.get("feature") or rec.get("mnemonic") or rec["id"].rsplit(".", 1)[-1]
            if _isa_match(key, sc.isa):
                add("P2", hw, rec, f"{rec['type']} `{key}` ({rec['arch']}, {rec.get('evidence_class')})")
    product = [r for r in sheets if (r.get("product") or "") == sc.gpu]
    for rec in product or [r for r in sheets if not r.get("product")]:
        note = ("" if product else f"; names no product, so its figures are not taken as {sc.gpu.upper()}'s")
        add("P0", hw, rec, f"spec-sheet {rec.get('product') or rec['arch']} ({rec['arch']}, "
                           f"{rec.get('evidence_class')}){note}")
    kernel = _load_index(kw / "records" / "index.json")
    concrete = {o for r in kernel for o in r["retrieval"]["scope"].get("operators") or []}
    for rec in kernel:
        s, kind = rec["retrieval"]["scope"], rec["type"]
        exact = (s.get("arch") == sc.arch or sc.arch in (s.get("architectures") or [])) and (
            s.get("vendor") in (sc.vendor, "generic"))
        neutral = s.get("arch") == "generic" and s.get("vendor") in (sc.vendor, "generic", None)
        dsl = s.get("dsl") or "any"
        if kind not in RECORD_TYPES or not (exact or neutral) or not (dsl == "any" or dsl in sc.dsl):
            continue
        family, operators = s.get("operator_family"), set(s.get("operators") or [])
        ours = family in sc.families or bool(operators & sc.families)
        if (family in concrete or operators) and not ours:
            continue  # written for another operator
        matched = ours or bool(set(rec["retrieval"].get("technique_tags") or []) & (sc.families | set(sc.words))) \
            or _mentions(rec.get("title", ""), [*sc.words, *sc.families])
        where = [s.get("arch") + ("" if s.get("arch") == sc.arch or not exact else f" (lists {sc.arch})")]
        where += [s["product"]] if s.get("product") not in (None, "any") else []
        text = f"{rec.get('title', rec['id'])} ({kind}; {'/'.join(where)}; {dsl}; {family or 'cross-operator'})"
        rank = -(rec.get("worth_score") or 0)
        if kind == "doc":  # a cross-operator doc of this DSL or architecture is its reference: always read
            tier = "P3" if dsl in sc.dsl else "P2" if exact else "P1" if matched else None
            if tier:
                add(tier, kw, rec, text, rank)
        elif matched:
            add("P4", kw, rec, text, rank)
    for docs in tiers.values():
        docs.sort(key=lambda d: (d["rank"], d["id"]))
        for d in docs:
            d.pop("rank")
    return tiers, sorted(set(missing)), indexes


# --------------------------------------------------------------------------------------------
# the route
# --------------------------------------------------------------------------------------------

def layout(wiki: Path) -> str | None:
    """'json' (record stores with index.json), 'markdown' (a README.md of tier tables) or None (no wiki)."""
    if any((wiki / store / "records" / "index.json").is_file() for store in ("hardware_wiki", "kernel_wiki")):
        return "json"
    return "markdown" if (wiki / "README.md").is_file() else None


def absence(wiki: Path) -> str:
    """Why no wiki is read at `wiki`, in words: not there, not a folder (and what it is), or not a gpu-wiki."""
    if not os.path.lexists(wiki):
        return "absent on this machine"
    if not wiki.is_dir():
        return f"{files.kind(os.stat(wiki).st_mode) if wiki.exists() else 'a broken symlink'}, not a folder"
    return "a folder without a gpu-wiki in it (no README.md tier table, no hardware_wiki/records/index.json)"


def route(op: dict) -> dict:
    """This op's gpu-wiki route: {wiki, present, layout, index: [files read first], tiers: {P0..P4: [{path, id,
    text}]}, missing: [named but absent]} (+ error, when the wiki is there but cannot be read). Every entry's path
    exists; none is another vendor's or architecture's."""
    wiki = Path(op["gpu_wiki"]).expanduser()
    kind = layout(wiki) if wiki.is_dir() else None
    if kind is None:
        return {"wiki": wiki, "present": False, "layout": None, "index": [], "tiers": {}, "missing": [],
                "absent": absence(wiki)}
    wiki, sc = wiki.resolve(), Scope(op)
    try:
        if kind == "json":
            tiers, missing, index = _json_route(wiki, sc)
        else:
            md = _Markdown(wiki, sc)
            paths, missing = md.route()
            index = [wiki / "README.md"]
            tiers = {t: [{"path": p, "id": None, "text": md.text(p)} for p in docs] for t, docs in paths.items()}
    except (OSError, ValueError, KeyError, TypeError) as err:  # a wiki we cannot read must not stop the V0 flow
        return {"wiki": wiki, "present": True, "layout": kind, "index": [], "tiers": {t: [] for t in TIERS},
                "missing": [], "error": str(err) if isinstance(err, files.FileProblem) else f"{type(err).__name__}: {err}"}
    seen, unique = set(), {}
    for tier in TIERS:  # one doc, one tier: the first that routes it
        unique[tier] = [d for d in tiers[tier] if d["path"].is_file() and not (d["path"] in seen or seen.add(d["path"]))]
    return {"wiki": wiki, "present": True, "layout": kind, "index": index, "tiers": unique, "missing": missing}


def entry_name(entry: dict, wiki: Path) -> str:
    """How the records name a routed entry: its record id, or its path inside the wiki."""
    return entry["id"] or entry["path"].relative_to(wiki).as_posix()


# --------------------------------------------------------------------------------------------
# peaks: the wiki's figures for this GPU, beside reference/gpu_specs.json's
# --------------------------------------------------------------------------------------------

_DTYPES = ("tf32", "bf16", "fp16", "fp8", "fp32")  # the dtypes of gpu_specs.json's dense_tflops


def _number(text: str) -> float | None:
    m = re.search(r"(\d[\d,]*(?:\.\d+)?)", text)
    return float(m.group(1).replace(",", "")) if m else None


def _doc_peaks(path: Path, gpu: str) -> dict | None:
    """The figures of a markdown spec doc's section for this GPU (its heading names the GPU); None without one.

    Rows: `FP16 / BF16 (Tensor Core) | 989.4 | ...` (the first number of the second cell, in a table whose header
    or cell says TFLOPS); `Memory Bandwidth | 4.8 TB/s`; `Streaming Multiprocessors (SMs) | 132`."""
    lines, level, section = files.read_text(path, errors="replace").splitlines(), None, []
    for line in lines:
        m = _HEADING.match(line)
        if m and level is not None and len(m.group(1)) <= level:
            break
        if level is not None:
            section.append(line)
        elif m and _named(m.group(2), [gpu]):
            level = len(m.group(1))
    if level is None:
        return None
    out: dict = {"dense_tflops": {}}
    header = ""
    for line in section:
        if not line.strip().startswith("|"):
            header = ""
            continue
        cells = [_plain(c) for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or re.fullmatch(r":?-{2,}:?", cells[0] or "--"):
            continue
        if not header:
            header = " ".join(cells).lower()
            continue
        label, value = cells[0].lower(), cells[1]
        number = _number(value)
        if number is None:
            continue
        if "tflop" in header or "tflop" in value.lower():
            found = [d for d in _DTYPES if _named(label, [d])]
            if "tf32" in found:
                found = ["tf32"]
            elif "fp32" in found and re.search(r"tensor|matrix", label):
                found.remove("fp32")
            for d in found:
                out["dense_tflops"].setdefault(d, number)
        if "bandwidth" in label and re.search(r"[tg]b/s", value.lower()):
            out.setdefault("hbm_bandwidth_gbps", number * (1000 if "tb/s" in value.lower() else 1))
        if re.search(r"streaming multiprocessors|compute units|cu count|sm count|\bsms\b|\bcus\b", label):
            out.setdefault("compute_units", number)
    return out


def _record_peaks(path: Path) -> tuple[dict, str | None]:
    """A spec-sheet record's figures ({dense_tflops, hbm_bandwidth_gbps, compute_units}) and its evidence class.
    Tensor-core entries give the matrix dtypes, the cuda-core (vector) entry gives fp32, as in gpu_specs.json."""
    rec = files.load_json(path)
    facts, out = rec.get("facts", {}), {"dense_tflops": {}}
    for item in facts.get("peak_compute") or []:
        d, kind = item.get("dtype"), item.get("unit_kind")
        if d in _DTYPES and item.get("dense") is not None and kind == ("cuda-core" if d == "fp32" else "tensor-core"):
            out["dense_tflops"].setdefault(d, float(item["dense"]))
    memory, units = facts.get("memory") or {}, facts.get("compute_units") or {}
    if memory.get("bandwidth_tb_s") is not None:
        out["hbm_bandwidth_gbps"] = float(memory["bandwidth_tb_s"]) * 1000
    elif memory.get("bandwidth_gbps") is not None:
        out["hbm_bandwidth_gbps"] = float(memory["bandwidth_gbps"])
    count = units.get("sm_count") or units.get("cu_count")
    if count is not None:
        out["compute_units"] = float(count)
    return out, rec.get("provenance", {}).get("evidence_class")


def wiki_peaks(op: dict, routed: dict | None = None) -> dict | None:
    """The GPU's figures as the wiki gives them: {where, path, evidence, dense_tflops, hbm_bandwidth_gbps?,
    compute_units?} (`where` the P0 doc's path in the wiki or the spec-sheet's record id, `path` its file); {where:
    None, note} when the wiki has no figures for this GPU; None without a wiki."""
    routed = routed or route(op)
    if not routed["present"]:
        return None
    gpu, wiki = op["gpu"], routed["wiki"]
    for entry in routed["tiers"].get("P0", []):
        try:
            if routed["layout"] == "json":
                rec = files.load_json(entry["path"])
                if (rec.get("identity", {}).get("product") or "") != gpu.lower():
                    continue  # an architecture-level sheet describes no particular part: never this GPU's peaks
                figures, evidence = _record_peaks(entry["path"])
            else:
                figures, evidence = _doc_peaks(entry["path"], gpu.lower()), None
        except (OSError, ValueError, AttributeError, TypeError):
            continue  # unreadable: not a source
        if figures is not None:
            return {"where": entry_name(entry, wiki), "path": str(entry["path"]), "evidence": evidence, **figures}
    why = (f"its P0 tier has no spec-sheet record for {gpu}" if routed["layout"] == "json" else
           f"no P0 spec doc has a section for {gpu}")
    names = ", ".join(entry_name(e, wiki) for e in routed["tiers"].get("P0", []))
    return {"where": None, "note": why + (f" (routed: {names})" if names else ""), "dense_tflops": {}}


def cited_specs(specs: dict, op: dict | None, routed: dict | None = None) -> dict:
    """gpu_specs.json with the op's GPU's figures checked against the wiki's (a copy; `op` None: unchanged).

    Each figure both give gets `wiki: {value, agrees}`; a figure only the wiki gives becomes the value, with the wiki
    as its source and `from_wiki: true`; the GPU's entry gets `wiki: {where, evidence, note}`."""
    out = copy.deepcopy(specs)
    peaks = wiki_peaks(op, routed) if op else None
    name = next((n for n in out["gpus"] if op and n.lower() == op["gpu"].lower()), None)
    if peaks is None or name is None:
        return out
    spec = out["gpus"][name]
    spec["wiki"] = {k: peaks.get(k) for k in ("where", "evidence", "note")}
    label = f"gpu-wiki {peaks['where']}" + (f" ({peaks['evidence']})" if peaks.get("evidence") else "")
    items = [(spec["dense_tflops"], d, peaks["dense_tflops"].get(d), f"{d.upper()} dense")
             for d in {*spec["dense_tflops"], *peaks["dense_tflops"]}]
    items += [(spec, k, peaks.get(k), k) for k in ("hbm_bandwidth_gbps", "compute_units")]
    for holder, key, value, kind in items:
        item = holder.get(key) or {"value": None, "kind": kind}
        if value is None:
            continue
        if item.get("value") is None:
            ours = item.get("note") or "no figure"
            holder[key] = {**item, "value": value, "from_wiki": True,
                           "kind": f"the gpu-wiki's {item.get('kind', kind)}",
                           "note": f"reference/gpu_specs.json has none ({ours})",
                           "source": {"title": label, "url": peaks["path"], "kind": "gpu-wiki"}}
        else:
            holder[key] = {**item, "wiki": {"value": value,
                                            "agrees": abs(value - item["value"]) <= AGREE * max(value, item["value"])}}
    return out


def peak_lines(spec: dict, dtype: str) -> list[str]:
    """Where each figure in use comes from, in words, when a wiki is present: agreed, disagreed (both figures), or
    the wiki's own (where our file has none). Nothing without a wiki: the datasheet citations say it all."""
    wiki = spec.get("wiki")
    if not wiki:
        return []
    if not wiki.get("where"):
        return [f"gpu-wiki: {wiki['note']}; every peak is reference/gpu_specs.json's"]
    src = f"the gpu-wiki's `{wiki['where']}`" + (f" ({wiki['evidence']})" if wiki.get("evidence") else "")
    lines = []
    for item, what, unit in [(spec["dense_tflops"].get(dtype), f"dense {dtype} peak", "TFLOP/s"),
                             (spec["hbm_bandwidth_gbps"], "HBM bandwidth", "GB/s"),
                             (spec["compute_units"], spec["compute_units"].get("name", "compute units"), "")]:
        if not item or item.get("value") is None:
            lines.append(f"{what}: neither reference/gpu_specs.json nor {src} gives one")
            continue
        ours = f"{item['value']:g}" + (f" {unit}" if unit else "")
        if item.get("from_wiki"):
            lines.append(f"{what} {ours}: the figure of {src}, used because {item['note']}")
        elif "wiki" not in item:
            lines.append(f"{what} {ours} ({item['source']['title']}); {src} gives none")
        elif item["wiki"]["agrees"]:
            lines.append(f"{what} {ours} ({item['source']['title']}); {src} gives {item['wiki']['value']:g}: agrees")
        else:
            lines.append(f"{what}: DISAGREEMENT: reference/gpu_specs.json gives {ours} ({item['source']['title']}), "
                         f"{src} gives {item['wiki']['value']:g}; {ours} is used, check both")
    return lines


def workspace_op(ws: Path, gpu: str) -> dict | None:
    """A workspace's op.json when it is about this GPU (compute_utilization's CLI cites that op's wiki), else None."""
    path = ws / "op.json"
    op = files.load_json(path) if path.is_file() else None
    return op if isinstance(op, dict) and op.get("gpu", "").lower() == gpu.strip().lower() and "wiki" in op else None


def op_from_cli(tool: str, description: str, argv=None) -> tuple:
    """(args, op) of a Phase-2 tool's command line (--op, --wiki, --json): the workspace's op.json, its gpu_wiki
    replaced by --wiki when given; or (None, the exit code) after a one-line refusal of a bad --op."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--op", type=Path, default=Path(__file__).resolve().parent.parent / "op.json")
    p.add_argument("--wiki", help="another gpu-wiki path than op.json's gpu_wiki")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        op = files.load_json(args.op)
    except files.FileProblem as err:
        return None, files.refuse(tool, f"--op: {err}; give a workspace's op.json")
    if not isinstance(op, dict) or not isinstance(op.get("gpu_wiki"), str):
        return None, files.refuse(tool, f"--op: {args.op} is JSON but not a workspace's op.json (no gpu_wiki); give "
                                        "a workspace's op.json")
    if args.wiki:
        op["gpu_wiki"] = args.wiki
    return args, op


def main(argv=None) -> int:
    args, op = op_from_cli("wiki_route", "Print this workspace's gpu-wiki route (Phase 2) and the wiki's peaks.", argv)
    if args is None:
        return op
    routed = route(op)
    peaks = wiki_peaks(op, routed)
    if args.json:
        print(json.dumps({**routed, "peaks": peaks}, indent=2, default=str))
        return 0
    if not routed["present"]:
        print(f"gpu-wiki {routed['wiki']}: {routed['absent']}")
        return 0
    print(f"gpu-wiki {routed['wiki']} ({routed['layout']} layout)")
    for tier, docs in routed["tiers"].items():
        print(f"{tier} {TIERS[tier]}: {len(docs)}")
        for d in docs:
            print(f"  {entry_name(d, routed['wiki'])}" + (f"  {d['text']}" if d["text"] else ""))
    if routed["missing"]:
        print("named but absent: " + ", ".join(routed["missing"]))
    print(f"peaks: {json.dumps(peaks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
