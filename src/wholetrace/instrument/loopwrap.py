"""The wrapping iterator of a loop whose ``continue`` crosses cleanup code, built of C callables in the loop's own code."""

# A ``continue`` that runs finally/with code before the next iteration cannot be followed by the
# for-next probe, so the iterator records it before each ``__next__``/``__anext__``.  Until wave 22
# that was a Python helper (``runtime.probes.for_wrapper``/``afor_wrapper``/``record``): a program's
# tracer, ``pdb`` and tracebacks saw its frames.  Now the loop's code builds a chain of C iterators
# whose every step is one record, stepped ahead of the program's iterator (docs/design.md, wave 22).

from __future__ import annotations

import ast

from wholetrace.instrument.emit import (LOOP_ADD, LOOP_AITER, LOOP_CALL, LOOP_ANEXT, LOOP_ASYNC, LOOP_EXTEND, LOOP_GETATTR,
                                        LOOP_ITER, LOOP_MAP, LOOP_NEVER, LOOP_PARTIAL, LOOP_SECOND, LOOP_SELF,
                                        LOOP_SETATTR, LOOP_ZIP, GET, artificial, ast_call, ast_const, rt)


def _forever(fn: ast.expr) -> ast.expr:
    """``iter(fn, never)``: calls ``fn()`` at each step."""
    return ast_call(rt(LOOP_ITER), fn, rt(LOOP_NEVER))


def trace_recorder(values: list[int]) -> ast.expr:
    """Trace modes: each step extends the current stream's buffer by ``values`` (one C call, as
    ``runtime.probes``' body helpers record): ``map(methodcaller("extend", values),
    map(attrgetter("__self__"), iter(get, never)))``.  The stream is the one the activation's
    prologue (or a generator's resume) made current, as module and class bodies' probes assume."""
    if len(values) == 1:   # the common case, cheaper: ``map(call, iter(get, never), iter(v.__index__, never))``
        value = _forever(ast.Attribute(ast_const(values[0]), "__index__", ast.Load()))
        return ast_call(rt(LOOP_MAP), rt(LOOP_CALL), _forever(rt(GET)), value)
    extend = ast_call(rt(LOOP_EXTEND), ast_const("extend"), ast_const(tuple(values)))
    return ast_call(rt(LOOP_MAP), extend, ast_call(rt(LOOP_MAP), rt(LOOP_SELF), _forever(rt(GET))))


def count_recorders(counts: ast.expr, slots: list[str]) -> list[ast.expr]:
    """Count modes: one iterator a counter, each step ``setattr(counts, slot, 1.0 + getattr(counts,
    slot))``: ``map(partial(setattr, counts, slot), map(partial(add, 1.0), iter(partial(getattr,
    counts, slot), never)))`` (no eval-breaker check between the read and the write)."""
    out: list[ast.expr] = []
    for slot in slots:
        read = _forever(ast_call(rt(LOOP_PARTIAL), rt(LOOP_GETATTR), counts, ast_const(slot)))
        plus = ast_call(rt(LOOP_MAP), ast_call(rt(LOOP_PARTIAL), rt(LOOP_ADD), ast_const(1.0)), read)
        out.append(ast_call(rt(LOOP_MAP), ast_call(rt(LOOP_PARTIAL), rt(LOOP_SETATTR), counts, ast_const(slot)), plus))
    return out


def wrap(iterable: ast.expr, recorders: list[ast.expr], loop: ast.For | ast.AsyncFor,
         plain_iterable: ast.expr) -> ast.expr:
    """``map(second, steps, items)``: ``map`` steps the recorders (``steps``: the one recorder,
    or ``zip`` of several), then the program's iterator (``iter(iterable)`` at ``map``'s creation,
    its errors plain's), and ``second`` (``{}.get``: the step's value, None or Nones, is never a
    key, so the item comes back) keeps nothing between items: an item is released when the
    program releases it (a ``zip`` of the item would hold it until the next step: review22e
    HIGH-1).  ``async for``: items are ``anext(aiter(iterable))`` (the type's slots, as ``async
    for`` uses) and the loop iterates ``AsyncLoop([<the chain's __next__>])``, whose ``__anext__``
    returns that awaitable.  The call that gets the iterator stands at ``plain_iterable`` (the
    program's iterable node): where 3.13 places GET_ITER/GET_AITER; 3.11 and 3.12 place them at
    the whole ``for``, so there a traceback of an iterable that cannot be iterated shows carets
    under the iterable that plain's does not.  Placed at the ``for``, a count mode's exception
    site would be the for-next statement (``bytecode.statement_at``) while the header was not
    entered (blocks mode: the recorder's first step comes after the iterator): counts would
    differ from blocks'."""
    at = plain_iterable
    # the recorders' step, placed at the iterable as the call that made the iterator was (``zip`` of
    # one recorder holds only its None); with nothing to record at the header (a count mode's tree
    # edge) the loop is still wrapped, so the iterator is made where the recorded loops make it
    # (a count mode's exception site), stepping ``add(0, 0)``
    if recorders:
        steps: ast.expr | None = ast.copy_location(artificial(ast_call(rt(LOOP_ZIP), *recorders)), at)
    elif isinstance(loop, ast.AsyncFor):
        steps = None
    else:
        steps = _forever(ast_call(rt(LOOP_PARTIAL), rt(LOOP_ADD), ast_const(0), ast_const(0)))
    if not isinstance(loop, ast.AsyncFor):
        # (the caller places the outer call, whose creation calls ``iter(iterable)``, at the iterable)
        return ast_call(rt(LOOP_MAP), rt(LOOP_SECOND), steps, iterable)
    step = ast_call(rt(LOOP_PARTIAL), rt(LOOP_ANEXT), ast.copy_location(artificial(ast_call(rt(LOOP_AITER), iterable)), at))
    chain = ast_call(rt(LOOP_MAP), rt(LOOP_SECOND), steps, _forever(step)) if steps is not None else _forever(step)
    return ast_call(rt(LOOP_ASYNC), ast.List([ast.Attribute(chain, "__next__", ast.Load())], ast.Load()))
