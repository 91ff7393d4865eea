"""Small programs for the runtime, regeneration and count tests: generators, exceptions at several depths, loops,
finally/with, classes and match (each prints what it computed)."""

INLINE = {
    "generators": '''
        def count(n):
            i = 0
            while i < n:
                x = yield i
                if x:
                    i += x
                i += 1
            return i
        def inner(k):
            for j in range(k):
                yield j * 2
            yield -1
        def outer(k):
            yield 100
            r = yield from inner(k)
            yield from [7, 8]
            yield r
        def last():
            yield 1
        def closer():
            try:
                yield 1
                yield 2
            finally:
                print("closed")
        def thrower():
            while True:
                try:
                    v = yield
                except KeyError as e:
                    print("caught", e)
                    v = yield "handled"
                if v == "stop":
                    return "done"
        def branchy(n):
            if n:
                yield 1
            else:
                yield 2
            yield 3
        def main():
            print(list(count(5)))
            g = count(10)
            print(next(g), g.send(2), g.send(0), next(g))
            print(list(outer(3)))
            print(list(zip(count(3), count(4), inner(3))))
            print(list(last()), [a + b for a in last() for b in last()])
            c = closer()
            print(next(c))
            c.close()
            t = thrower()
            next(t)
            print(t.throw(KeyError("k")))
            t.send(1)
            try:
                t.send("stop")
            except StopIteration as s:
                print("stopped", s.value)
            print(sum(x for x in count(6)))
            print(list(branchy(0)), list(branchy(1)))
            gens = [count(2) for _ in range(3)]
            print([next(g) for g in gens], [list(g) for g in reversed(gens)])
        main()
    ''',
    "exceptions": '''
        class Oops(Exception):
            pass
        def deep(n):
            if n == 0:
                raise Oops("bottom")
            return deep(n - 1) + 1
        def mid(n):
            try:
                return deep(n)
            finally:
                print("mid finally", n)
        def top(n):
            try:
                mid(n)
            except KeyError:
                print("never")
            except Oops as e:
                print("caught at top", e)
                return -1
            else:
                return 0
        def reraiser(n):
            try:
                deep(n)
            except Oops:
                if n > 1:
                    raise
                print("swallowed")
        def nested(x):
            for i in range(4):
                try:
                    try:
                        if i == x:
                            raise ValueError(i)
                        d = {}[i] if i == 3 else i
                    except ValueError:
                        print("inner", i)
                        continue
                    finally:
                        print("fin", i)
                except KeyError as k:
                    print("outer", k)
                    break
            return x
        def handler_raises():
            try:
                try:
                    1 / 0
                except ZeroDivisionError:
                    raise Oops("from handler")
            except Oops as e:
                print("got", e)
        def uncaught():
            raise Oops("up")
        def main():
            print(top(3), top(0))
            for n in (1, 2):
                try:
                    reraiser(n)
                except Oops:
                    print("reraised", n)
            print(nested(1), nested(5))
            handler_raises()
            try:
                uncaught()
            except Oops:
                print("main caught")
        main()
    ''',
    "loops": '''
        def loops(n):
            total = 0
            for i in range(n):
                if i % 3 == 0:
                    continue
                if i > 7:
                    break
                j = 0
                while j < i:
                    j += 2
                    if j == 4:
                        continue
                    total += j
                else:
                    total -= 1
            else:
                total += 1000
            k = 0
            while True:
                k += 1
                if k > 3:
                    break
            return total + k
        def search(xs, t):
            for x in xs:
                if x == t:
                    print("found", x)
                    break
            else:
                print("missing", t)
        print(loops(5), loops(20))
        search([1, 2, 3], 2)
        search([1, 2, 3], 9)
    ''',
    "finally_with": '''
        class CM:
            def __init__(self, name, swallow=False):
                self.name = name
                self.swallow = swallow
            def __enter__(self):
                print("enter", self.name)
                return self
            def __exit__(self, *exc):
                print("exit", self.name, exc[0] is not None)
                return self.swallow
        def f(n):
            for i in range(n):
                try:
                    if i == 1:
                        continue
                    if i == 3:
                        break
                    if i == 4:
                        return i
                finally:
                    print("finally", i)
            return -1
        def g(flag):
            with CM("a") as a, CM("b", swallow=True):
                if flag:
                    raise ValueError("in with")
                print("body", a.name)
            with CM("c"):
                pass
            try:
                with CM("d"):
                    raise KeyError("d")
            except KeyError:
                print("after d")
            return flag
        def h():
            try:
                return "try"
            finally:
                print("h finally")
        print(f(5), f(2), g(0), g(1), h())
    ''',
    "classes_match": '''
        import functools
        def deco(fn):
            @functools.wraps(fn)
            def wrapper(*a):
                return fn(*a) * 2
            return wrapper
        class Shape:
            kind = "shape"
            def __init__(self, n):
                self.n = n
            @deco
            def area(self):
                return self.n
        def classify(v):
            match v:
                case 0:
                    return "zero"
                case [a, b]:
                    return f"pair {a} {b}"
                case {"k": x} if x > 1:
                    return "dict"
                case Shape(n=3):
                    return "shape3"
                case _:
                    return "other"
        print([classify(v) for v in (0, [1, 2], {"k": 2}, {"k": 0}, Shape(3), "x")])
        print(Shape(4).area(), sorted([3, 1, 2], key=lambda x: -x))
    ''',
    "except_star": '''
        # except* (review12b defects 3 and 4): the group except* wraps a naked exception in has
        # no traceback; the handler's record must still name the statement that raised
        T = [-1]
        D = {}
        class Boom(Exception):
            pass
        def t(k):
            if T[0] == k:
                raise Boom(k)
            return k
        class Ctx:
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return False
        def joined(x):
            try:
                v = t(9)
            except Boom:
                v = 11
            try:
                v = D[18]
                v = 19
            except* KeyError:
                v = 21
            return v
        def branchy(x):
            v = t(1)
            try:
                v = t(2)
                if x:
                    v = t(3)
            except* Boom:
                v = t(4)
                if x == 2:
                    raise
            return t(5)
        def nested(x):
            try:
                with Ctx():
                    try:
                        v = D[30]
                        v = t(31)
                    except* (Boom, KeyError):
                        v = t(32)
                        v = 33
                if t(34) == x:
                    return t(35)
            finally:
                v = 36
            return t(37)
        def grouped(x):
            try:
                if t(40) == x:
                    raise ExceptionGroup("g", [Boom(41), KeyError(42)])
                v = D[43]
                v = 46
            except* Boom:
                v = t(44)
            except* KeyError:
                v = 45
            return x
        n = []
        for f in (joined, branchy, nested, grouped):
            for x in range(3):
                for k in (-1, 1, 2, 3, 4, 5, 9, 18, 30, 31, 32, 34, 35, 37, 40, 43, 44):
                    T[0] = k
                    D.clear()
                    D.update((i, i) for i in range(50) if i != k)
                    try:
                        n.append(f(x))
                    except (Boom, KeyError, ExceptionGroup) as e:
                        n.append(type(e).__name__)
        try:
            D.clear()
            v = D[1]
        except* KeyError:
            n.append("module")
        print(len(n), n[::7])
    ''',
}
