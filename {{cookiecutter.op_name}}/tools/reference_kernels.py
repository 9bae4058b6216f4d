"""Phase 2's reference kernels: the gpu-wiki's kernels of this op's architecture, DSL and pattern, read, never imported.

    python tools/reference_kernels.py        # list them for this workspace's op.json (`--json` for the dicts)

The seed asks to prefer "implementations with the same framework and compute pattern" among the wiki's external
reference projects. The markdown gpu-wiki (atrex-kernel-agent v0.1.0, v0.2.0) keeps them as source trees under
`reference-kernels/<vendor>/<arch>/<dsl>/<project>/` (its README: "organized by hardware architecture -> DSL language
-> source repository"), which the document route (tools/wiki_route.py) leaves out on purpose: they are code, not
documents. This module lists them, by that fixed layout:

- **the architecture is a hard boundary**: only `<vendor>` = this op's vendor and an `<arch>` folder named for this
  architecture (`hopper`, `sm90`, `cdna3`, `gfx942`, `mi308x`, ...) or its family's generic tier, the architecture's
  name without its generation number (`amd/cdna/` for gfx942 and gfx950: the wiki's README calls it "CDNA3 (gfx942) +
  CDNA4 (gfx950) generic"); a path below that names another architecture and none of ours is left out;
- **only this op's DSL**: the `<dsl>` folder is one of op.json's DSL names (`cutedsl`, `flydsl`); never `triton`,
  `gluon` or `cuda`;
- **only this op's pattern**: a file is listed when its name or its description names the op (`rmsnorm`, `softmax`,
  `gqa`, `matmul`, a lowered function's name and the op words in it) or the pattern (op.json's wiki words and
  operator families: `gemm`, `reduction`, `norm`, `attention`, `decode`, ...); ranked same op first, then same
  pattern, the architecture's own folder before its generic tier.

Each file comes with its one-line description, the row of its folder's README that names it (a table row or a bullet,
by link or by `code` span; v0.2.0's tables use both; without a row, the module docstring's first line, marked so),
and what it defines, read with `ast` (never imported): its kernels (functions decorated `@cute.kernel`, `@cute.jit`,
`@flyc.kernel`, `@triton.jit`, ..., methods named `Class.method`), its classes and its public functions. Files are
found on disk under the matching folders (a project folder may lack a README: v0.2.0's `amd/cdna4/flydsl/FlyDSL/`).

The JSON layout (the wiki's main) has no `reference-kernels/` tree: there, the routed records (technique cards, docs,
anti-strategies already in this op's scope) whose text cites source code (`**Source**: \\`cutedsl/cutlass/...\\``) are
listed with the citations in this op's DSL; a cited file that exists in the wiki is read like the others.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import files
import wiki_route
from wiki_route import _mentions, _named, _norm, _plain

ROOT = "reference-kernels"
MAX_FILES = 3000  # .py files read under the matching folders; a bigger tree is cut, and the listing says so
MAX_BYTES = 2 << 20  # a source file larger than this is listed without what it defines
KERNEL_DECORATORS = ("kernel", "jit", "autotune")  # @cute.kernel, @cute.jit, @flyc.kernel, @triton.jit, ...
SKIP = ("__init__.py", "setup.py", "conftest.py")
_CITE = re.compile(r"Source\*\*:\s*`([^`]+)`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)[^)]*\)")
_CODE = re.compile(r"`([^`\s]+)`")


def _words(op: dict) -> tuple[list[str], list[str]]:
    """(the op's words, the pattern's words). A lowered op is named by its function and the op words in its name."""
    w = op["wiki"]
    pattern = [*w["words"], *w["families"]]
    if op["op"] == "lowered":
        function = (op.get("lowering") or {}).get("function") or op.get("title") or ""
        own = [function] + [t for t in function.split("_") if t and _named(t, pattern)]
    else:
        own = [op["op"]] + ([op["title"]] if op.get("title") and op["title"] != op["op"] else [])
    return own, pattern


def defines(path: Path) -> dict:
    """What a Python file defines, read with ast: {kernels, classes, functions} (or {error})."""
    try:
        tree = ast.parse(files.read_text(path, MAX_BYTES, errors="replace"), filename=str(path))
    except (SyntaxError, ValueError, OSError) as err:
        return {"error": f"not read ({type(err).__name__})"}

    def is_kernel(node) -> bool:
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if ast.unparse(target).split(".")[-1] in KERNEL_DECORATORS:
                return True
        return False

    kernels, classes, functions = [], [], []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes.append(node.name)
            kernels += [f"{node.name}.{m.name}" for m in node.body
                        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_kernel(m)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if is_kernel(node):
                kernels.append(node.name)
            elif not node.name.startswith("_"):
                functions.append(node.name)
    return {"kernels": kernels, "classes": classes, "functions": functions}


def _docstring(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(files.read_text(path, MAX_BYTES, errors="replace"))) or ""
    except (SyntaxError, ValueError, OSError):
        return ""
    return doc.strip().splitlines()[0][:200] if doc.strip() else ""


class _Readmes:
    """Each folder README's rows, parsed once: file (relative to the folder) -> its description."""

    def __init__(self):
        self._rows: dict[Path, dict[str, str]] = {}

    def rows(self, folder: Path) -> dict[str, str]:
        if folder not in self._rows:
            self._rows[folder] = self._parse(folder / "README.md") if (folder / "README.md").is_file() else {}
        return self._rows[folder]

    @staticmethod
    def _parse(readme: Path) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in files.read_text(readme, errors="replace").splitlines():
            s = line.strip()
            if s.startswith("|"):
                cells = [c.strip() for c in s.strip("|").split("|")]
                for i, cell in enumerate(cells):
                    names = _LINK.findall(cell) + _CODE.findall(cell)
                    if names:
                        rest = [_plain(c) for j, c in enumerate(cells) if j != i]
                        text = " — ".join(c for c in rest if c and not c.isdigit() and not c.endswith(".md"))
                        for name in names:
                            out.setdefault(name.removeprefix("./"), text[:240])
                        break
            elif re.match(r"^[-*+]\s", s):
                m = _LINK.search(s) or _CODE.search(s)
                if m:
                    out.setdefault(m.group(1).removeprefix("./"), _plain(s[m.end():])[:240])
        return out

    def text(self, path: Path, stop: Path) -> str:
        """The row naming the file in its folder's README (or, by its relative path, an enclosing one's up to
        `stop`); else the module docstring's first line."""
        folder = path.parent
        while True:
            row = self.rows(folder).get(path.relative_to(folder).as_posix())
            if row is not None:
                return row
            if folder == stop or not folder.is_relative_to(stop):
                break
            folder = folder.parent
        doc = _docstring(path)
        return f"(no README row; its docstring) {doc}" if doc else ""


def _markdown(wiki: Path, op: dict, sc: wiki_route.Scope) -> tuple[list[dict], str]:
    root = wiki / ROOT
    if not root.is_dir():
        return [], f"no `{ROOT}/` folder in the wiki"
    own_words, pattern_words = _words(op)
    arch = op["wiki"]["arch"]
    generic = re.sub(r"\d+$", "", arch)  # cdna3 -> cdna: the family's generic tier
    tiers = {_norm(n): "own" for n in sc.own} | ({_norm(generic): "generic"} if generic != arch else {})
    dsls = {_norm(n) for n in sc.dsl}
    vendor = root / sc.vendor
    found, readmes, read = [], _Readmes(), 0
    arch_dirs = sorted(d for d in vendor.iterdir() if d.is_dir() and _norm(d.name) in tiers) if vendor.is_dir() else []
    for arch_dir in arch_dirs:
        for dsl_dir in sorted(d for d in arch_dir.iterdir() if d.is_dir() and _norm(d.name) in dsls):
            for path in sorted(dsl_dir.rglob("*.py")):
                if read >= MAX_FILES:
                    return found, f"stopped after {MAX_FILES} files"
                rel = path.relative_to(root).as_posix()
                inside = path.relative_to(dsl_dir).as_posix()
                if "__pycache__" in path.parts or path.name in SKIP or path.name.startswith("test_") \
                        or sc.foreign(inside):
                    continue
                read += 1
                project = path.relative_to(dsl_dir).parts[0] if len(path.relative_to(dsl_dir).parts) > 1 else ""
                text = readmes.text(path, dsl_dir)
                subject = f"{path.stem} {text}"
                same_op = _named(subject, own_words) or _named(path.stem, own_words)
                if not (same_op or _mentions(subject, pattern_words)):
                    continue
                exact = any(_norm(path.stem) == _norm(w) for w in own_words)
                found.append({"path": path, "rel": rel, "project": project, "tier": tiers[_norm(arch_dir.name)],
                              "match": "op" if same_op else "pattern", "text": text, "defines": defines(path),
                              "rank": (0 if same_op else 1, not exact, tiers[_norm(arch_dir.name)] != "own", rel)})
    found.sort(key=lambda k: k["rank"])
    for k in found:
        k.pop("rank")
    return found, ""


def _records(wiki: Path, op: dict, route: dict) -> tuple[list[dict], str]:
    """JSON layout: the routed records whose text cites source code in this op's DSL."""
    dsls = {_norm(n) for n in op["wiki"]["dsl_names"]}
    own_words, _pattern = _words(op)
    out = []
    for tier, entries in route.get("tiers", {}).items():
        for entry in entries:
            try:
                text = files.read_text(entry["path"], errors="replace")
            except OSError:
                continue
            cites = sorted({c for c in _CITE.findall(text) if any(_norm(p) in dsls for p in Path(c).parts)})
            if not cites:
                continue
            local = [wiki / ROOT / c for c in cites]
            read = {str(p.relative_to(wiki)): defines(p) for p in local if p.is_file() and p.suffix == ".py"}
            out.append({"path": entry["path"], "rel": entry["id"], "id": entry["id"], "project": "", "tier": tier,
                        "match": "op" if _named(entry.get("text", ""), own_words) else "pattern",
                        "text": f"{entry.get('text', '')}; cites {', '.join(f'`{c}`' for c in cites)}"
                                + ("" if read else " (not in this wiki)"),
                        "defines": next(iter(read.values()), {})})
    out.sort(key=lambda k: (k["match"] != "op", k["rel"]))
    return out, ""


def find(op: dict, route: dict) -> dict:
    """{kernels: [{path, rel, project, tier, match, text, defines, id?}], note}: this op's reference kernels."""
    if not route.get("present") or route.get("error"):
        return {"kernels": [], "note": "no gpu-wiki read"}
    sc = wiki_route.Scope(op)
    try:
        if route["layout"] == "json":
            kernels, note = _records(route["wiki"], op, route)
        else:
            kernels, note = _markdown(route["wiki"], op, sc)
    except OSError as err:  # an unreadable tree must not stop the V0 flow
        return {"kernels": [], "note": f"{ROOT}/ could not be read ({err})"}
    return {"kernels": kernels, "note": note}


def describe(kernel: dict, limit: int = 6) -> str:
    """What a kernel file defines, in a few words: `kernels a, b; classes C; functions f`."""
    d = kernel["defines"]
    if not d:
        return "its code is not in this wiki, so nothing was read"
    if d.get("error"):
        return d["error"]
    parts = [f"{what} {', '.join(f'`{n}`' for n in d[what][:limit])}" + (f" (+{len(d[what]) - limit})"
                                                                          if len(d[what]) > limit else "")
             for what in ("kernels", "classes", "functions") if d.get(what)]
    return "; ".join(parts) or "no top-level kernel, class or function"


def main(argv=None) -> int:
    args, op = wiki_route.op_from_cli("reference_kernels", "List the gpu-wiki's reference kernels for this "
                                                           "workspace's op.", argv)
    if args is None:
        return op
    found = find(op, wiki_route.route(op))
    if args.json:
        print(json.dumps(found, indent=2, default=str))
        return 0
    for k in found["kernels"]:
        print(f"[{k['match']}] {k['rel']}: {k['text']} | {describe(k)}")
    print(found["note"] or f"{len(found['kernels'])} reference kernel(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
