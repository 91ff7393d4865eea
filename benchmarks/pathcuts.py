"""Path mode: where to cut.  Events each candidate path-recording design would record, computed
from real `blocks` traces of the corpus programs, against what `blocks` and `witness` record.

Analysis code for the path-mode design (issue 10 §1 last bullet, §6), not product code.  For
every program (``tests/corpus.py``, size ``bench``) it records a `blocks` and a `witness` trace
(``python -m wholetrace.cli record``) and replays every activation of the blocks trace against
its CFG (``instrument.flowgraph.from_cfg``: call-capable blocks, back edges as
``instrument.pathnum.choose_cuts`` takes them).  Designs (events = int32 values, as recorded):

* ``L``: Larus's rule, ``pathnum`` policy ``"calls"`` — a record at every back edge and every
  edge into a call-capable block, except out of ENTRY (ENTER already says where the activation
  starts), one at each return.  The regenerator knows every block before a child's ENTER.
* ``L literal``: also records the empty path when the entry block is a call block.
* ``+fold``: the return's path record travels in LEAVE (one event carries both); every design
  below is shown with it.
* ``B``: paths span calls — records only at back edges, suspensions (``yield``) and returns
  (``pathnum`` policy ``"loops"``).  Not exact alone: the regenerator must place children
  itself.  ``B+anchor`` adds the call site to every nested ENTER (one int); ``B ideal`` adds it
  only where the caller's path holds two or more call-capable blocks (a lower bound no recorder
  can know in advance).  "B span" is the most events between the start and the record of one
  caller path: what a forward regenerator would have to buffer (or skip by looking ahead).
* ``C``: Larus's cut only where a child activation actually started in the call block (a lower
  bound for designs whose regenerator never buffers; a recorder needs some way to learn that
  a call reached instrumented code).
* ``per-fn``: each function recorded with L or with B+anchor, whichever records fewer events for
  it in this very trace (an oracle; a real choice would come from an earlier recording, as
  ``--weights`` does for counters); "per-fn B span" is the B span of the functions given B.
  ``per-fn≤64K`` gives B only to functions whose paths span at most 65,536 events, so a
  regenerator holds back at most that much.

Every design also records ENTER, LEAVE, EXC with statement and register (3 ints) and a start
record at each handler entered by an exception.  ``blocks-fold`` is `blocks` with the entry
block folded into ENTER (issue 10 §6) on functions that are not generators.

    python benchmarks/pathcuts.py [--programs a,b] [--quick] [--no-write] [--keep DIR]
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import (KEEP_OPTION, corpus_options, machine, record_program, snapshot_env, source_version,  # noqa: E402
                     table, work_dir, write_section)
from corpus import PROGRAMS  # noqa: E402

from wholetrace.events import ENTER_BASE, EXC, LEAVE  # noqa: E402
from wholetrace.ids import ENTRY  # noqa: E402
from wholetrace.instrument.cfg import CFG  # noqa: E402
from wholetrace.instrument.flowgraph import from_cfg  # noqa: E402
from wholetrace.instrument.pathnum import choose_cuts  # noqa: E402
from wholetrace.store import Recording  # noqa: E402

BACK, INTO_CALL = 1, 2
# counters
(N_ENTER, N_LEAVE, N_EXC, N_BLOCKS, N_FOLD, N_CUT_L, N_CUT_B, N_EXIT, N_HANDLER, N_ENTRY_CALL, N_DYN,
 N_NESTED, N_ANCHOR_NEEDED, N_SUSPEND, MAX_SPAN, N_PATHS_L, N_PATH_BLOCKS) = range(17)
N_COUNTERS = 17
# per function: its paths' records under L and under B (back edges + suspensions), its child
# activations (B's anchors), the longest B span of its paths
PF_CUTL, PF_CUTB, PF_SUSP, PF_KIDS, PF_SPAN = range(5)
#: buffer bound of the bounded per-function choice (events a regenerator may hold back)
SPAN_BOUND = 1 << 16


def function_tables(cfgs: dict[int, CFG]) -> dict[str, np.ndarray]:
    """Flat per-function arrays for the replay kernel: edge flags (back edge, edge into a call
    block) in an nb x nb matrix per function, call/yield/entry facts per block."""
    nf = max(cfgs) + 1
    nb = np.array([len(cfgs[f].blocks) if f in cfgs else 0 for f in range(nf)], np.int64)
    bbase = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    mbase = np.concatenate([[0], np.cumsum(nb * nb)]).astype(np.int64)
    flags = np.zeros(int(mbase[-1]), np.int8)
    is_call = np.zeros(int(bbase[-1]), np.int8)
    is_yield = np.zeros(int(bbase[-1]), np.int8)
    resume = np.zeros(int(bbase[-1]), np.int8)    # flags of the edge from a yield block into this block
    entry = np.full(nf, -1, np.int64)
    gen = np.zeros(nf, np.int8)
    for f, cfg in cfgs.items():
        g = from_cfg(cfg)
        back = choose_cuts(g, "loops")
        n = int(nb[f])
        gen[f] = cfg.is_generator
        for v in g.call_nodes:
            is_call[bbase[f] + v] = 1
        yields = {b.id for b in cfg.blocks if any(cfg.stmts[s].suspends for s in b.stmts)}
        for v in yields:
            is_yield[bbase[f] + v] = 1
        for e, (u, v) in enumerate(g.edges):
            fl = (BACK if e in back else 0) | (INTO_CALL if v in g.call_nodes and u != ENTRY else 0)
            flags[mbase[f] + u * n + v] |= fl
            if u == ENTRY:
                entry[f] = v
            if u in yields:
                resume[bbase[f] + v] |= fl
    return dict(nb=nb, bbase=bbase, mbase=mbase, flags=flags, is_call=is_call, is_yield=is_yield,
                resume=resume, entry=entry, gen=gen)


@numba.njit(cache=True, inline="always")
def _end_b_path(i, top, f, s_start, s_calls, s_kids, cnt, pf):  # type: ignore[no-untyped-def]
    """A B path ends at event ``i``: its span, and the anchors it would need (2+ call blocks)."""
    span = i - s_start[top]
    if span > cnt[MAX_SPAN]:
        cnt[MAX_SPAN] = span
    if span > pf[f, PF_SPAN]:
        pf[f, PF_SPAN] = span
    if s_calls[top] >= 2:
        cnt[N_ANCHOR_NEEDED] += s_kids[top]


@numba.njit(cache=True)
def replay(ev, nb, bbase, mbase, flags, is_call, is_yield, resume, entry, gen, cnt, pf):  # type: ignore[no-untyped-def]
    """Replay one `blocks` stream and add the counters of every design to ``cnt``, and per
    function (``pf[f]``) the records of its own paths under L and B, its children, its B span."""
    cap = 1 << 20
    s_f = np.empty(cap, np.int64)        # function
    s_last = np.empty(cap, np.int64)     # last block (-1: none yet / after EXC)
    s_pend = np.empty(cap, np.int8)      # C: entered a call block by an uncut edge, no child yet
    s_calls = np.empty(cap, np.int64)    # B: call-capable blocks in the current path
    s_kids = np.empty(cap, np.int64)     # B: child activations in the current path
    s_start = np.empty(cap, np.int64)    # B: event index where the current path started
    s_exc = np.empty(cap, np.int8)       # an EXC was the last thing in this activation
    sp = 0
    i = 0
    n = len(ev)
    while i < n:
        v = ev[i]
        if v <= -ENTER_BASE:
            f = -v - ENTER_BASE
            cnt[N_ENTER] += 1
            if sp > 0:
                cnt[N_NESTED] += 1
                pf[s_f[sp - 1], PF_KIDS] += 1
                s_kids[sp - 1] += 1
                if s_pend[sp - 1] == 1:
                    cnt[N_DYN] += 1
                    s_pend[sp - 1] = 0
            if sp == cap:
                return -1
            s_f[sp] = f
            s_last[sp] = -2       # -2: fresh ENTER (start or resume decided by the next block)
            s_pend[sp] = 0
            s_calls[sp] = 0
            s_kids[sp] = 0
            s_start[sp] = i
            s_exc[sp] = 0
            sp += 1
        elif v == LEAVE:
            cnt[N_LEAVE] += 1
            if sp == 0:
                return -2
            top = sp - 1
            f = s_f[top]
            last = s_last[top]
            if s_exc[top] == 0 and last >= 0:
                _end_b_path(i, top, f, s_start, s_calls, s_kids, cnt, pf)
                if is_yield[bbase[f] + last] == 1 and gen[f] == 1:
                    cnt[N_SUSPEND] += 1      # B and C record the open path here; L already cut before the yield
                    pf[f, PF_SUSP] += 1
                else:
                    cnt[N_EXIT] += 1
                    cnt[N_PATHS_L] += 1
            sp -= 1
        elif v == EXC:
            cnt[N_EXC] += 1
            i += 1
            if sp > 0:
                top = sp - 1
                if s_calls[top] >= 2:
                    cnt[N_ANCHOR_NEEDED] += s_kids[top]
                s_exc[top] = 1
                s_last[top] = -1
                cnt[N_PATHS_L] += 1
        else:
            cnt[N_BLOCKS] += 1
            if sp == 0:
                return -3
            top = sp - 1
            f = s_f[top]
            last = s_last[top]
            b = bbase[f] + v
            if last == -2:  # first block after ENTER
                if v == entry[f]:
                    if gen[f] == 0:
                        cnt[N_FOLD] += 1
                    if is_call[b] == 1:
                        cnt[N_ENTRY_CALL] += 1
                    s_start[top] = i
                    s_calls[top] = 0
                    s_kids[top] = 0
                else:  # a generator resumes after a yield: the edge out of the yield block
                    fl = resume[b]
                    if fl & INTO_CALL and not fl & BACK:
                        cnt[N_CUT_L] += 1
                        pf[f, PF_CUTL] += 1
                        cnt[N_PATHS_L] += 1
                        s_pend[top] = 1
                    if fl & BACK:
                        cnt[N_CUT_L] += 1
                        pf[f, PF_CUTL] += 1
                        cnt[N_PATHS_L] += 1
                    # B recorded at the suspension: a new B path starts here
                    s_start[top] = i
                    s_calls[top] = 0
                    s_kids[top] = 0
                    if fl & BACK:
                        cnt[N_CUT_B] += 1
                        pf[f, PF_CUTB] += 1
            elif last == -1:  # a handler entered by an exception
                cnt[N_HANDLER] += 1
                s_start[top] = i
                s_calls[top] = 0
                s_kids[top] = 0
                s_exc[top] = 0
                s_pend[top] = 0
            else:
                fl = flags[mbase[f] + last * nb[f] + v]
                s_pend[top] = 0
                if fl & BACK:
                    cnt[N_CUT_B] += 1
                    cnt[N_CUT_L] += 1
                    pf[f, PF_CUTB] += 1
                    pf[f, PF_CUTL] += 1
                    cnt[N_PATHS_L] += 1
                    _end_b_path(i, top, f, s_start, s_calls, s_kids, cnt, pf)
                    s_start[top] = i
                    s_calls[top] = 0
                    s_kids[top] = 0
                elif fl & INTO_CALL:
                    cnt[N_CUT_L] += 1
                    pf[f, PF_CUTL] += 1
                    cnt[N_PATHS_L] += 1
                    s_pend[top] = 1
            if is_call[b] == 1:
                s_calls[top] += 1
            cnt[N_PATH_BLOCKS] += 1
            s_last[top] = v
        i += 1
    # activations still open at the end: their open path is written when the recording closes
    for top in range(sp):
        if s_last[top] >= 0:
            cnt[N_EXIT] += 1
            cnt[N_PATHS_L] += 1
    return 0


def designs(c: np.ndarray, pf: np.ndarray) -> dict[str, int]:
    """Events per design from the replay counters (see the module doc); "+fold" designs carry
    the return's path record in LEAVE."""
    common = c[N_ENTER] + c[N_LEAVE] + 3 * c[N_EXC] + c[N_HANDLER]
    L = common + c[N_CUT_L] + c[N_EXIT]
    B = common + c[N_CUT_B] + c[N_SUSPEND]
    b_cost = pf[:, PF_CUTB] + pf[:, PF_SUSP] + pf[:, PF_KIDS]
    return {
        "L literal": int(L + c[N_ENTRY_CALL]),
        "L": int(L),
        "L+fold": int(L - c[N_EXIT]),
        "B+fold": int(B),
        "B+anchor+fold": int(B + c[N_NESTED]),
        "B ideal+fold": int(B + c[N_ANCHOR_NEEDED]),
        "C+fold": int(common + c[N_CUT_B] + c[N_DYN] + c[N_SUSPEND]),
        "per-fn+fold": int(common + np.minimum(pf[:, PF_CUTL], b_cost).sum()),
        "per-fn≤64K+fold": int(common + np.where((b_cost < pf[:, PF_CUTL]) & (pf[:, PF_SPAN] <= SPAN_BOUND),
                                                  b_cost, pf[:, PF_CUTL]).sum()),
    }


def hybrid_span(pf: np.ndarray) -> int:
    """Longest B span among the functions the per-function choice records with B."""
    b_cost = pf[:, PF_CUTB] + pf[:, PF_SUSP] + pf[:, PF_KIDS]
    chosen = b_cost < pf[:, PF_CUTL]
    return int(pf[chosen, PF_SPAN].max()) if chosen.any() else 0


def analyse(name: str, size: str, work: Path, env: dict[str, str]) -> dict[str, object]:
    blocks = record_program(PROGRAMS[name], "blocks", size, work, env)
    witness = record_program(PROGRAMS[name], "witness", size, work, env)
    cnt = np.zeros(N_COUNTERS, np.int64)
    with Recording(blocks, check=False) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        tables = function_tables(cfgs)
        pf = np.zeros((max(cfgs) + 1, 5), np.int64)
        events = 0
        for st in rec.streams():
            ev = rec.events(st.sid)
            events += len(ev)
            status = replay(ev, *tables.values(), cnt, pf)
            if status != 0:
                raise RuntimeError(f"{name}: replay failed ({status}) on stream {st.sid}")
    with Recording(witness, check=False) as rec:
        wit = sum(s.n_events for s in rec.streams())
    exc_ints = 2 * cnt[N_EXC]
    assert events == cnt[N_ENTER] + cnt[N_LEAVE] + exc_ints + cnt[N_BLOCKS], name
    return {"name": name, "blocks": events, "blocks-fold": int(events - cnt[N_FOLD]), "witness": wit,
            **designs(cnt, pf), "cnt": cnt, "hybrid_span": hybrid_span(pf)}


def main(argv: list[str] | None = None) -> int:
    args, names, _runs, size, write = corpus_options(
        __doc__.split("\n\n")[0], 1, list(PROGRAMS), argv,
        extra=[KEEP_OPTION])
    with tempfile.TemporaryDirectory(prefix="wt-pathcuts-") as tmp:
        work = work_dir(args, tmp)
        env = snapshot_env(Path(tmp))
        version = source_version()
        rows = []
        for n in names:
            rows.append(analyse(n, size, work, env))
            r = rows[-1]
            print(f"{n:14s} blocks {r['blocks']:>11,} witness {r['witness']:>11,} L+fold {r['L+fold']:>11,} "
                  f"per-fn+fold {r['per-fn+fold']:>11,}", file=sys.stderr, flush=True)
    body = render(rows, size, version, argv)
    print(body)
    if write:
        write_section("pathcuts", body)
        print("\nwrote section 'pathcuts' of docs/benchmarks.md", file=sys.stderr)
    return 0


COLUMNS = ("blocks", "blocks-fold", "witness", "L literal", "L", "L+fold", "B+fold", "B+anchor+fold", "B ideal+fold",
           "C+fold", "per-fn+fold", "per-fn≤64K+fold")


def render(rows, size, version, argv) -> str:  # type: ignore[no-untyped-def]
    cmd = "python benchmarks/pathcuts.py" + "".join(" " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    body = []
    ratios: dict[str, list[float]] = {k: [] for k in COLUMNS}
    for r in rows:
        c = r["cnt"]
        for k in COLUMNS:
            ratios[k].append(r[k] / r["witness"])
        paths_l = c[N_PATHS_L]
        body.append([r["name"]] + [f"{r[k]:,}" for k in COLUMNS]
                    + [f"{c[N_PATH_BLOCKS] / max(paths_l, 1):.2f}", f"{c[N_NESTED] / max(c[N_ENTER], 1):.0%}",
                       f"{c[N_DYN] / max(c[N_CUT_L] - c[N_CUT_B], 1):.0%}", f"{c[MAX_SPAN]:,}",
                       f"{r['hybrid_span']:,}"])
    med = ["**median / witness**"] + [f"**{statistics.median(ratios[k]):.2f}×**" for k in COLUMNS] + [""] * 5
    return "\n".join([
        "## Path mode: where to cut (events per candidate design)",
        "",
        f"Measured {machine()}; `{cmd}` (size `{size}`); wholetrace {version}. Event counts only (no timing): "
        "`blocks` and `witness` are recorded, the path designs are replayed from the `blocks` trace against each "
        "function's CFG (see the script's docstring for the designs). Events are int32 values as recorded; ENTER, "
        "LEAVE and exceptions are counted in every design. Summary and recommendation: docs/design.md, "
        "\"Path mode: where to cut\".",
        "",
        table(["program"] + list(COLUMNS) + ["blocks per L path", "ENTERs nested", "L call cuts with a child",
                                               "B span (events)", "per-fn B span"], body + [med]),
    ])


if __name__ == "__main__":
    sys.exit(main())
