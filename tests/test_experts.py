"""Experts: the validated config, the service (CRUD, duplicate, export/import), playbooks, citations
and the retrieval behind a turn — on real SQLite with the demo KGs."""

from __future__ import annotations

import json

import pytest
from conftest import write_nodelink

import kgos
from kgos.data import demo_file, load_demo
from kgos.errors import ConversationNotFound, ExpertExists, ExpertNotFound, InvalidArgument, InvalidConfig
from kgos.experts import EXPORT_FORMAT, ExpertService, merge_patch, parse_config
from kgos.experts.citations import check_citations, citations
from kgos.experts.context import DIMENSION_WEIGHT, SourceNode, assemble_prompt, match_goal, retrieve
from kgos.experts.playbooks import PlaybookLibrary, split_sections


@pytest.fixture
def demo_ws(ws: kgos.Workspace) -> kgos.Workspace:
    load_demo(ws, embedder="hash")
    return ws


@pytest.fixture
def svc(demo_ws: kgos.Workspace) -> ExpertService:
    return ExpertService(demo_ws)


# -- config --------------------------------------------------------------------------------------------
def test_config_defaults_are_the_spec_expert_defaults():
    cfg = parse_config({"name": "Python Expert", "kg_db_id": "python-kg"})
    assert cfg.retrieval.weights() == (0.35, 0.40, 0.15, 0.10)
    assert (cfg.retrieval.limit, cfg.retrieval.expand_depth, cfg.schema_version) == (10, 1, 1)
    assert cfg.retrieval.methods == ["hybrid", "intent"] and cfg.persona.style == "professional"


def test_kg_db_ids_take_precedence_over_kg_db_id():
    cfg = parse_config({"name": "x", "kg_db_id": "a", "kg_db_ids": ["b", "a", "b"]})
    assert cfg.kgs == ("b", "a") and cfg.primary_kg == "a"
    assert parse_config({"name": "x", "kg_db_ids": ["c"]}).primary_kg == "c"


@pytest.mark.parametrize(("patch", "field"), [
    ({"retrieval": {"alpha": -0.1}}, "retrieval.alpha"),
    ({"retrieval": {"alpha": 0, "beta": 0, "gamma": 0, "delta": 0}}, "retrieval"),
    ({"retrieval": {"limit": 0}}, "retrieval.limit"),
    ({"retrieval": {"methods": ["magic"]}}, "retrieval.methods.0"),
    ({"retrieval": {"boost_types": ["enables; DROP TABLE nodes"]}}, "retrieval.boost_types"),
    ({"dimension_filters": {"x'; DROP TABLE nodes; --": {"min": 0.5}}}, "dimension_filters"),
    ({"dimension_filters": {"pricing_tier": {"min": "high"}}}, "dimension_filters.pricing_tier.min"),
    ({"playbook_skills": ["../../etc/passwd"]}, "playbook_skills"),
    ({"persona": {"style": "pirate"}}, "persona.style"),
    ({"kg_db_id": "Not A Name"}, "kg_db_id"),
    ({"surprise": 1}, "surprise"),
    ({"schema_version": 2}, "schema_version"),
    ({"kg_db_id": None}, "(config)"),
    ({"name": "   "}, "name"),
])
def test_invalid_configs_name_the_field(patch, field):
    data = merge_patch({"name": "x", "kg_db_id": "demo"}, patch)
    if "kg_db_id" in patch and patch["kg_db_id"] is None:
        data.pop("kg_db_id", None)
    with pytest.raises(InvalidConfig) as err:
        parse_config(data)
    assert field in err.value.fields and field.split(".")[0] in str(err.value)
    assert err.value.status == 422


def test_merge_patch_is_rfc7396():
    assert merge_patch({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 9, "c": None}, "e": [1]}) == {"a": {"b": 9}, "d": 3, "e": [1]}


# -- service -------------------------------------------------------------------------------------------
def test_create_get_list(svc):
    e = svc.create({"name": "Tax helper!", "kg_db_id": "finance", "persona": {"name": "T"}})
    assert e.id == "expert_tax_helper"
    assert svc.create({"name": "Tax helper!", "kg_db_id": "finance"}).id == "expert_tax_helper_2"
    got = svc.get(e.id).to_dict()
    assert got["persona"]["name"] == "T" and got["created_at"] == got["updated_at"] and got["schema_version"] == 1
    rows = {r.id: r for r in svc.list()}
    assert {"demo", "finance", "expert_tax_helper", "expert_tax_helper_2"} <= set(rows)
    assert rows["expert_tax_helper"].conversation_count == 0 and rows["expert_tax_helper"].last_active is None


def test_create_rejects_missing_kg_and_duplicate_id(svc):
    with pytest.raises(InvalidConfig) as err:
        svc.create({"name": "x", "kg_db_id": "demo", "kg_db_ids": ["demo", "nope"]})
    assert err.value.fields == ["kg_db_ids"] and "nope" in str(err.value) and "known KGs" in str(err.value)
    with pytest.raises(ExpertExists):
        svc.create({"name": "again", "kg_db_id": "demo"}, id="demo")
    with pytest.raises(InvalidArgument):
        svc.create({"name": "x", "kg_db_id": "demo"}, id="../evil")


def test_unknown_expert_lists_known_ones(svc):
    with pytest.raises(ExpertNotFound) as err:
        svc.get("nope")
    assert "demo" in str(err.value) and err.value.status == 404


def test_update_is_partial_and_failed_update_changes_nothing(svc):
    before = svc.get("demo")
    after = svc.update("demo", {"retrieval": {"alpha": 0.3, "delta": 0.2},
                                "dimension_filters": {"implementation_complexity": {"max": 0.8}}})
    r = after.config.retrieval
    assert (r.alpha, r.beta, r.delta, r.limit) == (0.3, before.config.retrieval.beta, 0.2, before.config.retrieval.limit)
    assert after.config.dimension_filters == {"implementation_complexity": {"max": 0.8}}
    assert after.updated_at > before.updated_at and after.created_at == before.created_at
    with pytest.raises(InvalidConfig):
        svc.update("demo", {"retrieval": {"beta": -1}})
    with pytest.raises(InvalidConfig):
        svc.update("demo", {"id": "other"})
    assert svc.get("demo").config == after.config
    removed = svc.update("demo", {"dimension_filters": {"implementation_complexity": None}})
    assert removed.config.dimension_filters == {}


def test_duplicate_with_overrides(svc):
    a = svc.duplicate("demo", "Cookbook (high intent)", {"retrieval": {"delta": 0.3}})
    b = svc.duplicate("demo")
    assert (a.id, b.id) == ("demo_copy_1", "demo_copy_2")
    assert a.config.name == "Cookbook (high intent)" and a.config.retrieval.delta == 0.3
    assert a.config.retrieval.alpha == svc.get("demo").config.retrieval.alpha and b.config.name == svc.get("demo").config.name


def test_export_import_roundtrip_and_replace(svc, demo_ws, tmp_path):
    doc = svc.export("demo")
    assert doc["format"] == EXPORT_FORMAT and "created_at" not in doc["expert"]
    path = tmp_path / "e.json"
    path.write_text(json.dumps(doc))
    copy = svc.import_(json.loads(path.read_text()), id="demo_imported")
    assert copy.config == svc.get("demo").config
    doc["expert"]["name"] = "Renamed"
    assert svc.import_(doc, replace=True).config.name == "Renamed" and svc.get("demo").config.name == "Renamed"
    with pytest.raises(ExpertExists):
        svc.import_(doc)  # same id, no replace
    with pytest.raises(InvalidConfig):
        svc.import_({"format": "something-else/9", "expert": {}})
    with pytest.raises(InvalidConfig):
        svc.import_({**doc, "expert": {**doc["expert"], "schema_version": 7}}, id="x1")
    assert svc.import_(doc["expert"], id="bare").config.name == "Renamed"  # a bare config works too


def test_bundled_demo_experts_are_valid_exports():
    for name in ("demo", "finance"):
        doc = json.loads(demo_file(f"experts/{name}.json").read_text())
        assert doc["format"] == EXPORT_FORMAT and parse_config(doc["expert"]).kgs == (name,)


def test_delete_with_and_without_conversations(svc):
    store = svc.store
    for expert_id in ("demo", "finance"):
        cid, created = store.open_conversation(expert_id, None)
        store.add_messages(cid, [("user", "hi", {}), ("assistant", "hello", {"x": 1})])
        assert created
    assert svc.conversations("demo")["total"] == 1
    assert svc.delete("demo", delete_conversations=True) == {"deleted": True, "conversations_deleted": 1}
    assert svc.store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 2  # finance's two
    assert svc.delete("finance") == {"deleted": True, "conversations_deleted": 0}
    assert svc.store.conn.execute("SELECT count(*) FROM conversations").fetchone()[0] == 1
    with pytest.raises(ExpertNotFound):
        svc.delete("demo")


def test_conversations_are_per_expert(svc):
    cid, _ = svc.store.open_conversation("demo", "conv_1")
    svc.store.add_messages(cid, [("user", "What is batching?", {}), ("assistant", "It is...", {"intent": "x"})])
    conv = svc.conversation("demo", "conv_1").to_dict()
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
    assert conv["messages"][1]["metadata"] == {"intent": "x"} and conv["message_count"] == 2
    page = svc.conversations("demo")
    assert page["conversations"][0]["preview"] == "What is batching?" and page["total"] == 1
    with pytest.raises(ConversationNotFound):
        svc.conversation("finance", "conv_1")
    with pytest.raises(ConversationNotFound):
        svc.store.open_conversation("finance", "conv_1")  # another expert's id is not reusable
    assert svc.delete_conversation("demo", "conv_1") == {"deleted": True}
    with pytest.raises(ConversationNotFound):
        svc.delete_conversation("demo", "conv_1")


# -- playbooks -----------------------------------------------------------------------------------------
def test_sections_split_at_headings_and_mark_the_preamble():
    s = split_sections("p", "# Title\nintro\n\n## Caching\ncache text\n### Deep\ndeep text\n")
    assert [(x.heading, x.text, x.preamble) for x in s] == [
        ("Title", "intro", True), ("Caching", "cache text", False), ("Deep", "deep text", False)]
    assert split_sections("p", "no headings") == [split_sections("p", "no headings")[0]]
    assert split_sections("p", "no headings")[0].heading == "p"


def test_playbooks_only_from_allowed_and_user_folder_wins(tmp_path):
    lib = PlaybookLibrary(tmp_path)
    assert {"cost-optimization", "reliability", "tax-planning"} <= set(lib.names())
    hits = lib.relevant("how do I handle rate limits with 429 errors", ["reliability", "cost-optimization"])
    assert hits[0].playbook == "reliability" and hits[0].heading == "Handle rate limits"
    assert all(h.playbook == "cost-optimization" for h in lib.relevant("rate limits and 429 errors", ["cost-optimization"]))
    assert all(h.playbook == "tax-planning" for h in lib.relevant("rate limits", ["tax-planning"]))
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "reliability.md").write_text("## Rate limits\nOur own rule: queue everything.\n")
    assert lib.relevant("rate limits", ["reliability"])[0].text == "Our own rule: queue everything."
    assert sum(len(h.text) for h in lib.relevant("cost tokens batch cache model", ["cost-optimization"], max_chars=300)) <= 300
    with pytest.raises(InvalidArgument):
        lib.read("../secrets")


# -- citations -----------------------------------------------------------------------------------------
def test_citations_accept_id_name_slug_and_tail():
    n = SourceNode("demo", "feature:prompt_caching", "Prompt caching", "feature", "", 1.0)
    text = ("A [Source: demo:feature:prompt_caching] B [Source: demo:Prompt caching] C [source: demo:prompt_caching; "
            "demo:warp_drive] D [Source: finance:feature:prompt_caching]")
    assert citations(text) == ["demo:feature:prompt_caching", "demo:Prompt caching", "demo:prompt_caching",
                               "demo:warp_drive", "finance:feature:prompt_caching"]
    r = check_citations(text, [n])
    assert r.valid == ("demo:feature:prompt_caching",) and r.unknown == ("demo:warp_drive", "finance:feature:prompt_caching")
    assert r.count == 5 and not r.ok and check_citations("no citations", [n]).to_dict() == {
        "count": 0, "valid": [], "unknown": [], "ok": True}


# -- retrieval and prompt ------------------------------------------------------------------------------------
def test_goal_mapping_matches_words_and_word_starts():
    cfg = parse_config({"name": "x", "kg_db_id": "demo", "custom_goal_mappings": {
        "debug": {"boost_types": ["has_workaround"]}, "cost_cut": {"dimension_boosts": ["pricing_tier"]}}})
    assert match_goal(cfg.custom_goal_mappings, "Help me with debugging this")[0] == "debug"
    assert match_goal(cfg.custom_goal_mappings, "a cost cut plan")[0] == "cost_cut"
    assert match_goal(cfg.custom_goal_mappings, "nothing relevant") is None


def test_retrieve_grounds_the_demo_cost_question(svc, demo_ws):
    ctx = retrieve(demo_ws, svc.get("demo").config, "How do I reduce my API costs?")
    ids = [n.id for n in ctx.nodes]
    assert "feature:batch_api" in ids[:3] and len(ids) == svc.get("demo").config.retrieval.limit
    assert ctx.intent == "cost_optimization" and all(n.db_id == "demo" for n in ctx.nodes)
    assert any(e.type in ("optimizes", "enables") for e in ctx.edges)
    prompt = assemble_prompt(svc.get("demo").config, ctx)
    for section in ("[Knowledge Graph Context]", "Relationships:", "[Citation Instructions]", "Cookbook"):
        assert section in prompt
    assert "[Source: demo:feature:batch_api]" in prompt


def test_dimension_filters_restrict_context(svc, demo_ws):
    cfg = svc.update("demo", {"dimension_filters": {"implementation_complexity": {"max": 0.3}}}).config
    ctx = retrieve(demo_ws, cfg, "How do I reduce my API costs?")
    nodes = demo_ws.kg("demo").store.get_nodes([n.id for n in ctx.nodes])
    assert ctx.nodes and all(nodes[n.id].properties["implementation_complexity"] <= 0.3 for n in ctx.nodes)
    assert "[Dimension Hints]" in assemble_prompt(cfg, ctx)


def test_goal_mapping_dimension_boost_adds_its_weight(svc, demo_ws):
    base = svc.get("demo").config
    plain = retrieve(demo_ws, base.model_copy(update={"custom_goal_mappings": {}}), "fix the stream errors")
    boosted_cfg = parse_config(merge_patch(base.model_dump(mode="json"), {"custom_goal_mappings": {
        "fix": {"dimension_boosts": ["error_handling_need"]}}}))
    boosted = retrieve(demo_ws, boosted_cfg, "fix the stream errors")
    assert boosted.goal == "fix"
    props = demo_ws.kg("demo").store.get_nodes([n.id for n in plain.nodes])
    before = {n.id: n.score for n in plain.nodes}
    for n in boosted.nodes:
        if n.id in before:
            value = props[n.id].properties.get("error_handling_need", 0.0) if n.id in props else 0.0
            assert n.score == pytest.approx(before[n.id] + DIMENSION_WEIGHT * value, abs=1e-6)


def test_hybrid_only_expert_runs_no_method_routes(svc, demo_ws):
    cfg = svc.update("demo", {"retrieval": {"methods": ["hybrid"]}}).config
    ctx = retrieve(demo_ws, cfg, "read CSV data, analyze trends, and generate a report")
    assert ctx.plan == () and ctx.nodes
    full = retrieve(demo_ws, svc.update("demo", {"retrieval": {"methods": ["hybrid", "intent"]}}).config,
                    "read CSV data, analyze trends, and generate a report")
    assert [s.node.id for s in full.plan] == ["tool:csv_reader", "tool:trend_analysis", "tool:report_generator"]


def test_multi_kg_expert_merges_by_name_with_source_kg(ws, tmp_path):
    a = [{"id": "a1", "name": "Connection pooling", "type": "pattern", "description": "Reuse connections to the database."},
         {"id": "a2", "name": "Thread pool", "type": "pattern", "description": "Reuse threads."}]
    b = [{"id": "b1", "name": "Connection Pooling", "type": "pattern", "description": "Pool database connections."},
         {"id": "b2", "name": "pgbouncer", "type": "tool", "description": "A connection pooler for PostgreSQL."}]
    ws.import_file("kg-a", write_nodelink(tmp_path / "a.json", a, [{"source": "a1", "target": "a2", "type": "relates_to"}]))
    ws.import_file("kg-b", write_nodelink(tmp_path / "b.json", b, [{"source": "b2", "target": "b1", "type": "implements"}]))
    cfg = ExpertService(ws).create({"name": "Pools", "kg_db_id": "kg-a", "kg_db_ids": ["kg-a", "kg-b"]}).config
    ctx = retrieve(ws, cfg, "connection pooling")
    names = [kgos.model.normalize_name(n.name) for n in ctx.nodes]
    assert names.count("connection pooling") == 1 and {n.db_id for n in ctx.nodes} == {"kg-a", "kg-b"}
    assert any(n.id == "b2" and n.db_id == "kg-b" for n in ctx.nodes)
