"""spec/000's worked examples on the demo KG (kgos/data/demo/README.md lists the nodes that carry
them): the cost goal, capability questions, the CSV -> trends -> report plan, the auth impact and
the prompt caching -> cost reduction trace."""

from __future__ import annotations

import pytest

import kgos
from kgos.data import load_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    ws = kgos.Workspace(tmp_path_factory.mktemp("demo") / "home")
    load_demo(ws, embedder=None)
    yield ws.kg("demo")
    ws.close()


def ids(refs) -> list[str]:
    return [r.id if hasattr(r, "id") else r.node.id for r in refs]


def test_cost_goal_surfaces_caching_and_batching(demo):
    found = ids(demo.want_to("I want to reduce my API costs", k=10).results)
    assert found[0] == "goal:cost_reduction"
    assert "feature:batch_api" in found[:3] and "feature:prompt_caching" in found
    assert any("cach" in i for i in found) and sum("batch" in i for i in found) >= 2
    caching = next(h for h in demo.want_to("I want to reduce my API costs").results if h.node.id == "feature:prompt_caching")
    assert [s.node.id for s in caching.path] == ["feature:prompt_caching", "benefit:token_savings", "goal:cost_reduction"]
    routed = demo.intent_search("I want to reduce my API costs")
    assert routed.intent.category == "cost_optimization" and routed.routes == ("want_to",)
    top = ids(routed.nodes)
    assert "feature:batch_api" in top and any("cach" in i for i in top)


CAPABILITIES = [
    ("can it process images?", "feature:vision_input",
     {"limitation:image_size_limits", "limitation:image_token_cost", "limitation:weak_spatial_precision"},
     {"workaround:downscale_images", "workaround:crop_and_tile_images", "workaround:pair_with_ocr"},
     {"step:encode_image", "concept:messages_api"}),
    ("can it return structured JSON?", "feature:structured_output",
     {"limitation:json_schema_subset_only", "limitation:truncated_output"},
     {"workaround:simplify_schema", "workaround:validate_and_retry", "workaround:continue_truncated_output"},
     {"concept:json_schema"}),
    ("can it read PDFs?", "feature:pdf_input",
     {"limitation:pdf_page_and_size_limits", "limitation:scanned_pdf_quality", "limitation:image_token_cost"},
     {"workaround:split_pdf", "workaround:ocr_preprocessing", "workaround:extract_text_locally"}, set()),
    ("can it edit binary files?", "capability:binary_file_editing", {"limitation:text_only_io"},
     {"workaround:edit_binary_via_code", "workaround:base64_roundtrip"},
     {"feature:code_execution_tool", "feature:files_api"}),
]


@pytest.mark.parametrize("question, node, limitations, workarounds, prerequisites", CAPABILITIES)
def test_capability_questions(demo, question, node, limitations, workarounds, prerequisites):
    r = demo.can_it(question)
    assert (r.status, r.node.id) == ("yes_with_limitations", node)
    assert {l.node.id for l in r.limitations} == limitations
    assert workarounds <= set(ids(r.workarounds))
    assert prerequisites <= set(ids(r.prerequisites))


def test_capability_blocked_and_unknown(demo):
    assert demo.can_it("does it support zero data retention?").status == "no"
    assert demo.can_it("can it bake a cake?").status == "unknown"
    assert demo.why_not("feature:zero_data_retention").conflicts[0].id == "feature:files_api"


def test_csv_trends_report_plan(demo):
    plan = demo.compose_for("read CSV data, analyze trends and generate a report")
    assert ids(plan.steps) == ["tool:csv_reader", "tool:trend_analysis", "tool:report_generator"]
    assert [(x.type, x.status) for x in plan.edges] == [("feeds_into", "direct"), ("feeds_into", "direct")]
    assert plan.valid and not plan.conflicts
    assert {"step:file_upload", "feature:code_execution_tool", "feature:files_api"} <= set(ids(plan.prerequisites))


def test_conflicting_plan_offers_the_alternative(demo):
    plan = demo.compose_for("paste data into the prompt and analyze trends")
    assert ids(plan.steps) == ["tool:inline_data_paste", "tool:trend_analysis"]
    assert [(c.source, c.target) for c in plan.conflicts] == [("tool:inline_data_paste", "tool:trend_analysis")]
    assert ("tool:inline_data_paste", "tool:csv_reader") in [(a.for_step, a.node.id) for a in plan.alternatives]
    assert not plan.valid and plan.warnings


def test_trace_prompt_caching_to_cost_reduction(demo):
    r = demo.trace_path("prompt_caching", "cost_reduction")
    assert (r.found, r.length) == (True, 2)
    assert [(s.node.id, s.edge_type, s.direction) for s in r.path] == [
        ("feature:prompt_caching", None, None), ("benefit:token_savings", "enables", "forward"),
        ("goal:cost_reduction", "contributes_to", "forward")]


def test_auth_impact(demo):
    r = demo.impact_analysis("concept:api_key_authentication", direction="backward", max_depth=3)
    assert r.counts_by_depth == {1: 16, 2: 38, 3: 53} and r.total_impacted == 107
    assert "concept:messages_api" in ids(r.risk_by_depth[1])
    assert r.critical_path[0].id == "concept:api_key_authentication" and len(r.critical_path) == 4
    assert "requires" in r.edge_types_traversed
    routed = demo.intent_search("what breaks if I change the authentication?")
    assert routed.routes == ("impact_analysis",) and routed.impact.node.id == "concept:api_key_authentication"


def test_comparisons(demo):
    alts = demo.alternatives("feature:streaming")
    assert ("feature:batch_api", "alternative_to") in [(a.node.id, a.edge_type) for a in alts.explicit]
    assert "technique:response_caching" in ids(demo.alternatives("feature:prompt_caching").explicit)
    assert demo.similar_to("technique:model_routing", k=20).results  # structural twins exist
    assert demo.intent_search("alternatives to streaming").similar.node.id == "feature:streaming"


def test_explore_and_dimensions(demo):
    tree = demo.explore_smart("feature:prompt_caching", depth=2)
    assert tree.levels[1].count == 23 and tree.hubs
    cheap = demo.dimension_filter({"pricing_tier": {"max": 0.3}, "batch_suitability": {"min": 0.7}})
    assert "feature:batch_api" in ids(cheap.results)
