"""`record --mode path`, decoded by the decoding kernel, against `record --mode blocks` of the same program.

The oracle is an independent `blocks` recording: the regenerated path streams must equal its
streams event for event on the inline programs (``tests/inline_programs.py`` and the thread,
asyncio, exit and interrupt programs below, all without implicit calls into instrumented
code), and in activation form (each activation's own blocks and exception records, and its
ordered children) on the corpus programs and on programs with implicit calls; the kernel's
streams equal the pure-Python twin's (``tests/naive_paths.py``, which renumbers from the CFG).
Programs behave as they do plain (stdout, stderr, exit status).  Generated programs run in
``tests/runtime/test_generated_programs.py`` (every mode).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from corpus import PROGRAMS, corpus_params
from inline_programs import INLINE
from naive_decode import activation_form
from naive_paths import path_plans, regenerate_path_stream
from regenutil import compare, streams_of
from wholetrace.events import ENTER_BASE, EXC, LEAVE, LEAVE_PATH, START, enter_code
from wholetrace.instrument.cfg import CFG
from wholetrace.store import Recording
from wholetrace.trace.decode import Rows, StreamDecoder
from wholetrace.trace.session import Trace, block_events
from wtutil import ENV, cli_in_process, run_plain

# Programs of this module (threads, asyncio, exits): no implicit calls into instrumented code.
EXTRA = {
    "threads": '''
        import threading
        def work(k, out):
            s = 0
            for i in range(k):
                if i % 3 == 0:
                    s += step(i)
                else:
                    s -= 1
            out.append(s)
        def step(i):
            return i * 2
        def main():
            out = []
            ts = [threading.Thread(target=work, args=(n, out)) for n in (5, 9, 13)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            print(sorted(out))
        main()
    ''',
    "asyncio": '''
        import asyncio
        async def leaf(i):
            await asyncio.sleep(0)
            if i % 2:
                raise KeyError(i)
            return i
        async def node(n):
            total = 0
            for i in range(n):
                try:
                    total += await leaf(i)
                except KeyError:
                    total -= 1
            return total
        async def main():
            r = await asyncio.gather(node(3), node(4))
            print(r)
        asyncio.run(main())
    ''',
    "sys_exit": '''
        import sys
        def inner(n):
            if n > 2:
                sys.exit(3)
            return inner(n + 1)
        def outer():
            try:
                inner(0)
            finally:
                print("finally")
        outer()
    ''',
    "interrupt": '''
        def spin(n):
            i = 0
            while True:
                i += 1
                if i == n:
                    raise KeyboardInterrupt
        def main():
            try:
                spin(50)
            except KeyboardInterrupt:
                print("interrupted")
            spin(7)
        main()
    ''',
    "daemon": '''
        import threading
        def forever(box, ready):
            while True:
                box.append(tick(len(box)))
                if len(box) == 10:
                    ready.set()
        def tick(n):
            return n + 1
        def main():
            box, ready = [], threading.Event()
            threading.Thread(target=forever, args=(box, ready), daemon=True).start()
            ready.wait()
            print("main done")
        main()
    ''',
    # forced chains (docs/design.md, "Path cuts, wave 10"): blocks that cannot call, then a
    # call block, with no cut between; children, exceptions before and after them, handlers,
    # generators, a with statement and an implicit call in the call block
    # an exception in a block whose register is negative there (B3->B4 adds -2: chord
    # increments can be negative); the truncated path must still be decoded
    "negative_register": '''
        def g(*a):
            return a
        def f(a, n):
            b = 0
            if not a:
                b -= 1
            if a <= n:
                return g(b)
            return g(b, a)
        print(f(3, 1), f(0, 1))
        try:
            f("", 1)
        except TypeError as e:
            print("caught", e)
    ''',
    "chains": '''
        class P:
            def __init__(self, v):
                self.v = v
            @property
            def twice(self):
                return self.v * 2
        class CM:
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                return False
        def helper(x):
            return x + 1
        def entry_chain(x):
            """a docstring is quiet too"""
            y = x
            z, w = None, (1, [2])
            return helper(y) + w[0]
        def with_property(p):
            q = p
            return q.twice + helper(1)
        def quiet_raise():
            a = b
            helper(a)
            b = 1
        def raise_after_child(x):
            y = x
            return helper(y) + missing_name
        def handler_chain(x):
            try:
                helper(x)
                raise ValueError(x)
            except ValueError:
                msg = "caught"
                helper(len(msg))
            return x
        def gen(n):
            i = 0
            yield helper(i)
            j = n
            yield helper(j)
        def with_chain(x):
            m = None
            with CM():
                m = helper(x)
            return m
        def thrower(x):
            k = x
            raise KeyError(helper(k))
        def retry(x):
            try:
                return helper(x) + missing_name    # the exit record is set before this raises
            except NameError:
                pass
            if x:
                return helper(-x)
        out = [entry_chain(i) + with_property(P(i)) for i in range(5)]
        for f in (quiet_raise, lambda: raise_after_child(3), lambda: thrower(2)):
            try:
                f()
            except (NameError, KeyError) as e:
                out.append(type(e).__name__)
        out += [handler_chain(4), list(gen(6)), with_chain(7), retry(2), retry(0)]
        g = gen(1)
        next(g)
        try:
            g.throw(RuntimeError)
        except RuntimeError:
            out.append("thrown")
        print(out)
    ''',
    # register-free functions (docs/design.md "Path mode, wave 11": no probe keeps the register,
    # exception records carry 0): exceptions in the first, a middle and the last statement of
    # one-block functions and of functions whose branches go straight to returns, raised by the
    # function or by a child, through several register-free frames, caught by a caller that
    # keeps its register; a return whose value raises after its closing record was set
    "register_free": '''
        class Box:
            def __init__(self, v):
                self.v = v
                self.w = 10 // v
                self.z = v + 1
        def pick(a, b):
            if a > b:
                return a // b
            elif a < b:
                return b // a
            return [a][b]
        def first(d, k):
            return d[k]
        def middle(d, k):
            x = len(d)
            y = d[k] + x
            return y
        def deep(d, k):
            t = middle(d, k)
            return t + 1
        def ret_raises(x):
            return 1 // x
        def caller(n):
            out = []
            for i in range(n):
                try:
                    if i % 5 == 0:
                        out.append(Box(i % 3).w)
                    elif i % 5 == 1:
                        out.append(pick(i % 4, i % 3))
                    elif i % 5 == 2:
                        out.append(first({1: 2}, i % 2))
                    elif i % 5 == 3:
                        out.append(deep({1: 2, 2: 3}, i % 3))
                    else:
                        out.append(ret_raises(i % 2))
                except (ZeroDivisionError, KeyError, IndexError) as e:
                    out.append(type(e).__name__)
            return out
        print(caller(40))
    ''',
    # constant closing records (docs/design.md "Path mode, wave 13": every way out ends the same
    # path, the epilogue appends it, the activation's handler appends the plain LEAVE and turns
    # the append into ``skip``): returns whose value raises (directly, in a child, several frames
    # deep), a single-exit function with a handler of its own (keeps its register), a single-exit
    # generator thrown into, closed, and raising after a resume, recursion unwound by an exception
    "exit_const": '''
        def inv(x):
            return 10 // x
        def via(x):
            y = x - 1
            return inv(y)
        def twice(x):
            if x > 1:
                z = 1
            else:
                z = 2
            return inv(x - z) + z
        def own_handler(x):
            try:
                v = 10 // x
            except ZeroDivisionError:
                v = -1
            return inv(v + 1)
        def gen(n):
            for i in range(n):
                yield 10 // (n - i - 1)
        def rec(n):
            return rec(n - 1) if n else inv(0)
        class Sq:
            def __init__(self, pos, ref=None):
                self.pos, self.reference = pos, ref or self
            def find(self, update=False):
                reference = self.reference
                if reference.pos != self.pos:
                    reference = reference.find(update)
                    if update:
                        self.reference = reference
                return reference
        class Bad:
            pos = 9
            def find(self, update):
                raise KeyError(update)
        a = Sq(1)
        chain = Sq(2, Sq(3, a))
        out = [chain.find().pos, chain.find(True).pos, chain.find().pos]
        for s in (Sq(5, Bad()), Sq(6, 7)):
            try:
                out.append(s.find(True))
            except (KeyError, AttributeError) as e:
                out.append(type(e).__name__)
        for f, a in ((inv, 0), (inv, 2), (via, 1), (via, 3), (twice, 2), (twice, 3), (twice, 1),
                     (own_handler, 0), (own_handler, -1), (own_handler, 5), (rec, 4)):
            try:
                out.append(f(a))
            except ZeroDivisionError as e:
                out.append(type(e).__name__)
        try:
            out.append(list(gen(3)))
        except ZeroDivisionError:
            out.append("gen")
        g = gen(5)
        out.append(next(g))
        try:
            g.throw(KeyError)
        except KeyError:
            out.append("thrown")
        g = gen(5)
        next(g)
        g.close()
        print(out)
    ''',
    # several ways out with different closing records (wave 15: ``instrument.exitconst`` makes each
    # compiled copy of the ``finally`` append its own constant): values that raise or call, returns
    # in loops (the iterator is dropped before the record), in handlers, fall-off exits in both
    # arms, generators, closures and match (two, falls, in_loop, in_handler, gen2, inner, by_match
    # are folded).  in_finally, in_with, outer and gen_item have no ``wt.o`` at all (a return through
    # the program's own finally/with has no probe site: ``modes._exit_sites`` turns the form off);
    # they check that such functions still close right, not the fold
    "exit_copies": '''
        class Cm:
            def __enter__(self):
                return self
            def __exit__(self, *a):
                note("exit")
                return False
        def note(x):
            return x
        def inv(x):
            return 10 // x
        def two(x, d):
            if x:
                return d[x]
            return inv(x)
        def falls(x):
            if x > 1:
                note(1)
            elif x:
                note(2)
            else:
                inv(x)
        def gen_item(n):
            try:
                for i in range(n):
                    yield i
            finally:
                note("gen closed")
        def in_loop(n):
            for i in gen_item(n):
                if i == 2:
                    return inv(i - 2)
                if i == 3:
                    return i
            return -1
        def in_finally(x):
            try:
                if x:
                    return inv(x - 1)
                return note(x)
            finally:
                note("f")
        def in_with(x):
            with Cm():
                if x:
                    return inv(x)
            return note(x)
        def in_handler(x):
            try:
                return inv(x)
            except ZeroDivisionError:
                if x is None:
                    return 0
                return note("h")
        def gen2(x):
            if x:
                yield 1
                return
            yield inv(x - 1)
        def outer(x):
            def inner(y):
                if y:
                    return x // y
                return x
            return inner(x) if x > 2 else inner(x - 1)
        def by_match(v):
            match v:
                case 0:
                    return inv(v)
                case [a, b]:
                    return a + b
                case _:
                    return note(v)
        out = []
        for f, args in ((two, (1, {1: 5})), (two, (0, {})), (two, (2, {})), (falls, (2,)), (falls, (1,)),
                        (falls, (0,)), (in_loop, (5,)), (in_loop, (4,)), (in_loop, (2,)), (in_loop, (3,)),
                        (in_finally, (1,)), (in_finally, (0,)), (in_finally, (3,)), (in_with, (0,)), (in_with, (2,)),
                        (in_handler, (0,)), (in_handler, (2,)), (outer, (3,)), (outer, (1,)), (outer, (2,)),
                        (by_match, (0,)), (by_match, ([1, 2],)), (by_match, ("x",))):
            try:
                out.append(f(*args))
            except (ZeroDivisionError, KeyError) as e:
                out.append(type(e).__name__)
        for x in (1, 0, 2):
            try:
                out.append(list(gen2(x)))
            except ZeroDivisionError:
                out.append("g")
        print(out)
    ''',
    # joins, handlers and exceptions where increments could leave a register of exactly -1 (the
    # "no path open" value) or 0 at a handler's start: a review of wave 11 found both with
    # "records as free chords" (j6's branch decoded as B2 alone; j3's re-raised path as path 0)
    "joins_raising": '''
        class Bad:
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return False
        def j1(x, d):
            if x:
                z = 1
            else:
                z = 2
            return d[z]
        def j2(x, d):
            if x > 1:
                return d[0]
            elif x:
                return d[1]
            return d[2]
        def j3(x, d):
            with Bad():
                y = d[x]
            return y
        def j4(x, d):
            try:
                y = d[x]
            finally:
                z = 1
            return y
        def j6(x, d):
            if x:
                z = d[x]
            return d[-x]
        def j7(x, d):
            z = x and d[x]
            return z or d[5]
        def j9(x, d):
            return d[x] if x else d[7]
        n = 0
        for f in (j1, j2, j3, j4, j6, j7, j9):
            for x in range(4):
                for d in ({}, {0: 0, 1: 1, 2: 2, 3: 3, -1: 1, -2: 2, -3: 3, 5: 0, 7: 0}, {1: 1, 2: 2}, {0: 0}):
                    try:
                        f(x, d)
                    except KeyError:
                        n += 1
        print(n)
    ''',
    # dead code after a return / a finally that returns / an endless loop (wave 15: path mode
    # rewrote it and looked up the path start of block -1, ``KeyError: -1``, the program did not
    # run; the rewriter now leaves dead statements as written)
    "dead_code": '''
        class Cm:
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return False
        def note(x):
            return x
        def after_return(x):
            return note(x)
            with Cm():
                note(1)
            for i in range(x):
                note(i)
            while x:
                x -= 1
            match x:
                case 1:
                    note(1)
            try:
                note(2)
            except* KeyError:
                note(3)
        def after_finally(x):
            try:
                note(x)
            finally:
                try:
                    note(x)
                except* Exception:
                    note(0)
            try:
                try:
                    note(x)
                finally:
                    return note(x + 1)
            except* ZeroDivisionError:
                for i in range(x):
                    note(i)
            return -1
            with Cm():
                note(4)
        def with_returns(x):
            with Cm():
                return note(x)
            for i in range(x):
                note(i)
        def loop_forever(x):
            while True:
                x += 1
                if x > 5:
                    return x
            with Cm():
                note(x)
        def gen(x):
            yield x
            return
            for i in range(x):
                yield i
        def dead_def(x):
            return x
            def inner(y):
                with Cm():
                    return y
            return inner(x)
        out = []
        for f in (after_return, after_finally, with_returns, loop_forever, dead_def):
            out.append(f(3))
        out.append(list(gen(2)))
        print(out)
    ''',
    # a try/finally whose body ends only in dead code (review15d seed 47, minimised): the CFG gave
    # the finally's end a normal ``fall`` exit from the dead statement's fall-through, which took
    # the label of the edge a ``return`` takes through the finally; path 0 "did not exist"
    "dead_in_finally": '''
        class Cm:
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return False
        def f1(y):
            with Cm():
                try:
                    return [1, 2, 3][y % 4]
                    y = 5
                finally:
                    y = 3
        def f2(y):
            try:
                return y
                if y:
                    return 5
            finally:
                if y == 2:
                    return 7
        def f3(y):
            for i in range(3):
                try:
                    if y:
                        continue
                    break
                    y += 1
                finally:
                    y -= 1
            return y
        out = []
        for y in (0, 1, 2, 3):
            for f in (f1, f2, f3):
                try:
                    out.append(f(y))
                except IndexError:
                    out.append("IE")
        print(out)
    ''',
    # a cut with a reset in expression form (``Emitter.path_expr``): ``useful_fast``'s ``for``
    # iterable stores the reset 3 (go's ``Board.useful_fast``); leaving such stores out
    # (review16b's mutant m6) records wrong paths.  (``walk``: reset 0 there; ``scan``: none)
    "expr_resets": '''
        EMPTY = 0


        class Sq:
            def __init__(self, used, colors):
                self.used = used
                self.neighbours = [N(c) for c in colors]


        class N:
            def __init__(self, c):
                self.color = c


        def useful_fast(square):
            if not square.used:
                for neighbour in square.neighbours:
                    if neighbour.color == EMPTY:
                        return True
            return False


        def scan(xs, k):
            i = 0
            if k:
                i = 1
            while i < len(xs) and xs[i] != k:
                i += 1
            return i


        def walk(n):
            total = 0
            for i in range(n) if n > 2 else ():
                if i % 3:
                    total += i
            return total


        out = []
        for used in (0, 1):
            for colors in ((1, 1, 0), (1, 2), (), (0,)):
                out.append(useful_fast(Sq(used, colors)))
        for k in range(5):
            out.append(scan([4, 3, 2, 1, 0], k))
            out.append(walk(k * 2))
        print(out)
    ''',
}
#: The daemon thread runs on until the recording ends: its stream's length differs per run.
UNFINISHED = {"daemon"}



# ----------------------------------------------------------------------------- helpers

def record(script: Path, wt: Path, mode: str, *options: str) -> subprocess.CompletedProcess:
    """``record --mode MODE [options] -q -o WT script`` (``run_recorded`` passes extra arguments to the program)."""
    cmd = [sys.executable, "-m", "wholetrace.cli", "record", "--mode", mode, *options, "-q", "-o", str(wt), str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=script.parent, timeout=300, env=ENV,
                          stdin=subprocess.DEVNULL)


def record_both(script: Path, root: Path, include: tuple[str, ...] = (), *options: str) -> dict[str, Path]:
    plain = run_plain(script)
    out = {}
    inc = [a for m in include for a in ("--include", m)]
    for mode in ("blocks", "path"):
        wt = root / f"{script.stem}.{mode}.wt"
        r = record(script, wt, mode, *inc, *(options if mode == "path" else ()))
        assert (r.returncode, r.stdout, r.stderr) == (plain.returncode, plain.stdout, plain.stderr), (mode, r.stderr[-2000:])
        out[mode] = wt
    return out


# ----------------------------------------------------------------------------- unit

F = enter_code


def test_stream_format_by_hand() -> None:
    """A hand-made path stream decodes into the blocks stream its numbering implies (the twin)."""
    from wholetrace.instrument.cfg import build_module
    from wholetrace.instrument.modes import path_numbering

    src = textwrap.dedent('''
        def f(n):
            s = 0
            while s < n:
                s += g(s)
            return s
    ''')
    cfg = next(c for c in build_module(src) if c.qualname == "f")
    num = path_numbering(cfg)
    assert num is not None
    ids = {tuple(num.blocks(p)): (pid, p) for pid, p in num.iter_paths()}
    entry_to_call = next(pid for b, (pid, p) in ids.items() if p.start == 0 and p.end >= 0)
    # the loop's back edge is not cut (every iteration enters the call block, whose in-edges are):
    # a path from the call block runs through the header, into the call block again or out
    assert not num.cuts & set(num.graph.back_edges)
    call_to_call = next(pid for b, (pid, p) in ids.items() if p.start != 0 and p.end >= 0)
    call_exit = next(pid for b, (pid, p) in ids.items() if p.start != 0 and p.end < 0)
    assert cfg.loop_headers & set(num.blocks(num.decode(call_exit)))
    events = [F(0), entry_to_call, F(1), LEAVE, call_to_call, F(1), LEAVE, LEAVE_PATH + call_exit]
    plans = {0: (cfg, num), 1: (cfg, None)}
    out = np.concatenate(list(regenerate_path_stream([np.array(events, np.int32)], plans))).tolist()
    expect = [F(0)]
    first = num.decode(entry_to_call)
    expect += num.blocks(first) + [num.graph.edges[first.end][1]]   # the child runs in the call block
    expect += [F(1), LEAVE]
    again = num.decode(call_to_call)
    expect += num.blocks(again)[1:] + [num.graph.edges[again.end][1]]   # the call block was shown already
    expect += [F(1), LEAVE]
    expect += num.blocks(num.decode(call_exit))[1:] + [LEAVE]
    assert out == expect
    assert START == -5 and EXC == -2 and LEAVE_PATH == 1 << 29   # wave 14: closing records below 2^30


def test_chains_program_has_forced_chains(inline: dict[str, dict[str, Path]]) -> None:
    """The recording of "chains" left cuts out (its stored numberings hold uncut edges into call
    blocks from blocks other than ENTRY), and records fewer events than Larus's rule, renumbered
    without quiet blocks, says its paths need (one record per forced chain taken)."""
    from wholetrace.instrument.modes import path_numbering, stored_quiet
    from wholetrace.store import Recording

    forced = 0
    with Recording(str(inline["chains"]["path"])) as rec:
        for f in rec.functions():
            cfg = CFG.from_json(f.cfg)
            quiet = stored_quiet(f.cfg)
            num = path_numbering(cfg, quiet)
            if num is None:
                continue
            g = num.graph
            uncut = [e for e, (s_, d) in enumerate(g.edges)
                     if d in g.call_nodes and s_ != g.entry and e not in num.cuts]
            assert all(g.edges[e][0] in quiet for e in uncut)
            forced += len(uncut)
            old = path_numbering(cfg, frozenset())
            assert old is not None and set(uncut) <= old.cuts
    assert forced >= 6


@pytest.mark.nojit
def test_chains_decode_exactly_nojit(inline: dict[str, dict[str, Path]]) -> None:
    """The forced chains (``kernels.decode._path_to_call``, ``_path_start``, ``_path_emit``) and
    the exit records, decoded by the kernel (as Python in the nojit run) and by the twin: the
    blocks recording, event for event."""
    stats = compare(inline["chains"]["blocks"], inline["chains"]["path"], exact=True, twin=True)
    assert stats["identical streams"] >= 1


def test_wpp_view_renumbers_as_recorded(inline: dict[str, dict[str, Path]]) -> None:
    """``wpp.view`` (``hot``, ``paths``) renumbers functions from the stored CFG: with the quiet
    blocks stored in the plan it gets the stored DAG, forced chains included."""
    from wholetrace.instrument.modes import numbering_json
    from wholetrace.wpp.view import open_view

    view = open_view(str(inline["chains"]["path"]), progress=False)
    checked = 0
    with Recording(str(inline["chains"]["path"])) as rec:
        for f in rec.functions():
            plan = f.cfg.get("plan") or {}
            if plan.get("strategy") == "paths":
                num = view.numbering(f.fid)
                assert num is not None and numbering_json(num)["dag"] == plan["paths"]["dag"], f.qualname
                checked += bool(plan["paths"].get("quiet"))
    assert checked >= 5


def test_interner_leave_value_is_the_event_format() -> None:
    from wholetrace.wpp.intern import PATH_LEAVE_AT
    assert PATH_LEAVE_AT == LEAVE_PATH


# ----------------------------------------------------------------------------- inline programs

ALL_INLINE = {**INLINE, **EXTRA}


@pytest.fixture(scope="module")
def inline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    root = tmp_path_factory.mktemp("path-inline")
    out: dict[str, dict[str, Path]] = {}
    for name, src in ALL_INLINE.items():
        script = root / f"prog_{name}.py"
        script.write_text(textwrap.dedent(src))
        out[name] = record_both(script, root, (), "--no-wpp")
    return out


@pytest.mark.parametrize("name", sorted(ALL_INLINE))
def test_inline_programs_event_for_event(inline: dict[str, dict[str, Path]], name: str) -> None:
    if name in UNFINISHED:
        _, blocks, _, _ = streams_of(inline[name]["blocks"])
        _, regen, _, _ = streams_of(inline[name]["path"], twin=True)
        assert len(blocks) == len(regen) == 2
        assert np.array_equal(blocks[0], regen[0])      # the main thread
        # the daemon thread ran on for a different time in each recording: its finished
        # activations (all but the last few, closed by the recorder) are the same
        fa, fb = activation_form(blocks[1]), activation_form(regen[1])
        n = min(len(fa), len(fb)) - 3
        assert n > 10 and fa[2:n] == fb[2:n]           # the calls of tick()
        loop_a, loop_b = fa[1][1][:-10], fb[1][1][:-10]  # forever()'s own blocks: one a prefix of the other
        assert loop_a[:len(loop_b)] == loop_b[:len(loop_a)] and min(len(loop_a), len(loop_b)) > 10
        return
    stats = compare(inline[name]["blocks"], inline[name]["path"], exact=True, twin=True)
    assert stats["identical streams"] >= 1


def test_cli_trace_counts_info(inline: dict[str, dict[str, Path]]) -> None:
    outs = {}
    for mode, wt in inline["exceptions"].items():
        def run(*args: str) -> str:
            rc, stdout, stderr = cli_in_process(*args, str(wt))
            assert rc == 0, stderr
            return stdout
        info = run("info")
        assert f"{mode}" in info
        outs[mode] = (run("trace"), run("counts", "--format", "json"))
    assert outs["path"] == outs["blocks"]
    assert outs["blocks"][0].count("\nB ") > 10


@pytest.mark.parametrize("name", ["generators", "exceptions"])
def test_decoding_is_the_same_in_small_chunks(inline: dict[str, dict[str, Path]], name: str) -> None:
    """Chunks of 7 events and a small row buffer give the same rows as one chunk."""
    with Trace.open(inline[name]["path"]) as trace:
        for st in trace.streams():
            whole = trace.events(st.sid)
            raw = trace.recording.events(st.sid)
            dec = StreamDecoder(trace.tables, capacity=64)
            rows = Rows.concat(dec.decode([raw[i:i + 7] for i in range(0, len(raw), 7)]))
            assert np.array_equal(block_events(rows), whole)


def test_online_wpp_and_raw_path_recordings_read_back_alike(tmp_path: Path) -> None:
    """``record --mode path --wpp`` builds the WPP online, the default stores the raw stream;
    both read back the same trace."""
    script = tmp_path / "prog_gen.py"
    script.write_text(textwrap.dedent(INLINE["generators"]))
    a, b = tmp_path / "a.wt", tmp_path / "b.wt"
    assert record(script, a, "path", "--wpp").returncode == 0
    assert record(script, b, "path").returncode == 0
    with Recording(a) as ra, Recording(b) as rb:
        assert isinstance(ra.meta.get("wpp"), dict) and not isinstance(rb.meta.get("wpp"), dict)

    def trace(p: Path) -> str:
        rc, stdout, stderr = cli_in_process("trace", str(p))
        assert rc == 0, stderr
        return stdout
    assert trace(a) == trace(b) and trace(a).count("\nB ") > 5


# ----------------------------------------------------------------------------- corpus

@pytest.mark.parametrize("name", corpus_params(share=(0, 2)))
def test_corpus_programs_regenerate(name: str, tmp_path: Path) -> None:
    prog = PROGRAMS[name]
    driver = prog.write(tmp_path, "small")
    paths = record_both(driver, tmp_path, tuple(prog.include), "--no-wpp")
    stats = compare(paths["blocks"], paths["path"], exact=False)
    assert stats["recorded events"] < stats["blocks events"]


# ----------------------------------------------------------------------------- implicit calls, fallback

IMPLICIT = '''
    class Temp:
        def __init__(self, v):
            self._v = v
        @property
        def v(self):
            if self._v < 0:
                raise ValueError("negative")
            return self._v
        def __add__(self, other):
            return Temp(self.v + other.v)
        def __lt__(self, other):
            return self.v < other.v
        def __bool__(self):
            return self._v != 0
    class Desc:
        def __get__(self, obj, owner):
            if obj is None:
                return self
            return obj.base * 2
    class Holder:
        twice = Desc()
        def __init__(self, base):
            self.base = base
    def use(items):
        total = Temp(0)
        for t in items:
            try:
                if t < total or not t:
                    total = total + t
                else:
                    total = t + total
            except ValueError as e:
                print("skip", e)
        return total.v + Holder(3).twice
    print(use([Temp(1), Temp(-2), Temp(3), Temp(0), Temp(5)]))
'''


def test_implicit_calls_that_raise(tmp_path: Path) -> None:
    """Properties, operators, ``__bool__`` and descriptors called implicitly (some raising):
    the activation form of the blocks recording."""
    script = tmp_path / "prog_implicit.py"
    script.write_text(textwrap.dedent(IMPLICIT))
    paths = record_both(script, tmp_path, (), "--no-wpp")
    compare(paths["blocks"], paths["path"], exact=False, twin=True)


FALLBACK = '''
    import io
    def first_long(lines):
        for ln in lines:
            with io.StringIO(ln) as f:
                text = f.read()
                if len(text) > 3:
                    return text
                if not text:
                    continue
        return None
    def caller():
        return [first_long(["a", "", "abcd"]), first_long(["x"])]
    print(caller())
'''


def test_functions_without_probe_sites_record_block_ids(tmp_path: Path) -> None:
    """A return and a continue through a ``with`` exit: the function records block ids
    (strategy ``trace``), its caller path ids, and the whole regenerates event for event."""
    script = tmp_path / "prog_fallback.py"
    script.write_text(textwrap.dedent(FALLBACK))
    paths = record_both(script, tmp_path, (), "--no-wpp")
    with Recording(paths["path"]) as rec:
        strategy = {f.qualname: f.cfg["plan"]["strategy"] for f in rec.functions()}
    assert strategy["first_long"] == "trace" and strategy["caller"] == "paths"
    compare(paths["blocks"], paths["path"], exact=True, twin=True)


def test_known_register_constants_match_the_numbering() -> None:
    """Every cut recorded as a constant (``fold_known_registers``) records what the numbering's
    own chord sums give for every path that ends there (``PathNumbering.recorded_value``, by
    enumeration of all paths of each function with at most 10^4 paths)."""
    import difflib
    import json.decoder
    from wholetrace.instrument.cfg import build_module
    from wholetrace.instrument.modes import fold_known_registers, path_numbering
    from wholetrace.instrument.pathnum import END_EXIT

    checked = 0
    for mod in (difflib, json.decoder, textwrap):
        source = Path(mod.__file__).read_text()
        for cfg in build_module(source, mod.__file__):
            num = path_numbering(cfg)
            if num is None or num.num_paths > 10_000:
                continue
            probes = fold_known_registers(cfg, num)
            const = {e: p.value for e, p in enumerate(probes) if p.kind == "cut-const"}
            for pid, path in num.iter_paths():
                if path.end != END_EXIT and path.end in const:
                    assert num.recorded_value(path) == pid == const[path.end], (cfg.qualname, path)
                    checked += 1
    assert checked > 100


# ----------------------------------------------------------------------------- `paths`' truncated paths

def truncated_truth(blocks_wt: Path, path_wt: Path) -> tuple[dict[tuple[str, tuple[int, ...]], int], set[str]]:
    """The paths exceptions cut short, from the ``blocks`` recording (the ground truth): per
    activation of a function the path recording numbered (not a generator: its paths span
    suspensions), the blocks since the last path start (the activation's first block, a cut
    target, a handler entered by an exception) up to an ``EXC`` record.  Only the numbering's cut
    set is read (where paths start), never its increments, the rule under test.  Returns
    ((qualname, blocks) -> count, the functions checked)."""
    from collections import Counter

    from wholetrace.instrument.modes import numbering_json, path_numbering, stored_quiet

    cuts: dict[str, set[tuple[int, int]]] = {}
    with Recording(path_wt) as rec:
        for f in rec.functions():
            cfg = CFG.from_json(f.cfg)
            plan = f.cfg.get("plan") or {}
            if plan.get("strategy") != "paths" or cfg.is_generator:
                continue
            num = path_numbering(cfg, stored_quiet(f.cfg))     # (its cuts: the increments' rule moves none)
            assert num is not None and numbering_json(num)["dag"] == plan["paths"]["dag"]
            pairs = [(int(e.src), int(e.dst)) for e in cfg.edges]
            cut = {pairs[e] for e in num.cuts}
            if cut & {pairs[e] for e in range(len(pairs)) if e not in num.cuts}:
                continue    # a cut and an uncut edge between the same blocks: the blocks cannot tell them apart
            cuts[cfg.qualname] = cut
    out: Counter[tuple[str, tuple[int, ...]]] = Counter()
    with Recording(blocks_wt) as rec:
        names = {f.fid: CFG.from_json(f.cfg).qualname for f in rec.functions()}
        for s in rec.streams():
            stack: list[list] = []          # [qualname, the open path's blocks, an exception came last]
            vals = rec.events(s.sid).tolist()
            i = 0
            while i < len(vals):
                v = vals[i]
                i += 1
                if v <= -ENTER_BASE:
                    stack.append([names[-v - ENTER_BASE], [], False])
                elif v == LEAVE:
                    if stack:
                        stack.pop()
                elif v == EXC:
                    i += 1
                    if stack and stack[-1][0] in cuts and stack[-1][1]:
                        out[stack[-1][0], tuple(stack[-1][1])] += 1
                    if stack:
                        stack[-1][2] = True
                elif v >= 0 and stack:
                    fr = stack[-1]
                    if fr[2] or not fr[1] or (fr[0] in cuts and (fr[1][-1], v) in cuts[fr[0]]):
                        fr[1], fr[2] = [], False
                    fr[1].append(v)
    return dict(out), set(cuts)


def paths_truncated(path_wt: Path, functions: set[str]) -> dict[tuple[str, tuple[int, ...]], int]:
    """``wholetrace paths --json --limit 0``'s truncated paths of ``functions``: (qualname, blocks) -> count."""
    import json
    from collections import Counter

    rc, out, stderr = cli_in_process("paths", "--json", "--limit", "0", str(path_wt))
    assert rc == 0, stderr
    got: Counter[tuple[str, tuple[int, ...]]] = Counter()
    for fn in json.loads(out)["functions"]:
        if fn["function"] in functions:
            for p in fn["paths"]:
                if p["truncated"]:
                    got[fn["function"], tuple(p["blocks"])] += p["count"]
    return dict(got)


@pytest.mark.parametrize("name", sorted(set(ALL_INLINE) - UNFINISHED))
def test_paths_truncated_paths_are_the_blocks_ground_truth(inline: dict[str, dict[str, Path]], name: str) -> None:
    """``wholetrace paths --json``'s truncated paths (``wpp.meaning.truncated_blocks`` decoding
    each exception record's register) are, function by function, the paths the ``blocks``
    recording shows cut short (review11c: a ``with`` body's re-raise reported as another path)."""
    want, checked = truncated_truth(inline[name]["blocks"], inline[name]["path"])
    assert paths_truncated(inline[name]["path"], checked) == want
