"""Deck files: how long checking a large file takes, and how fast aliases are refused.

    DJANGO_SETTINGS_MODULE=studyapp.settings python -m benchmarks.bench_decks [--cards 5000]

Prints the time to load and validate a synthetic deck file of ``--cards`` entries
(recall cards with inline math, and exercise cards), per card, and the time to refuse
a sub-kilobyte YAML alias bomb. No database writes: validation is the part that
grows with the file. Not part of the test run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import django


def _document(cards: int) -> dict:
    entries = []
    for i in range(cards):
        if i % 10 == 9:
            entries.append(
                {
                    "key": f"exercise-{i}",
                    "kind": "exercise",
                    "prompt": f"Exercise {i}: one head by hand.",
                    "answer": "",
                    "tags": ["exercise"],
                    "exercise": {"kind": "attention", "params": {"n": 3, "mask": "causal"}},
                }
            )
        else:
            entries.append(
                {
                    "key": f"card-{i}",
                    "kind": "recall",
                    "prompt": f"Card {i}: the shape of $QK^\\top$ for $n = {i}$ tokens?",
                    "answer": f"$({i}, {i})$: one score per query-key pair.",
                    "tags": ["shapes", f"t{i % 7}"],
                }
            )
    return {"format": 1, "deck": {"slug": "bench", "title": "Bench"}, "cards": entries}


ALIAS_BOMB = "format: 1\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10)
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    django.setup()
    from cards.decks import DeckFileError, deck_dump, deck_load, deck_validate

    text = deck_dump(_document(args.cards), fmt="yaml")
    load, check = [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        document = deck_load(text, name="bench.yaml")
        loaded = time.perf_counter()
        spec = deck_validate(document)
        load.append(loaded - started)
        check.append(time.perf_counter() - loaded)
    assert len(spec.cards) == args.cards
    print(f"deck file of {args.cards} cards, {len(text) / 1e6:.2f} MB of YAML")
    print(f"  load      median {statistics.median(load):7.3f} s")
    print(
        f"  validate  median {statistics.median(check):7.3f} s "
        f"({1e6 * statistics.median(check) / args.cards:.0f} us per card)"
    )

    refused = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        try:
            deck_load(ALIAS_BOMB, name="bomb.yaml")
        except DeckFileError:
            refused.append(time.perf_counter() - started)
    assert len(refused) == args.repeat, "the alias bomb was not refused"
    print(
        f"alias bomb of {len(ALIAS_BOMB)} bytes (9**10 strings if expanded): refused in "
        f"{1e3 * statistics.median(refused):.2f} ms"
    )


if __name__ == "__main__":
    main()
