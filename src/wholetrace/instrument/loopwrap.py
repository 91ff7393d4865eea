"""The wrapping iterator of a loop whose ``continue`` crosses cleanup code, built of C callables in the loop's own code."""

# A ``continue`` that runs finally/with code before the next iteration cannot be followed by the
# for-next probe, so the iterator records it before each ``__next__``/``__anext__``.  Until wave 22
# that was a Python helper (``runtime.probes.for_wrapper``/``afor_wrapper``/``record``): a program's
# tracer, ``pdb`` and tracebacks saw its frames.  Now the loop's code builds a chain of C iterators
# whose every step is one record, stepped ahead of the program's iterator (docs/design.md, wave 22).

from __future__ import annotations

import ast

from wholetrace.events import LEAVE
from wholetrace.instrument.emit import (A, D, WRAP_LEFT, SKIP, LOOP_ADD, LOOP_AITER, LOOP_ANEXT, LOOP_ASYNC, LOOP_ATTRGETTER, LOOP_CALL,
                                        LOOP_EXTEND, LOOP_MAP, LOOP_REPEAT, LOOP_SECOND, LOOP_SELF,
                                        LOOP_SETATTR, LOOP_ZIP, GET, artificial, ast_call, ast_const, ast_name, rt)


def _forever(fn: ast.expr) -> ast.expr:
    """``map(call, repeat(fn))``: calls ``fn()`` at each step (types only are called at loop entry:
    a program's ``sys.setprofile`` function gets no ``c_call`` event of ours; ``iter(fn, never)``,
    a built-in function, showed one and compared each value with the sentinel)."""
    return ast_call(rt(LOOP_MAP), rt(LOOP_CALL), _repeat(fn))


def _repeat(value: ast.expr) -> ast.expr:
    """``repeat(value)``: ``value`` at each step (no call, no comparison with a sentinel)."""
    return ast_call(rt(LOOP_REPEAT), value)


def trace_recorder(values: list[int], local: bool) -> ast.expr:
    """Trace modes: each step appends ``values`` to the current stream's buffer (one C call, as
    ``runtime.probes``' body helpers record).  ``local``: a function that never suspends, whose
    stream the prologue bound to ``wt.a`` for the whole activation: ``map(wt.a, repeat(v))``
    (several values: ``map(wt.a.__self__.extend, repeat(values))``).  Else (a generator, whose
    ``wt.a`` a resume rebinds; module and class bodies, which keep no local) the stream is
    fetched at each step: ``map(call, map(call, repeat(get)), repeat(v))`` (several:
    ``map(methodcaller("extend", values), map(attrgetter("__self__"), map(call, repeat(get))))``), the
    one the prologue or the generator's resume made current."""
    if local:
        append = ast_name(A)
        if len(values) == 1:
            return ast_call(rt(LOOP_MAP), append, _repeat(ast_const(values[0])))
        extend = ast.Attribute(ast.Attribute(append, "__self__", ast.Load()), "extend", ast.Load())
        return ast_call(rt(LOOP_MAP), extend, _repeat(ast_const(tuple(values))))
    if len(values) == 1:
        return ast_call(rt(LOOP_MAP), rt(LOOP_CALL), _forever(rt(GET)), _repeat(ast_const(values[0])))
    extend = ast_call(rt(LOOP_EXTEND), ast_const("extend"), ast_const(tuple(values)))
    return ast_call(rt(LOOP_MAP), extend, ast_call(rt(LOOP_MAP), rt(LOOP_SELF), _forever(rt(GET))))


def hand_recorders(values: list[int]) -> list[ast.expr]:
    """A coroutine's or async generator's ``async for`` behind a wrapper (trace modes): its
    ``__anext__`` may suspend, and driven by hand the driver's own events would land in the
    stream between the header and the body (review23b HIGH-2).  Picked at loop entry by
    ``wt.d``, each step records ``values`` then, by hand, LEAVE (as the unwrapped loop's
    ``awaits.leave``), and appends to ``wt.v``: the step cannot unbind ``wt.a``, so the body's
    and the ``else``'s resume and the handlers read ``wt.v`` instead (and clear it)::

        map(methodcaller("extend", (values, values + (LEAVE,))[wt.d is True]), <the stream>)
        map((skip, wt.v.append)[wt.d is True], repeat(None))"""
    hand = ast.Compare(ast_name(D), [ast.Is()], [ast_const(True)])
    pick = ast.Subscript(ast.Tuple([ast_const(tuple(values)), ast_const(tuple(values) + (LEAVE,))], ast.Load()), hand, ast.Load())
    extend = ast_call(rt(LOOP_EXTEND), ast_const("extend"), pick)
    record = ast_call(rt(LOOP_MAP), extend, ast_call(rt(LOOP_MAP), rt(LOOP_SELF), _forever(rt(GET))))
    append = ast.Attribute(ast_name(WRAP_LEFT), "append", ast.Load())
    mark = ast.Subscript(ast.Tuple([rt(SKIP), append], ast.Load()), hand, ast.Load())
    return [record, ast_call(rt(LOOP_MAP), mark, _repeat(ast_const(None)))]


def count_recorders(counts: ast.expr, slots: list[str]) -> list[ast.expr]:
    """Count modes: one iterator a counter, each step ``setattr(counts, slot, 1.0 + counts.<slot>)``:
    ``map(setattr, repeat(counts), repeat(slot), map(add, repeat(1.0), map(attrgetter(slot),
    repeat(counts))))`` (no eval-breaker check between the read and the write)."""
    out: list[ast.expr] = []
    for slot in slots:
        read = ast_call(rt(LOOP_MAP), ast_call(rt(LOOP_ATTRGETTER), ast_const(slot)), _repeat(counts))
        plus = ast_call(rt(LOOP_MAP), rt(LOOP_ADD), _repeat(ast_const(1.0)), read)
        out.append(ast_call(rt(LOOP_MAP), rt(LOOP_SETATTR), _repeat(counts), _repeat(ast_const(slot)), plus))
    return out


def wrap(iterable: ast.expr, recorders: list[ast.expr], loop: ast.For | ast.AsyncFor,
         plain_iterable: ast.expr) -> ast.expr:
    """``map(second, steps, items)``: ``map`` steps the recorders (``steps``: the one recorder,
    or ``zip`` of several), then the program's iterator (``iter(iterable)`` at ``map``'s creation,
    its errors plain's), and ``second`` (``{}.get``: the step's value, None or Nones, is never a
    key, so the item comes back) keeps nothing between items: an item is released when the
    program releases it (a ``zip`` of the item would hold it until the next step: review22e
    HIGH-1).  ``async for``: items are ``map(anext, repeat(aiter(iterable)))`` (the type's slots, as ``async
    for`` uses) and the loop iterates ``AsyncLoop([<the chain's __next__>])``, whose ``__anext__``
    returns that awaitable.  The call that gets the iterator stands at ``plain_iterable`` (the
    program's iterable node): where 3.13 places GET_ITER/GET_AITER; 3.11 and 3.12 place them at
    the whole ``for``, so there a traceback of an iterable that cannot be iterated shows carets
    under the iterable that plain's does not.  Placed at the ``for``, a count mode's exception
    site would be the for-next statement (``bytecode.statement_at``) while the header was not
    entered (blocks mode: the recorder's first step comes after the iterator): counts would
    differ from blocks'."""
    at = plain_iterable
    # the recorders' step, placed at the iterable as the call that made the iterator was (several:
    # ``zip`` of them, its tuple holding only their Nones); with nothing to record at the header
    # (a count mode's tree edge) the loop is still wrapped, so the iterator is made where the
    # recorded loops make it (a count mode's exception site), stepping ``repeat(None)``
    if len(recorders) > 1:
        steps: ast.expr | None = ast_call(rt(LOOP_ZIP), *recorders)
    elif recorders:
        steps = recorders[0]
    elif isinstance(loop, ast.AsyncFor):
        steps = None
    else:
        steps = _repeat(ast_const(None))
    if steps is not None:
        steps = ast.copy_location(artificial(steps), at)
    if not isinstance(loop, ast.AsyncFor):
        # (the caller places the outer call, whose creation calls ``iter(iterable)``, at the iterable)
        return ast_call(rt(LOOP_MAP), rt(LOOP_SECOND), steps, iterable)
    items = ast_call(rt(LOOP_MAP), rt(LOOP_ANEXT), _repeat(ast.copy_location(artificial(ast_call(rt(LOOP_AITER), iterable)), at)))
    chain = ast_call(rt(LOOP_MAP), rt(LOOP_SECOND), steps, items) if steps is not None else items
    return ast_call(rt(LOOP_ASYNC), ast.List([ast.Attribute(chain, "__next__", ast.Load())], ast.Load()))
