"""The outer loop's judgement (spec/004 "Outer Loop", "Convergence Criteria", "Feedback Loop Types").

A reasoner is a pipeline module of category ``reason`` (``reason.default``, ``reason.conservative``,
or a plugin's): its input is everything the iteration produced (the plan, the merged knowledge, search
statistics, the history of earlier iterations, the budget used), its output an ``assessment``
(confidence, coverage, new information, gaps with priorities) and a ``decision`` (stop / loop / ask) with
its rationale. Being a module, its every call is snapshotted and replayed like a stage.

**Relevance** of a claim: the idf-weighted share of the question's terms it mentions (idf over the run's
claims). **Confidence** (spec/004 "Confidence Calculation"): the relevance-weighted average over the answer's
claims of ``(1 - 0.5^sources) x (0.5 + 0.5 authority) x consistency x recency``: more sources, more
authoritative sources (official 1.0 > blog 0.6 > forum 0.4), agreeing sources (a claim in an open
conflict counts half, the loser of a resolved one a quarter) and, for volatile questions, newer sources
(half weight per two years, floor 0.5) score higher. Three official sources give 0.875.

**Coverage**: addressed subtopics / all subtopics of the plan.

**Convergence** (any one stops, checked in the spec table's order): confidence >= 0.85, coverage >= 0.90,
new information < 5% in each of the last 2 iterations, the time / token / cost budget, the iteration cap
(default 10); the user's interrupt is checked by the runner between stages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..index.text import STOPWORDS, fold, tokenize
from ..pipeline import BaseModule, StageOutput, register
from .contracts import ReasonIn, ReasonOut
from .merge import AUTHORITY
from .plan import addressed

__all__ = ["ConservativeReasoner", "DefaultReasoner", "assess", "claim_confidence"]

CRITERIA = ("confidence", "coverage", "diminishing_returns", "budget", "max_iterations", "user_interrupt")
LOOP_TYPES = ("expansion", "verification", "conflict_resolution", "refinement")

_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {
    "confidence_threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.85},
    "coverage_threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.90},
    "new_info_threshold": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.05},
    "diminishing_iterations": {"type": "integer", "minimum": 1, "default": 2},
    "max_iterations": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10},
    "min_sources": {"type": "integer", "minimum": 1, "default": 1,
                    "description": "claims with fewer sources count as unverified (confidence capped at 0.5)"},
    "authority_first": {"type": "boolean", "default": False,
                        "description": "ask search to rank authoritative sources first on every loop"},
    "answer_claims": {"type": "integer", "minimum": 1, "default": 10},
    "queries_per_loop": {"type": "integer", "minimum": 1, "default": 3},
    "broad_candidates": {"type": "integer", "minimum": 1, "default": 400,
                         "description": "more candidates than this: too broad, narrow the query"},
    "narrow_hits": {"type": "integer", "minimum": 0, "default": 2,
                    "description": "fewer fused hits than this: too narrow, widen the query"},
    "ask_on": {"type": "array", "items": {"enum": ["ambiguous_question", "unresolved_conflict"]},
               "default": ["ambiguous_question"]},
}}


def claim_confidence(claim: Mapping[str, Any], contested: Mapping[str, float], min_sources: int = 1) -> float:
    """One claim's confidence from its source count, authority, consistency and recency (see module doc)."""
    n = len({s["source"] for s in claim["sources"]})
    source = 1 - 0.5 ** n
    if n < min_sources:
        source = min(source, 0.5)
    authority = 0.5 + 0.5 * AUTHORITY.get(claim.get("authority", "unknown"), 0.5)
    age = claim.get("age_days")
    recency = 1.0 if age is None else max(0.5, 0.5 ** (float(age) / 730))
    return source * authority * contested.get(claim["id"], 1.0) * recency


def claim_words(claim: Mapping[str, Any]) -> set[str]:
    """The tokens and entities a claim mentions: what its relevance and the terms' idf are counted on."""
    return set(tokenize(claim["text"])) | set(claim.get("entities", []))


def relevance(words: set[str], terms: Mapping[str, float]) -> float:
    """The idf-weighted share of the question's terms a claim (its ``claim_words``) mentions (0..1)."""
    total = sum(terms.values())
    if not total:
        return 0.0
    return sum(w for t, w in terms.items() if t in words) / total


def term_weights(terms: Sequence[str], claim_word_sets: Mapping[str, set[str]]) -> dict[str, float]:
    """idf of each question term over the run's claims, ln(1 + N / (df + 1)) (a smoothed Sparck Jones
    idf): a term every claim has ("file", the command's own name) counts less than the one that
    distinguishes the answer ("exclude")."""
    df = dict.fromkeys(terms, 0)
    for words in claim_word_sets.values():
        for t in df:
            df[t] += t in words
    n = len(claim_word_sets)
    return {t: math.log(1 + n / (d + 1)) for t, d in df.items()}


def assess(data: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """Confidence, coverage, new information and the answer's claims of one iteration."""
    plan, kn = data["plan"], data["knowledge"]
    words = {cid: claim_words(c) for cid, c in kn["claims"].items()}  # tokenised once for idf and relevance
    terms = term_weights(list(dict.fromkeys(t for e in plan["entities"] for t in tokenize(e)
                                            if t not in STOPWORDS)), words)
    # ties: found earlier, then from a better-ranked search hit, then by id (deterministic)
    scored = sorted(((relevance(words[cid], terms), cid) for cid in kn["claims"]),
                    key=lambda x: (-x[0], kn["claims"][x[1]].get("first_iteration", 0),
                                   kn["claims"][x[1]].get("rank", 0), x[1]))
    top = [(r, cid) for r, cid in scored if r > 0][:config["answer_claims"]]
    contested = _contested(kn["conflicts"])
    conf = [(r, claim_confidence(kn["claims"][cid], contested, config["min_sources"])) for r, cid in top]
    weight = sum(r for r, _ in conf)
    confidence = sum(r * c for r, c in conf) / weight if weight else 0.0
    claims = [kn["claims"][cid] for _, cid in top]
    done = [s["id"] for s in plan["subtopics"] if addressed(s, claims, plan["entities"])]
    coverage = len(done) / len(plan["subtopics"]) if plan["subtopics"] else 0.0
    return {"confidence": round(confidence, 6), "coverage": round(coverage, 6),
            "new_info": data["merge_stats"].get("new_info", 0.0), "answer_claims": [cid for _, cid in top],
            "addressed": done, "missing": [s["id"] for s in plan["subtopics"] if s["id"] not in done],
            "open_conflicts": sum(1 for c in kn["conflicts"] if c["resolution"] is None)}


def _contested(conflicts: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in conflicts:
        win = (c["resolution"] or {}).get("winner")
        for cid in c["claims"]:
            out[cid] = min(out.get(cid, 1.0), 0.5 if win is None else (1.0 if cid == win else 0.25))
    return out


class DefaultReasoner(BaseModule):
    """spec/004's reasoning loop with the spec's thresholds: gaps, refinement, stop / loop / ask."""

    id = "reason.default"
    name = "Default reasoner"
    version = "1.0.0"
    category = "reason"
    input_type, output_type = ReasonIn, ReasonOut
    config_schema: ClassVar[dict[str, Any]] = _SCHEMA

    async def run(self, input, context, config):  # type: ignore[no-untyped-def]
        data = input.data
        assessment = assess(data, config)
        assessment["gaps"] = gaps(data, assessment, config)
        decision = decide(data, assessment, config)
        return StageOutput({"assessment": assessment, "decision": decision})


class ConservativeReasoner(DefaultReasoner):
    """spec/004's example strategy: 3+ sources per claim, at most 5 iterations, authoritative sources
    first, and a person is asked about conflicts the sources cannot settle."""

    id = "reason.conservative"
    name = "Conservative reasoner"
    config_schema: ClassVar[dict[str, Any]] = {**_SCHEMA, "properties": {
        **_SCHEMA["properties"],
        "min_sources": {**_SCHEMA["properties"]["min_sources"], "default": 3},
        "max_iterations": {**_SCHEMA["properties"]["max_iterations"], "default": 5},
        "authority_first": {**_SCHEMA["properties"]["authority_first"], "default": True},
        "ask_on": {**_SCHEMA["properties"]["ask_on"], "default": ["ambiguous_question", "unresolved_conflict"]}}}


register()(DefaultReasoner)
register()(ConservativeReasoner)


def gaps(data: Mapping[str, Any], a: Mapping[str, Any], config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What is missing, most urgent first: each gap names its loop type and the query that fills it."""
    plan, kn, search = data["plan"], data["knowledge"], data["search"]
    ents = " ".join(plan["entities"])
    out = [_conflict_gap(kn, c) for c in kn["conflicts"] if c["resolution"] is None]
    if search.get("total_candidates", 0) > config["broad_candidates"]:
        out.append({"type": "refinement", "priority": 0.75, "reason": "too_broad",
                    "description": f"{search['total_candidates']} candidates: too broad, requiring {ents!r}",
                    "query": ents, "require_terms": plan["entities"]})
    elif len(search.get("hits", [])) < config["narrow_hits"] and len(plan["entities"]) > 1:
        out += [{"type": "refinement", "priority": 0.75, "reason": "too_narrow",
                 "description": f"{len(search.get('hits', []))} hits: too narrow, searching {e!r} alone",
                 "query": e} for e in plan["entities"]]
    by_id = {s["id"]: s for s in plan["subtopics"]}
    for sid in a["missing"]:
        s = by_id[sid]
        cue = s.get("entity") or " ".join(c for c in s["cues"][:2] if c.strip().isalpha())
        out.append({"type": "expansion", "priority": 0.6, "reason": "missing_subtopic",
                    "description": f"subtopic {s['label']!r} not addressed", "query": f"{ents} {cue}".strip()})
    out += _undefined_entities(kn, plan, a)
    out += _single_source(kn, a, config)
    return sorted(out, key=lambda g: -g["priority"])


def _conflict_gap(kn: Mapping[str, Any], c: Mapping[str, Any]) -> dict[str, Any]:
    a, b = (kn["claims"][i] for i in c["claims"])
    words = [t for t in tokenize(a["text"]) if t not in STOPWORDS and not t[0].isdigit()][:6]
    return {"type": "conflict_resolution", "priority": 1.0, "reason": f"{c['kind']}_conflict",
            "description": f"{a['sources'][0]['source']} says {a['text']!r} but {b['sources'][0]['source']} "
                           f"says {b['text']!r}", "query": " ".join(words), "claims": list(c["claims"])}


def _undefined_entities(kn: Mapping[str, Any], plan: Mapping[str, Any], a: Mapping[str, Any]) -> list[dict[str, Any]]:
    defined = {r["source"] for r in kn["relations"] if r["type"] == "is_a"}
    asked = {fold(e) for e in plan["entities"]}
    counts: dict[str, int] = {}
    for cid in a["answer_claims"]:
        for e in kn["claims"][cid]["entities"]:
            counts[e] = counts.get(e, 0) + 1
    found = [e for e, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
             if n >= 2 and e not in asked and e not in defined and not e.startswith("-")
             and kn["entities"].get(e, {}).get("type") != "option"][:2]
    return [{"type": "expansion", "priority": 0.5, "reason": "undefined_entity",
             "description": f"found {e!r} but not what it is", "query": f"what is {e}"} for e in found]


def _single_source(kn: Mapping[str, Any], a: Mapping[str, Any], config: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for cid in a["answer_claims"][:3]:
        c = kn["claims"][cid]
        if len({s["source"] for s in c["sources"]}) < max(2, config["min_sources"]):
            words = [t for t in tokenize(c["text"]) if t not in STOPWORDS][:8]
            out.append({"type": "verification", "priority": 0.4, "reason": "single_source",
                        "description": f"only {c['sources'][0]['source']} says {c['text']!r}",
                        "query": " ".join(words), "claims": [cid]})
    return out


def met_criteria(data: Mapping[str, Any], a: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Every convergence criterion this iteration meets, in the spec table's order."""
    history, budget = data.get("history", []), data.get("budget", {})
    recent = [h["new_info"] for h in history][-(config["diminishing_iterations"] - 1):] + [a["new_info"]]
    met = []
    if a["answer_claims"] and a["confidence"] >= config["confidence_threshold"]:
        met.append("confidence")
    if a["coverage"] >= config["coverage_threshold"]:
        met.append("coverage")
    if len(recent) >= config["diminishing_iterations"] and all(r < config["new_info_threshold"] for r in recent):
        met.append("diminishing_returns")
    if _over_budget(budget):
        met.append("budget")
    if data["iteration"] >= min(config["max_iterations"], budget.get("max_iterations") or math.inf):
        met.append("max_iterations")
    return met


def _over_budget(budget: Mapping[str, Any]) -> bool:
    pairs = (("elapsed_seconds", "seconds"), ("tokens_used", "tokens"), ("cost_used", "cost"))
    return any(budget.get(limit) is not None and budget.get(used, 0) >= budget[limit] for used, limit in pairs)


def decide(data: Mapping[str, Any], a: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """ask (a trigger of ``ask_on``; the caps still stop first), stop (a criterion is met), else loop on
    the most urgent gaps."""
    met = met_criteria(data, a, config)
    summary = (f"confidence {a['confidence']:.2f}, coverage {a['coverage']:.2f}, "
               f"new information {a['new_info']:.1%}")
    ask = _ask(data, a, config)
    # a question a person must settle comes before converging on it, but never past the caps
    if met and not (ask and not {"budget", "max_iterations"} & set(met)):
        return {"action": "stop", "criterion": met[0], "met": met,
                "rationale": f"{_why(met[0], config)} ({summary})"}
    if ask:
        return ask
    return _loop(data, a, config, summary)


def _why(criterion: str, config: Mapping[str, Any]) -> str:
    return {"confidence": f"confidence reached {config['confidence_threshold']:.0%}",
            "coverage": f"coverage reached {config['coverage_threshold']:.0%}",
            "diminishing_returns": f"under {config['new_info_threshold']:.0%} new information for "
                                   f"{config['diminishing_iterations']} iterations",
            "budget": "the time, token or cost budget is spent",
            "max_iterations": "the iteration cap is reached"}[criterion]


def _ask(data: Mapping[str, Any], a: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any] | None:
    plan, answers = data["plan"], data.get("answers", [])
    if answers:
        return None  # a person answered already: go on with what they said
    if "ambiguous_question" in config["ask_on"] and len(plan["question"].split()) <= 1:
        return {"action": "ask", "criterion": "ambiguous_question", "met": [],
                "rationale": f"the question {plan['question']!r} is one word: what about it?",
                "question": f"What do you want to know about {plan['question'].strip()!r}? "
                            f"(e.g. what it is, how to use it, alternatives)"}
    tried = any(h.get("loop_type") == "conflict_resolution" for h in data.get("history", []))
    if "unresolved_conflict" in config["ask_on"] and tried and a["open_conflicts"]:
        gap = next(g for g in a["gaps"] if g["type"] == "conflict_resolution")
        return {"action": "ask", "criterion": "unresolved_conflict", "met": [],
                "rationale": "the sources disagree and neither is more authoritative or newer",
                "question": f"{gap['description']}. Which is right, or which source should win?"}
    return None


def _loop(data: Mapping[str, Any], a: Mapping[str, Any], config: Mapping[str, Any], summary: str) -> dict[str, Any]:
    done = {q for h in data.get("history", []) for q in h.get("queries", [])} | set(data["plan"]["queries"])
    chosen = [g for g in a["gaps"] if g["query"] and g["query"] not in done]
    chosen = list({g["query"]: g for g in reversed(chosen)}.values())[::-1][:config["queries_per_loop"]]
    loop_type = chosen[0]["type"] if chosen else "refinement"
    require = next((g["require_terms"] for g in chosen if g.get("require_terms")), [])
    authority = config["authority_first"] or loop_type == "conflict_resolution"
    why = "; ".join(g["description"] for g in chosen) or "no new gap to search: repeating the question"
    return {"action": "loop", "criterion": None, "met": [], "loop_type": loop_type,
            "rationale": f"{summary}; {loop_type}: {why}",
            "next": {"queries": [g["query"] for g in chosen], "require_terms": require,
                     "authority_first": authority, "keep_original": not chosen}}
