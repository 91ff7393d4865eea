"""Path mode: each compiled copy of the activation's ``finally`` appends its own constant closing record.

A path function with several ways out whose closing records differ (``modes.fold_known_registers``
``exits``: each edge into EXIT stores ``wt.o = K``, the epilogue appends ``wt.a(wt.o)``) pays a
store and a load of ``wt.o`` per activation that a function with one way out does not
(``pathforms.single_exit_record``: ``wt.a(K)``).  The compiler copies the ``finally`` to every
``return`` (and to each fall-off exit), so each copy is reached from its own exit: a constant
propagation over the compiled bytecode (jumps and exception-table edges, read with ``opcode`` as
``dis`` reads them on 3.11-3.13) finds the one constant ``wt.o`` holds at each copy's load, and the load becomes that
``LOAD_CONST`` in place (same size, no cache entries).  A store whose value no remaining load
can read (a backward liveness pass, exception edges included) becomes ``JUMP_FORWARD 1`` over
its dead ``STORE_FAST`` (3.13's ``STORE_FAST_LOAD_FAST``: ``NOP``, ``LOAD_FAST``).  The
``finally``'s exceptional copy, reached only from the activation's handler (which sets
``wt.o = LEAVE``) or from an exception inside it, appends LEAVE.  Nothing changes in what is
recorded; positions, line table and exception table are untouched (docs/design.md "Path mode,
wave 15").  Any shape not recognised is left as compiled.
"""

from __future__ import annotations

from types import CodeType

from wholetrace.events import LEAVE
from wholetrace.instrument.bytecode import parse_exception_table
from wholetrace.instrument.emit import O

_EXC = "exc"       # state at an exception handler's start: the value of ``wt.o`` is not tracked
_TOP = "top"       # a store of something other than a constant
_UNSET = "unset"
_ENDS = frozenset(("RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_BACKWARD",
                   "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"))


def fold_exit_records(code: CodeType) -> CodeType:
    """``code`` and the code objects nested in it with the closing records of path functions
    folded into their ``finally`` copies (see the module's docstring)."""
    consts = list(code.co_consts)
    changed = False
    for i, c in enumerate(consts):
        if isinstance(c, CodeType):
            new = fold_exit_records(c)
            if new is not c:
                consts[i], changed = new, True
    if changed:
        code = code.replace(co_consts=tuple(consts))
    if O not in code.co_varnames:
        return code
    return _fold(code)


class _Ins:
    """One instruction of ``co_code`` (``EXTENDED_ARG`` prefixes are instructions of their own, as
    ``dis`` lists them): ``offset`` in bytes, ``arg`` with its prefixes, ``argval`` the local's name
    (or the two names of 3.13's pairs) for ``*_FAST`` instructions, the target offset for jumps."""

    __slots__ = ("offset", "opcode", "opname", "arg", "argval", "is_jump_target", "prefixed")

    def __init__(self, offset: int, op: int, name: str, arg: int, argval: object, prefixed: bool) -> None:
        self.offset, self.opcode, self.opname, self.arg, self.argval = offset, op, name, arg, argval
        self.is_jump_target = False
        self.prefixed = prefixed


def _instructions(code: CodeType) -> list[_Ins] | None:
    """The instructions of ``code`` read with ``opcode`` (which the miss path loads; ``dis`` it does
    not: a program must not find it in ``sys.modules`` after a module was instrumented afresh).  Jump
    targets as ``dis`` computes them on 3.11-3.13: after the instruction and its inline caches,
    forward or (``*BACKWARD*``) backward by ``arg`` code units."""
    import opcode

    raw = code.co_code
    cache = opcode._inline_cache_entries   # a list by opcode (3.11, 3.12), a dict by name (3.13)
    jumps = set(getattr(opcode, "hasjump", ())) or set(opcode.hasjrel)
    names = code.co_varnames
    ext_op = opcode.opmap["EXTENDED_ARG"]
    out: list[_Ins] = []
    ext, i = 0, 0
    while i < len(raw):
        op, arg = raw[i], raw[i + 1] | ext
        name = opcode.opname[op]
        caches = cache[op] if isinstance(cache, list) else cache.get(name, 0)
        argval: object = None
        if op in jumps:
            argval = i + 2 + 2 * caches + 2 * (-arg if "BACKWARD" in name else arg)
        elif name in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"):
            a, b = arg >> 4, arg & 15
            argval = (names[a] if a < len(names) else None, names[b] if b < len(names) else None)
        elif "FAST" in name and op in opcode.haslocal:
            argval = names[arg] if arg < len(names) else None
        out.append(_Ins(i, op, name, arg, argval, ext != 0 or bool(out) and out[-1].opcode == ext_op))
        ext = arg << 8 if op == ext_op else 0
        i += 2 + 2 * caches
    at = {x.offset: x for x in out}
    for x in out:
        if x.opcode in jumps:
            if x.argval not in at:
                return None
            at[x.argval].is_jump_target = True   # type: ignore[index]
    return out


def _fold(code: CodeType) -> CodeType:
    import opcode   # loaded with the miss path (``instrument.misspath.ORDER``)

    o = code.co_varnames.index(O)
    got = _instructions(code)
    if got is None:
        return code
    ins = got
    at = {x.offset: i for i, x in enumerate(ins)}
    jumps = set(getattr(opcode, "hasjump", ())) or set(opcode.hasjrel)
    handlers: dict[int, list[int]] = {}    # instruction -> handler starts (exception edges)
    starts: set[int] = set()
    for e in parse_exception_table(code.co_exceptiontable):
        t = at.get(2 * e.target)
        if t is None:
            return code
        starts.add(t)
        for i, x in enumerate(ins):
            if e.start <= x.offset // 2 < e.end:
                handlers.setdefault(i, []).append(t)
    succ: list[list[int]] = []
    for i, x in enumerate(ins):
        out = [] if x.opname in _ENDS or i + 1 == len(ins) else [i + 1]
        if x.opcode in jumps:
            out.append(at[x.argval])   # type: ignore[index]
        succ.append(out)

    def is_load(x: _Ins) -> bool:
        return x.opname in ("LOAD_FAST", "LOAD_FAST_CHECK") and x.arg == o and not x.prefixed

    def touches(x: _Ins) -> bool:
        names = x.argval if isinstance(x.argval, tuple) else (x.argval,)
        return "FAST" in x.opname and O in names

    def const_store(i: int) -> int | None:
        """The constant index ``LOAD_CONST k; STORE_FAST wt.o`` (or 3.13's ``STORE_FAST_LOAD_FAST``
        storing ``wt.o`` first) stores at ``i``, else None."""
        x = ins[i]
        stores = (x.opname == "STORE_FAST" and x.arg == o
                  or x.opname == "STORE_FAST_LOAD_FAST" and isinstance(x.argval, tuple) and x.argval[0] == O)
        if not stores or i == 0 or x.is_jump_target or i in starts or x.prefixed:
            return None
        prev = ins[i - 1]
        return prev.arg if prev.opname == "LOAD_CONST" and prev.arg < 256 and not prev.prefixed else None

    # forward: the constants wt.o may hold before each instruction
    state: list[frozenset[object] | None] = [None] * len(ins)
    work = [0] + sorted(starts)
    state[0] = frozenset((_UNSET,))
    for t in starts:
        state[t] = frozenset((_EXC,))
    while work:
        i = work.pop()
        s = state[i]
        assert s is not None
        x = ins[i]
        if touches(x) and not is_load(x):
            k = const_store(i)
            s = frozenset((("k", k),)) if k is not None else frozenset((_TOP,))
        for j in succ[i]:
            new = s if state[j] is None else state[j] | s   # type: ignore[operator]
            if new != state[j]:
                state[j] = new
                work.append(j)

    leave = next((k for k, c in enumerate(code.co_consts[:256]) if type(c) is int and c == LEAVE), None)
    patch: dict[int, int] = {}      # load index -> constant index
    for i, x in enumerate(ins):
        s = state[i]
        if not is_load(x) or s is None:
            continue
        values = [v for v in s if v != _EXC]
        if _EXC in s:   # the finally's exceptional copy: after the handler's ``wt.o = LEAVE``, or an
            # exception inside the handler (its record lost, as in every mode): a plain LEAVE closes
            if leave is None or values and values != [("k", leave)]:
                continue
            patch[i] = leave
        elif len(values) == 1 and isinstance(values[0], tuple):
            patch[i] = values[0][1]
    if not patch:
        return code

    # backward: is wt.o read (by a load left) after each instruction?
    live_in = [False] * len(ins)
    changed = True
    while changed:
        changed = False
        for i in range(len(ins) - 1, -1, -1):
            x = ins[i]
            after = any(live_in[j] for j in succ[i]) or any(live_in[j] for j in handlers.get(i, ()))
            if touches(x) and i not in patch:
                here = True if is_load(x) or x.opname in ("LOAD_FAST_LOAD_FAST",) else (
                    after if x.opname not in ("STORE_FAST", "STORE_FAST_LOAD_FAST", "DELETE_FAST") else
                    x.opname == "STORE_FAST_LOAD_FAST" and x.argval[1] == O)
            else:
                here = after
            if here != live_in[i]:
                live_in[i], changed = here, True

    raw = bytearray(code.co_code)
    for i, k in patch.items():
        raw[ins[i].offset] = opcode.opmap["LOAD_CONST"]
        raw[ins[i].offset + 1] = k
    for i, x in enumerate(ins):
        if i in patch or const_store(i) is None:
            continue
        after = any(live_in[j] for j in succ[i]) or any(live_in[j] for j in handlers.get(i, ()))
        if after or x.opname == "STORE_FAST_LOAD_FAST" and x.argval[1] == O:
            continue
        if x.opname == "STORE_FAST":     # LOAD_CONST k; STORE_FAST wt.o -> JUMP_FORWARD 1 over the store
            raw[ins[i - 1].offset] = opcode.opmap["JUMP_FORWARD"]
            raw[ins[i - 1].offset + 1] = 1
        else:                            # LOAD_CONST k; STORE_FAST_LOAD_FAST wt.o, x -> NOP; LOAD_FAST x
            raw[ins[i - 1].offset] = opcode.opmap["NOP"]
            raw[ins[i - 1].offset + 1] = 0
            raw[x.offset] = opcode.opmap["LOAD_FAST"]
            raw[x.offset + 1] = x.arg & 15
    return code.replace(co_code=bytes(raw))
