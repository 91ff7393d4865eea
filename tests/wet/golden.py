"""Golden WET programs: source, and the hand-written backward slice (lines) of the last print().

Each program has a decoy statement that must stay out of the slice.  Line numbers count from
1 in the dedented source.  A statement spanning lines (a decorated ``def``) is on its first line.
"""

GOLDEN: dict[str, tuple[str, set[int]]] = {
    "alias_two_names": ("a = [1]\nb = a\nc = 5\nb.append(2)\nprint(a)\n", {1, 2, 4, 5}),
    "append_and_sort": ("xs = []\nk = 9\nxs.append(3)\nxs.append(1)\nxs.sort()\nprint(xs[0])\n", {1, 3, 4, 5, 6}),
    "nonlocal": ("def outer():\n    n = 1\n    m = 7\n    def inc():\n        nonlocal n\n        n += 1\n"
                 "    inc()\n    return n\nprint(outer())\n", {1, 2, 4, 6, 7, 8, 9}),
    "global_write": ("g = 1\nh = 2\ndef setg():\n    global g\n    g = g + 10\nsetg()\nprint(g)\n", {1, 3, 5, 6, 7}),
    "recursion": ("def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\nz = 0\nprint(fact(3))\n",
                  {1, 2, 3, 4, 6}),
    "exception_mid_statement": ("def f(d):\n    x = 0\n    try:\n        x = d['k']\n    except KeyError:\n"
                                "        x = -1\n    return x\nunused = 3\nprint(f({}))\n", {1, 4, 6, 7, 9}),
    "generator_send": ("def g():\n    total = 0\n    while True:\n        v = yield total\n        total += v\n"
                       "it = g()\nnext(it)\nw = 4\nit.send(w)\nprint(it.send(1))\n", {1, 2, 4, 5, 6, 7, 8, 9, 10}),
    "inplace_add_list": ("a = [1]\nb = a\nb += [2]\nc = 0\nprint(a)\n", {1, 2, 3, 5}),
    "del_then_rebind": ("x = 1\ny = 2\ndel x\nx = y\nprint(x)\n", {2, 4, 5}),
    "closure": ("def mk(k):\n    def add(v):\n        return v + k\n    return add\nf = mk(3)\nq = 1\nprint(f(4))\n",
                {1, 2, 3, 4, 5, 7}),
    "attribute_chain": ("class P:\n    pass\np = P()\np.a = P()\np.a.b = 5\np.c = 6\nprint(p.a.b)\n", {1, 3, 4, 5, 7}),
    "dict_keys": ("d = {}\nd['x'] = 1\nd['y'] = 2\nprint(d['x'])\n", {1, 2, 4}),
    "property": ("class C:\n    def __init__(self):\n        self._v = 2\n    @property\n    def v(self):\n"
                 "        return self._v * 3\nc = C()\ne = 1\nprint(c.v)\n", {1, 2, 3, 4, 6, 7, 9}),
    "loop_accumulate": ("s = 0\nt = 0\nfor i in range(3):\n    s += i\n    t += 1\nprint(s)\n", {1, 3, 4, 6}),
    "if_else_control": ("x = 3\ny = 0\nif x > 2:\n    y = 1\nelse:\n    y = 2\nz = 5\nprint(y)\n", {1, 3, 4, 8}),
    "while_loop": ("n = 3\nacc = 1\nwaste = 0\nwhile n > 0:\n    acc *= 2\n    n -= 1\n    waste += 1\nprint(acc)\n",
                   {1, 2, 4, 5, 6, 8}),
    "call_params": ("def add(a, b):\n    junk = a\n    return a + b\nx = 1\ny = 2\nw = 9\nprint(add(x, y))\n",
                    {1, 3, 4, 5, 7}),
    "dict_update": ("d = {'a': 1}\ne = {'b': 2}\nf = 0\nd.update(e)\nprint(d['b'])\n", {1, 2, 4, 5}),
    "set_add": ("s = set()\nn = 4\nm = 1\ns.add(n)\nprint(len(s))\n", {1, 2, 4, 5}),
    "list_pop": ("xs = [1, 2, 3]\nq = 7\nv = xs.pop()\nprint(xs)\n", {1, 3, 4}),
    "list_insert_remove": ("xs = [1]\nxs.insert(0, 5)\nj = 2\nxs.remove(1)\nprint(xs)\n", {1, 2, 4, 5}),
    "setattr_builtin": ("class O:\n    pass\no = O()\nv = 4\nw = 5\nsetattr(o, 'x', v)\nprint(o.x)\n",
                        {1, 3, 4, 6, 7}),
    "tuple_unpack": ("a, b = 1, 2\nc = 3\nprint(a)\n", {1, 3}),
    "method_state": ("class K:\n    def __init__(self):\n        self.n = 0\n    def bump(self):\n        self.n += 1\n"
                     "k = K()\nk.bump()\nj = 0\nprint(k.n)\n", {1, 2, 3, 4, 5, 6, 7, 9}),
    "element_precision": ("d = {}\nd['a'] = 1\nd['b'] = 2\nprint(d['a'])\n", {1, 2, 4}),
    "nested_calls": ("def sq(v):\n    return v * v\ndef two(v):\n    return sq(v) + 1\nu = 0\nx = 3\nprint(two(x))\n",
                     {1, 2, 3, 4, 6, 7}),
    "return_from_loop": ("def find(xs, t):\n    for i, x in enumerate(xs):\n        if x == t:\n            return i\n"
                         "    return -1\nprint(find([4, 5, 6], 5))\n", {1, 2, 3, 4, 6}),
    "with_statement": ("import io\nk = 1\nwith io.StringIO('abc') as fh:\n    s = fh.read()\nprint(s)\n", {1, 3, 4, 5}),
    "except_as": ("def f():\n    try:\n        raise ValueError('boom')\n    except ValueError as e:\n"
                  "        m = str(e)\n    return m\nq = 0\nprint(f())\n", {1, 3, 5, 6, 8}),
    "global_in_loop": ("total = 0\ndef add(v):\n    global total\n    total += v\nfor i in range(3):\n    add(i)\n"
                       "z = 1\nprint(total)\n", {1, 2, 4, 5, 6, 8}),
    "class_attribute": ("class A:\n    k = 3\n    u = 9\nprint(A.k)\n", {1, 2, 4}),
    "instance_reads_class_attribute": ("class A:\n    k = 3\n    u = 9\na = A()\nprint(a.k)\n", {1, 2, 4, 5}),
    "inherited_method": ("class A:\n    def f(self):\n        return 1\n    u = 9\nclass B(A):\n    pass\n"
                         "b = B()\nprint(b.f())\n", {1, 2, 3, 5, 7, 8}),
    "init_method_kept": ("class A:\n    def __init__(self):\n        self.v = 4\n    w = 1\na = A()\n"
                         "print(a.v)\n", {1, 2, 3, 5, 6}),
    "class_attribute_set_later": ("class A:\n    k = 3\nA.k = 7\nz = 1\na = A()\nprint(a.k)\n",
                                  {1, 3, 5, 6}),
    "items_written_in_callee": ("def fill(n):\n    out = [0] * n\n    out[1] = 5\n    k = 2\n    return out\n"
                                "xs = fill(3)\ny = xs.count(5)\nprint(y)\n", {1, 2, 3, 5, 6, 7, 8}),
    "comprehension_opaque": ("xs = [1, 2, 3]\nys = [x * 2 for x in xs]\nz = 0\nprint(ys)\n", {1, 2, 4}),
}

#: Programs with two threads: (source, slice lines of the last print).
THREADS: dict[str, tuple[str, set[int]]] = {
    "two_threads": ("import threading\nout = []\ndef work(v):\n    out.append(v * 2)\nz = 0\n"
                    "t = threading.Thread(target=work, args=(5,))\nt.start()\nt.join()\nprint(out)\n",
                    {1, 2, 3, 4, 6, 7, 9}),
    "worker_fills_dict": ("import threading\nbox = {}\ndef work():\n    box['a'] = 7\n    box['b'] = 1\n"
                          "t = threading.Thread(target=work)\nt.start()\nt.join()\nprint(box['a'])\n",
                          {1, 2, 3, 4, 6, 7, 9}),
}
