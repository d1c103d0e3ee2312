"""Which part of each long test matrix `./dev test` runs.

The e2e matrices (every grad_input form of every strided case, every case
for every GPU target, the random sweep, the random networks, the split-K
forms) take most of the suite's time, nearly all of it in iree-compile.
`./dev test`, which CI runs on two cores, takes a part of each: every case
(or every other one) in one of its forms or targets, in turn, so that each
form and each target still meets some of the cases, and the first draws of
each random matrix. The rest is marked `long` and runs with `./dev test --full`
(the root conftest deselects it otherwise).
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence, TypeVar

import pytest

LONG = pytest.mark.long

# Of the seeded random matrices, the draws `./dev test` runs.
SWEEP_CASES = 24
SWEEP_GPU_CASES = 8
NETWORK_ENSEMBLES = 2

T = TypeVar("T")


def in_turn(choices: Sequence[T], index: int, every: int = 1) -> T | None:
    """The one of `choices` that the index-th case takes in `./dev test`:
    each in turn, on every `every`-th case only (None on the others)."""
    if index % every:
        return None
    return choices[index // every % len(choices)]


def param(*values: object, long: bool, id: str | None = None, marks: Sequence = ()) -> object:
    """A parametrization, marked `long` where `./dev test` leaves it out."""
    return pytest.param(*values, id=id, marks=[*marks, *([LONG] if long else [])])


def each_in_turn(names: Sequence[str], choices_of: Callable[[str], Sequence], every: int = 1,
                 marks_of: Callable[[str], Sequence] = lambda name: ()) -> Iterator[object]:
    """(name, *choice) for every name and each of its choices (a value or a
    tuple), as parametrizations; `./dev test` keeps one choice in turn of
    every `every`-th name's."""
    for index, name in enumerate(names):
        choices = choices_of(name)
        kept = in_turn(choices, index, every)
        for choice in choices:
            values = choice if isinstance(choice, tuple) else (choice,)
            yield param(name, *values, long=choice != kept, id="-".join((name, *map(str, values))),
                        marks=marks_of(name))


def first(values: Sequence[T], count: int, ids: Sequence[str]) -> list:
    """`values` as parametrizations, all but the first `count` marked `long`."""
    return [param(value, long=index >= count, id=name) for index, (value, name) in enumerate(zip(values, ids))]
