"""Path mode on programs that raise at every statement, inside handlers, ``with``, ``finally``,
loops and generators (docs/design.md "Path mode, wave 12").

Generated programs (seeded): a statement calls ``t(K)``, which raises when the driver says so,
reads ``D[K]``, which raises (without a call, so in a block that is not cut) when the driver
took ``K`` out, or cannot raise (``v = K``); the driver runs every function once per
statement (and once without raising), with several arguments.  Oracles: the ``blocks`` recording of the same program, event for event
(kernel and naive twin), and ``paths --json``'s truncated paths against the paths the blocks
recording shows cut short (``test_path_mode.truncated_truth``).  Exception records here carry
registers from every block, the prefixes review11c found decoded wrong included (a register of
-1; a handler's start value decoded at the traceback's statement).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from regenutil import compare
from test_path_mode import paths_truncated, record_both, truncated_truth

HEAD = '''\
T = [-1]
D = {}
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
        return False
'''


class Gen:
    """A random function body of nested statements, each of which can raise; ``star``: half the
    handlers are ``except*`` (whose bodies may not ``return``; the same draws otherwise, so the
    programs of ``star=False`` are those of the seeds chosen before)."""

    def __init__(self, rng: random.Random, gen: bool, star: bool = False) -> None:
        self.rng, self.gen, self.k = rng, gen, 0
        self.star, self.in_star = star, 0

    def key(self) -> int:
        self.k += 1
        return self.k

    def simple(self, ind: str) -> list[str]:
        k = self.key()
        c = self.rng.random()
        if self.gen and c < 0.3:
            return [f"{ind}v = yield t({k})"]
        if c < 0.45:     # a block that cannot call: joins of such blocks stay uncut (review11c's -1)
            return [f"{ind}v = {k}"]
        if c < 0.7:      # raises (KeyError) without a call: in a block that is not cut
            return [f"{ind}v = D[{k}]"]
        return [f"{ind}v = t({k})"]

    def body(self, ind: str, depth: int) -> list[str]:
        out: list[str] = []
        for _ in range(self.rng.randint(1, 3)):
            c = self.rng.random() if depth < 3 else 0.0
            k = self.key()
            if c < 0.35:
                out += self.simple(ind)
            elif c < 0.45:
                out += [f"{ind}if x > {k % 3}:"] + self.body(ind + "    ", depth + 1)
                if self.rng.random() < 0.5:
                    out += [f"{ind}else:"] + self.body(ind + "    ", depth + 1)
            elif c < 0.55:
                out += [f"{ind}for i in range(x):"] + self.body(ind + "    ", depth + 1)
            elif c < 0.7:
                star = self.star and self.rng.random() < 0.5
                out += [f"{ind}try:"] + self.body(ind + "    ", depth + 1)
                out += [f"{ind}except{'*' if star else ''} (Boom, KeyError):"]
                self.in_star += star
                h = self.body(ind + "    ", depth + 1)
                self.in_star -= star
                if self.rng.random() < 0.4:
                    h += [f"{ind}    if x == {k % 2}:", f"{ind}        raise"]
                out += h
            elif c < 0.8:
                out += [f"{ind}try:"] + self.body(ind + "    ", depth + 1) + [f"{ind}finally:"]
                out += self.body(ind + "    ", depth + 1)
            elif c < 0.9:
                out += [f"{ind}with Ctx({k}):"] + self.body(ind + "    ", depth + 1)
            elif self.in_star:   # no return in an except* handler
                out += [f"{ind}if t({k}) == x:", f"{ind}    v = t({self.key()})"]
            else:
                out += [f"{ind}if t({k}) == x:", f"{ind}    return t({self.key()})"]
        return out


def program(seed: int, functions: int = 6, star: bool = False) -> str:
    rng = random.Random(seed)
    src = [HEAD]
    calls = []
    for i in range(functions):
        g = Gen(rng, gen=i % 3 == 2, star=star)
        lines = [f"def f{i}(x):"] + g.body("    ", 0) + [f"    {'yield' if g.gen else 'return'} t({g.key()})"]
        src.append("\n".join(lines) + "\n")
        calls.append((f"f{i}", g.k, g.gen))
    drive = ["n = 0", "for f, keys, gen in ("]
    drive += [f"        ({name}, {keys}, {gen})," for name, keys, gen in calls]
    drive += ["        ):",
              "    for x in range(3):",
              "        for k in range(-1, keys + 1):",
              "            T[0] = k",
              "            D.clear()",
              "            D.update((i, i) for i in range(keys + 1) if i != k)",
              "            try:",
              "                r = list(f(x)) if gen else f(x)",
              f"            except (Boom, KeyError{', ExceptionGroup' if star else ''}):",
              "                n += 1",
              "print(n)"]
    return "\n".join(src) + "\n" + "\n".join(drive) + "\n"


#: Seeds 13.. each have a function whose placement, unlifted, reaches a register of -1 (``pathnum.lift_registers``).
SEEDS = [0, 1, 2, 3, 14, 19, 20, 23, 28, 30, 35, 36, 39, 45, 49, 54]


def _record_seeds(root: Path, seeds: list[int], star: bool = False) -> dict[int, dict[str, Path]]:
    out = {}
    for seed in seeds:
        script = root / f"raising_{'star_' if star else ''}{seed}.py"
        script.write_text(program(seed, star=star))
        out[seed] = record_both(script, root, (), "--no-wpp")
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Path]]:
    return _record_seeds(tmp_path_factory.mktemp("path-raising"), SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_raising_everywhere_regenerates_blocks(recorded: dict[int, dict[str, Path]], seed: int) -> None:
    stats = compare(recorded[seed]["blocks"], recorded[seed]["path"], exact=True, twin=True)
    assert stats["identical streams"] >= 1


@pytest.mark.parametrize("seed", SEEDS)
def test_raising_everywhere_truncated_paths(recorded: dict[int, dict[str, Path]], seed: int) -> None:
    want, checked = truncated_truth(recorded[seed]["blocks"], recorded[seed]["path"])
    assert sum(want.values()) > 20
    assert paths_truncated(recorded[seed]["path"], checked) == want


#: except* programs (``Gen(star=True)``): with the handler probes' s = -1 (review12b defects 3 and 4)
#: seeds 0, 1, 3, 4, 6, 7 regenerated wrong activations and 0, 1, 4, 6, 7, 8, 9 wrong truncated paths;
#: with only the handlers fixed, the guards' s = -1 after a bare ``raise`` still broke 1, 2, 4, 6, 7.
STAR_SEEDS = list(range(10))


@pytest.fixture(scope="module")
def recorded_star(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Path]]:
    return _record_seeds(tmp_path_factory.mktemp("path-raising-star"), STAR_SEEDS, star=True)


@pytest.mark.parametrize("seed", STAR_SEEDS)
def test_except_star_raising_everywhere(recorded_star: dict[int, dict[str, Path]], seed: int) -> None:
    """Blocks event for event (kernel and naive twin), and ``paths``' truncated paths the blocks ground truth."""
    assert compare(recorded_star[seed]["blocks"], recorded_star[seed]["path"], exact=True, twin=True)["identical streams"] >= 1
    want, checked = truncated_truth(recorded_star[seed]["blocks"], recorded_star[seed]["path"])
    assert sum(want.values()) > 20
    assert paths_truncated(recorded_star[seed]["path"], checked) == want


@pytest.mark.nojit
def test_raising_everywhere_nojit(tmp_path: Path) -> None:
    """One seed whose unlifted placement reaches -1 (19), decoded by the kernel's Python (the
    suite's nojit run): blocks event for event."""
    script = tmp_path / "raising_19.py"
    script.write_text(program(19))
    paths = record_both(script, tmp_path, (), "--no-wpp")
    assert compare(paths["blocks"], paths["path"], exact=True, twin=True)["identical streams"] >= 1


#: exstar16's reduction of ``program(4, star=True)``'s f4: a ``finally`` ending in ``if/else``
#: (its re-raise site store has no position) at the end of an ``else`` arm, then a call.
FINALLY_JOIN = HEAD + '''\
def f(x):
    if x > 0:
        if t(75) == x:
            return t(76)
    else:
        try:
            try:
                v = 82
            except (Boom, KeyError):
                v = 84
        finally:
            if x > 2:
                v = t(99)
            else:
                v = D[105]
    return t(110)
n = 0
for x in range(-1, 2):
    for k in (-1, 75, 76, 82, 99, 105, 110):
        T[0] = k
        D.clear()
        D.update((i, i) for i in range(111) if i != k)
        try:
            f(x)
        except (Boom, KeyError):
            n += 1
print(n)
'''


def test_finally_join(tmp_path: Path) -> None:
    """CPython 3.13.0 copies the location-less join at the end of such a ``finally`` (with the
    cut record after it) into one arm and lets the copy fall through into the original: the
    cut ran twice ("an activation of f starts at block 2").  Blocks, event for event."""
    script = tmp_path / "finally_join.py"
    script.write_text(FINALLY_JOIN)
    paths = record_both(script, tmp_path, (), "--no-wpp")
    assert compare(paths["blocks"], paths["path"], exact=True, twin=True)["identical streams"] >= 1
