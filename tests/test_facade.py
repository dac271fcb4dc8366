"""The facade's sub-objects: ``kg.methods`` (kgos.kg.queries) and ``kg.analytics`` (kgos.kg.analytics),
each a small class in its own module; ``KG`` keeps reading, writing, search and the query methods'
names (which call ``kg.methods``)."""

from __future__ import annotations

import pytest

import kgos
from kgos.data import load_demo
from kgos.kg.analytics import Analytics
from kgos.kg.queries import QueryMethods


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> kgos.KG:
    ws = kgos.Workspace(tmp_path_factory.mktemp("facade") / "home")
    load_demo(ws, embedder=None)
    yield ws.kg("demo")
    ws.close()


def test_the_sub_objects_are_typed_and_made_once(demo: kgos.KG) -> None:
    assert isinstance(demo.methods, QueryMethods) and demo.methods is demo.methods
    assert isinstance(demo.analytics, Analytics) and demo.analytics is demo.analytics


def test_the_kg_names_give_what_the_sub_object_gives(demo: kgos.KG) -> None:
    assert demo.want_to("reduce my API costs", k=3) == demo.methods.want_to("reduce my API costs", k=3)
    assert demo.trace_path("prompt_caching", "cost_reduction") == demo.methods.trace_path("prompt_caching",
                                                                                          "cost_reduction")


def test_analytics_left_the_facade(demo: kgos.KG) -> None:
    for name in ("centrality", "bottlenecks", "communities", "gaps"):
        assert not hasattr(kgos.KG, name)
    assert demo.analytics.centrality("degree", k=1).results


def test_embedding_is_a_sub_object_the_kg_names_call(tmp_path) -> None:
    from kgos.kg.vectors import Embedding
    ws = kgos.Workspace(tmp_path / "home")
    kg = ws.create("e")
    kg.add_node("Prompt caching", type="feature")
    assert isinstance(kg.embedding, Embedding) and kg.embedding is kg.embedding
    report = kg.embed("hash:16")
    assert report.embedded == 1 and kg.embedding.embed_status().search_model == "hash:16"
    assert kg.embedding_models() == kg.embedding.embedding_models() == {"hash-16": 1}


def test_dimensions_is_a_sub_object_that_still_reads_a_node_when_called(tmp_path) -> None:
    from kgos.kg.dimensions import Dimensions
    kg = kgos.Workspace(tmp_path / "home").create("d")
    node = kg.add_node("Batch API", type="feature")
    assert isinstance(kg.dimensions, Dimensions)
    kg.dimensions.set(node.id, {"pricing_tier": 0.2})
    assert kg.dimensions(node.id) == kg.dimensions.of("Batch API")
    assert [m.node.id for m in kg.dimensions.filter({"pricing_tier": {"max": 0.3}}).results] == [node.id]
