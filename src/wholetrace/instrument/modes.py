"""Probe plans: what each recording mode appends at block starts and on edges of one function.

``blocks``      the block id at every block start, ENTER/LEAVE, exception edges (the trace).
``count-naive`` one counter per block (a probe is ``counts.c<j> += 1.0``, a slot of the file's
                counter object; ``j`` the counter's index in the file).
``count``       counters on the chords of a maximum spanning tree (Ball-Larus), weights from
                the heuristic or from an earlier recording; edges with no probe site are kept
                in the tree, and among equal weights the tree takes the dearer probe forms.  Generators, module and class bodies, and functions whose chords
                would need a site that does not exist, get a counter on every block and on
                every instrumentable edge instead ("full"): their counts need no propagation.
``witness``     the function-local witness id (``instrument.witnesses.witness_placement``) on every
                witnessed edge, ENTER/LEAVE and exception edges as in ``blocks``, and after
                ``EXC s`` the handler's block id (the regenerator needs it; ``blocks`` gets
                it from the handler's own block probe).  A function whose placement needs
                a witness on an edge without a probe site records block ids instead, exactly
                as ``blocks`` does (strategy "trace"; the regenerator passes them through).
``branches``    the same with ``instrument.witnesses.branch_placement`` (every predicate's outcome).
``path``        Ball-Larus path ids (``instrument.pathnum.number_cfg``: Larus's cut at edges into
                call blocks, none out of ENTRY): a local register takes the chord increments,
                cut edges append the path id and reset it, the activation's last record is
                ``LEAVE_PATH + id`` (``events``).  Module and class bodies (no local register),
                functions over the path limit and functions whose probes would need an edge
                without a probe site record block ids instead (strategy "trace"), as witness
                mode does.  The plan stores the numbering's DAG (``to_json``): readers decode
                with it, never renumber.
``full``        the ``blocks`` trace plus the values and locations each statement defines and
                reads (WET capture, ``instrument.defuse``): one counter id per value slot, so
                slot ids are relocated like counters.
"""

from __future__ import annotations

from wholetrace.events import LEAVE_PATH
from wholetrace.ids import ENTRY, EXIT
from wholetrace.plain import Record

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # blocks mode should not import the path numbering at start-up
    from typing import Sequence

    from wholetrace.instrument.cfg import CFG
    from wholetrace.instrument.defuse import ValuePlan
    from wholetrace.instrument.sites import Site
    from wholetrace.instrument.pathnum import EdgeProbe, PathNumbering

MODES = ("blocks", "count", "count-naive", "witness", "branches", "path", "full")
#: Modes whose streams are traces (ENTER/LEAVE/EXC recorded, chunks stored as they are).
TRACE_MODES = ("blocks", "witness", "branches", "path", "full")
#: Kinds of the DAG edges a path plan stores (``pathnum.REAL``, ``D_IN``, ``D_OUT``, ``D_DEAD``).
DAG_KINDS = ("real", "d_in", "d_out", "d_dead")
FORCED_TREE_WEIGHT = 1e15
#: A chord expected to run at least this many times per activation counts in a local.
LOCAL_MIN_PER_CALL = 3.0


class ProbePlan(Record):
    """Values a function appends: at block starts, on edges (by edge index), and how.

    ``strategy``: "trace" | "chords" | "full" | "blocks"; ``counters``: local counters (count
    modes); ``chords``: edge ids with a counter ("chords"); ``counted_edges``: edge ids with a
    counter ("full"); ``local_counters``: global ids counted in a local, added at exit;
    ``base``: global id of the function's first counter; ``witnessed``: edge ids with a
    witness, by witness id ("witness"); ``path_probes``: "paths", the probe of every CFG edge;
    ``path_starts``: "paths", the register at a path start; ``numbering``: "paths", what
    readers decode with; ``values``: full mode, value slots and def/use facts;
    ``register_free``: "paths", the register is 0 wherever the activation runs, so no probe
    keeps it (:func:`register_free`); ``exit_const``: "paths", the one closing record every
    edge into EXIT makes (``pathforms.single_exit_record``): the epilogue appends it as a constant;
    ``same_resets``: "paths", cut edges whose reset stores the value the register already holds
    there (no store); ``reg_tables``: "paths", edges whose record reads ``T[wt.p]`` from a
    constant table instead of adding to the register (``pathforms.register_forms``); ``exit_table``:
    "paths", the shifted closing table the epilogue indexes by the register (``pathforms.exit_table``).
    """

    __slots__ = ("mode", "strategy", "block_values", "edge_values", "sites", "counters", "chords", "counted_edges",
                 "local_counters", "base", "witnessed", "path_probes", "path_starts", "numbering", "values",
                 "register_free", "exit_const", "same_resets", "reg_tables", "exit_table")

    def __init__(self, mode: str, strategy: str, block_values: dict[int, list[int]] | None = None,
                 edge_values: dict[int, list[int]] | None = None, sites: list[Site | None] | None = None,
                 counters: int = 0, chords: tuple[int, ...] = (), counted_edges: tuple[int, ...] = (),
                 local_counters: frozenset[int] = frozenset(), base: int = 0, witnessed: tuple[int, ...] = (),
                 path_probes: tuple[EdgeProbe, ...] = (), path_starts: dict[int, int] | None = None,
                 numbering: PathNumbering | None = None, values: ValuePlan | None = None,
                 register_free: bool = False, exit_const: int | None = None,
                 same_resets: frozenset[int] = frozenset(), reg_tables: dict[int, tuple[int, ...]] | None = None,
                 exit_table: tuple[int, ...] | None = None) -> None:
        self.mode = mode
        self.strategy = strategy
        self.block_values: dict[int, list[int]] = {} if block_values is None else block_values
        self.edge_values: dict[int, list[int]] = {} if edge_values is None else edge_values
        self.sites: list[Site | None] = [] if sites is None else sites
        self.counters = counters
        self.chords = chords
        self.counted_edges = counted_edges
        self.local_counters = local_counters
        self.base = base
        self.witnessed = witnessed
        self.path_probes = path_probes
        self.path_starts: dict[int, int] = {} if path_starts is None else path_starts
        self.numbering = numbering
        self.values = values
        self.register_free = register_free
        self.exit_const = exit_const
        self.same_resets = same_resets
        self.reg_tables: dict[int, tuple[int, ...]] = {} if reg_tables is None else reg_tables
        self.exit_table = exit_table

    @property
    def traces(self) -> bool:
        """Trace modes: ENTER/LEAVE and exception edges go to the stream (as in blocks mode)."""
        return self.mode in TRACE_MODES

    @property
    def records_handler(self) -> bool:
        """Witness and path modes (not their block fallback): ``EXC s`` is followed by the
        handler block (path mode: ``EXC s r H``, ``r`` the register)."""
        return self.mode in ("witness", "branches", "path") and self.strategy != "trace"

    @property
    def paths(self) -> bool:
        """Path ids: plan values are CFG edge ids whose probe is ``path_probes[e]``."""
        return self.strategy == "paths"

    def to_json(self) -> dict[str, object]:
        """What the recording stores: readers decode with it, never recompute it."""
        out: dict[str, object] = {
            "mode": self.mode, "strategy": self.strategy, "counters": self.counters,
            "chords": list(self.chords), "counted_edges": list(self.counted_edges),
            "local_counters": sorted(k - self.base for k in self.local_counters),
            "block_counters": sorted(self.block_values) if self.strategy != "chords" else []}
        if self.strategy == "witness":
            out["witnessed"] = list(self.witnessed)
        if self.numbering is not None:
            out["paths"] = numbering_json(self.numbering)
        if self.values is not None:
            out["wet"] = self.values.to_json()
        return out


def numbering_json(num: "PathNumbering") -> dict[str, object]:
    """The numbering as stored: the path count and the DAG edges, flat, five ints each
    (src, dst, kind index in ``DAG_KINDS``, CFG edge or block, Val) followed by the chord
    increments Inc (the register's value along a truncated path)."""
    flat: list[int] = []
    for e, val in zip(num.dag, num.val):
        flat += [e.src, e.dst, DAG_KINDS.index(e.kind), e.ref, val]
    out: dict[str, object] = {"num_paths": num.num_paths, "dag": flat, "inc": list(num.inc),
                              "leave": LEAVE_PATH}   # the closing records' base (``check_leave_base``)
    if num.quiet:   # what a renumbering needs besides the CFG (``stored_quiet``)
        out["quiet"] = sorted(num.quiet)
    if num.free_records:   # the increments' rule (``stored_free_records``; the ids do not depend on it)
        out["free_records"] = True
    return out


#: ``events.LEAVE_PATH`` of the recordings made before wave 14, which stored no ``leave`` key.
OLD_LEAVE_PATH = 1 << 30


def check_leave_base(plan: object, where: str) -> None:
    """Refuse (one-line ``StoreError``) a function's stored plan whose path numbering was recorded
    with closing records ``base + id`` for another base than ``events.LEAVE_PATH``: a recording
    made by an older wholetrace (no ``leave`` key: 2^30).  Its path ids, closing records and "no path
    open" registers would read as other events (docs/design.md, "Path mode, wave 14")."""
    if not isinstance(plan, dict) or plan.get("strategy") != "paths":
        return
    paths = plan.get("paths")
    base = paths.get("leave", OLD_LEAVE_PATH) if isinstance(paths, dict) else OLD_LEAVE_PATH
    if base != LEAVE_PATH:
        from wholetrace.errors import StoreError

        def power(b: object) -> str:
            return f"2^{b.bit_length() - 1}" if type(b) is int and b > 0 and not b & (b - 1) else repr(b)

        made = "an older" if base == OLD_LEAVE_PATH else "another"
        raise StoreError(f"{where}: path recording made by {made} wholetrace (closing records at {power(base)} + id, "
                         f"not {power(LEAVE_PATH)} + id); record it again")


def stored_quiet(desc: object) -> frozenset[int]:
    """The quiet blocks (``pathnum.quiet_blocks``) a function's stored description (its CFG
    JSON with ``plan``) was numbered with; none for recordings made before forced chains
    (they were numbered without them, so :func:`path_numbering` gives their numbering)."""
    plan = desc.get("plan") if isinstance(desc, dict) else None
    paths = plan.get("paths") if isinstance(plan, dict) else None
    quiet = paths.get("quiet") if isinstance(paths, dict) else None
    return frozenset(int(b) for b in quiet) if isinstance(quiet, list) else frozenset()


def stored_free_records(desc: object) -> bool:
    """Was a function's stored numbering made with records as free chords
    (``pathnum.chord_increments``, wave 11)?  Recordings before it were not: a renumbering must
    place their increments as they were placed, or their exception records' registers (the only
    place increments show) would name other prefixes."""
    plan = desc.get("plan") if isinstance(desc, dict) else None
    paths = plan.get("paths") if isinstance(plan, dict) else None
    return isinstance(paths, dict) and paths.get("free_records") is True


def blocks_plan(cfg: CFG) -> ProbePlan:
    return ProbePlan("blocks", "trace", {b.id: [b.id] for b in cfg.blocks[2:] if b.stmts})


def full_plan(cfg: CFG, base: int) -> ProbePlan:
    """``blocks`` probes plus value slots ``base + j`` (``instrument.defuse``)."""
    from wholetrace.instrument.defuse import value_plan

    values = value_plan(cfg)
    return ProbePlan("full", "trace", blocks_plan(cfg).block_values, counters=len(values.slots),
                     values=values)


def count_naive_plan(cfg: CFG, base: int) -> ProbePlan:
    """A counter per block; counter ``b - 2`` of the function is block ``b``.  A body with no
    block (``global``/``nonlocal`` only) counts its one edge, ENTRY -> EXIT, in its prologue."""
    real = [b.id for b in cfg.blocks[2:]]
    if not real:
        from wholetrace.instrument.sites import edge_sites   # (the miss path: instrument.misspath)
        sites = edge_sites(cfg)
        counted = tuple(i for i, s in enumerate(sites) if s is not None)
        return ProbePlan("count-naive", "blocks", sites=sites, counters=len(counted), counted_edges=counted,
                         edge_values={e: [base + k] for k, e in enumerate(counted)})
    return ProbePlan("count-naive", "blocks", {b: [base + i] for i, b in enumerate(real)},
                     counters=len(real))


def _full_plan(cfg: CFG, base: int, sites: list[Site | None]) -> ProbePlan:
    real = [b.id for b in cfg.blocks[2:]]
    plan = ProbePlan("count", "full", {b: [base + i] for i, b in enumerate(real)}, sites=sites)
    counted = [i for i, s in enumerate(sites) if s is not None]
    plan.edge_values = {e: [base + len(real) + k] for k, e in enumerate(counted)}
    plan.counted_edges = tuple(counted)
    plan.counters = len(real) + len(counted)
    return plan


def count_plan(cfg: CFG, base: int, weights: Sequence[float] | None = None) -> ProbePlan:
    """Optimal counters on chords; ``weights``: edge counts of an earlier run, else the heuristic."""
    # imported here: blocks mode should not pay for numpy at start-up
    from wholetrace.instrument.flowgraph import from_cfg
    from wholetrace.instrument.placement import place_counters
    from wholetrace.instrument.sites import edge_sites, probe_rank
    from wholetrace.instrument.weighting import EdgeWeights, feedback_weights, static_weights

    sites = edge_sites(cfg, falls=True)
    graph = from_cfg(cfg)
    w = feedback_weights(graph, list(weights)) if weights is not None else static_weights(graph)
    forced = tuple(FORCED_TREE_WEIGHT if s is None else x for s, x in zip(sites, w.edges))
    placement = place_counters(graph, EdgeWeights(forced, w.virtual), [probe_rank(cfg, s) for s in sites])
    if any(sites[e] is None for e in placement.chords):
        return _full_plan(cfg, base, sites)
    plan = ProbePlan("count", "chords", sites=sites, chords=placement.chords,
                     counters=len(placement.chords))
    plan.edge_values = {e: [base + k] for k, e in enumerate(placement.chords)}
    if cfg.kind == "function":
        per_call = LOCAL_MIN_PER_CALL * max(w.virtual, 1e-9)
        plan.local_counters = frozenset(base + k for k, e in enumerate(placement.chords)
                                        if w.edges[e] >= per_call and probe_rank(cfg, sites[e]) == 0)
    return plan


def witness_plan(cfg: CFG, kind: str) -> ProbePlan:
    """``witness``/``branches``: witness id on every witnessed edge, or block ids ("trace")
    when some witnessed edge has no probe site."""
    from wholetrace.instrument.witnesses import needs_block_fallback, placement_for, probe_sites

    placement = placement_for(cfg, kind)
    sites = probe_sites(cfg)
    if needs_block_fallback(placement, sites):
        return ProbePlan(kind, "trace", blocks_plan(cfg).block_values)
    return ProbePlan(kind, "witness", sites=sites, witnessed=placement.witnessed,
                     edge_values={e: [w] for w, e in enumerate(placement.witnessed)})


def needs_probe(p: "EdgeProbe") -> bool:
    """Does a path probe do anything at run time?  (An exit edge adds its constant only: the
    record itself is the activation's epilogue.)"""
    return p.kind != "none" and not (p.kind == "exit" and p.value == 0)


def path_numbering(cfg: CFG, quiet: "frozenset[int] | None" = None,
                   free_records: bool = True) -> "PathNumbering | None":
    """The numbering a function is recorded with in `path` mode, or None if it records block
    ids: module and class bodies, functions over the path limit, and functions with a probe
    on an edge without a probe site.  ``quiet``: for a CFG read back from a recording, the
    blocks it was numbered with as quiet (:func:`stored_quiet`); by default computed from the
    CFG's statements (a CFG read back has none: the numbering of recordings before wave 10).
    ``free_records``: False for a recording made before wave 11 (:func:`stored_free_records`)."""
    from wholetrace.instrument.pathnum import number_cfg
    from wholetrace.instrument.witnesses import probe_sites

    if cfg.kind != "function":
        return None
    num = number_cfg(cfg, quiet=quiet, free_records=free_records)
    if num.fallback:
        return None
    sites = probe_sites(cfg)
    if any(needs_probe(p) and sites[e] is None for e, p in enumerate(num.probes)):
        return None
    return num


def _exit_sites(cfg: CFG, num: "PathNumbering", sites: list[Site | None]) -> bool:
    """Can the edges into EXIT set the closing record (``fold_known_registers`` ``exits``)?
    Only if each has a probe site (a ``finally``/``with`` dispatch has none) and the leave
    table exists (at most ``pathforms.LEAVE_TABLE_MAX`` paths)."""
    from wholetrace.instrument.pathforms import LEAVE_TABLE_MAX

    return num.num_paths <= LEAVE_TABLE_MAX and all(
        sites[e] is not None for e, edge in enumerate(cfg.edges) if edge.dst == EXIT)


def fold_known_registers(cfg: CFG, num: "PathNumbering", exits: bool = False) -> tuple["EdgeProbe", ...]:
    """The numbering's probes, with a cut whose register value is known where it runs turned
    into ``EdgeProbe("cut-const", id, reset)`` (record the constant id: no load, no add).
    ``exits``: also turn each edge into EXIT into ``EdgeProbe("leave-const", LEAVE_PATH + id)``
    where the register is known, else ``EdgeProbe("leave", K)``: the edge sets the closing
    record (``wt.o``, appended by the epilogue) instead of the epilogue indexing a table with the
    register: the same records, one store instead of a load and a subscript per activation.

    The register is known at a block when every way in gives the same value: the reset of a
    cut into it, the start value at a dynamic entry (set by the handler's probe), the known
    value of a predecessor plus the increment of an uncut edge.  Blocks are visited in
    topological order of the DAG (cut edges removed), so every uncut predecessor comes first.
    """
    from wholetrace.instrument.flowgraph import from_cfg, topological_order
    from wholetrace.instrument.pathnum import EdgeProbe

    graph = from_cfg(cfg)
    order = topological_order(graph, num.cuts)
    if order is None:   # pragma: no cover - the numbering's cuts break every cycle
        return num.probes
    unknown = object()
    seen: list[object] = [None] * graph.num_nodes     # None: no way in seen yet

    def meet(v: int, value: object) -> None:
        seen[v] = value if seen[v] is None or seen[v] == value else unknown

    for b in cfg.blocks:
        if b.dynamic_entry:
            meet(b.id, num.start_value.get(b.id, unknown))
    for e, (_s, d) in enumerate(graph.edges):
        if num.probes[e].kind == "cut":
            meet(d, num.probes[e].reset)
    probes = list(num.probes)
    for u in order:
        here = seen[u] if u != graph.entry else 0
        for e in graph.out_edges[u]:
            p, d = num.probes[e], graph.edges[e][1]
            if p.kind == "cut":
                if isinstance(here, int):
                    probes[e] = EdgeProbe("cut-const", here + p.value, p.reset)
                continue
            if d == graph.exit:
                if exits and p.kind == "init-exit":
                    probes[e] = EdgeProbe("leave-const", LEAVE_PATH + p.value)
                elif exits:
                    probes[e] = (EdgeProbe("leave-const", LEAVE_PATH + here + p.value) if isinstance(here, int)
                                 else EdgeProbe("leave", p.value))
                continue
            if p.kind in ("init", "init-exit"):
                meet(d, p.value)
            else:
                meet(d, here + p.value if isinstance(here, int) else unknown)
    return tuple(probes)


#: Probe kinds that leave the register alone (``EdgeProbe``, after ``fold_known_registers(exits=True)``);
#: a ``cut-const`` too when it resets the register to 0.
_NO_REGISTER_KINDS = ("none", "leave-const")


def register_free(cfg: CFG, probes: Sequence["EdgeProbe"]) -> bool:
    """Is the path register 0 wherever an activation of the function runs, so that no probe
    needs it (docs/design.md, "Path mode, wave 11")?  Yes when the edge out of ENTRY sets it
    to 0 and no other probe adds to it or reads it: no chord increment, every cut records a
    constant and resets the register to 0 (``cut-const``, reset 0: records as free chords,
    ``pathnum.chord_increments``), every edge into EXIT records a constant (``leave-const``),
    no handler of the program (a handler's probe sets the register to the handler's start
    value) and no suspension (a generator is left out).  The exception records of such a
    function then carry the constant 0 where they carried the register, and the register's
    stores (at entry, after each cut) go."""
    if cfg.kind != "function" or cfg.is_generator or any(b.dynamic_entry for b in cfg.blocks):
        return False
    entry = [p for e, p in zip(cfg.edges, probes) if e.src == ENTRY]
    rest = [p for e, p in zip(cfg.edges, probes) if e.src != ENTRY]
    if len(entry) != 1 or not (entry[0].kind == "init" and entry[0].value == 0 or entry[0].kind == "leave-const"):
        return False
    return (all(p.kind in _NO_REGISTER_KINDS or (p.kind == "cut-const" and p.reset == 0) for p in rest)
            and any(p.kind == "leave-const" for p in probes))


def path_plan(cfg: CFG) -> ProbePlan:
    """``path``: the probes of :func:`path_numbering`, or block ids ("trace")."""
    from wholetrace.instrument.pathforms import exit_table, register_forms, single_exit_record, table_exits
    from wholetrace.instrument.pathnum import EdgeProbe
    from wholetrace.instrument.sites import Site
    from wholetrace.instrument.witnesses import probe_sites

    num = path_numbering(cfg)
    if num is None:
        return ProbePlan("path", "trace", blocks_plan(cfg).block_values)
    sites = probe_sites(cfg)
    for e, edge in enumerate(cfg.edges):   # the register is set in the prologue, before the guard
        if edge.src == ENTRY:
            sites[e] = Site("entry")
    probes = fold_known_registers(cfg, num, exits=_exit_sites(cfg, num, sites))
    free = register_free(cfg, probes)
    if free:   # the register's store at entry goes (the exception records say 0 instead)
        probes = tuple(EdgeProbe("none") if e.src == ENTRY and p.kind == "init" else p
                       for e, p in zip(cfg.edges, probes))
    closing = single_exit_record(cfg, probes)
    same, tables = (frozenset(), {}) if free else register_forms(num, probes)
    shifted = None if closing is not None else exit_table(cfg, probes, tables, num.num_paths)
    if closing is not None or shifted is not None or table_exits(cfg, probes):   # the epilogue appends the record: the edges into EXIT do nothing
        probes = tuple(EdgeProbe("none") if e.dst == EXIT else p for e, p in zip(cfg.edges, probes))
        tables = {e: t for e, t in tables.items() if cfg.edges[e].dst != EXIT}
    return ProbePlan("path", "paths", sites=sites, path_probes=probes,
                     edge_values={e: [e] for e, p in enumerate(probes) if needs_probe(p)},
                     path_starts=dict(num.start_value), numbering=num, register_free=free,
                     exit_const=closing, same_resets=same, reg_tables=tables, exit_table=shifted)


def make_plan(mode: str, cfg: CFG, base: int, weights: Sequence[float] | None = None) -> ProbePlan:
    """The plan of one function in ``mode``; count modes number its counters from ``base``."""
    if mode == "blocks":
        return blocks_plan(cfg)
    if mode in ("witness", "branches"):
        return witness_plan(cfg, mode)
    if mode == "path":
        return path_plan(cfg)
    if mode == "full":
        plan = full_plan(cfg, base)
    elif mode == "count-naive":
        plan = count_naive_plan(cfg, base)
    elif mode == "count":
        plan = count_plan(cfg, base, weights)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    plan.base = base
    return plan
