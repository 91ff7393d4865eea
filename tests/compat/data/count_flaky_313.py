class CM:
    def __init__(self, suppress):
        self.suppress = suppress

    def __enter__(self):
        return self

    def __exit__(self, typ, val, tb):
        return self.suppress and typ is not None and issubclass(typ, ArithmeticError)


def gen(n):
    for k in range(n):
        yield k * 2
    if n == 3:
        return


def gen_fin(n):
    try:
        for k in range(n):
            try:
                yield k
            finally:
                lst.append(k)
                del lst[:-5]
    finally:
        lst.append(n)


a, b, c = 1, 2, 3
lst = [4, 5, 6]

def g0(n):
    global a, b, c
    for k in range(n):
        a = k + 0
        for i1 in range(0):
            print(a, b)
            print(a, c)
            if a == 5:
                raise RuntimeError(b)
            b = lst[b % 7]
        else:
            a = 100 // (b % 3)
            lst.append(c % 10)
            del lst[:-5]
        yield a % 10

def g1(n):
    try:
        global a, b, c
        for k in range(n):
            a = k + 1
            lst.append(c % 10)
            del lst[:-5]
            for i2 in range(2):
                print(a, c)
                if b <= 9 and b % 2 == 0:
                    raise RuntimeError(c)
                pass
                if b != 3:
                    raise RuntimeError(a)
            yield a % 10
    finally:
        lst.append(n)
        del lst[:-5]

def f0(x, y):
    global lst
    a, b, c = x, y, x + y
    def gt3(n):
        try:
            for k in range(n):
                yield k + 2
                if k == 2:
                    raise KeyError(k)
        finally:
            lst.append(9)
            del lst[:-5]
    for i3 in gt3(a % 5):
        match c % 4:
            case 3:
                c = lst[c % 7]
                if c > 6:
                    continue
            case 1 | 2:
                if c > 3:
                    continue
                a = 100 // (c % 3)
            case 0:
                if c < 5:
                    raise ValueError(c)
                print(c, c)
        with CM(False) as cm2:
            a = 3
            b += 3
            if a > 6:
                return sum(x * 0 for x in range(a % 4))
    try:
        b = 100 // (a % 3)
        try:
            w4 = 0
            while w4 < 3:
                try:
                    print(c, b)
                finally:
                    w4 += 1
                    b += 5
        except (KeyError, IndexError, ZeroDivisionError):
            a = 100 // (a % 3)
        if c == -1:
            raise ValueError(c)
    finally:
        for i5 in range(3):
            if b >= 6:
                raise ValueError(c)
    try:
        a += 4
        w6 = 0
        while w6 < 2:
            w6 += 1
            c = (a * c + 0) % 97
            lst.append(b % 10)
            del lst[:-5]
            if a != -2 and a % 2 == 0:
                raise KeyError(c)
            if b < 2:
                break
        if b >= 0:
            raise RuntimeError(b)
    except RuntimeError as e:
        if a == 3:
            raise ValueError(a)
    finally:
        print(c, b)
        if c != 6:
            if a > -2:
                return b + 1
            print(b, a)
            b += 3
            lst.append(c % 10)
            del lst[:-5]
        else:
            if c > 2 and b % 2 == 0:
                raise KeyError(b)
            b = len(lst) + a % 3
            a = lst[a % 7]
            print(b, a)
    return a + b + c

for i7 in g1(c % 4):
    b = 100 // (b % 3)
    def nf8():
        global a, b, c, lst
        def gt9(n):
            try:
                for k in range(n):
                    yield k + 1
            finally:
                lst.append(5)
                del lst[:-5]
        for i9 in gt9(b % 5):
            print(b, b)
            pass
            if b <= 5 and a % 2 == 0:
                continue
        c = len(lst) + b % 3
        return a
    a = nf8()
try:
    class K10:
        attr = 6
        match b % 4:
            case 1 | 2:
                with CM(True) as cm2:
                    if a != 2:
                        raise ValueError(b)
                    print(b, c)
                    b += 1
            case _:
                print(b, c)
                w11 = 0
                while w11 < 0:
                    w11 += 1
                    if c <= 0:
                        break
        for i12 in range(3):
            b = lst[i12 + b % 3]
except Exception:
    pass
try:
    w13 = 0
    while w13 < 4:
        try:
            if b < 9:
                continue
            for i14 in gen_fin(c % 4):
                a = lst[a % 7]
                b = lst[b % 7]
                pass
                a = f0(a % 10, a % 10)
            else:
                print(a, c)
        finally:
            w13 += 1
            c = lst[c % 7]
except (KeyError, IndexError, ZeroDivisionError):
    w15 = 0
    while w15 < 2:
        w15 += 1
        for i16 in g0(b % 4):
            lst.append(c % 10)
            del lst[:-5]
        for i17 in range(5):
            a = {0: 1, 2: 3}[i17 % 4]
            if False:
                pass
class K18:
    attr = 4
    print(c, b)
    match c % 4:
        case 0:
            if a == 1:
                a += 3
            else:
                a = lst[a % 7]
                pass
        case 3:
            if a < 2:
                raise KeyError(a)
            for i19 in range(0):
                c += 2
                if a != 3:
                    raise RuntimeError(c)
        case 1 | 2:
            c = sum(x * 9 for x in range(c % 4))
print(a, b, c, lst)
