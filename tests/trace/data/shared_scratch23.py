import sys, asyncio, types
events = []

def tracer(frame, event, arg):
    if frame.f_code.co_filename != __file__ or frame.f_code.co_name in ("tracer", "<module>"):
        return None
    events.append((frame.f_code.co_name, event, frame.f_lineno, type(arg).__name__ if event == "exception" else ""))
    return tracer

class CM:
    def __enter__(self): return self
    def __exit__(self, *a): return False

class Boom(Exception): pass

def bad(n):
    for i in range(n):
        yield i
    raise Boom

class AIt:
    def __init__(self, n, boom=False, sleep=False): self.i, self.n, self.boom, self.sleep = 0, n, boom, sleep
    def __aiter__(self): return self
    async def __anext__(self):
        self.i += 1
        if self.sleep:
            await asyncio.sleep(0)
        if self.i > self.n:
            if self.boom:
                raise Boom
            raise StopAsyncIteration
        return self.i

def f1(xs):
    t = 0
    for x in xs:
        with CM():
            if x == 1:
                continue
            if x == 5:
                break
            t += x
    return t

def f2(n):
    try:
        for x in bad(n):
            try:
                if x == 0:
                    continue
            finally:
                pass
    except Boom:
        return "boom"

def f3(n):
    t = 0
    for i in range(n):
        for j in range(i):
            try:
                if j == 1:
                    continue
                t += j
            finally:
                t += 1
        else:
            t += 100
    return t

def g1(n):
    for i in range(n):
        try:
            if i == 1:
                continue
            yield i
        finally:
            pass

async def a_noelse(n, sleep):
    async for x in AIt(n, sleep=sleep):
        try:
            if x == 1:
                continue
        finally:
            pass

async def a_else(n):
    async for x in AIt(n):
        try:
            if x == 1:
                continue
        finally:
            pass
    else:
        x = -1
    return x

async def a_break(n):
    async for x in AIt(n):
        try:
            if x == 1:
                continue
            if x == 2:
                break
        finally:
            pass

async def a_boom(n):
    try:
        async for x in AIt(n, boom=True):
            try:
                continue
            finally:
                pass
    except Boom:
        return "aboom"

async def ag(n, sleep):
    async for x in AIt(n, sleep=sleep):
        try:
            if x == 1:
                continue
            yield x
        finally:
            pass

async def ag_with(n):
    async for x in AIt(n):
        with CM():
            if x == 2:
                continue
            yield x

async def amain():
    await a_noelse(3, False)
    await a_noelse(3, True)
    r = [await a_else(3), await a_break(4), await a_boom(2)]
    r.append([v async for v in ag(3, False)])
    r.append([v async for v in ag(3, True)])
    r.append([v async for v in ag_with(4)])
    return r

def by_hand():
    c = a_noelse(2, False)
    try:
        c.send(None)
    except StopIteration:
        pass
    g = ag(3, False)
    got = []
    while True:
        try:
            g.__anext__().send(None)
        except StopIteration as e:
            got.append(e.value)
        except StopAsyncIteration:
            break
    return got

pass
r = [f1(range(8)), f2(3), f3(5), list(g1(4))]
r.append(asyncio.run(amain()))
r.append(by_hand())
sys.settrace(None)
print(r)
print(len(events))
for e in events:
    print(e)
