"""A process pool: the workers' work is recorded too (`wholetrace record examples/pool.py`)."""

import multiprocessing as mp


def score(word: str) -> int:
    total = 0
    for ch in word:
        if ch in "aeiou":
            total += 3
        else:
            total += 1
    return total


if __name__ == "__main__":
    words = ["recording", "whole", "programs", "with", "child", "processes"] * 20
    with mp.get_context("fork").Pool(2) as pool:
        print("total score", sum(pool.map(score, words, chunksize=10)))
        pool.close()
        pool.join()
