"""Differential slicing check on generated programs (issue 13, "Slicing"): the slice that
``wholetrace slice --output`` prints (kernel decode, kernel last-writer pass with merge
nodes, kernel closure, query layer) equals a brute-force BFS over the fully materialised
dependence graph built without any kernel: the reference decoder (``decode_reference``,
dicts), a dict replay of its access log (``naive_pairs``: every whole-object use linked to
each element write it stands for, no merge nodes), control parents and call edges, searched
state by state with the same time bounds.  The criterion (the last ``print()`` instance)
is found from the reference decoder too.

Independent of both: every line in the slice ran (``sys.settrace`` line oracle,
``tests/oracles``) and the printing line is in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings

from decode_reference import Decoder
from genprogs import run_plain as run_generated, structured_programs, write_program
from oracles.settrace_lines import line_counts
from test_replay_oracle import brute_backward, naive_pairs
from wholetrace.store import Recording
from wholetrace.wet.capture import load
from wholetrace.wet.static import function_facts
from wtutil import cli_in_process, run_recorded


def oracle_slice(wt: Path, prog: Path) -> set[int] | None:
    """Lines of ``prog`` in the backward slice of the last print(), by brute force (see module docstring)."""
    with Recording(wt) as rec:
        log = load(rec)
        facts = function_facts(rec, log)
        files = {f.fid: f.file for f in rec.functions()}
        dec = Decoder(facts, log)
        for st in rec.streams():
            sl = log.streams.get(st.sid)
            if sl is not None:
                dec.stream_pass(st.sid, rec.events(st.sid), sl.pos, sl.slot, sl.tag, sl.val)
    edges: dict[int, set[int]] = {}
    for u, d, _m in naive_pairs(dec):
        edges.setdefault(u, set()).add(d)
    for u, c in enumerate(dec.i_cd):
        if c >= 0:
            edges.setdefault(u, set()).add(c)
    for s, d in dec.calls:
        edges.setdefault(d, set()).add(s)
    prints = {(fid, sid) for fid, ff in facts.items() for sid in ff.prints}
    last = max((i for i, (f, s) in enumerate(zip(dec.i_fid, dec.i_sid)) if (f, s) in prints), default=-1)
    if last < 0:
        return None                  # no print() ran (the program raised before its first one)
    best = brute_backward(edges, last)
    want = str(prog.resolve())
    return {facts[dec.i_fid[i]].stmt_line[dec.i_sid[i]] for i in best
            if str(Path(files[dec.i_fid[i]]).resolve()) == want}


def cli_slice(wt: Path, prog: Path) -> set[int]:
    rc, stdout, stderr = cli_in_process("slice", str(wt), "--output", "--json")
    assert rc == 0, stderr
    lines = json.loads(stdout)["lines"]
    want = str(prog.resolve())
    return {ln for f, ls in lines.items() if str(Path(f).resolve()) == want for ln in ls}


@seed(20261128)
@settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(source=structured_programs())
def test_slice_equals_brute_force(source: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    td = tmp_path_factory.mktemp("slice")
    rc, _out, _err = run_generated(source, str(td))
    if rc not in (0, 1):
        return                       # timed out or hit a resource limit
    write_program(source, td)
    prog = td / "prog.py"                  # recorded directly: its last print() is the criterion
    wt = td / "prog.wt"
    assert run_recorded(prog, wt, mode="full", timeout=120).returncode == rc
    want = oracle_slice(wt, prog)
    if want is None:
        return
    mine = cli_slice(wt, prog)
    assert mine == want, source
    assert mine, source
    ran = {ln for (f, ln), n in line_counts(prog, [], {str(prog.resolve())}).items() if n > 0}
    assert mine <= ran, (sorted(mine - ran), source)
    if rc == 0:                      # it ended normally: its final top-level print() ran last
        last_print = max(i for i, text in enumerate(source.splitlines(), 1) if text.startswith("print("))
        assert last_print in mine, source
