"""Example program for the demo: diff two revisions of a text with the standard library's difflib.

Run it plain (``python examples/textdiff.py``) or recorded, with difflib itself instrumented:
``wholetrace record --include difflib examples/textdiff.py``.
"""

import difflib
import random


def make_text(seed: int, lines: int = 400) -> list[str]:
    rng = random.Random(seed)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))) + "\n" for _ in range(lines)]


def revise(text: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    out = list(text)
    for _ in range(len(out) // 10):
        i = rng.randrange(len(out))
        action = rng.random()
        if action < 0.4:
            del out[i]
        elif action < 0.8:
            out.insert(i, "inserted " + out[i])
        else:
            out[i] = out[i].upper()
    return out


def main() -> None:
    old = make_text(1)
    new = revise(old, 2)
    diff = list(difflib.unified_diff(old, new, "old.txt", "new.txt", n=2))
    ratio = difflib.SequenceMatcher(None, old, new).ratio()
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    print(f"{len(diff)} diff lines: +{added} -{removed}, similarity {ratio:.3f}")


if __name__ == "__main__":
    main()
