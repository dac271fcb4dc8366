"""The 8-intent regex cascade of spec/001 1.3, the 5x keywords and the weight precedence."""

from __future__ import annotations

import pytest

from kgos.errors import InvalidArgument
from kgos.retrieval import intents as I
from kgos.retrieval.hybrid import SearchOptions, choose_weights, parse_weights

CASES = [
    ('"context caching"', "exact_match"), ("GeminiService", "exact_match"), ("node-type", "exact_match"),
    ("config.py", "exact_match"), ("snake_case", "exact_match"),
    ("fix the crash in streaming", "debugging"), ("error when uploading", "debugging"),
    ("Traceback in my agent", "debugging"),
    ("can it handle PDF?", "capability_check"), ("does Gemini support tool use?", "capability_check"),
    ("is claude able to read images", "capability_check"),
    ("how to build a pipeline", "workflow"), ("step by step caching", "workflow"),
    ("automate my reports", "workflow"), ("how do I chain prompts", "workflow"),
    ("Claude vs Gemini for coding", "comparison"), ("which is better for RAG?", "comparison"),
    ("alternative to fine tuning", "comparison"),
    ("I want to reduce API costs", "goal_based"), ("improve search quality", "goal_based"),
    ("maximize throughput", "goal_based"),
    ("list all tools", "exploratory"), ("show me embedding options", "exploratory"),
    ("tell me about agents", "exploratory"), ("overview of caching", "exploratory"),
]


@pytest.mark.parametrize("query,intent", CASES)
def test_cascade_by_pattern_family(query, intent):
    got = I.classify(query)
    assert (got.name, got.source) == (intent, "pattern")


def test_cascade_order_first_match_wins():
    # debugging outranks goal_based: "fix" and "reduce" both match
    assert I.classify("fix and reduce latency").name == "debugging"
    # capability_check outranks workflow
    assert I.classify("can it automate the pipeline").name == "capability_check"


def test_length_heuristic_and_default():
    long = "I'm building a system that needs to process large documents and extract entities from them"
    assert (I.classify(long).name, I.classify(long).source) == ("semantic", "length")
    assert (I.classify("apoptosis").name, I.classify("apoptosis").source) == ("goal_based", "default")


def test_keyword_weights():
    assert I.keyword_weight("reduce", "goal_based") == 5.0
    assert I.keyword_weight("crashes", "debugging") == 5.0
    assert I.keyword_weight("tokens", "goal_based") == 1.0
    assert I.keyword_weight("reduce", "exact_match") == 1.0


def test_weight_precedence():
    pattern, default = I.classify("I want to reduce API costs"), I.classify("apoptosis")
    opts, spec = SearchOptions(), SearchOptions(profiles="spec")
    assert choose_weights(parse_weights("1,1,0,0"), pattern, "hybrid", opts).as_tuple() == (0.5, 0.5, 0.0, 0.0)
    assert choose_weights(None, pattern, "hybrid", opts, {"goal_based": (0, 1, 0, 0)}).source == "tuned:goal_based"
    assert choose_weights(None, pattern, "hybrid", opts, {"_default": (0, 1, 0, 0)}).source == "tuned:_default"
    # default profiles: KG-OS's fitted table, falling back to its _default for other intents
    assert choose_weights(None, pattern, "hybrid", opts).as_tuple() == I.KGOS_PROFILES["goal_based"]
    assert choose_weights(None, I.explicit("workflow"), "hybrid", opts).as_tuple() == I.KGOS_PROFILES["_default"]
    # the spec's table stays selectable, with the no-match default for unmatched queries
    assert choose_weights(None, pattern, "hybrid", spec).as_tuple() == I.PROFILES["goal_based"]
    assert choose_weights(None, default, "hybrid", spec).as_tuple() == I.NO_MATCH_WEIGHTS
    assert choose_weights(None, default, "hybrid", SearchOptions(profiles="spec", unmatched="profile")).as_tuple() \
        == I.PROFILES["goal_based"]
    assert choose_weights(None, I.explicit("workflow"), "hybrid", spec).as_tuple() == I.PROFILES["workflow"]
    assert choose_weights(parse_weights("1,0,0,0"), pattern, "fixed3", opts).as_tuple() == (0.40, 0.45, 0.15, 0.0)


@pytest.mark.parametrize("bad", ["-0.1,0.5,0.3,0.3", "a,b,c,d", "0,0,0,0", "0.5,0.5", [1, 2, 3, 4, 5],
                                 "nan,0,0,1", "inf,0,0,0"])
def test_bad_weights_are_rejected(bad):
    with pytest.raises(InvalidArgument):
        parse_weights(bad)


def test_weights_mapping_and_normalisation():
    assert parse_weights({"alpha": 2, "beta": 2}) == (0.5, 0.5, 0.0, 0.0)
    assert parse_weights({"text": 1}) == (0.0, 1.0, 0.0, 0.0)


def test_unknown_intent_is_rejected():
    with pytest.raises(InvalidArgument, match="unknown intent"):
        I.explicit("telepathy")


def test_profiles_sum_to_one():
    for profile in (*I.PROFILES.values(), *I.KGOS_PROFILES.values()):
        assert sum(profile) == pytest.approx(1.0)
