"""The activation form of an event stream: each activation's own events and ordered children (DESIGN.md)."""

from __future__ import annotations

import numpy as np

from wholetrace.events import ENTER_BASE, EXC, LEAVE

Activation = tuple[int, tuple[int, ...], int]


def activation_form(events: np.ndarray) -> list[Activation]:
    """The activation form of one stream (DESIGN.md "Program model"), in preorder.

    Every activation becomes (function id, its own events: block ids and ``EXC s`` records,
    number of child activations); with the child counts the preorder list fixes the tree,
    so equal lists mean equal block sequences and equal ordered children everywhere.
    Entry 0 (fid -1) collects whatever lies outside any activation.
    """
    acts: list[list] = [[-1, [], 0]]
    stack = [0]
    vals = events.tolist()
    i = 0
    while i < len(vals):
        v = vals[i]
        i += 1
        if v <= -ENTER_BASE:
            acts[stack[-1]][2] += 1
            stack.append(len(acts))
            acts.append([-v - ENTER_BASE, [], 0])
        elif v == LEAVE:
            if len(stack) > 1:
                stack.pop()
        elif v == EXC:
            acts[stack[-1]][1] += [EXC, vals[i] if i < len(vals) else -1]
            i += 1
        else:
            acts[stack[-1]][1].append(v)
    return [(f, tuple(own), n) for f, own, n in acts]
