"""The static facts reports list for a function that never ran (its lines, its branches), worked out when its file is instrumented.

A coverage report lists every function, those that never ran at zero; finding their lines
and branches from the stored CFG JSON means parsing the CFG of every function of every
file imported.  Instead the instrumenter, which has each CFG in hand, writes them down once
per file (the code cache keeps them with the template) and the recorder stores them for the
whole recording as the array ``report.facts`` (``trace.facts`` reads it).  Pure Python: no
numpy on the record path.

Layout (int64).  Per file: ``VERSION, n_functions, n_line_rows, n_branch_rows``, then the
line rows, four numbers each (function index in the file, line, first statement starting on
the line, its column; by function then line), then the branch rows, six numbers each
(function index, block, index among the block's out-edges, line of the block's last
statement, edge id, name code; by function, block, edge id).  In the recording each file's
record is preceded by its first function id.  Name codes: ``n >= 0`` is the text of ``n``
(a target's first line, or a block id), ``EXIT_NAME`` is ``"exit"``, ``-2 - k`` is edge kind
``EDGE_KINDS[k]``.  The rules are those of ``profile.model`` (and ``trace.shape``, which works
them out from the stored CFG: a test compares the two on the corpus).
"""

from __future__ import annotations

from wholetrace.store.cmods import ArrayType as array   # cmods' (store/cmods.py): never the program's

from wholetrace.ids import ENTRY, EXIT

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from wholetrace.instrument.cfg import CFG

#: Layout version of a file's record.
VERSION = 1
#: Name code of a branch into EXIT named by its target.
EXIT_NAME = -1


def _kind_codes() -> dict[str, int]:
    """Edge kind -> its name code (``cfg`` is imported on a cache miss only: ``instrument.misspath``)."""
    from wholetrace.instrument.cfg import EDGE_KINDS

    return {k: -2 - i for i, k in enumerate(EDGE_KINDS)}


def function_facts(cfg: CFG, index: int, lines: array, branches: array) -> bool:  # type: ignore[type-arg]
    """Append the line and branch rows of ``cfg`` (function ``index`` of its file); False if an
    edge kind has no code (then the file stores no facts)."""
    kind_code = _kind_codes()
    first: dict[int, tuple[int, int]] = {}
    for s in cfg.stmts:                       # statement id order: the lowest id per line
        if s.line not in first:
            first[s.line] = (s.id, s.col)
    for ln in sorted(first):
        sid, col = first[ln]
        lines.extend((index, ln, sid, col))
    outs: list[list[int]] = [[] for _ in cfg.blocks]
    for e, edge in enumerate(cfg.edges):
        outs[edge.src].append(e)
    for b, block in enumerate(cfg.blocks):
        es = outs[b]
        if b == ENTRY or len(es) < 2 or not block.stmts:
            continue
        line = cfg.stmts[block.stmts[-1]].line
        kinds: dict[object, int] = {}    # no collections.Counter: not imported at start-up (rstart15)
        for e in es:
            kinds[cfg.edges[e].kind] = kinds.get(cfg.edges[e].kind, 0) + 1
        for k, e in enumerate(es):
            edge = cfg.edges[e]
            code = kind_code.get(edge.kind)
            if code is None:
                return False
            if kinds[edge.kind] > 1:         # kinds repeat at the block: named by the target
                d = edge.dst
                target = cfg.blocks[d].stmts
                code = EXIT_NAME if d == EXIT else cfg.stmts[target[0]].line if target else d
            branches.extend((index, b, k, line, e, code))
    return True


def file_facts(cfgs: list[CFG]) -> bytes:
    """One file's record (see the module doc) as int64 bytes, or ``b""`` if it has none."""
    lines: array[int] = array("q")
    branches: array[int] = array("q")
    for i, cfg in enumerate(cfgs):
        if not function_facts(cfg, i, lines, branches):
            return b""
    return (array("q", (VERSION, len(cfgs), len(lines) // 4, len(branches) // 6)) + lines + branches).tobytes()


def recording_facts(files: list[tuple[int, bytes]]) -> array:  # type: ignore[type-arg]
    """The ``report.facts`` array of a recording from ``(first function id, file record)``
    (files without a record are left out: readers parse those functions' CFGs)."""
    out: array[int] = array("q")
    for fid_base, record in files:
        if record:
            out.append(fid_base)
            out.frombytes(record)
    return out
