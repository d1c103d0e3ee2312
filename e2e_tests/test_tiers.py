"""`./dev test`'s part of the long matrices still meets every grad_input
form and every GPU target (`tiers`)."""

from __future__ import annotations

from . import test_e2e, tiers
from .harness import EXECUTABLE_FORMATS


def _kept(params) -> list[tuple]:
    return [param.values for param in params if not any(mark.name == tiers.LONG.name for mark in param.marks)]


def test_in_turn_cycles_through_the_choices_on_every_kept_case():
    assert [tiers.in_turn("abc", index) for index in range(5)] == ["a", "b", "c", "a", "b"]
    assert [tiers.in_turn("ab", index, every=2) for index in range(6)] == ["a", None, "b", None, "a", None]


def test_every_form_and_target_keeps_cases_in_dev_test():
    forms = _kept(test_e2e._in_turn(test_e2e.STRIDED, test_e2e.FORMS))
    assert {form for _, form in forms} == set(test_e2e.FORMS)
    assert len(forms) == len(test_e2e.STRIDED)
    pairs = [(form, target) for form in test_e2e.FORMS for target in EXECUTABLE_FORMATS]
    compiled = _kept(test_e2e._in_turn(test_e2e.STRIDED, pairs, every=2))
    assert {(form, target) for _, form, target in compiled} == set(pairs)
    targets = _kept(test_e2e._in_turn(list(test_e2e.CASES), list(EXECUTABLE_FORMATS), every=2))
    assert {target for _, target in targets} == set(EXECUTABLE_FORMATS)


def test_first_marks_all_but_the_first_draws_long():
    params = tiers.first(["a", "b", "c"], 2, ["x", "y", "z"])
    assert _kept(params) == [("a",), ("b",)]
    assert [param.id for param in params] == ["x", "y", "z"]
