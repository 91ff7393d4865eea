"""Golden tests of the statement-level CFG builder, one (or a few) per Python construct.

Notation (expected values were written from Python's semantics, not pasted from output):

* ``blocks(src, q)`` lists the real blocks B2, B3, ... in id order, each as its statement
  labels ``Label@line`` (AST class name for simple statements, the statement kind for
  headers: ``if``, ``while``, ``for-iter``, ``for-next``, ``with-enter``, ``with-exit``,
  ``match``, ``case``, ``finally-end``).
* ``edges(src, q)`` is the set ``"SRC->DST:kind"`` with ``*`` marking back edges.
* Edges are unique per (src, dst); when several statement-level edges join the same two
  blocks the first one created gives the kind (the dispatch of a ``finally``/``with``
  region is linked before the region's normal fall-through).
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from wholetrace.ids import ENTRY, EXIT
from wholetrace.instrument.cfg import CFG, Stmt, build_module


# --------------------------------------------------------------------------- helpers

def _name(b: int) -> str:
    return "ENTRY" if b == ENTRY else "EXIT" if b == EXIT else f"B{b}"


def label(st: Stmt) -> str:
    return f"{st.label if st.kind == 'simple' else st.kind}@{st.line}"


def cfgs(src: str) -> dict[str, CFG]:
    out: dict[str, CFG] = {}
    for c in build_module(textwrap.dedent(src)):
        assert c.qualname not in out, f"duplicate qualname {c.qualname}"
        out[c.qualname] = c
    return out


def cfg(src: str, qualname: str) -> CFG:
    return cfgs(src)[qualname]


def edges(src: str, qualname: str) -> set[str]:
    c = cfg(src, qualname)
    out = {f"{_name(e.src)}->{_name(e.dst)}:{e.kind}{'*' if e.back else ''}" for e in c.edges}
    assert len(out) == len(c.edges)
    return out


def blocks(src: str, qualname: str) -> list[list[str]]:
    c = cfg(src, qualname)
    assert c.blocks[ENTRY].stmts == [] and c.blocks[EXIT].stmts == []
    return [[label(c.stmts[s]) for s in b.stmts] for b in c.blocks[2:]]


def dead(src: str, qualname: str) -> list[str]:
    return [label(s) for s in cfg(src, qualname).stmts if s.block < 0]


def calls(src: str, qualname: str) -> list[str]:
    return [label(s) for s in cfg(src, qualname).stmts if s.calls]


def suspends(src: str, qualname: str) -> list[str]:
    return [label(s) for s in cfg(src, qualname).stmts if s.suspends]


def dyn(src: str, qualname: str) -> set[str]:
    return {_name(b.id) for b in cfg(src, qualname).blocks if b.dynamic_entry}


def headers(src: str, qualname: str) -> set[str]:
    return {_name(b) for b in cfg(src, qualname).loop_headers}


# --------------------------------------------------------------------------- if / loops

IF_ELIF = """\
def f(x):
    y = 0
    if x > 1:
        y = 1
    elif x > 0:
        y = 2
    else:
        y = 3
    return y
"""


def test_if_elif_else() -> None:
    assert blocks(IF_ELIF, "f") == [["Assign@2", "if@3"], ["Assign@4"], ["if@5"], ["Assign@6"],
                                    ["Assign@8"], ["Return@9"]]
    assert edges(IF_ELIF, "f") == {
        "ENTRY->B2:fall", "B2->B3:true", "B2->B4:false", "B3->B7:fall", "B4->B5:true",
        "B4->B6:false", "B5->B7:fall", "B6->B7:fall", "B7->EXIT:return"}
    assert calls(IF_ELIF, "f") == [] and dyn(IF_ELIF, "f") == set() and headers(IF_ELIF, "f") == set()


IF_NO_ELSE = """\
def f(x):
    if x:
        x = 1
    return x
"""


def test_if_without_else() -> None:
    assert blocks(IF_NO_ELSE, "f") == [["if@2"], ["Assign@3"], ["Return@4"]]
    assert edges(IF_NO_ELSE, "f") == {"ENTRY->B2:fall", "B2->B3:true", "B2->B4:false",
                                      "B3->B4:fall", "B4->EXIT:return"}


WHILE_ELSE = """\
def f(n):
    i = 0
    while i < n:
        i += 1
        if i == 3:
            continue
        if i == 5:
            break
    else:
        i = -1
    return i
"""


def test_while_else_break_continue() -> None:
    assert blocks(WHILE_ELSE, "f") == [["Assign@2"], ["while@3"], ["AugAssign@4", "if@5"],
                                       ["Continue@6"], ["if@7"], ["Break@8"], ["Assign@10"],
                                       ["Return@11"]]
    assert edges(WHILE_ELSE, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:true", "B3->B8:false", "B4->B5:true",
        "B4->B6:false", "B5->B3:continue*", "B6->B7:true", "B6->B3:false*", "B7->B9:break",
        "B8->B9:fall", "B9->EXIT:return"}
    assert headers(WHILE_ELSE, "f") == {"B3"}


FOR_ELSE = """\
def f(xs):
    for x in xs:
        if x:
            break
    else:
        return 0
    return 1
"""


def test_for_else() -> None:
    # ``return 1`` is reached only by the break, so it continues the break's block
    assert blocks(FOR_ELSE, "f") == [["for-iter@2"], ["for-next@2"], ["if@3"],
                                     ["Break@4", "Return@7"], ["Return@6"]]
    assert edges(FOR_ELSE, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next", "B3->B6:exhausted", "B4->B5:true",
        "B4->B3:false*", "B5->EXIT:return", "B6->EXIT:return"}
    assert headers(FOR_ELSE, "f") == {"B3"}
    # the iteration step calls __next__; evaluating a bare name does not
    assert calls(FOR_ELSE, "f") == ["for-next@2"]


FOR_CALL_ITER = """\
def f():
    n = 0
    for i in range(3):
        n += i
    return n
"""


def test_for_iterable_with_call_starts_block() -> None:
    assert blocks(FOR_CALL_ITER, "f") == [["Assign@2"], ["for-iter@3"], ["for-next@3"],
                                          ["AugAssign@4"], ["Return@5"]]
    assert edges(FOR_CALL_ITER, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:fall", "B4->B5:next", "B4->B6:exhausted",
        "B5->B4:back*", "B6->EXIT:return"}


NESTED_LOOPS = """\
def f(xss):
    for xs in xss:
        while xs:
            if xs.pop():
                break
        else:
            continue
        return xs
"""


def test_nested_loops_break_and_else_continue() -> None:
    # the inner loop's ``else: continue`` continues the outer loop
    assert blocks(NESTED_LOOPS, "f") == [["for-iter@2"], ["for-next@2"], ["while@3"], ["if@4"],
                                         ["Break@5", "Return@8"], ["Continue@7"]]
    assert edges(NESTED_LOOPS, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next", "B3->EXIT:exhausted", "B4->B5:true",
        "B4->B7:false", "B5->B6:true", "B5->B4:false*", "B6->EXIT:return", "B7->B3:continue*"}
    assert headers(NESTED_LOOPS, "f") == {"B3", "B4"}


ASYNC_FOR = """\
async def f(xs):
    async for x in xs:
        await x
    return 1
"""


def test_async_for() -> None:
    assert blocks(ASYNC_FOR, "f") == [["for-iter@2"], ["for-next@2"], ["Expr@3"], ["Return@4"]]
    assert edges(ASYNC_FOR, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next", "B3->B5:exhausted", "B4->B3:back*",
        "B5->EXIT:return"}
    assert calls(ASYNC_FOR, "f") == ["for-next@2", "Expr@3"]
    # wave 20 (MED-3a): ``__anext__`` and ``await`` are awaited suspensions, as a generator's yields
    assert suspends(ASYNC_FOR, "f") == ["for-next@2", "Expr@3"]
    assert cfg(ASYNC_FOR, "f").is_generator


WHILE_TRUE = """\
def f(q):
    while True:
        x = q.get()
        if x is None:
            break
    return x
def g(q):
    while 1:
        q.put(1)
    q.close()
def h():
    if 0:
        dbg()
    if True:
        a = 1
    else:
        a = 2
    return a
"""


def test_while_true_has_no_false_edge() -> None:
    # the loop is left only by the break: ``return x`` continues the break's block
    assert blocks(WHILE_TRUE, "f") == [["while@2"], ["Assign@3", "if@4"], ["Break@5", "Return@6"]]
    assert edges(WHILE_TRUE, "f") == {
        "ENTRY->B2:fall", "B2->B3:true", "B3->B4:true", "B3->B2:false*", "B4->EXIT:return"}
    # without a break the loop never ends normally: what follows is dead, EXIT unreachable
    assert blocks(WHILE_TRUE, "g") == [["while@8"], ["Expr@9"]]
    assert edges(WHILE_TRUE, "g") == {"ENTRY->B2:fall", "B2->B3:true", "B3->B2:back*"}
    assert dead(WHILE_TRUE, "g") == ["Expr@10"]


def test_constant_if_tests_fold_like_the_compiler() -> None:
    assert blocks(WHILE_TRUE, "h") == [["if@12", "if@14", "Assign@15", "Return@18"]]
    assert edges(WHILE_TRUE, "h") == {"ENTRY->B2:fall", "B2->EXIT:return"}
    assert dead(WHILE_TRUE, "h") == ["Expr@13", "Assign@17"]


# --------------------------------------------------------------------------- abrupt exits

THROUGH_FINALLY = """\
def f(xs):
    for x in xs:
        try:
            if x:
                continue
            if x is None:
                break
            if x == 2:
                return x
        finally:
            print(x)
    return None
"""


def test_continue_break_return_through_finally() -> None:
    assert blocks(THROUGH_FINALLY, "f") == [
        ["for-iter@2"], ["for-next@2"], ["if@4"], ["Continue@5"], ["if@6"], ["Break@7"],
        ["if@8"], ["Return@9"], ["Expr@11", "finally-end@11"], ["Return@12"]]
    assert edges(THROUGH_FINALLY, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next", "B3->B11:exhausted",
        "B4->B5:true", "B4->B6:false", "B5->B10:continue", "B6->B7:true", "B6->B8:false",
        "B7->B10:break", "B8->B9:true", "B8->B10:false", "B9->B10:return",
        # the end of the finally dispatches the pending continue / break / return
        "B10->B3:finally-dispatch*", "B10->B11:finally-dispatch", "B10->EXIT:finally-dispatch",
        "B11->EXIT:return"}
    assert dyn(THROUGH_FINALLY, "f") == {"B10"}
    assert headers(THROUGH_FINALLY, "f") == {"B3"}


THROUGH_WITH = """\
def f(xs, cm):
    while xs:
        with cm:
            if xs.pop():
                continue
            if xs:
                break
            return 1
    return 0
"""


def test_continue_break_return_through_with() -> None:
    assert blocks(THROUGH_WITH, "f") == [
        ["while@2"], ["with-enter@3"], ["if@4"], ["Continue@5"], ["if@6"], ["Break@7"],
        ["Return@8"], ["with-exit@8"], ["Return@9"]]
    assert edges(THROUGH_WITH, "f") == {
        "ENTRY->B2:fall", "B2->B3:true", "B2->B10:false", "B3->B4:fall", "B4->B5:true",
        "B4->B6:false", "B5->B9:continue", "B6->B7:true", "B6->B8:false", "B7->B9:break",
        "B8->B9:return",
        # __exit__ runs, then the pending continue / break / return proceeds
        "B9->B2:continue*", "B9->B10:break", "B9->EXIT:return", "B10->EXIT:return"}
    assert dyn(THROUGH_WITH, "f") == {"B9"}
    assert calls(THROUGH_WITH, "f") == ["with-enter@3", "if@4", "with-exit@8"]


RETURN_NESTED = """\
def f(cm):
    try:
        with cm as c:
            return c
    finally:
        done()
"""


def test_return_through_with_then_finally() -> None:
    assert blocks(RETURN_NESTED, "f") == [["with-enter@3", "Return@4"], ["with-exit@4"],
                                          ["Expr@6", "finally-end@6"]]
    # __exit__ may swallow an exception, so the with also ends normally (fall); the return takes
    # the same edge and gives it its kind: no "after" probe site, which the return would skip (wave 17)
    assert edges(RETURN_NESTED, "f") == {
        "ENTRY->B2:fall", "B2->B3:return", "B3->B4:return", "B4->EXIT:finally-dispatch"}
    assert dyn(RETURN_NESTED, "f") == {"B3", "B4"}


FINALLY_RETURNS = """\
def f():
    try:
        return 1
    finally:
        return 2
"""


def test_return_in_finally_overrides_and_has_no_dispatch() -> None:
    assert blocks(FINALLY_RETURNS, "f") == [["Return@3"], ["Return@5"]]
    assert edges(FINALLY_RETURNS, "f") == {"ENTRY->B2:fall", "B2->B3:return", "B3->EXIT:return"}
    assert all(s.kind != "finally-end" for s in cfg(FINALLY_RETURNS, "f").stmts)


RAISE = """\
def f(x):
    if x:
        raise ValueError(x)
    return x
def g():
    raise E
"""


def test_raise_has_no_static_successor() -> None:
    assert blocks(RAISE, "f") == [["if@2"], ["Raise@3"], ["Return@4"]]
    assert edges(RAISE, "f") == {"ENTRY->B2:fall", "B2->B3:true", "B2->B4:false", "B4->EXIT:return"}
    assert blocks(RAISE, "g") == [["Raise@6"]]
    assert edges(RAISE, "g") == {"ENTRY->B2:fall"}


DEAD = """\
def f(x):
    return x
    x += 1
    try:
        g()
    except E:
        h()
    with cm:
        pass
    while x:
        pass
def g(xs):
    for x in xs:
        continue
        x()
    raise E
    y = 1
"""


def test_dead_code_is_excluded() -> None:
    assert blocks(DEAD, "f") == [["Return@2"]]
    assert edges(DEAD, "f") == {"ENTRY->B2:fall", "B2->EXIT:return"}
    # handlers and __exit__ of dead regions are dead too (no exception can reach them)
    assert dead(DEAD, "f") == ["AugAssign@3", "Expr@5", "Expr@7", "with-enter@8", "Pass@9",
                               "with-exit@9", "while@10", "Pass@11"]
    assert [s.id for s in cfg(DEAD, "f").stmts] == list(range(9))
    assert blocks(DEAD, "g") == [["for-iter@13"], ["for-next@13"], ["Continue@14"], ["Raise@16"]]
    assert edges(DEAD, "g") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next",
                                "B3->B5:exhausted", "B4->B3:continue*"}
    assert dead(DEAD, "g") == ["Expr@15", "Assign@17"]


# --------------------------------------------------------------------------- try

TRY_FULL = """\
def f():
    try:
        a = g()
    except ValueError:
        a = 1
    except (TypeError, KeyError) as e:
        return e
    else:
        a += 1
    finally:
        a = 0
    return a
"""


def test_try_except_else_finally() -> None:
    assert blocks(TRY_FULL, "f") == [["Assign@3", "AugAssign@9"], ["Assign@5"], ["Return@7"],
                                     ["Assign@11", "finally-end@11"], ["Return@12"]]
    assert edges(TRY_FULL, "f") == {
        "ENTRY->B2:fall", "B2->B5:fall", "B3->B5:fall", "B4->B5:return", "B5->B6:fall",
        "B5->EXIT:finally-dispatch", "B6->EXIT:return"}
    # handlers and the finally body are entered by exceptions (recorded dynamically)
    assert dyn(TRY_FULL, "f") == {"B3", "B4", "B5"}


TRY_EXCEPT = """\
def f():
    try:
        return g()
    except:
        pass
    return 2
"""


def test_try_bare_except_code_after_reached_only_through_handler() -> None:
    assert blocks(TRY_EXCEPT, "f") == [["Return@3"], ["Pass@5", "Return@6"]]
    assert edges(TRY_EXCEPT, "f") == {"ENTRY->B2:fall", "B2->EXIT:return", "B3->EXIT:return"}
    assert dyn(TRY_EXCEPT, "f") == {"B3"}


TRY_STAR = """\
def f():
    try:
        g()
    except* ValueError:
        h()
    except* TypeError:
        pass
    return 0
"""


def test_except_star() -> None:
    # the handlers' ends join at the star-end (B5: the next handler's test, or the re-raise of
    # what no handler took), which falls through to the code after the try, as the body does;
    # what escapes a handler's body is taken there too: a dynamic entry (wave 23)
    assert blocks(TRY_STAR, "f") == [["Expr@3"], ["Expr@5"], ["Pass@7"], ["star-end@7"], ["Return@8"]]
    assert edges(TRY_STAR, "f") == {"ENTRY->B2:fall", "B2->B6:fall", "B3->B5:fall",
                                    "B4->B5:fall", "B5->B6:fall", "B6->EXIT:return"}
    assert dyn(TRY_STAR, "f") == {"B3", "B4", "B5"}


RAISING_ARMS = """\
def f():
    try:
        g()
    except* ValueError:
        raise KeyError
    except* TypeError:
        raise OSError
    return 0
"""


def test_except_star_whose_handlers_all_raise() -> None:
    # no handler ends, yet the second handler's test and the re-raise follow the first
    # handler's raise: the star-end is there, reached only by exceptions (wave 23)
    assert blocks(RAISING_ARMS, "f") == [["Expr@3", "Return@8"], ["Raise@5"], ["Raise@7"], ["star-end@7"]]
    assert dyn(RAISING_ARMS, "f") == {"B3", "B4", "B5"}


HANDLER_LOOP = """\
def f(xs):
    for x in xs:
        try:
            x()
        except KeyError:
            for y in x:
                break
        except OSError:
            continue
        x = 1
"""


def test_handler_starting_with_a_loop_and_continue_in_handler() -> None:
    assert blocks(HANDLER_LOOP, "f") == [
        ["for-iter@2"], ["for-next@2"], ["Expr@4"], ["for-iter@6"], ["for-next@6"],
        ["Break@7"], ["Continue@9"], ["Assign@10"]]
    assert edges(HANDLER_LOOP, "f") == {
        "ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next", "B3->EXIT:exhausted", "B4->B9:fall",
        "B5->B6:fall", "B6->B7:next", "B6->B9:exhausted", "B7->B9:break",
        "B8->B3:continue*", "B9->B3:back*"}
    assert dyn(HANDLER_LOOP, "f") == {"B5", "B8"}
    assert headers(HANDLER_LOOP, "f") == {"B3", "B6"}


# --------------------------------------------------------------------------- with

ASYNC_WITH = """\
async def f(a, b):
    async with a as x, b as y:
        await x
    return y
"""


def test_async_with_multiple_items() -> None:
    c = cfg(ASYNC_WITH, "f")
    assert blocks(ASYNC_WITH, "f") == [["with-enter@2"], ["with-enter@2"], ["Expr@3"],
                                       ["with-exit@3"], ["with-exit@3"], ["Return@4"]]
    assert edges(ASYNC_WITH, "f") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:fall",
                                      "B4->B5:fall", "B5->B6:fall", "B6->B7:fall", "B7->EXIT:return"}
    assert dyn(ASYNC_WITH, "f") == {"B5", "B6"}
    # the inner item (b) exits first; each item's enter/exit is anchored on its withitem
    node = c.node
    assert node is not None
    w = node.body[0]
    enter_a, enter_b = (c.stmt_at(it, "with-enter") for it in w.items)
    exit_a, exit_b = (c.stmt_at(it, "with-exit") for it in w.items)
    assert [s.id for s in (enter_a, enter_b, exit_b, exit_a)] == [0, 1, 3, 4]  # type: ignore[union-attr]
    assert (enter_a.col, enter_b.col) == (4, 23)  # type: ignore[union-attr]


# --------------------------------------------------------------------------- match

MATCH = """\
def f(p):
    match p:
        case 0 | 1:
            r = "small"
        case None:
            r = "none"
        case [x, *rest]:
            r = "seq"
        case {"k": v, **kw}:
            r = "map"
        case Point(x=0, y=yy) if yy > 0:
            r = "pt"
        case str() as s:
            r = s
        case Color.RED:
            r = "red"
        case other:
            r = other
    return r
def g(p):
    match p:
        case [1, 2]:
            return 1
        case _ if p:
            return 2
    return 3
def h(p):
    match p:
        case 1 | _:
            r = 1
    match p:
        case (2 as y) | (_ as y):
            r = y
    match p:
        case _:
            pass
    return r
def k(p):
    match check(p):
        case int(x) if valid(x):
            return x
"""


def test_match_all_pattern_kinds() -> None:
    assert blocks(MATCH, "f") == [
        ["match@2", "case@3"], ["Assign@4"], ["case@5"], ["Assign@6"], ["case@7"], ["Assign@8"],
        ["case@9"], ["Assign@10"], ["case@11"], ["Assign@12"], ["case@13"], ["Assign@14"],
        ["case@15"], ["Assign@16"], ["case@17", "Assign@18"], ["Return@19"]]
    expected = {"ENTRY->B2:fall", "B16->B17:fall", "B17->EXIT:return"}
    for test in (2, 4, 6, 8, 10, 12, 14):
        expected |= {f"B{test}->B{test + 1}:true", f"B{test}->B{test + 2}:false",
                     f"B{test + 1}->B17:fall"}
    # the capture pattern ``case other`` is irrefutable: no false edge, no fall-through
    assert edges(MATCH, "f") == expected
    assert calls(MATCH, "f") == []


def test_match_guard_on_wildcard_falls_through() -> None:
    assert blocks(MATCH, "g") == [["match@21", "case@22"], ["Return@23"], ["case@24"],
                                  ["Return@25"], ["Return@26"]]
    assert edges(MATCH, "g") == {
        "ENTRY->B2:fall", "B2->B3:true", "B2->B4:false", "B3->EXIT:return", "B4->B5:true",
        "B4->B6:false", "B5->EXIT:return", "B6->EXIT:return"}


def test_match_irrefutable_or_as_and_wildcard() -> None:
    assert blocks(MATCH, "h") == [["match@28", "case@29", "Assign@30", "match@31", "case@32",
                                   "Assign@33", "match@34", "case@35", "Pass@36", "Return@37"]]
    assert edges(MATCH, "h") == {"ENTRY->B2:fall", "B2->EXIT:return"}


def test_match_call_in_subject_and_guard() -> None:
    assert blocks(MATCH, "k") == [["match@39"], ["case@40"], ["Return@41"]]
    assert edges(MATCH, "k") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:true",
                                 "B3->EXIT:false", "B4->EXIT:return"}
    assert calls(MATCH, "k") == ["match@39", "case@40"]


# --------------------------------------------------------------------------- simple statements

ASSERT = """\
def f(x):
    assert x, "no"
    assert x > 0, msg(x)
    return x
"""


def test_assert() -> None:
    assert blocks(ASSERT, "f") == [["Assert@2"], ["Assert@3", "Return@4"]]
    assert edges(ASSERT, "f") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->EXIT:return"}
    assert calls(ASSERT, "f") == ["Assert@3"]


GEN = """\
def g(xs):
    total = 0
    x = yield total
    total += x
    yield from xs
    yield
    return total
async def c(x):
    y = 1
    z = await x
    w = z + y
    return w
def h():
    while (yield):
        pass
async def ag():
    yield 1
def not_gen():
    f = lambda: (yield)
    return f
"""


def test_yield_starts_and_ends_a_block() -> None:
    assert blocks(GEN, "g") == [["Assign@2"], ["Assign@3"], ["AugAssign@4"], ["Expr@5"],
                                ["Expr@6"], ["Return@7"]]
    assert edges(GEN, "g") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:fall", "B4->B5:fall",
                               "B5->B6:fall", "B6->B7:fall", "B7->EXIT:return"}
    assert suspends(GEN, "g") == ["Assign@3", "Expr@5", "Expr@6"]
    assert calls(GEN, "g") == ["Assign@3", "Expr@5", "Expr@6"]
    assert cfg(GEN, "g").is_generator


def test_await_starts_and_ends_a_block() -> None:
    # wave 20 (MED-3a): an ``await`` suspends like a ``yield`` (a coroutine driven by hand is then exact)
    assert blocks(GEN, "c") == [["Assign@9"], ["Assign@10"], ["Assign@11", "Return@12"]]
    assert calls(GEN, "c") == ["Assign@10"] and suspends(GEN, "c") == ["Assign@10"]
    assert cfg(GEN, "c").is_generator


def test_yield_in_a_loop_header() -> None:
    assert blocks(GEN, "h") == [["while@14"], ["Pass@15"]]
    assert edges(GEN, "h") == {"ENTRY->B2:fall", "B2->B3:true", "B2->EXIT:false", "B3->B2:back*"}
    assert suspends(GEN, "h") == ["while@14"]


def test_generator_flags() -> None:
    assert cfg(GEN, "ag").is_generator
    assert not cfg(GEN, "not_gen").is_generator          # the yield belongs to the lambda
    assert suspends(GEN, "not_gen") == [] and calls(GEN, "not_gen") == []


DEFS = """\
import os
from sys import (argv,
                 path)
X = 1
def plain(a=1):
    return a
@deco
def decorated():
    pass
def with_default(a=make()):
    global X
    X = lambda: os.getcwd()
    ys = [os.sep for _ in ()]
    g = (p(i) for i in argv)
    class K:
        \"\"\"Doc.\"\"\"
        def m(self):
            def inner():
                nonlocal y
                return y
            y = 1
            return inner
    return K
def annotated(x: int) -> make_type():
    pass
"""


def test_module_with_imports_and_defs() -> None:
    assert blocks(DEFS, "<module>") == [["Import@1"], ["ImportFrom@2", "Assign@4", "FunctionDef@5"],
                                        ["FunctionDef@7"], ["FunctionDef@10"], ["FunctionDef@24"]]
    assert edges(DEFS, "<module>") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:fall",
                                       "B4->B5:fall", "B5->B6:fall", "B6->EXIT:fall"}
    # imports, decorated defs, and defs whose defaults/annotations call are call-capable
    assert calls(DEFS, "<module>") == ["Import@1", "ImportFrom@2", "FunctionDef@7",
                                       "FunctionDef@10", "FunctionDef@24"]
    c = cfg(DEFS, "<module>")
    assert c.kind == "module" and (c.firstline, c.lastline) == (1, 25)
    dec = c.stmts[4]
    assert (dec.line, dec.end_line) == (7, 9)     # a decorated def spans from its decorator


def test_lambdas_and_comprehensions_are_atomic() -> None:
    assert blocks(DEFS, "with_default") == [["Assign@12"], ["Assign@13", "Assign@14"],
                                            ["ClassDef@15", "Return@23"]]
    assert edges(DEFS, "with_default") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:fall",
                                           "B4->EXIT:return"}
    # a lambda body does not run; a list comprehension runs (and iterates) at once; a
    # generator expression only evaluates its first iterable; a class statement runs its body
    assert calls(DEFS, "with_default") == ["Assign@13", "ClassDef@15"]


def test_class_bodies_and_nested_functions_are_functions() -> None:
    all_cfgs = cfgs(DEFS)
    assert list(all_cfgs) == [
        "<module>", "plain", "decorated", "with_default", "with_default.<locals>.K",
        "with_default.<locals>.K.m", "with_default.<locals>.K.m.<locals>.inner", "annotated"]
    k = all_cfgs["with_default.<locals>.K"]
    assert k.kind == "class" and (k.firstline, k.lastline) == (15, 22)
    assert blocks(DEFS, "with_default.<locals>.K") == [["Expr@16", "FunctionDef@17"]]
    assert edges(DEFS, "with_default.<locals>.K") == {"ENTRY->B2:fall", "B2->EXIT:fall"}
    # nonlocal is not a statement
    assert blocks(DEFS, "with_default.<locals>.K.m") == [["FunctionDef@18", "Assign@21", "Return@22"]]
    assert blocks(DEFS, "with_default.<locals>.K.m.<locals>.inner") == [["Return@20"]]


def test_qualnames_match_python() -> None:
    src = textwrap.dedent("""\
        class A:
            class B:
                def m(self):
                    class C:
                        def n(self): pass
                    def g():
                        async def h(): pass
                    return [lambda: 0 for _ in ()]
            if X:
                def cond(self): pass
            else:
                def other(self): pass
        def top():
            try:
                def t(): pass
            except E:
                def u(): pass
            with cm:
                class W: pass
            match x:
                case 1:
                    def v(): pass
        """)
    got = {c.qualname for c in build_module(src)} - {"<module>"}
    want: set[str] = set()
    stack = [compile(src, "<src>", "exec")]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if hasattr(const, "co_qualname"):
                if not const.co_name.startswith("<"):
                    want.add(const.co_qualname)
                stack.append(const)
    assert got == want


def test_empty_bodies() -> None:
    assert blocks("", "<module>") == []
    assert edges("", "<module>") == {"ENTRY->EXIT:fall"}
    src = "def f():\n    global x\n"
    assert blocks(src, "f") == [] and edges(src, "f") == {"ENTRY->EXIT:fall"}


DOCSTRINGS = '''\
"""Module doc."""
from __future__ import annotations
def f():
    """Function doc."""
    return 1
'''


def test_docstrings_are_statements() -> None:
    assert blocks(DOCSTRINGS, "<module>") == [["Expr@1"], ["ImportFrom@2", "FunctionDef@3"]]
    assert blocks(DOCSTRINGS, "f") == [["Expr@4", "Return@5"]]


def test_spans() -> None:
    c = cfg(FOR_ELSE, "f")
    it, nxt = c.stmts[0], c.stmts[1]
    assert (it.line, it.col, it.end_line, it.end_col) == (2, 13, 2, 15)     # the iterable
    assert (nxt.line, nxt.col, nxt.end_line, nxt.end_col) == (2, 4, 2, 15)  # for ... in xs
    w = cfg(WHILE_ELSE, "f").stmts[1]
    assert (w.kind, w.line, w.col, w.end_line, w.end_col) == ("while", 3, 4, 3, 15)
    m = cfg(MATCH, "f")
    case = m.stmts[1]
    assert (case.kind, case.label, case.line, case.col, case.end_col) == ("case", "match_case", 3, 13, 18)
    guard = m.stmts[9]
    assert (guard.line, guard.col, guard.end_col) == (11, 13, 39)          # pattern .. guard


@pytest.mark.parametrize("src", [DEAD, WHILE_TRUE, FINALLY_RETURNS, MATCH], ids=["dead", "while-true", "finally", "match"])
def test_live_lines_agree_with_cpython(src: str) -> None:
    """CPython's compiler drops exactly the statements we call dead (it keeps NOPs for
    constant ``if``/``while`` tests, which are live statements here too, and for ``try:``)."""
    code = compile(src, "<src>", "exec")
    for const in code.co_consts:
        if not hasattr(const, "co_lines"):
            continue
        c = cfg(src, const.co_qualname)
        ours = {s.line for s in c.stmts if s.block >= 0}
        tries = {i for i, ln in enumerate(src.splitlines(), 1) if ln.strip() == "try:"}  # NOPs
        theirs = {ln for *_, ln in const.co_lines() if ln is not None} - {const.co_firstlineno} - tries
        assert ours == theirs, const.co_qualname


# --------------------------------------------------------------------------- 3.12+ syntax

needs_312 = pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695 syntax is new in Python 3.12")

PEP695 = """\
type Pair[T] = tuple[T, T]

def first[T: (int, str), *Ts, **P](xs: list[T]) -> T:
    for x in xs:
        if x:
            return x
    return xs[0]

class Box[T](Base[T]):
    type Alias = list[T]
    def get[U](self, f) -> U:
        return f(self.v)
"""


@needs_312
def test_pep695_type_statements_and_type_parameters() -> None:
    # `type` is a simple statement that calls nothing (its value is evaluated lazily); type
    # parameters open an annotation scope that holds no statements, so `first` and `Box.get`
    # keep their plain qualnames and CFGs, and the class body is still one call-capable ClassDef
    assert set(cfgs(PEP695)) == {"<module>", "first", "Box", "Box.get"}
    assert blocks(PEP695, "<module>") == [["TypeAlias@1", "FunctionDef@3"], ["ClassDef@9"]]
    assert calls(PEP695, "<module>") == ["ClassDef@9"]
    assert edges(PEP695, "<module>") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->EXIT:fall"}
    assert blocks(PEP695, "first") == [["for-iter@4"], ["for-next@4"], ["if@5"], ["Return@6"], ["Return@7"]]
    assert edges(PEP695, "first") == {"ENTRY->B2:fall", "B2->B3:fall", "B3->B4:next", "B3->B6:exhausted",
                                      "B4->B5:true", "B4->B3:false*", "B5->EXIT:return", "B6->EXIT:return"}
    assert blocks(PEP695, "Box") == [["TypeAlias@10", "FunctionDef@11"]]
    assert calls(PEP695, "Box") == []
    assert blocks(PEP695, "Box.get") == [["Return@12"]] and calls(PEP695, "Box.get") == ["Return@12"]


PEP701_709 = """\
def squares(n):
    out = [i * i for i in range(n) if i % 2]
    return f"{'-'.join(f'{v!r:>{n}}' for v in out)}"
"""


@needs_312
def test_pep701_nested_fstrings_and_pep709_inlined_comprehensions() -> None:
    # an inlined comprehension is still part of its statement: no function, no block of its own
    assert set(cfgs(PEP701_709)) == {"<module>", "squares"}
    assert blocks(PEP701_709, "squares") == [["Assign@2"], ["Return@3"]]
    assert calls(PEP701_709, "squares") == ["Assign@2", "Return@3"]
