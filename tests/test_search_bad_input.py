"""Issue 13, bad input for search: a KG with no descriptions, one-character names, names that are all
stopwords, duplicate names, 10,000 aliases on one node, non-Latin text (CJK, Arabic, emoji) and a query
longer than the model's token cap give a sensible result through Python, HTTP and the CLI, never a
traceback.

"Sensible": a query that is a node's name ranks that node (or one of the nodes sharing the name) first;
a query that matches nothing returns a (possibly empty) ranked list with finite scores; a query over
the HTTP size limit is a 422 naming the limit.
"""

from __future__ import annotations

import json
import math

import pytest
from api_helpers import client, error
from click.testing import CliRunner
from conftest import write_nodelink

import kgos
from kgos.cli import cli

NODES = [  # not one description: names (and aliases) are all the text there is
    {"id": "a", "name": "a", "type": "letter"},
    {"id": "x", "name": "x", "type": "letter"},
    {"id": "seven", "name": "7", "type": "digit"},
    {"id": "who", "name": "the who", "type": "band"},  # every word a stopword
    {"id": "of", "name": "of", "type": "word"},
    {"id": "tokyo1", "name": "Tokyo", "type": "city"},  # three nodes share one name
    {"id": "tokyo2", "name": "Tokyo", "type": "city"},
    {"id": "tokyo3", "name": "tokyo", "type": "city"},
    {"id": "jp", "name": "東京", "type": "city"},
    {"id": "zh", "name": "北京烤鸭", "type": "dish"},
    {"id": "ar", "name": "القاهرة", "type": "city"},
    {"id": "rocket", "name": "🚀", "type": "emoji"},  # no word character at all
    {"id": "launch", "name": "rocket launch 🚀🔥", "type": "event"},
    {"id": "many", "name": "many", "type": "thing",
     "properties": {"aliases": [f"alias number {i}" for i in range(10_000)]}},
]
EDGES = [{"source": "tokyo1", "target": "jp", "type": "relates_to"},
         {"source": "launch", "target": "rocket", "type": "relates_to"}]

# query -> the ids any of which must come first
NAMED = [("a", {"a"}), ("x", {"x"}), ("7", {"seven"}), ("the who", {"who"}), ("of", {"of"}),
         ("TOKYO", {"tokyo1", "tokyo2", "tokyo3"}), ("東京", {"jp"}), ("北京烤鸭", {"zh"}), ("القاهرة", {"ar"}),
         ("🚀", {"rocket"}), ("rocket launch", {"launch"}), ("alias number 999", {"many"}),
         ("alias number 5", {"many"}), ("many", {"many"})]
# queries that name nothing: a ranked list (maybe empty), no error
UNMATCHED = ["the", "???", "🔥", "\u200b", "a\x00b", "مرحبا بالعالم", "😀😀😀"]
LONG = " ".join(["cache"] * 20_000)  # far beyond any model's token cap (MiniLM: 128 here, 512 at most)
HTTP_LONG = " ".join(["prompt caching cost"] * 500)  # 9,999 characters: under the HTTP limit, over the cap


def sensible(hits: list[dict]) -> None:
    assert all(math.isfinite(h["score"]) for h in hits), hits
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A workspace with the odd KG twice: ``odd`` embedded (hash), ``plain`` never embedded."""
    folder = tmp_path_factory.mktemp("bad")
    ws = kgos.Workspace(folder / "home")
    path = write_nodelink(folder / "odd.json", NODES, EDGES, name="odd")
    ws.import_file("odd", path)
    ws.kg("odd").embed("hash")
    ws.import_file("plain", path)
    ws.close()
    return folder / "home"


@pytest.fixture(scope="module")
def ws(home):
    w = kgos.Workspace(home)
    yield w
    w.close()


# -- Python ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("db_id", ["odd", "plain"])
@pytest.mark.parametrize(("query", "expected"), NAMED, ids=[q for q, _ in NAMED])
def test_a_name_ranks_its_node_first(ws, db_id, query, expected):
    res = ws.kg(db_id).search(query, k=5)
    assert res.results and res.results[0].node.id in expected, [h.node.id for h in res.results]


@pytest.mark.parametrize("db_id", ["odd", "plain"])
@pytest.mark.parametrize("query", UNMATCHED + [LONG])
def test_a_query_that_names_nothing_gives_a_ranked_list(ws, db_id, query):
    res = ws.kg(db_id).search(query, k=5)
    sensible([h.to_dict() for h in res.results])


@pytest.mark.parametrize("db_id", ["odd", "plain"])
def test_an_alias_past_the_name_cap_is_still_found_by_its_words(ws, db_id):
    """The name index keeps a node's first 1,000 aliases (index.names.MAX_ALIASES); the 10,000th is no
    name any more, but the text signal still finds the one node that contains its words."""
    ids = [h.node.id for h in ws.kg(db_id).search("alias number 9999", k=3).results]
    assert "many" in ids, ids


def test_every_node_of_the_embedded_kg_has_a_vector(ws):
    """An emoji-only name has no token any model knows; it still gets a vector, so search does not warn
    "no vector yet ... kgos embed embeds them" about a node re-embedding could never change."""
    res = ws.kg("odd").search("rocket", k=3)
    assert res.warnings == ()
    assert not any(h.missing_signals for h in res.results)


def test_the_unembedded_kg_says_why_the_ranking_is_weaker(ws):
    res = ws.kg("plain").search("rocket launch", k=3)
    assert res.results[0].node.id == "launch"
    assert any("kgos embed plain" in w for w in res.warnings)


def test_an_empty_or_blank_query_is_a_clear_error(ws):
    for query in ("", "   ", "\n\t"):
        with pytest.raises(kgos.errors.InvalidArgument, match="query is empty"):
            ws.kg("odd").search(query)


# -- HTTP ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api(home):
    with client(home) as c:
        yield c


@pytest.mark.parametrize(("query", "expected"), NAMED, ids=[q for q, _ in NAMED])
def test_http_a_name_ranks_its_node_first(api, query, expected):
    r = api.post("/api/kg/odd/search", json={"query": query, "k": 5})
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["node"]["id"] in expected


@pytest.mark.parametrize("query", UNMATCHED + [HTTP_LONG])
def test_http_a_query_that_names_nothing_gives_a_ranked_list(api, query):
    r = api.post("/api/kg/odd/search", json={"query": query, "k": 5})
    assert r.status_code == 200, r.text
    sensible(r.json()["results"])


def test_http_too_long_or_blank_queries_are_422_not_500(api):
    body = error(api.post("/api/kg/odd/search", json={"query": LONG}), 422)
    assert "10000" in body["detail"] or "10,000" in body["detail"]
    error(api.post("/api/kg/odd/search", json={"query": "  "}), 422)
    r = api.post("/api/search", json={"db_ids": ["odd", "plain"], "query": "東京", "k": 3})
    assert r.status_code == 200 and r.json()["results"][0]["node"]["id"] == "jp"


# -- CLI -------------------------------------------------------------------------------------------
def cli_search(home, query: str, *more: str):
    return CliRunner().invoke(cli, ["--home", str(home), "search", "odd", query, "-k", "5", *more])


@pytest.mark.parametrize(("query", "expected"), [("a", {"a"}), ("the who", {"who"}), ("TOKYO", {"tokyo1", "tokyo2", "tokyo3"}),
                                                 ("東京", {"jp"}), ("القاهرة", {"ar"}), ("🚀", {"rocket"}),
                                                 ("alias number 999", {"many"})])
def test_cli_a_name_ranks_its_node_first(home, query, expected):
    result = cli_search(home, query, "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout)["results"][0]["node"]["id"] in expected


@pytest.mark.parametrize("query", ["the", "🔥", "\u200b", LONG])
def test_cli_a_query_that_names_nothing_prints_a_ranked_list(home, query):
    for fmt in ("--json", "--plain", None):
        result = cli_search(home, query, *([fmt] if fmt else []))
        assert result.exit_code == 0, (fmt, result.output, result.exception)
        assert "Traceback" not in result.output
    sensible(json.loads(cli_search(home, query, "--json").stdout)["results"])


def test_cli_a_blank_query_is_one_line_not_a_traceback(home):
    result = cli_search(home, "  ")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "query is empty" in result.output


# -- the real model's token cap (slow: loads MiniLM) -----------------------------------------------
@pytest.mark.slow
def test_a_query_longer_than_minilms_token_cap(tmp_path):
    from kgos.embed.registry import get_embedder
    try:
        get_embedder("minilm")
    except kgos.errors.KGOSError as exc:  # the model package is not installed
        pytest.skip(str(exc))
    ws = kgos.Workspace(tmp_path / "home")
    ws.import_file("odd", write_nodelink(tmp_path / "odd.json", NODES, EDGES))
    kg = ws.kg("odd")
    kg.embed("minilm")
    res = kg.search(LONG + " rocket launch", k=5)
    sensible([h.to_dict() for h in res.results])
    assert kg.search("🚀", k=3).results[0].node.id == "rocket" and kg.search("東京", k=3).results[0].node.id == "jp"
    ws.close()
