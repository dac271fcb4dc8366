"""Every registered dev set follows the bench README's file formats; the dev-set builders parse right."""

from __future__ import annotations

import functools
import gzip
import json
import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS / "devdata")]
import devsets
import python_stdlib
import wordnet_gcide

README_LEVELS = {"literal", "goal", "definition", "synonym", "option"}
BUILT = [n for n in devsets.NAMES if devsets.kg_file(n).is_relative_to(devsets.DATA)]


def _load(name: str) -> tuple[dict, list[dict]]:
    kg_path, probes_path = devsets.kg_file(name), devsets.probes_file(name)
    if not kg_path.exists() or not probes_path.exists():
        pytest.skip(f"{name}: {kg_path} or {probes_path} is not on this machine")
    return _read(kg_path, probes_path)


@functools.cache  # each file is parsed once for the three checks (go's KG takes ~1 s)
def _read(kg_path: Path, probes_path: Path) -> tuple[dict, list[dict]]:
    opener = gzip.open if kg_path.suffix == ".gz" else open
    with opener(kg_path, "rt", encoding="utf-8") as fh:
        kg = json.load(fh)
    probes = [json.loads(line) for line in probes_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return kg, probes


@pytest.mark.parametrize("name", devsets.NAMES)
def test_kg_follows_the_node_link_format(name):
    kg, _ = _load(name)
    assert kg["format"] == "kgos-node-link/1"
    ids = [n["id"] for n in kg["nodes"]]
    assert len(ids) == len(set(ids)), "node ids are unique"
    assert all(n["name"] and n["type"] and len(n.get("description") or "") <= 1500 for n in kg["nodes"])
    keys = [(e["source"], e["target"], e["type"]) for e in kg["edges"]]
    assert len(keys) == len(set(keys)), "no duplicate edges"
    assert not [k for k in keys if k[0] == k[1]], "no self loops"
    known = set(ids)
    assert all(s in known and t in known for s, t, _ in keys), "every edge endpoint is a node"


@pytest.mark.parametrize("name", devsets.NAMES)
def test_probes_answer_with_nodes_of_their_kg(name):
    kg, probes = _load(name)
    known = {n["id"] for n in kg["nodes"]}
    assert probes
    assert len({p["id"] for p in probes}) == len(probes), "probe ids are unique"
    for p in probes:
        assert p["query"].strip() and p["relevant"], p["id"]
        assert set(p["relevant"]) | set(p.get("lenient", [])) <= known, p["id"]
        assert not set(p["relevant"]) & set(p.get("lenient", [])), p["id"]


@pytest.mark.parametrize("name", BUILT)
def test_built_sets_are_complete_bench_sets(name):
    kg, probes = _load(name)
    assert {"name", "description", "source", "license"} <= set(kg)
    assert all(set(p) == {"id", "query", "relevant", "lenient", "level", "source"} for p in probes)
    assert {p["level"] for p in probes} <= README_LEVELS
    assert len(probes) >= 300 and len(kg["nodes"]) <= 15000
    assert (devsets.DATA / name / "README.md").exists()
    markup = re.compile(r"<(span|em|code|a|p|strong|dl|dt|dd)\b|\{[^}]*\}|\[[a-z][=^~`]\]|&\w+;")
    assert not [p["id"] for p in probes if markup.search(p["query"])], "HTML, GCIDE and entity markup removed"


GCIDE_ONE_SENSE = """   A tool with a semicircular edge, -- used by engravers.
   [1913 Webster]
"""
GCIDE_TWO_SENSES = """   1. The wood of the cork oak. [Obs.]
      [Webster 1913 Suppl.]

   2. Any one of several trees.
      [Webster 1913 Suppl.]
"""
GCIDE_FROM_WORDNET = """   a substance which kills microorganisms.
   [WordNet 1.5]
"""


def test_gcide_definitions_keep_only_single_sense_webster_text():
    assert wordnet_gcide._definition(GCIDE_ONE_SENSE) == "A tool with a semicircular edge, -- used by engravers."
    assert wordnet_gcide._definition(GCIDE_TWO_SENSES) is None
    assert wordnet_gcide._definition(GCIDE_FROM_WORDNET) is None, "WordNet text would leak the node's gloss"
    assert wordnet_gcide._clean("Same as Analyze, Analyzer, etc.") is None


def test_gcide_etymology_running_past_the_header_is_skipped():
    first, body = wordnet_gcide._skip_etymology("Cangue \\Cangue\\, n. [F. cangue,",
                                                "   fr. Pg. canga yoke.]\n   A heavy wooden collar.\n")
    assert body.strip() == "A heavy wooden collar." and first.endswith("yoke.]")


def test_reference_sentences_resolve_to_their_defining_module():
    nodes = {f"py:{q}": {"name": q, "type": t, "description": "", "properties": {"module": m}}
             for q, t, m in [("asyncio", "module", ""), ("asyncio.tasks.create_task", "function", "asyncio.tasks"),
                             ("posixpath.join", "function", "posixpath")]}
    by_leaf = {"create_task": ["py:asyncio.tasks.create_task"], "join": ["py:posixpath.join"]}
    assert python_stdlib.resolve("asyncio.create_task", nodes, by_leaf) == "py:asyncio.tasks.create_task"
    assert python_stdlib.resolve("os.path.join", nodes, by_leaf) == "py:posixpath.join"
    assert python_stdlib.resolve("math.sqrt", nodes, by_leaf) is None
    assert python_stdlib.first_sentence("Join <em>one</em> path, e.g. a file.  Then more.") == \
        "Join one path, e.g. a file."


def test_a_reference_sentence_copied_from_the_docstring_is_recognised():
    assert python_stdlib.copied("Return the absolute path.", "Return the absolute path. Then more text.")
    assert not python_stdlib.copied("Join one or more path segments intelligently.",
                                    "Join two or more pathname components, inserting '/' as needed.")
