"""The streaming regenerator against real `blocks` recordings, without the witness rewriter.

Each blocks stream is converted here into the witness stream the `witness` (or `branches`)
mode would record: walking the block trace per activation with a stack, every static edge
taken is replaced by its witness if it has one; ENTER/LEAVE/EXC and the handler block that
follows an EXC are kept; ``EXC s`` becomes ``RERAISE s r`` when ``s`` does not lie in the
activation's last block (a re-raise, from that block's last statement ``r``).  The driver must regenerate the original stream event for event.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS
from inline_programs import INLINE
from wholetrace.errors import InternalError
from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG, build_module
from wholetrace.instrument.flowgraph import from_cfg
from wholetrace.regen.driver import measure_regeneration, regenerate_stream
from wholetrace.instrument.witnesses import make_plans, suspend_blocks, witness_placement
from wholetrace.events import ENTER_BASE, EXC, LEAVE, RERAISE
from wholetrace.store import Recording
from wtutil import run_plain, run_recorded

CORPUS = ["nqueens", "difflib", "json", "_pydecimal", "re"]


# ----------------------------------------------------------------------------- conversion

class Converter:
    """Blocks stream -> witness stream for one placement kind; collects anomalies."""

    def __init__(self, plans: dict[int, tuple[CFG, object]], names: dict[int, str]) -> None:
        self.names = names
        self.cfg = {f: p[0] for f, p in plans.items()}
        self.wid = {f: p[1].witness_of_edge for f, p in plans.items()}  # type: ignore[attr-defined]
        self.edge = {f: {(e.src, e.dst): i for i, e in enumerate(c.edges)} for f, c in self.cfg.items()}
        self.susp = {f: suspend_blocks(c) for f, c in self.cfg.items()}
        self.anomalies: list[str] = []

    def bad(self, fid: int, what: str) -> None:
        if len(self.anomalies) < 20:
            self.anomalies.append(f"{self.names.get(fid, fid)}: {what}")

    def _step(self, fid: int, u: int, v: int, out: list[int]) -> bool:
        e = self.edge[fid].get((u, v))
        if e is None:
            return False
        w = self.wid[fid].get(e)
        if w is not None:
            out.append(w)
        return True

    def convert(self, ev: np.ndarray) -> np.ndarray:
        out: list[int] = []
        stack: list[list] = []          # [fid, last block | None, mode, had children]
        suspended: dict[int, Counter] = {}
        vals = ev.tolist()
        i = 0
        while i < len(vals):
            v = vals[i]
            i += 1
            if v <= -ENTER_BASE:
                f = -v - ENTER_BASE
                if stack:
                    stack[-1][3] = True
                stack.append([f, None, "fresh", False])
                out.append(v)
                continue
            if v == EXC:
                sid = vals[i] if i < len(vals) else -1
                i += 1
                raised = sid
                if stack and stack[-1][1] is not None:
                    blk = self.cfg[stack[-1][0]].blocks[stack[-1][1]]
                    if sid not in blk.stmts:
                        raised = blk.stmts[-1]
                out += [EXC, sid] if raised == sid else [RERAISE, sid, raised]
                if stack:
                    stack[-1][2] = "exc"
                continue
            if not stack:
                self.anomalies.append(f"event {v} outside activations")
                continue
            fr = stack[-1]
            f, last, mode = fr[0], fr[1], fr[2]
            cfg = self.cfg[f]
            if v == LEAVE:
                if mode == "exc":
                    pass
                elif last is None and mode == "fresh" and cfg.is_generator:
                    # resumed and left without a block: re-suspension (yield from) or yield -> EXIT
                    ys = [y for y in suspended.get(f, {}) if (y, EXIT) in self.edge[f]]
                    if not fr[3] and ys:
                        self._step(f, ys[0], EXIT, out)
                elif last is not None and last in self.susp[f] and mode == "run":
                    suspended.setdefault(f, Counter())[last] += 1
                else:
                    u = ENTRY if last is None else last
                    if not self._step(f, u, EXIT, out):
                        self.bad(f, f"LEAVE after block {u} without an edge to EXIT")
                stack.pop()
                out.append(LEAVE)
                continue
            # a block
            if mode == "exc":
                if not cfg.blocks[v].dynamic_entry:
                    self.bad(f, f"block {v} after EXC is not a dynamic entry")
                out.append(v)
            elif last is None:
                if cfg.is_generator:
                    ys = [y for y, n in suspended.get(f, {}).items() if n and (y, v) in self.edge[f]]
                    if ys:
                        suspended[f][ys[0]] -= 1
                        self._step(f, ys[0], v, out)
                    elif not self._step(f, ENTRY, v, out):
                        self.bad(f, f"generator (re)starts at block {v}: no edge from ENTRY or a yield")
                elif not self._step(f, ENTRY, v, out):
                    self.bad(f, f"starts at block {v} without an edge from ENTRY")
            else:
                if not self._step(f, last, v, out):
                    self.bad(f, f"blocks {last} -> {v}: not a CFG edge and no EXC")
            fr[1], fr[2] = v, "run"
        return np.array(out, dtype=np.int32)


def _convert(ev: np.ndarray, plans: dict, names: dict[int, str]) -> tuple[np.ndarray, list[str]]:
    conv = Converter(plans, names)
    return conv.convert(ev), conv.anomalies


def activation_forms(ev: np.ndarray) -> list[tuple]:
    """The activation form (DESIGN.md): every activation in ENTER order as (fid, its own
    blocks and exception records, number of children); with the child counts the preorder
    list fixes the tree.  Index 0 holds the events outside any activation."""
    own: list[list[int]] = [[]]
    head: list[int] = [-1]
    kids: list[int] = [0]
    stack = [0]
    vals = ev.tolist()
    for v in vals:
        if v <= -ENTER_BASE:
            kids[stack[-1]] += 1
            stack.append(len(own))
            own.append([])
            head.append(-v - ENTER_BASE)
            kids.append(0)
        elif v == LEAVE:
            if len(stack) > 1:
                stack.pop()
        else:
            own[stack[-1]].append(v)
    return list(zip(head, map(tuple, own), kids))


def check_recording(path: Path, kinds: tuple[str, ...] = ("witness", "branches")) -> dict[str, dict]:
    """Convert and regenerate every stream of a blocks recording; return per-kind statistics."""
    report: dict[str, dict] = {}
    with Recording(path) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        names = {f.fid: f.qualname for f in rec.functions()}
        streams = [rec.events(s.sid) for s in rec.streams()]
    for kind in kinds:
        plans = make_plans(cfgs, kind)
        stats = Counter()
        for ev in streams:
            wit, anomalies = _convert(ev, plans, names)
            assert not anomalies, f"{path.name} ({kind}): {anomalies}"
            chunks = [wit[i:i + 997] for i in range(0, len(wit), 997)]  # chunk edges everywhere
            regen = np.concatenate(list(regenerate_stream(chunks, plans, chunk_size=5000)) or
                                   [np.zeros(0, np.int32)])
            stats["events"] += len(ev)
            stats["witness events"] += len(wit)
            if np.array_equal(regen, ev):
                stats["identical streams"] += 1
            else:
                stats["activation-form only"] += 1
                assert activation_forms(regen) == activation_forms(ev), f"{path.name} ({kind}): forms differ"
        report[kind] = dict(stats)
    return report


# ----------------------------------------------------------------------------- programs

@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("regen")
    out: dict[str, Path] = {}
    for name, src in INLINE.items():
        script = root / f"{name}.py"
        script.write_text(textwrap.dedent(src))
        wt = root / f"{name}.wt"
        r = run_recorded(script, wt)
        plain = run_plain(script)
        assert r.returncode == 0 and r.stdout == plain.stdout, r.stderr[-2000:]
        out[name] = wt
    return out


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_programs_regenerate_event_for_event(recorded: dict[str, Path], name: str) -> None:
    report = check_recording(recorded[name])
    for kind, stats in report.items():
        assert stats.get("activation-form only", 0) == 0, (kind, stats)
        assert stats["identical streams"] >= 1


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_programs_regenerate(tmp_path: Path, name: str) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, "small")
    wt = tmp_path / f"{name}.wt"
    r = run_recorded(driver, wt, include=tuple(prog.include))
    assert r.returncode == 0, r.stderr[-2000:]
    report = check_recording(wt)
    assert report["witness"]["witness events"] < report["witness"]["events"]
    assert report["witness"]["witness events"] <= report["branches"]["witness events"]


def test_placements_cover_generators() -> None:
    src = textwrap.dedent('''
        def gen(n):
            for i in range(n):
                if i % 2:
                    yield i
                else:
                    yield -i
            yield 0
    ''')
    cfgs = {i: c for i, c in enumerate(build_module(src))}   # (determinism: tests/instrument/test_cfg_properties.py)
    gen = next(c for c in cfgs.values() if c.is_generator)
    g, w = from_cfg(gen), witness_placement(gen)
    for y in suspend_blocks(gen) | {ENTRY}:
        assert all(e in w.witness_of_edge for e in g.out_edges[y])


def test_bad_streams_raise() -> None:
    src = "def f(x):\n    if x:\n        x = 1\n    return x\n"
    cfg = build_module(src)[1]
    plans = {0: (cfg, witness_placement(cfg))}
    with pytest.raises(InternalError):
        list(regenerate_stream([np.array([5], np.int32)], plans))          # outside any activation
    with pytest.raises(InternalError):
        list(regenerate_stream([np.array([-(ENTER_BASE + 3)], np.int32)], plans))  # unknown function
    with pytest.raises(InternalError):
        list(regenerate_stream([np.array([-ENTER_BASE, 99], np.int32)], plans))   # no such witness


def test_measurement_helper(recorded: dict[str, Path]) -> None:
    with Recording(recorded["loops"]) as rec:
        cfgs = {f.fid: CFG.from_json(f.cfg) for f in rec.functions()}
        names = {f.fid: f.qualname for f in rec.functions()}
        ev = rec.events(rec.streams()[0].sid)
    plans = make_plans(cfgs)
    wit, _ = _convert(ev, plans, names)
    stats = measure_regeneration([wit], plans)
    assert stats.blocks_out == int(np.count_nonzero(ev >= 0)) - int(np.count_nonzero(ev == EXC))
    assert stats.events_in == len(wit) and stats.events_out == len(ev)
    assert stats.blocks_per_second > 0
