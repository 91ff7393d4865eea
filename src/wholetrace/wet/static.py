"""Static facts the dependence pass needs per function: statements of blocks, control dependence, callees, closures.

Control dependence follows Ferrante, Ottenstein and Warren, "The Program Dependence Graph and
Its Use in Optimization" (TOPLAS 9(3), 1987): block ``b`` is control dependent on block ``a``
when ``b`` post-dominates a successor of ``a`` but not ``a`` itself.  The graph is the
function's block CFG with an ENTRY -> EXIT edge (so code that always runs depends on ENTRY),
a block without successors (``raise``) linked to EXIT, and for each *dynamic entry* ``h``
(first block of a handler or ``finally`` body, reached only by recorded exception edges) a
pseudo predicate ``X_h`` with edges ENTRY -> X_h -> {h, EXIT}: the handler region depends
on "an exception arrived here", whose dynamic instance is the raising statement.

Invariant: every predicate id is a block id of the function (< ``n_blocks``), ENTRY, or a
pseudo predicate ``n_blocks + j`` standing for the j-th dynamic entry.
"""

from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass, field
from typing import Any

from wholetrace.ids import ENTRY, EXIT
from wholetrace.lines import source_lines

_DEF_NAME = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.M)
#: Builtins and functions known to leave their arguments unchanged (a use, never a def).
PURE_CALLS = frozenset("""
    print len sum min max sorted reversed str repr int float bool complex bytes tuple frozenset
    list dict set isinstance issubclass range enumerate zip map filter abs round iter next any all
    format hash id type divmod pow ord chr hex oct bin ascii callable getattr hasattr vars dir
    sqrt floor ceil log exp sin cos join split strip upper lower startswith endswith encode decode
    copy deepcopy dumps loads
""".split())

#: Known effects of methods of built-in mutable types: (type, method) -> "def" (mutates the
#: receiver: a whole-object use and def) or "use" (reads it).
_MUT = {
    "list": ("append extend insert pop remove sort reverse clear __setitem__ __delitem__ __iadd__",
             "index count copy __getitem__ __len__ __contains__ __iter__"),
    "dict": ("update pop popitem setdefault clear __setitem__ __delitem__ __ior__",
             "get keys values items copy __getitem__ __len__ __contains__ __iter__"),
    "set": ("add discard remove pop clear update difference_update intersection_update "
            "symmetric_difference_update __ior__ __iand__",
            "copy union intersection difference symmetric_difference issubset issuperset isdisjoint "
            "__contains__ __len__ __iter__"),
    "bytearray": ("append extend insert pop remove reverse clear", "decode copy count find index hex"),
    "collections.deque": ("append appendleft extend extendleft pop popleft remove rotate clear",
                          "count index copy"),
    "collections.defaultdict": ("update pop popitem setdefault clear", "get keys values items copy"),
    "collections.OrderedDict": ("update pop popitem setdefault clear move_to_end", "get keys values items copy"),
    "collections.Counter": ("update subtract pop popitem setdefault clear", "get keys values items copy "
                            "most_common elements total"),
}
KNOWN_EFFECTS: dict[tuple[str, str], str] = {}
for _t, (_defs, _uses) in _MUT.items():
    KNOWN_EFFECTS.update({(_t, m): "def" for m in _defs.split()})
    KNOWN_EFFECTS.update({(_t, m): "use" for m in _uses.split()})
#: Types whose instances are containers mutated only through C code.
BUILTIN_MUTABLE = frozenset(_MUT) | {"array.array"}


@dataclass
class FunctionFacts:
    """What the dependence pass needs of one recorded function."""

    fid: int
    qualname: str
    kind: str
    module: int                                   # id of its file (globals live there)
    is_generator: bool
    block_stmts: list[list[int]]                  # block id -> statement ids
    stmt_block: list[int]
    stmt_line: list[int]
    stmt_label: list[str]
    stmt_calls: list[bool]
    n_blocks: int
    dyn_entries: dict[int, int]                   # handler block -> pseudo predicate id
    cd: list[list[int]]                           # block id -> predicate ids (blocks, ENTRY, pseudo)
    uses: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    defs: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    kills: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    callees: dict[int, set[str]] = field(default_factory=dict)   # statement -> called names
    prints: set[int] = field(default_factory=set)                # statements calling print()
    closure: dict[str, int] = field(default_factory=dict)        # free name -> defining fid
    suspends: set[int] = field(default_factory=set)              # statements holding a yield
    entry_block: int = -1                                        # the block ENTRY leads to


def control_dependence(n_blocks: int, edges: list[tuple[int, int]], dyn: list[int]) -> list[list[int]]:
    """Predicates of every block (see the module docstring); unreachable-to-EXIT blocks get ENTRY."""
    n = n_blocks + len(dyn)
    succ: list[set[int]] = [set() for _ in range(n)]
    for a, b in edges:
        succ[a].add(b)
    succ[ENTRY].add(EXIT)
    for j, h in enumerate(dyn):
        x = n_blocks + j
        succ[ENTRY].add(x)
        succ[x].update((h, EXIT))
    for b in range(n):
        if b != EXIT and not succ[b]:
            succ[b].add(EXIT)
    pred: list[set[int]] = [set() for _ in range(n)]
    for a in range(n):
        for b in succ[a]:
            pred[b].add(a)
    # nodes that reach EXIT (backwards from EXIT)
    reach, stack = {EXIT}, [EXIT]
    while stack:
        for p in pred[stack.pop()]:
            if p not in reach:
                reach.add(p)
                stack.append(p)
    full = frozenset(reach)
    pdom: list[frozenset[int]] = [full] * n
    pdom[EXIT] = frozenset({EXIT})
    changed = True
    while changed:
        changed = False
        for b in range(n):
            if b == EXIT or b not in reach:
                continue
            ss = [pdom[s] for s in succ[b] if s in reach]
            new = frozenset.intersection(*ss) | {b}
            if new != pdom[b]:
                pdom[b], changed = new, True
    ipdom = [-1] * n
    for b in reach:
        strict = pdom[b] - {b}
        if strict:
            ipdom[b] = max(strict, key=lambda s: len(pdom[s]))
    cd: list[set[int]] = [set() for _ in range(n)]
    for a in reach:
        for b in succ[a]:
            if b not in reach or b in pdom[a]:
                continue
            w = b
            while w != -1 and w != ipdom[a]:
                cd[w].add(a)
                w = ipdom[w]
    return [sorted(cd[b]) if b in reach and cd[b] else [ENTRY] for b in range(n_blocks)]


def _calls_by_span(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(line, col, callee name) of every call in a module; ``print`` calls are named ``print``."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name == "print" and any(k.arg == "file" for k in n.keywords):
                name = "print-to-file"
            out.append((n.lineno, n.col_offset, name))
    return out


def _symtables(source: str, file: str) -> dict[str, symtable.SymbolTable]:
    """Symbol tables by our qualnames (``f.<locals>.g``, ``C.m``)."""
    out: dict[str, symtable.SymbolTable] = {}

    def walk(t: symtable.SymbolTable, prefix: str) -> None:
        for c in t.get_children():
            if c.get_type() not in ("function", "class"):
                continue
            if c.get_name() in ("lambda", "genexpr", "listcomp", "setcomp", "dictcomp"):
                continue
            q = prefix + c.get_name()
            out.setdefault(q, c)
            walk(c, q + ("." if c.get_type() == "class" else ".<locals>."))

    try:
        top = symtable.symtable(source, file, "exec")
    except (SyntaxError, ValueError):
        return out
    out["<module>"] = top
    walk(top, "")
    return out


def function_facts(rec: Any, log: Any) -> dict[int, FunctionFacts]:
    """Facts of every function of an open recording (``log`` is its capture log)."""
    out: dict[int, FunctionFacts] = {}
    modules: dict[str, int] = {}
    parsed: dict[str, tuple[list[tuple[int, int, str]], dict[str, symtable.SymbolTable]]] = {}
    by_name: dict[tuple[str, str], int] = {}
    infos = rec.functions()
    file_text: dict[str, str] = {}
    for fn in infos:
        if fn.file not in file_text or len(fn.source) > len(file_text[fn.file]):   # (an empty file too)
            file_text[fn.file] = fn.source
    def_slots: dict[int, list[Any]] = {}
    for info in log.slots.values():
        if info.kind == "def" and info.sid >= 0:
            def_slots.setdefault(info.fid, []).append(info)
    for fn in infos:
        cfg = fn.cfg
        mod = modules.setdefault(fn.file, len(modules))
        by_name[(fn.file, fn.qualname)] = fn.fid
        blocks = cfg["blocks"]
        n_blocks = len(blocks)
        stmts = cfg["stmts"]
        dyn = [b["id"] for b in blocks if b.get("dynamic_entry")]
        edges = [(e[0], e[1]) for e in cfg["edges"]]
        ff = FunctionFacts(
            fn.fid, fn.qualname, cfg["kind"], mod, bool(cfg["is_generator"]),
            [list(b["stmts"]) for b in blocks], [s[7] for s in stmts], [s[2] for s in stmts],
            [s[1] for s in stmts], [bool(s[6]) for s in stmts], n_blocks,
            {h: n_blocks + j for j, h in enumerate(dyn)}, control_dependence(n_blocks, edges, dyn))
        ff.suspends = {i for i, s in enumerate(stmts) if len(s) > 8 and s[8]}
        ff.entry_block = next((b for a, b in edges if a == ENTRY), -1)
        for sid, f in log.facts.get(fn.fid, {}).items():
            ff.uses[int(sid)] = [tuple(p) for p in f.get("uses", [])]   # type: ignore[misc]
            ff.defs[int(sid)] = [tuple(p) for p in f.get("defs", [])]   # type: ignore[misc]
            ff.kills[int(sid)] = [tuple(p) for p in f.get("kills", [])]  # type: ignore[misc]
        for info in def_slots.get(fn.fid, ()):
            have = ff.defs.setdefault(info.sid, [])
            for name in info.what.split(","):
                if name.isidentifier() and not any(n == name for n, _s in have):
                    have.append((name, info.scope or "local"))
        text = source_lines(file_text[fn.file])
        own = {"class": "class", "module": "global"}.get(cfg["kind"], "local")
        for sid, st in enumerate(stmts):
            if st[1] in ("FunctionDef", "AsyncFunctionDef", "ClassDef") and not ff.defs.get(sid):
                m = _DEF_NAME.search("\n".join(text[st[2] - 1:st[4]]))
                if m:
                    ff.defs[sid] = [(m.group(1), own)]
        if fn.file not in parsed:
            try:
                tree = ast.parse(file_text[fn.file])
                parsed[fn.file] = (_calls_by_span(tree), _symtables(file_text[fn.file], fn.file))
            except (SyntaxError, ValueError):
                parsed[fn.file] = ([], {})
        calls, _tabs = parsed[fn.file]
        spans = [(s[2], s[3], s[4], s[5], i) for i, s in enumerate(stmts)]
        for line, col, name in calls:
            if not (cfg["firstline"] <= line <= cfg["lastline"]):
                continue
            inside = [sp for sp in spans if (sp[0], sp[1]) <= (line, col) <= (sp[2], sp[3])]
            if inside:
                sid = min(inside, key=lambda sp: (sp[2] - sp[0], sp[3] - sp[1]))[4]
                ff.callees.setdefault(sid, set()).add(name)
                if name == "print":
                    ff.prints.add(sid)
        out[fn.fid] = ff
    for fn in infos:
        tab = parsed[fn.file][1].get(fn.qualname)
        if tab is None or tab.get_type() != "function":
            continue
        for name in tab.get_frees():
            parts = fn.qualname.split(".")
            for k in range(len(parts) - 1, 0, -1):
                q = ".".join(parts[:k])
                t = parsed[fn.file][1].get(q)
                if t is None or t.get_type() != "function":
                    continue
                try:
                    sym = t.lookup(name)
                except KeyError:
                    continue
                if sym.is_local():
                    if (fn.file, q) in by_name:
                        out[fn.fid].closure[name] = by_name[(fn.file, q)]
                    break
    return out
