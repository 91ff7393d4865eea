def pick(x):
    if x % 3 == 0:
        return "a"
    elif x % 3 == 1:
        return "b"
    return "c"


def gen(n):
    for i in range(n):
        yield pick(i)


def boom(x):
    try:
        return 10 // x
    except ZeroDivisionError:
        return -1


print("".join(gen(7)), [boom(i) for i in range(3)])
