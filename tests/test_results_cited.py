"""benchmarks/results/ holds the files the docs cite, and no others: a
result stays only while a current doc (or the journal) names it."""

from __future__ import annotations

import fnmatch
import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_QUOTED = re.compile(r"`([^`\s]+)`")
_DATED = re.compile(r"^(?:.*/)?([\w*.-]*?_)(\d{4}-\d\d-\d\d)([a-z]?)(\.\w+)$")
_SEPARATOR = re.compile(r"[\s,/()]*(?:and|or)?[\s,/()]*$")


def _expanded(token: str) -> list[str]:
    """`x_{a,b}_y` as x_a_y and x_b_y, for every brace group."""
    parts = re.split(r"\{([^{}]*)\}", token)
    choices = [[part] if i % 2 == 0 else part.split(",") for i, part in enumerate(parts)]
    return ["".join(chosen) for chosen in itertools.product(*choices)]


def cited(text: str) -> tuple[set[str], list[str]]:
    """The file names a text quotes in backquotes (braces expanded:
    `x_2026-11-26{a,b}.json`), and its globs. A quoted short form right
    after a dated name is another file of it: a run's letter (`b`,
    `c.txt`) or a companion's infix (`..._gpu_...` for x_gpu_<date>)."""
    names: set[str] = set()
    globs: list[str] = []
    last, last_end = None, -1
    for m in _QUOTED.finditer(text):
        token = m.group(1)
        follows = last is not None and _SEPARATOR.match(text[last_end:m.start()])
        short = re.fullmatch(r"([a-z])(\.\w+)?", token)
        infix = re.fullmatch(r"(?:\.\.\.)?_(\w+?)_(?:\.\.\.)?", token)
        if follows and (short or infix):
            stem, date, runs, ext = last
            if short:
                names.add(f"{stem}{date}{short.group(1)}{short.group(2) or ext}")
            else:
                names.update(f"{stem}{infix.group(1)}_{date}{run}{ext}" for run in {*runs, ""})
            last_end = m.end()
            continue
        last = None
        expanded = [name.rsplit("/", 1)[-1] for name in _expanded(token)]
        names.update(expanded)
        globs.extend(name for name in expanded if "*" in name and "_" in name)
        dated = [_DATED.match(name) for name in expanded]
        if dated and all(dated):
            stem, date, _, ext = dated[0].groups()
            last, last_end = (stem, date, [d.group(3) for d in dated], ext), m.end()
    return names, globs


def uncited(files: list[str], text: str) -> list[str]:
    names, globs = cited(text)
    stems = {name.rsplit(".", 1)[0] for name in names}
    return [f for f in files if f not in names and f.rsplit(".", 1)[0] not in stems
            and not any(fnmatch.fnmatch(f, g) or fnmatch.fnmatch(f, g + "*") for g in globs)]


def test_citations_are_read_in_every_form_the_docs_use():
    text = ("(`a_2026-11-26{a,b}.json`, `..._gpu_...`), `b_2026-11-24a.json`/`b`, `c_2026-11-25d.txt`, "
            "`e.txt`; `d_{x,y}_2026-11-25.json`, `results/f_*`, `g_2026-11-27.json` alone, `h`")
    assert uncited(["a_2026-11-26a.json", "a_2026-11-26b.json", "a_gpu_2026-11-26a.json", "a_gpu_2026-11-26.json",
                    "b_2026-11-24b.json", "c_2026-11-25e.txt", "d_x_2026-11-25.json", "d_y_2026-11-25.json",
                    "f_2026-11-20.md", "g_2026-11-27.json"], text) == []
    assert uncited(["a_2026-11-26c.json", "g_2026-11-27h.json", "b_2026-11-24c.json"], text) == [
        "a_2026-11-26c.json", "g_2026-11-27h.json", "b_2026-11-24c.json"]


def test_every_results_file_is_cited_by_a_doc():
    docs = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    files = sorted(p.name for p in (ROOT / "benchmarks" / "results").iterdir())
    assert uncited(files, docs) == [], "cite these in docs/ or delete them"
