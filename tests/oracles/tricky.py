"""A program of constructs whose line events are easy to get wrong (finally, with, match,
handlers, generators, async): the oracle's own rule is checked on it, and so is every mode."""

TRICKY = '''
"""Constructs whose line events are easy to get wrong."""
import asyncio
x: int = 3
"a constant expression"
...


class C:
    a = 1
    b: int

    def m(self):
        return self.a

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            continue
        total += i
        if i > 6:
            break
    while n > 0:
        n -= 1
        pass
    else:
        total += 100
    return total


def fin(n):
    try:
        return loops(n)
    finally:
        n = 0


def with_ret(n):
    with C() as c:
        v = c.m()
        return v + n


def handlers(n):
    for i in range(n):
        try:
            if i == 2:
                raise ValueError(i)
            x = i
        except ValueError as e:
            x = -1
        except (TypeError, KeyError):
            pass
        else:
            x = x + 1
        finally:
            z = 1
    return x


def gen(n):
    for i in range(n):
        yield i
        j = i * 2
    r = yield from range(2)
    return r


def nested_exc(n):
    try:
        try:
            1 / 0
        finally:
            n += 1
    except ZeroDivisionError:
        n += 2
    try:
        assert n < 0, "no"
    except AssertionError:
        n += 3
    del n
    return 7


def matcher(v):
    match v:
        case 1:
            r = "one"
        case [a, b]:
            r = "pair"
        case {"k": k}:
            r = k
        case _:
            r = "other"
    return r


def break_in_with(n):
    for i in range(n):
        with C():
            if i == 2:
                break
            u = 1
    while True:
        try:
            break
        finally:
            pass
    return i


def recurse(n):
    if n <= 0:
        return 0
    return 1 + recurse(n - 1)


async def co(n):
    await asyncio.sleep(0)
    a = n + 1
    return a


for _ in range(3):
    out = (loops(10), fin(5), with_ret(1), handlers(5), list(gen(4)), nested_exc(1),
           matcher(1), matcher([1, 2]), matcher({"k": 3}), matcher(3), break_in_with(5), recurse(4))
res = asyncio.run(co(1))
print(out, res)
'''
