"""Seeded programs that nest the constructs whose cleanup code CPython 3.12/3.13 compile into
location-less blocks: ``with``/``async with`` exits, handler ends, ``except*``, loop ``else``,
``match`` arms, ``try/else``, ``return``/``break``/``continue`` out of ``finally`` and ``with``,
inlined comprehensions, generators (docs/design.md, "Position-less probe blocks, wave 17").

Statements call ``t(K)`` (raises ``Boom`` when the driver says so), read ``D[K]`` (raises
``KeyError`` without a call) or cannot raise; the driver runs each function with several
arguments once per key raising and once without, and prints what it saw.
"""

from __future__ import annotations

import random

HEAD = '''\
import asyncio
import zlib
LOOP = asyncio.new_event_loop()
T = [-1]
D = {}
OUT = []
class Boom(Exception):
    pass
def t(k):
    if T[0] == k:
        raise Boom(k)
    return k
class Ctx:
    def __init__(self, k):
        self.k = k
    def __enter__(self):
        t(self.k)
        return self
    def __exit__(self, *a):
        return self.k % 5 == 0 and a[0] is KeyError
class ACtx(Ctx):
    async def __aenter__(self):
        return self.__enter__()
    async def __aexit__(self, *a):
        return self.__exit__(*a)
'''


class Gen:
    """A random function body; ``kind`` is "def", "gen" or "async"."""

    def __init__(self, rng: random.Random, kind: str) -> None:
        self.rng, self.kind, self.k = rng, kind, 0
        self.loop = 0          # inside a loop (break/continue allowed)
        self.star = 0          # inside an except* handler (no return/break/continue)

    def key(self) -> int:
        self.k += 1
        return self.k

    def simple(self, ind: str) -> list[str]:
        k = self.key()
        c = self.rng.random()
        if self.kind == "gen" and c < 0.2:
            return [f"{ind}v = yield t({k})"]
        if self.kind == "async" and c < 0.15:
            return [f"{ind}await asyncio.sleep(0)"]
        if c < 0.3:
            return [f"{ind}v = {k}"]
        if c < 0.45:
            return [f"{ind}v = D[{k}]"]
        if c < 0.55:   # comprehension (inlined on 3.12+) that can raise
            return [f"{ind}v = [t(i) for i in range(x + {k % 3}) if i != {k}]"]
        return [f"{ind}v = t({k})"]

    def jump(self, ind: str) -> list[str]:
        """return / break / continue under a condition (the statement may leave cleanup code)."""
        k = self.key()
        opts = ["return"] if not self.star else []
        if self.loop and not self.star:
            opts += ["break", "continue"]
        if not opts:
            return self.simple(ind)
        j = self.rng.choice(opts)
        if j == "return":
            j = "return" if self.kind == "gen" else f"return t({k})"
        return [f"{ind}if x == {k % 3}:", f"{ind}    {j}"]

    def body(self, ind: str, depth: int) -> list[str]:  # noqa: C901 - one arm per construct
        out: list[str] = []
        r = self.rng
        for _ in range(r.randint(1, 3)):
            c = r.random() if depth < 3 else r.random() * 0.4
            k = self.key()
            i2 = ind + "    "
            if c < 0.25:
                out += self.simple(ind)
            elif c < 0.4:
                out += self.jump(ind)
            elif c < 0.47:
                out += [f"{ind}if x > {k % 3}:"] + self.body(i2, depth + 1)
                if r.random() < 0.6:
                    out += [f"{ind}else:"] + self.body(i2, depth + 1)
            elif c < 0.54:
                loop = r.choice(["for i in range(x):", f"while t({k}) < x + 1 and v != {k}:"])
                if loop.startswith("while"):
                    out += [f"{ind}v = {k}"]
                self.loop += 1
                out += [f"{ind}{loop}"] + self.body(i2, depth + 1)
                if loop.startswith("while"):
                    out += [f"{i2}v = {k}"]
                self.loop -= 1
                if r.random() < 0.5:
                    out += [f"{ind}else:"] + self.body(i2, depth + 1)
            elif c < 0.66:
                star = r.random() < 0.3
                out += [f"{ind}try:"] + self.body(i2, depth + 1)
                out += [f"{ind}except{'*' if star else ''} {'Boom' if r.random() < 0.5 else '(Boom, KeyError)'}:"]
                self.star += star
                h = self.body(i2, depth + 1)
                if r.random() < 0.3:
                    h += [f"{i2}if x == {k % 2}:", f"{i2}    raise"]
                self.star -= star
                out += h
                if r.random() < 0.4:
                    out += [f"{ind}else:"] + self.body(i2, depth + 1)
                if r.random() < 0.4:
                    out += [f"{ind}finally:"] + self.body(i2, depth + 1)
            elif c < 0.76:
                out += [f"{ind}try:"] + self.body(i2, depth + 1) + [f"{ind}finally:"]
                out += self.body(i2, depth + 1)
            elif c < 0.88:
                aw = "async " if self.kind == "async" and r.random() < 0.6 else ""
                cls = "ACtx" if aw else "Ctx"
                items = f"{cls}({k})" + (f", {cls}({self.key()}) as c" if r.random() < 0.3 else "")
                out += [f"{ind}{aw}with {items}:"] + self.body(i2, depth + 1)
            else:
                out += [f"{ind}match x:"]
                out += [f"{ind}    case 0:"] + self.body(ind + "        ", depth + 1)
                out += [f"{ind}    case 1 if t({k}) == 1:"] + self.body(ind + "        ", depth + 1)
                if r.random() < 0.5:
                    out += [f"{ind}    case _:"] + self.body(ind + "        ", depth + 1)
        return out


def program(seed: int, functions: int = 6, tail: bool = True) -> str:
    """A module of ``functions`` generated functions (plain, generator and async) and its driver;
    ``tail=False``: every other plain or async function ends with its last generated statement (the code after
    it is the compiler's location-less ``return None``, where CPython 3.13 copies exit blocks)."""
    rng = random.Random(seed)
    src = [HEAD]
    calls = []
    for i in range(functions):
        kind = ("def", "gen", "async")[i % 3]
        g = Gen(rng, kind)
        body = g.body("    ", 0)
        end = f"    yield t({g.key()})" if kind == "gen" else f"    return t({g.key()})"
        head = "async def" if kind == "async" else "def"
        ends = [end] if tail or kind == "gen" or (seed + i) % 2 else []
        src.append("\n".join([f"{head} f{i}(x):", "    v = 0"] + body + ends) + "\n")
        calls.append((f"f{i}", g.k, kind))
    drive = ["n = 0", "for f, keys, kind in ("]
    drive += [f"        ({name}, {keys}, {kind!r})," for name, keys, kind in calls]
    drive += ["        ):",
              "    for x in range(4):",
              "        for k in range(-1, keys + 1):",
              "            T[0] = k",
              "            D.clear()",
              "            D.update((i, i) for i in range(keys + 1) if i != k)",
              "            try:",
              "                if kind == 'gen':",
              "                    r = list(f(x))",
              "                elif kind == 'async':",
              "                    r = LOOP.run_until_complete(f(x))",
              "                else:",
              "                    r = f(x)",
              "                OUT.append(r)",
              "            except (Boom, KeyError, ExceptionGroup) as e:",
              "                n += 1",
              "                OUT.append(type(e).__name__)",
              "print(n, len(OUT), zlib.crc32(repr(OUT).encode()))"]
    return "\n".join(src) + "\n" + "\n".join(drive) + "\n"
