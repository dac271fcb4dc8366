"""``link_predictor(kg)`` (``Predict``): link prediction on one KG: queries, discovery, runs into the review queue, evaluation.

The KG's current version is read once into a ``LinkGraph`` (the snapshot's CSR out-adjacency as
triples, node types, the search vectors); fitted predictors are kept per KG version, so a second
query of the same process does not train again. Candidates are every node, scored in one vectorised
pass, then filtered: existing edges, the node itself, the relation's type constraints (node types seen
at that end of the relation) and rejected proposals; what is left is cut by rank.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..store.proposals import ProposalDraft, ProposeReport
from . import validation
from .base import Predictor, predictor
from .calibration import Calibration, calibrate
from .ensemble import Ensemble
from .protocol import KnownEdges, RankMetrics, filtered_ranks, metrics
from .ranking import Candidate, Ranker, relation_blind
from .relations import RelationModel
from .results import Prediction, PredictionList, RunReport, Verdict
from .triage import merge_near_duplicates, priority, symmetric_relations
from .triples import LinkGraph, Triples, read_split

if TYPE_CHECKING:
    from ..kg import KG
    from ..llm.base import ChatProvider

MAX_K = 1000
SIMILAR_POOL = 2048  # existing edges per relation searched for the "most similar edges" evidence
RUN_NODES = 500  # nodes a run scans by default on a large KG (the best connected ones)


def _check_k(k: Any, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidArgument(f"{name} must be an integer in 1..{MAX_K}, not {k!r}")
    return k


def _model_key(name: str, params: Mapping[str, Any]) -> tuple[str, str]:
    return name, json.dumps(params, sort_keys=True, default=str)


@dataclass(frozen=True)
class Trained:
    """A predictor fitted on one version of a KG, with the ranker's relation model if one was needed:
    what a worker process trained, for the server to keep (``Predict.adopt``). It crosses the process
    boundary pickled by the worker's pipe."""

    version: str
    key: tuple[str, str]
    model: Predictor
    relation_model: RelationModel | None


class Predict:
    def __init__(self, kg: KG) -> None:
        self.kg = kg
        # held by a thread that queries or adopts (the fitted models, the graph are shared state);
        # never across a training in the server (the HTTP routes train in worker processes)
        self.lock = threading.RLock()
        self._version: str | None = None
        self._graph: LinkGraph | None = None
        self._ranker: Ranker | None = None
        self._pools: dict[int, np.ndarray] = {}
        self._models: dict[tuple[str, str], Predictor] = {}
        self._calibrations: dict[tuple[str, str], Calibration | None] = {}
        self._symmetric_relations: set[str] | None = None
        self._degree: tuple[dict[str, int], int] | None = None

    # -- the training graph --------------------------------------------------------------------------
    def graph(self) -> LinkGraph:
        """The KG's current version as a LinkGraph (rebuilt when the KG changed)."""
        snap = self.kg.engine.snapshot()
        if snap.version != self._version or self._graph is None:
            view = self.kg.view(snap)
            out = view.graph.out
            n = view.n
            head = np.repeat(np.arange(n, dtype=np.int64), np.diff(out.indptr))
            triples = Triples(head, np.asarray(out.etype, np.int64), np.asarray(out.indices, np.int64),
                              tuple(view.node_ids), tuple(view.graph.types))
            self._graph = LinkGraph(triples, np.asarray(view.node_types, np.int64), tuple(view.type_names),
                                    snap.vectors)
            self._ranker = Ranker(self._graph, self._rejected)
            self._version, self._models, self._pools, self._calibrations = snap.version, {}, {}, {}
            self._symmetric_relations, self._degree = None, None
        return self._graph

    def model(self, name: str = "ensemble", **params: Any) -> Predictor:
        """The predictor ``name`` fitted on the KG's current version (kept for the next call)."""
        graph = self.graph()
        key = _model_key(name, params)
        if key not in self._models:
            self._models[key] = predictor(name, **params).fit(graph)
        return self._models[key]

    def is_trained(self, name: str = "ensemble", **params: Any) -> bool:
        """True when a query with predictor ``name`` on the KG's current version trains nothing: the
        predictor is fitted, and so is the relation model a relation-blind one needs."""
        self.graph()
        m = self._models.get(_model_key(name, params))
        return m is not None and (not relation_blind(m) or self.ranker().fitted_relation_model is not None)

    def export(self, name: str = "ensemble", **params: Any) -> Trained:
        """What ``model(name, **params)`` fitted (fitting it now if needed), to be adopted elsewhere."""
        m = self.model(name, **params)
        assert self._version is not None
        return Trained(self._version, _model_key(name, params), m, self.ranker().fitted_relation_model)

    def adopt(self, trained: Trained) -> bool:
        """Keep a predictor fitted by another process, if it was fitted on this KG's current version
        with the same rows (a snapshot patched by deltas may order them otherwise than a fresh one):
        False, and nothing kept, when not."""
        g = self.graph()
        fitted = trained.model.graph
        if trained.version != self._version or fitted is None or fitted.triples.entities != g.triples.entities \
                or fitted.triples.relations != g.triples.relations:
            return False
        self._models.setdefault(trained.key, trained.model)
        self.ranker().adopt_relation_model(trained.relation_model)
        return True

    # -- queries --------------------------------------------------------------------------------------
    def tails(self, head: str, relation: str, k: int = 10, predictor: str = "ensemble",
              explain: bool = True, **params: Any) -> PredictionList:
        """``(head, relation, ?)``: the best missing tails."""
        return self._query(head, relation, "tail", k, predictor, explain, params)

    def heads(self, tail: str, relation: str, k: int = 10, predictor: str = "ensemble",
              explain: bool = True, **params: Any) -> PredictionList:
        """``(?, relation, tail)``: the best missing heads."""
        return self._query(tail, relation, "head", k, predictor, explain, params)

    def discover(self, node: str, k: int = 10, relations: Sequence[str] | None = None,
                 predictor: str = "ensemble", explain: bool = True, **params: Any) -> PredictionList:
        """The best missing edges of one node, over every relation and both directions."""
        rels = None if relations is None else list(relations)
        return self._ranked(node, rels, ("tail", "head"), k, predictor, explain, params)

    def _query(self, ref: str, relation: str, side: str, k: int, name: str, explain: bool,
               params: Mapping[str, Any]) -> PredictionList:
        return self._ranked(ref, [relation], (side,), k, name, explain, params)

    def ranker(self) -> Ranker:
        """The ranking state of the KG's current version (filters, relation model)."""
        self.graph()
        assert self._ranker is not None
        return self._ranker

    def _ranked(self, ref: str, relations: list[str] | None, sides: tuple[str, ...], k: int, name: str,
                explain: bool, params: Mapping[str, Any]) -> PredictionList:
        t0 = time.perf_counter()
        _check_k(k)
        m, g = self.model(name, **params), self.graph()
        row, rels = self._row(ref), self._relations(relations)
        found, scored = self.ranker().rank(m, row, rels, sides, k)
        preds = [self._prediction(m, c, explain) for c in found]
        query: dict[str, Any] = {"node": g.triples.entities[row], "relations": [g.triples.relations[r] for r in rels],
                                 "predict": list(sides)}
        return PredictionList(query, m.name, tuple(preds), scored, round(time.perf_counter() - t0, 4))

    def _row(self, ref: str) -> int:
        self.graph()
        return self.kg.view().row(self.kg.resolve(ref).id)

    def _relations(self, names: Sequence[str] | None) -> np.ndarray:
        t = self.graph().triples
        if names is None:
            return np.arange(t.n_relations, dtype=np.int64)
        unknown = [r for r in names if r not in t.relations]
        if unknown:
            known = ", ".join(t.relations) or "none (the KG has no edges)"
            raise InvalidArgument(f"unknown relation {unknown[0]!r} in KG '{self.kg.db_id}'; known: {known}")
        return np.array([t.relations.index(r) for r in names], np.int64)

    def _rejected(self, ent: np.ndarray, rels: np.ndarray, side: str) -> np.ndarray:
        """(batch, n) True at the candidates a reviewer rejected for these queries."""
        g = self.graph().triples
        out = np.zeros((ent.size, g.n_entities), bool)
        by_query: dict[tuple[str, str], list[str]] = {}
        for s, t, typ in self.kg.proposals.rejected_edges():
            me, other = (s, t) if side == "tail" else (t, s)
            by_query.setdefault((me, typ), []).append(other)
        if not by_query:
            return out
        index = self.kg.view().index  # node id -> row, built once per KG version
        for i, (e, r) in enumerate(zip(ent.tolist(), rels.tolist())):
            rows = [index[o] for o in by_query.get((g.entities[e], g.relations[r]), ()) if o in index]
            out[i, rows] = True
        return out

    def _prediction(self, m: Predictor, c: Candidate, explain: bool) -> Prediction:
        g = self.graph().triples
        h, r, t = c.head, c.relation, c.tail
        evidence = {**m.evidence(h, r, t), "similar_edges": self._similar(h, r, t)} if explain else {}
        return Prediction(g.entities[h], g.entities[t], g.relations[r], c.score, c.rank, c.scores, evidence)

    def _similar(self, h: int, r: int, t: int, top: int = 3) -> list[dict[str, str | float]]:
        """The existing edges of relation r whose ends are most like (h, t): mean cosine of the two ends."""
        g = self.graph()
        if g.vectors is None:
            return []
        tr = g.triples
        if r not in self._pools:  # a fixed sample of the relation's edges, drawn once per KG version
            rows = np.flatnonzero(tr.relation == r)
            if rows.size > SIMILAR_POOL:
                rows = np.sort(np.random.default_rng(r).choice(rows, SIMILAR_POOL, replace=False))
            self._pools[r] = rows
        rows = self._pools[r]
        v = g.vectors
        sim = 0.5 * (v[tr.head[rows]] @ v[h] + v[tr.tail[rows]] @ v[t])
        best = rows[np.argsort(-sim)[:top]]
        order = np.argsort(-sim)[:top]
        return [{"source": tr.entities[tr.head[e]], "target": tr.entities[tr.tail[e]], "similarity": round(float(s), 4)}
                for e, s in zip(best.tolist(), sim[order].tolist())]

    # -- runs into the review queue ---------------------------------------------------------------------
    def run(self, nodes: Iterable[str] | None = None, k: int = 50, per_node: int = 5, predictor: str = "ensemble",
            origin: str | None = None, queue: bool = True, calibrated: bool = True,
            progress: Callable[[int], None] | None = None, total: Callable[[int], None] | None = None,
            **params: Any) -> RunReport:
        """Discover the missing edges of ``nodes`` (default: every node of a small KG, else the
        ``RUN_NODES`` best connected), keep the ``k`` best overall and stage them in the review queue,
        each with its calibrated confidence (``calibration``; ``calibrated=False`` skips fitting it).
        ``total(n)``: the nodes to scan, once the model is trained; ``progress(1)`` after each (a first
        run trains the model, then scans: minutes on a few thousand nodes, so a CLI shows an ETA)."""
        t0 = time.perf_counter()
        _check_k(k)
        _check_k(per_node, "per_node")
        # the same node named twice is discovered once (its predictions would only repeat)
        given = list(dict.fromkeys(nodes)) if nodes is not None else None
        for ref in (given or [])[:RUN_NODES + 1]:
            self.kg.resolve(ref)  # an unknown node fails now, not after the model's training
        m = self.model(predictor, **params)
        refs = given if given is not None else self._busiest()
        if len(refs) > RUN_NODES:
            raise InvalidArgument(f"{len(refs):,} nodes in one run; at most {RUN_NODES:,} (split the list, or "
                                  "leave it out to run on the best-connected nodes)")
        cal = self.calibration(predictor, **params) if calibrated else None
        found: dict[tuple[str, str, str], Prediction] = {}
        if total is not None:
            total(len(refs))
        # a node can place at most k predictions in the overall top k: more per node changes nothing
        for ref in refs:
            for p in self._calibrated(cal, self.discover(ref, min(per_node, k), predictor=predictor, explain=False,
                                                         **params).predictions):
                key = (p.source, p.target, p.type)
                if key not in found or found[key].score < p.score:
                    found[key] = p
            if progress is not None:
                progress(1)
        # calibrated confidences compare across nodes; raw scores only within one query
        ordered = sorted(found.values(), key=lambda p: -(p.score if cal is None else p.confidence or 0.0))
        g, index = self.graph(), self.kg.view().index
        best = merge_near_duplicates(self._compatible(ordered), g.vectors, index, self._symmetric())[:k]
        best = [self._valued(self._explained(m, p, 0)) for p in best]
        if cal is not None:  # the run's order is the queue's: expected value, confidence x priority
            best.sort(key=lambda p: -(p.confidence or 0.0) * p.scores["priority"])
        best = [replace(p, rank=rank) for rank, p in enumerate(best, 1)]
        report = self._stage_run(best, origin or m.name) if queue else ProposeReport((), (), 0, 0)
        weights = m.weights if isinstance(m, Ensemble) else {m.name: 1.0}
        summary = None if cal is None else {k_: v for k_, v in cal.to_dict().items() if k_ != "bins"}
        return RunReport(m.name, len(refs), tuple(best), report, dict(weights), round(time.perf_counter() - t0, 3),
                         summary)

    def calibration(self, predictor: str = "ensemble", **params: Any) -> Calibration | None:
        """The Platt calibrator of ``predictor`` on this KG version, fitted on withheld edges
        (``kgos.linkpred.calibration``); None when the KG has too few edges to withhold any."""
        self.graph()
        key = ("calibration:" + predictor, json.dumps(params, sort_keys=True, default=str))
        if key not in self._calibrations:
            try:
                self._calibrations[key] = calibrate(self.graph(), lambda g: self._fresh(predictor, params).fit(g))
            except InvalidArgument:
                self._calibrations[key] = None
        return self._calibrations[key]

    @staticmethod
    def _calibrated(cal: Calibration | None, preds: Sequence[Prediction]) -> list[Prediction]:
        """``preds`` (ranks within their query) with their calibrated confidence."""
        if cal is None or not preds:
            return list(preds)
        probs = cal.probability([p.score for p in preds], [p.rank for p in preds],
                                [p.scores.get("relation_p") for p in preds])
        return [replace(p, confidence=round(float(c), 6)) for p, c in zip(preds, probs.tolist())]

    def _compatible(self, ranked: list[Prediction]) -> list[Prediction]:
        """``ranked`` without a prediction exclusive with a better one of its pair (two nodes' discoveries
        can each type the same pair) or with a proposal of the pair already pending review."""
        tr, index = self.graph().triples, self.kg.view().index
        codes = [(index[p.source], tr.relations.index(p.type), index[p.target]) for p in ranked]
        pending = [(index[s], tr.relations.index(r), index[t]) for s, t, r in self.kg.proposals.pending_edges()
                   if s in index and t in index and r in tr.relations]
        return [p for p, ok in zip(ranked, self.ranker().compatible(codes, pending)) if ok]

    def _busiest(self) -> list[str]:
        g = self.graph().triples
        if g.n_entities <= RUN_NODES:
            return list(g.entities)
        degree = np.bincount(np.concatenate([g.head, g.tail]), minlength=g.n_entities)
        return [g.entities[i] for i in np.argsort(-degree, kind="stable")[:RUN_NODES].tolist()]

    def _symmetric(self) -> set[str]:
        if self._symmetric_relations is None:
            self._symmetric_relations = symmetric_relations(self.graph().triples)
        return self._symmetric_relations

    def _valued(self, p: Prediction) -> Prediction:
        """``p`` with its priority, novelty and centrality (``kgos.linkpred.triage``) in its scores."""
        if self._degree is None:
            t = self.graph().triples
            counts = np.bincount(np.concatenate([t.head, t.tail]), minlength=t.n_entities)
            self._degree = (dict(zip(t.entities, counts.tolist())), int(counts.max()) if counts.size else 0)
        value, novelty, centrality = priority(p, *self._degree)
        return replace(p, scores={**p.scores, "priority": value, "novelty": novelty, "centrality": centrality})

    def _explained(self, m: Predictor, p: Prediction, rank: int) -> Prediction:
        tr = self.graph().triples
        index = self.kg.view().index
        h, t, r = index[p.source], index[p.target], tr.relations.index(p.type)
        evidence = {**p.evidence, **m.evidence(h, r, t), "similar_edges": self._similar(h, r, t)}  # keeps "merged"
        return Prediction(p.source, p.target, p.type, p.score, rank, p.scores, evidence, p.confidence)

    def _stage_run(self, best: list[Prediction], origin: str) -> ProposeReport:
        """Stage a run's predictions; one that nearly duplicates a proposal already pending (same
        relation, one shared end, the other ends near-identical) is folded into that proposal's
        evidence under ``merged`` instead of queued beside it."""
        g, index = self.graph(), self.kg.view().index
        pending = [Prediction(s, t, r, 0.0, 0, {}, {"pending": True}) for s, t, r in
                   sorted(self.kg.proposals.pending_edges()) if s in index and t in index]
        if not pending:
            return self.stage(best, origin)
        folded = merge_near_duplicates([*pending, *best], g.vectors, index, self._symmetric())
        fresh = [p for p in folded if not p.evidence.get("pending")]
        into = [ProposalDraft(q.source, q.target, q.type, origin, 0.0, {}, {"merged": q.evidence["merged"]})
                for q in folded if q.evidence.get("pending") and "merged" in q.evidence]
        staged = self.stage(fresh, origin)
        if not into:
            return staged
        extra = self.kg.proposals.propose(into)
        return ProposeReport(staged.added, staged.merged + extra.merged, staged.skipped_rejected,
                             staged.skipped_accepted)

    def stage(self, predictions: Iterable[Prediction], origin: str) -> ProposeReport:
        """Put predictions in the review queue (rank and scores kept). The confidence is the calibrated
        probability of a run's predictions; a prediction without one (a single query's) keeps 1/rank,
        marked ``"calibrated": false`` in its evidence."""
        drafts = [ProposalDraft(p.source, p.target, p.type, origin,
                                round(1.0 / p.rank, 6) if p.confidence is None else p.confidence,
                                {**p.scores, "score": p.score},
                                {**p.evidence, "rank": p.rank, "calibrated": p.confidence is not None})
                  for p in predictions]
        return self.kg.proposals.propose(drafts)

    # -- LLM validation -------------------------------------------------------------------------------
    def validate(self, proposal_id: int, provider: ChatProvider, auto_accept: float | None = None,
                 timeout: float = 60.0, reviewer: str | None = None) -> Verdict:
        """An LLM verdict on one edge proposal, stored with it (``kgos.linkpred.validation``)."""
        return validation.validate(self.kg, proposal_id, provider, auto_accept, timeout, reviewer)

    # -- evaluation -----------------------------------------------------------------------------------
    def evaluate(self, predictor: str = "ensemble", test: str | Path | Sequence[Mapping[str, Any]] | None = None,
                 holdout: float | None = None, seed: int = 0, max_test: int | None = None,
                 **params: Any) -> RankMetrics:
        """Filtered MRR and Hits@1/3/10 (both directions) on ``test`` edges absent from the KG (a JSONL
        file or records of source/target/type), or on a random ``holdout`` fraction of the KG's edges
        left out of training. The KG itself is never changed."""
        g = self.graph()
        if (test is None) == (holdout is None):
            raise InvalidArgument("give either test edges or a holdout fraction")
        if test is not None:
            train, test_t = g.triples, self._test_triples(test)
        else:
            train, test_t = self._holdout(g.triples, holdout, seed)  # type: ignore[arg-type]
        if max_test is not None and len(test_t) > max_test:
            test_t = test_t.subset(np.sort(np.random.default_rng(seed).choice(len(test_t), max_test, replace=False)))
        t0 = time.perf_counter()
        m = self._fresh(predictor, params).fit(LinkGraph(train, g.node_types, g.type_names, g.vectors))
        ranks = filtered_ranks(m.score_tails, m.score_heads, test_t, KnownEdges(g.triples, test_t))
        return metrics(ranks, m.name, time.perf_counter() - t0)

    @staticmethod
    def _fresh(name: str, params: Mapping[str, Any]) -> Predictor:
        return predictor(name, **params)

    def _holdout(self, t: Triples, fraction: float, seed: int) -> tuple[Triples, Triples]:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
            raise InvalidArgument(f"holdout must be a fraction in (0, 1), e.g. 0.05, not {fraction!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidArgument(f"seed must be an integer >= 0, not {seed!r}")
        m = round(len(t) * fraction)
        if m < 1 or len(t) - m < 1:
            raise InvalidArgument(f"a holdout of {fraction:g} of {len(t)} edges leaves "
                                  f"{'no test edge' if m < 1 else 'no training edge'}; the KG is too small for it")
        rows = np.random.default_rng(seed).permutation(len(t))
        return t.subset(np.sort(rows[m:])), t.subset(np.sort(rows[:m]))

    def _test_triples(self, test: str | Path | Sequence[Mapping[str, Any]]) -> Triples:
        records = _read_edges(Path(test)) if isinstance(test, (str, Path)) else list(test)
        t = self.graph().triples
        index = {e: i for i, e in enumerate(t.entities)}
        rows = []
        for i, rec in enumerate(records, 1):
            try:
                s, o, typ = rec["source"], rec["target"], rec["type"]
            except (KeyError, TypeError):
                raise InvalidArgument(f"test edge {i}: needs source, target and type") from None
            for node in (s, o):
                if node not in index:
                    raise InvalidArgument(f"test edge {i}: no node {node!r} in KG '{self.kg.db_id}'")
            if typ not in t.relations:
                raise InvalidArgument(f"test edge {i}: relation {typ!r} has no edge in KG '{self.kg.db_id}' to learn from")
            rows.append((index[s], t.relations.index(typ), index[o]))
        if not rows:
            raise InvalidArgument("no test edges given")
        a = np.array(rows, np.int64)
        present = self.ranker().known.mask(a[:, 0], a[:, 1], "tail")[np.arange(len(a)), a[:, 2]]  # type: ignore[union-attr]
        if present.any():
            raise InvalidArgument(f"{int(present.sum())} test edge(s) are in the KG (e.g. line "
                                  f"{int(np.flatnonzero(present)[0]) + 1}): test edges must be absent from it")
        return Triples(a[:, 0], a[:, 1], a[:, 2], t.entities, t.relations)


def evaluate_split(folder: str | Path, predictor_name: str = "ensemble", **params: Any) -> RankMetrics:
    """Filtered MRR and Hits@1/3/10 on a standard split folder: fit on train (the ensemble weighs its
    members on valid), rank test in both directions, filtered by train + valid + test."""
    split = read_split(folder)
    t0 = time.perf_counter()
    m = predictor(predictor_name, **params)
    m.fit(LinkGraph(split.train), split.valid if predictor_name == "ensemble" else None)
    known = KnownEdges(split.train, split.valid, split.test)
    return metrics(filtered_ranks(m.score_tails, m.score_heads, split.test, known), m.name, time.perf_counter() - t0)


def _read_edges(path: Path) -> list[dict[str, Any]]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InvalidArgument(f"{path}:{i}: not JSON ({exc})") from None
        if not isinstance(rec, dict):
            raise InvalidArgument(f"{path}:{i}: expected an object with source, target and type")
        out.append(rec)
    return out
