"""The two-loop research run (spec/004 "The Two-Loop Architecture").

Each iteration runs the inner pipeline Query -> Search -> Ingest -> Extract -> Merge -> Store, then the
reasoner assesses it and decides: stop (a convergence criterion is met), loop (with the next queries of
one of the four feedback-loop types) or ask (pause until a person answers). Every stage call and every
decision is written to the run's manifest as it happens, so a crashed or paused run can be inspected,
resumed and replayed. The caps always hold: whatever the reasoner says, the runner stops at the
iteration cap and when the budget is spent.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, KGOSError
from ..pipeline import REGISTRY, ExternalResponses, ProcessContext, StageInput, StageOutput, content_hash
from . import answer as _answer  # noqa: F401  (registers output.answer)
from . import reasoner as _reasoner  # noqa: F401  (registers the reasoners)
from .control import Interrupted, RestartIteration, RunControl
from .corpus import LazyCorpus
from .manifest import FORMAT, run_store
from .merge import empty_knowledge

if TYPE_CHECKING:  # types only: a research run is handed these, it never builds them
    from ..kg import Workspace
    from ..llm.base import ChatProvider
    from ..pipeline import PipelineModule

__all__ = ["DEFAULT_MODULES", "ResearchRequest", "ResearchResult", "ResearchRunner", "answer_markdown",
           "failed_output", "merged_delta", "result_of"]

DEFAULT_MODULES = {"query": "query.intent", "search": "search.multi", "ingest": "ingest.documents",
                   "extract": "extract.claims", "merge": "merge.graph", "store": "store.kg",
                   "reason": "reason.default", "output": "output.answer"}
STORE_MODES = ("auto", "apply", "propose", "none")
HARD_CAP = 100  # iterations, whatever the request says: the last safety valve
MAX_RESTARTS = 3
_EMPTY = {"search": {"hits": [], "total_candidates": 0, "queries": []}, "ingest": {"documents": []},
          "extract": {"claims": [], "entities": [], "relations": []}}


@dataclass(frozen=True)
class ResearchRequest:
    """What to research and how. ``modules``/``configs`` override the module id / config per stage
    (query, search, ingest, extract, merge, store, reason, output). ``on_failure``: ``stop`` ends the
    run when a stage raises, ``skip`` goes on with that stage's empty output."""

    question: str
    corpus: str | None = None
    kgs: tuple[str, ...] = ()
    into: str | None = None
    max_iterations: int | None = None
    budget_seconds: float | None = None
    budget_tokens: int | None = None
    budget_cost: float | None = None
    reasoner: str = "reason.default"
    modules: Mapping[str, str] = field(default_factory=dict)
    configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    store_mode: str = "auto"  # apply into a KG this run created, propose into any other
    provider: str = ""
    embedder: str = "default"
    on_failure: str = "stop"
    breakpoints: tuple[str, ...] = ()

    def checked(self) -> ResearchRequest:
        if not isinstance(self.question, str) or not self.question.strip():
            raise InvalidArgument("the research question is empty: ask something")
        for name, v in (("max_iterations", self.max_iterations), ("budget_tokens", self.budget_tokens)):
            if v is not None and (not isinstance(v, int) or v < (1 if name == "max_iterations" else 0)):
                raise InvalidArgument(f"{name} must be an integer >= {1 if name == 'max_iterations' else 0}")
        for name, v in (("budget_seconds", self.budget_seconds), ("budget_cost", self.budget_cost)):
            if v is not None and (not isinstance(v, (int, float)) or v < 0):
                raise InvalidArgument(f"{name} must be a number >= 0")
        if self.on_failure not in ("stop", "skip"):
            raise InvalidArgument("on_failure must be stop or skip")
        if self.store_mode not in STORE_MODES:
            raise InvalidArgument(f"store mode must be one of {', '.join(STORE_MODES)}")
        unknown = set(self.modules) | set(self.configs) | set(self.breakpoints)
        unknown -= set(DEFAULT_MODULES)
        if unknown:
            raise InvalidArgument(f"unknown stage(s) {', '.join(sorted(unknown))}: one of {', '.join(DEFAULT_MODULES)}")
        return self

    def to_dict(self) -> dict[str, Any]:
        d = {k: copy.deepcopy(v) for k, v in self.__dict__.items()}
        d["kgs"], d["breakpoints"] = list(self.kgs), list(self.breakpoints)
        d["modules"], d["configs"] = dict(self.modules), {k: dict(v) for k, v in self.configs.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ResearchRequest:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["kgs"] = tuple(known.get("kgs", ()))
        known["breakpoints"] = tuple(known.get("breakpoints", ()))
        return cls(**known)


@dataclass(frozen=True)
class ResearchResult:
    """A run's outcome. ``status``: completed | stopped | failed | waiting (``pending_question`` asks
    a person; answer with ``kgos research ask`` or the API, then it resumes)."""

    run_id: str
    status: str
    question: str
    answer: str
    citations: tuple[dict[str, Any], ...]
    sentences: tuple[dict[str, Any], ...]
    conflicts: tuple[dict[str, Any], ...]
    iterations: int
    stopped_by: str | None
    confidence: float
    coverage: float
    output_sha256: str | None
    kg_delta: dict[str, int]
    decisions: tuple[dict[str, Any], ...]
    pending_question: str | None = None
    folder: str = ""
    withheld: tuple[dict[str, Any], ...] = ()  # answer claims left out as untrusted text (research/untrusted.py)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("citations", "sentences", "conflicts", "decisions", "withheld"):
            d[k] = list(d[k])
        return d


def failed_output(exc: BaseException) -> StageOutput:
    """The output a stage that raised is recorded with (the same on a replay of it)."""
    return StageOutput({}, status="failed", error=f"{type(exc).__name__}: {exc}")


class ResearchRunner:
    """One run over a workspace. ``run()`` blocks until it stops or waits for an answer; ``on_ask``
    (question -> answer or None) answers in-line (the CLI prompt); ``wait_for_answers`` makes an ask
    block until ``control.answer`` (the API), at most ``answer_timeout`` seconds, after which the run
    returns ``waiting`` (resumable). Other threads steer it through ``control``."""

    def __init__(self, ws: Workspace, request: ResearchRequest, *, control: RunControl | None = None,
                 on_ask: Callable[[str], str | None] | None = None, wait_for_answers: bool = False,
                 provider: Any = None, run_id: str | None = None, answer_timeout: float | None = None) -> None:
        self.ws, self.request = ws, request.checked()
        self.store = run_store(ws)
        self.control = control or RunControl(self.request.breakpoints)
        self.on_ask, self.wait_for_answers, self.answer_timeout = on_ask, wait_for_answers, answer_timeout
        self.modules = self._modules()
        self.services = self._services(provider)
        self.run_id = run_id or self.store.new_run_id()
        self.external = ExternalResponses()
        self.knowledge: dict[str, Any] = empty_knowledge()
        self.history: list[dict[str, Any]] = []
        self.answers: list[str] = []
        self.refinement: dict[str, Any] = {}
        self.deltas: list[dict[str, Any]] = []
        self.last: dict[str, Any] = {}
        self.tokens = 0
        self.started = time.monotonic()
        self.elapsed_before = 0.0
        self.manifest = self._new_manifest() if run_id is None else self.store.manifest(run_id)

    # -- setup ------------------------------------------------------------------------------------
    def _modules(self) -> dict[str, Any]:
        ids = {**DEFAULT_MODULES, "reason": self.request.reasoner, **self.request.modules}
        configs = {k: dict(v) for k, v in self.request.configs.items()}
        configs.setdefault("store", {}).setdefault("mode", self.request.store_mode)
        if self.request.provider:
            configs.setdefault("output", {}).setdefault("provider", self.request.provider)
        modules = {stage: REGISTRY.create(module_id, configs.get(stage)) for stage, module_id in ids.items()}
        wrong = [f"{stage}: {m.id} is a {m.category or '(no category)'} module" for stage, m in modules.items()
                 if m.category != stage]
        if wrong:
            raise InvalidArgument("each stage needs a module of its category: " + "; ".join(wrong))
        return modules

    def swap_module(self, stage: str, module_id: str | None = None, config: Mapping[str, Any] | None = None) -> Any:
        """Hot swap (spec/004 "Hot-swappable"): another module for ``stage`` and/or a new config, used
        from the stage's next call on; the manifest records each call's module, version and config hash."""
        if stage not in self.modules:
            raise InvalidArgument(f"unknown stage {stage!r}: one of {', '.join(self.modules)}")
        if module_id is not None and REGISTRY.get(module_id).category != stage:
            raise InvalidArgument(f"{module_id} is not a {stage} module")
        if module_id is None or module_id == self.modules[stage].id:
            if config is not None:
                self.modules[stage].configure(config)
            return self.modules[stage]
        self.modules[stage] = REGISTRY.create(module_id, config)
        self.control.emit("module_swapped", {"stage": stage, "module": module_id})
        return self.modules[stage]

    def _services(self, provider: ChatProvider | None) -> dict[str, Any]:
        for db in self.request.kgs:
            self.ws.kg(db)  # KGNotFound now, not in the middle of the run
        corpus = None
        if self.request.corpus:
            # opened at its first search, in the run's thread: never in the request starting the run
            corpus = LazyCorpus(self.request.corpus, self.ws.cache_dir / "research-corpus", self.request.embedder)
        return {"workspace": self.ws, "corpus": corpus, "provider": provider}

    def _sources(self) -> dict[str, Any]:
        """What the Search stage searches, by content: KG versions and the corpus fingerprint."""
        corpus = self.services["corpus"]
        return {"kgs": {db: self.ws.kg(db).store.version() for db in self.request.kgs},
                "corpus": corpus.fingerprint if corpus is not None else None}

    def _new_manifest(self) -> dict[str, Any]:
        corpus = self.services["corpus"]
        m = {"format": FORMAT, "run_id": self.run_id, "status": "running",
             "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "request": self.request.to_dict(),
             "query": {"original": self.request.question, "intent": None},
             "sources": {"kgs": list(self.request.kgs), "corpus": self.request.corpus,
                         "corpus_fingerprint": corpus.fingerprint if corpus else None,
                         # counted when the run opens it, in its own thread (``_open_corpus``)
                         "corpus_chunks": None if corpus else 0, "target": self.request.into},
             "modules": {s: {"module": m.id, "version": m.version} for s, m in self.modules.items()},
             "iterations": [], "decisions": [], "answers": [], "final_state": None, "output": None,
             "output_sha256": None, "artifacts": {}}
        self.store.save_manifest(m)
        return m

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> ResearchResult:
        return asyncio.run(self.arun())

    def isolate_corpus(self) -> None:
        """Index the corpus in a capped worker process (a server's runs: the build would hold the
        server's GIL and memory, docs/limits.md row 10f); a stop request terminates the worker."""
        corpus = self.services["corpus"]
        if corpus is not None:
            corpus.isolate(self._stop_check)

    def _stop_check(self) -> None:
        if self.control.stopped:
            raise Interrupted()

    def _open_corpus(self) -> None:
        """Index the corpus (the run's longest setup step) now, in the run's thread, and count its chunks."""
        corpus, sources = self.services["corpus"], self.manifest["sources"]
        if corpus is not None and sources.get("corpus_chunks") is None:
            sources["corpus_chunks"] = len(corpus)
            self.store.save_manifest(self.manifest)

    async def arun(self) -> ResearchResult:
        self.control.emit("run_started", {"run_id": self.run_id, "question": self.request.question})
        stopped_by, status = None, "completed"
        try:
            self._open_corpus()
            stopped_by, status = await self._loop()
        except Interrupted:
            stopped_by, status = "user_interrupt", "stopped"
            its = self.manifest["iterations"]
            if its and not its[-1]["stages"]:
                its.pop()  # stopped before its first stage: nothing of it ran
            self._decide_by_runner("stop", "user_interrupt", "stopped by the user")
        if status == "waiting":
            return self._result()
        return await self._finish(stopped_by, status)

    async def _loop(self) -> tuple[str | None, str]:
        iteration = len(self.manifest["iterations"])
        cap = min(self.request.max_iterations or self.modules["reason"].get_config().get("max_iterations", 10),
                  HARD_CAP)
        while True:
            if self._over_budget():
                self._decide_by_runner("stop", "budget", "the budget is spent before the next iteration")
                return "budget", "completed"
            if iteration >= cap:
                self._decide_by_runner("stop", "max_iterations", f"the iteration cap {cap} is reached")
                return "max_iterations", "completed"
            iteration += 1
            decision = await self._iteration_with_restarts(iteration)
            if decision is None:
                return "stage_failed", "failed"
            if decision["action"] == "stop":
                return decision["criterion"], "completed"
            if decision["action"] == "ask" and not await self._ask(decision):
                return None, "waiting"
            if decision["action"] == "loop":
                self.refinement = dict(decision.get("next") or {})
            self._save_state()

    async def _iteration_with_restarts(self, iteration: int) -> dict[str, Any] | None:
        for attempt in range(MAX_RESTARTS + 1):
            try:
                return await self._iteration(iteration)
            except RestartIteration:
                self.manifest["iterations"] = [it for it in self.manifest["iterations"]
                                               if it["iteration"] != iteration]
                self.control.emit("iteration_restarted", {"iteration": iteration, "attempt": attempt + 1})
        return await self._iteration(iteration)

    async def _iteration(self, i: int) -> dict[str, Any] | None:
        reason = "initial_search" if i == 1 or not self.history else (self.history[-1].get("loop_type") or "answer")
        # the refinement it starts from is kept, so a restart of this iteration starts from it again
        rec: dict[str, Any] = {"iteration": i, "reason": reason, "stages": [], "reasoning": None,
                               "refinement": dict(self.refinement)}
        self.manifest["iterations"].append(rec)
        self.control.emit("iteration_started", {"iteration": i, "reason": reason})
        refinement = {**self.refinement, **({"answer": " ".join(self.answers)} if self.answers else {})}
        plan = await self._stage(rec, "query", {"question": self.request.question, "refinement": refinement})
        if plan is None:
            return None
        if self.manifest["query"]["intent"] is None:
            self.manifest["query"]["intent"] = {**plan["intent"], "entities": plan["entities"]}
        data: dict[str, Any] = {}
        for stage, make in (("search", lambda: {**plan, "sources": self._sources()}), ("ingest", lambda: {"hits": data["search"]["hits"]}),
                            ("extract", lambda: {"documents": data["ingest"]["documents"],
                                                 "entities": plan["entities"]}),
                            ("merge", lambda: {"extracted": data["extract"], "known": self.knowledge,
                                               "iteration": i})):
            data[stage] = await self._stage(rec, stage, make())
            if data[stage] is None:
                return None
        self.knowledge = data["merge"]["knowledge"]
        stored = await self._stage(rec, "store", {"knowledge": self.knowledge, "iteration": i, "run_id": self.run_id,
                                                  "target": self.request.into})
        if stored is None:
            return None
        self.deltas.append(stored["delta"])
        return await self._reason(rec, plan, data)

    async def _reason(self, rec: dict[str, Any], plan: dict[str, Any], data: dict[str, Any]) -> dict[str, Any] | None:
        budget = {"elapsed_seconds": round(self._elapsed(), 3), "seconds": self.request.budget_seconds,
                  "tokens_used": self.tokens, "tokens": self.request.budget_tokens, "cost_used": 0.0,
                  "cost": self.request.budget_cost, "max_iterations": self.request.max_iterations}
        out = await self._stage(rec, "reason", {
            "iteration": rec["iteration"], "plan": plan, "knowledge": self.knowledge,
            "merge_stats": data["merge"]["stats"],
            "search": {"total_candidates": data["search"].get("total_candidates", 0),
                       "hits": [h["id"] for h in data["search"].get("hits", [])]},
            "history": self.history, "budget": budget, "answers": self.answers})
        if out is None:
            return None
        a, d = out["assessment"], dict(out["decision"])
        if d["action"] == "loop" and self._over_budget():  # the runner's caps hold whatever the reasoner says
            d = {"action": "stop", "criterion": "budget", "met": ["budget"], "by": "runner",
                 "rationale": "the budget is spent (runner check; the reasoner wanted to loop)"}
        rec["reasoning"] = {"gaps_found": len(a.get("gaps", [])), "confidence": a["confidence"],
                            "coverage": a["coverage"], "new_info": a["new_info"], "decision": d["action"],
                            "criterion": d.get("criterion"), "loop_type": d.get("loop_type"),
                            "rationale": d["rationale"], "gaps": a.get("gaps", [])[:10],
                            "addressed": a.get("addressed", []), "missing": a.get("missing", [])}
        self.last = {"assessment": a, "plan": plan}
        self.history.append({"iteration": rec["iteration"], "new_info": a["new_info"], "queries": plan["queries"],
                             "loop_type": d.get("loop_type"), "confidence": a["confidence"],
                             "coverage": a["coverage"]})
        self._record_decision(rec["iteration"], d, d.get("by", "reasoner"))
        return d

    async def _stage(self, rec: dict[str, Any], stage: str, data: dict[str, Any]) -> dict[str, Any] | None:
        if stage != "output":  # the answer of a stopped run is still written
            self.control.gate(stage)
        module = self.modules[stage]
        ctx = ProcessContext(self.run_id, rec["iteration"], stage, self.external, self._deadline(), self.services,
                             self.control.emit)
        inp = StageInput(data)
        self.control.emit("stage_started", {"iteration": rec["iteration"], "stage": stage, "module": module.id})
        t0 = time.perf_counter()
        try:
            out = await module.process(inp, ctx)
        except (KGOSError, Exception) as exc:  # a module's bug must not kill the run: it is recorded
            out = failed_output(exc)
        self.tokens += int(out.metrics.get("tokens", 0)) if isinstance(out.metrics, Mapping) else 0
        entry = self._record_stage(rec, stage, module, inp, out, time.perf_counter() - t0)
        self.control.emit("stage_completed", {"iteration": rec["iteration"], **entry})
        if out.status == "failed":
            if self.request.on_failure == "skip" and stage in _EMPTY:
                return copy.deepcopy(_EMPTY[stage])
            self._decide_by_runner("stop", "stage_failed", f"stage {stage} failed: {out.error}")
            return None
        return dict(out.data)

    def _record_stage(self, rec: dict[str, Any], stage: str, module: PipelineModule, inp: StageInput, out: StageOutput,
                      seconds: float) -> dict[str, Any]:
        snap = module.snapshot(inp, out)
        name = f"snapshots/{rec['iteration']}-{stage}.json" if rec["iteration"] else f"snapshots/final-{stage}.json"
        self.store.save_snapshot(self.run_id, name, snap)
        entry = {"stage": stage, "module": snap.module_id, "version": snap.module_version,
                 "config_hash": snap.config_sha256, "input_hash": snap.input_sha256,
                 "output_hash": snap.output_sha256, "status": out.status, "error": out.error,
                 "seconds": round(seconds, 4), "metrics": _jsonable(out.metrics), "snapshot": name}
        rec["stages"].append(entry)
        self.store.save_manifest(self.manifest)
        return entry

    # -- decisions, asks, budget ---------------------------------------------------------------------------
    def _record_decision(self, iteration: int, d: Mapping[str, Any], by: str) -> None:
        entry = {"iteration": iteration, "action": d["action"], "criterion": d.get("criterion"),
                 "loop_type": d.get("loop_type"), "rationale": d["rationale"], "by": by}
        if d.get("question"):
            entry["question"] = d["question"]
        self.manifest["decisions"].append(entry)
        self.store.save_manifest(self.manifest)
        self.control.emit("decision", entry)

    def _decide_by_runner(self, action: str, criterion: str, rationale: str) -> None:
        self._record_decision(len(self.manifest["iterations"]), {"action": action, "criterion": criterion,
                                                                 "rationale": rationale}, "runner")

    async def _ask(self, d: Mapping[str, Any]) -> bool:
        """Pause for a person's answer: in-line (CLI), by blocking (API), or by returning ``waiting``."""
        self.manifest["status"], self.manifest["pending_question"] = "waiting", d["question"]
        self._save_state()
        self.control.emit("ask", {"question": d["question"]})
        answer = None
        # blocking calls on purpose: this loop runs this one run and nothing else, and an executor
        # thread blocked on a person would be joined at interpreter exit (a process that never ends)
        if self.on_ask is not None:
            answer = self.on_ask(d["question"])
        elif self.wait_for_answers:
            answer = self.control.wait_answer(self.answer_timeout)
            if answer is None and self.control.stopped:
                raise Interrupted()
        if not answer or not answer.strip():
            return False
        self.accept_answer(answer.strip())
        return True

    def accept_answer(self, text: str) -> None:
        self.answers.append(text)
        self.manifest["answers"].append({"iteration": len(self.manifest["iterations"]), "text": text})
        self.manifest["status"], self.manifest["pending_question"] = "running", None
        self._record_decision(len(self.manifest["iterations"]), {
            "action": "answer", "rationale": f"a person answered: {text!r}"}, "user")
        self.refinement = {"keep_original": True}

    def _save_state(self) -> None:
        """What a resume needs besides the snapshots: the loop's memory between iterations."""
        self.manifest["state"] = {"history": self.history, "answers": self.answers, "refinement": self.refinement,
                                  "tokens": self.tokens, "elapsed_seconds": round(self._elapsed(), 3)}
        self.store.save_manifest(self.manifest)

    def restore(self, restart_last: bool = False) -> None:
        """Load the loop's memory of a saved run (``resume``): completed iterations are kept, a half-done
        last one is dropped and runs again. ``restart_last``: the last completed one is dropped too, so
        it runs again from the refinement it started from (the debugger's restart of a run that is
        not running)."""
        m = self.manifest
        m["iterations"] = [it for it in m["iterations"] if it.get("reasoning")]
        state = m.get("state") or {}
        self.history, self.answers = list(state.get("history", [])), list(state.get("answers", []))
        self.refinement, self.tokens = dict(state.get("refinement", {})), int(state.get("tokens", 0))
        if restart_last and m["iterations"]:
            dropped = m["iterations"].pop()
            self.refinement = dict(dropped.get("refinement", {}))
            self._record_decision(dropped["iteration"], {"action": "restart_iteration", "criterion": "user",
                                                         "rationale": f"iteration {dropped['iteration']} runs again"}, "user")
        self.elapsed_before = float(state.get("elapsed_seconds", 0.0))
        self.history = [h for h in self.history if h["iteration"] <= len(m["iterations"])]
        for it in m["iterations"]:
            snaps = {e["stage"]: e["snapshot"] for e in it["stages"]}
            self.deltas.append(dict(self.store.snapshot(self.run_id, snaps["store"]).output)["delta"])
        if m["iterations"]:
            last = {e["stage"]: e["snapshot"] for e in m["iterations"][-1]["stages"]}
            self.knowledge = dict(self.store.snapshot(self.run_id, last["merge"]).output)["knowledge"]
            self.last = {"assessment": dict(self.store.snapshot(self.run_id, last["reason"]).output)["assessment"],
                         "plan": dict(self.store.snapshot(self.run_id, last["query"]).output)}
        m["status"] = "running"

    def _elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self.started - self.control.waiting_seconds

    def _deadline(self) -> float | None:
        if self.request.budget_seconds is None:
            return None
        return time.monotonic() + max(0.0, self.request.budget_seconds - self._elapsed())

    def _over_budget(self) -> bool:
        r = self.request
        return ((r.budget_seconds is not None and self._elapsed() >= r.budget_seconds)
                or (r.budget_tokens is not None and self.tokens >= r.budget_tokens)
                or (r.budget_cost is not None and r.budget_cost <= 0))

    # -- output ----------------------------------------------------------------------------------------
    async def _finish(self, stopped_by: str | None, status: str) -> ResearchResult:
        a, plan = self.last.get("assessment", {}), self.last.get("plan", {})
        delta = merged_delta(self.deltas)
        rec: dict[str, Any] = {"iteration": 0, "stages": []}
        out = await self._stage(rec, "output", {
            "question": self.request.question, "knowledge": self.knowledge,
            "answer_claims": a.get("answer_claims", []), "subtopics": plan.get("subtopics", []),
            "entities": plan.get("entities", []), "kg_delta_sha256": content_hash(delta)})
        entry = rec["stages"][-1]
        self.manifest["output"] = entry
        self.manifest["output_sha256"] = entry["output_hash"]
        self.manifest["final_state"] = {"confidence": a.get("confidence", 0.0), "coverage": a.get("coverage", 0.0),
                                        "convergence_reason": stopped_by, "iterations": len(self.manifest["iterations"]),
                                        "kg_delta": {"nodes": len(delta["nodes"]), "edges": len(delta["edges"])}}
        self.manifest["status"] = status if out is not None else "failed"
        self.manifest["artifacts"] = self._artifacts(out or {}, delta)
        self.store.save_manifest(self.manifest)
        self.control.emit("run_finished", {"status": self.manifest["status"], "stopped_by": stopped_by,
                                           "output_sha256": self.manifest["output_sha256"]})
        return self._result(out)

    def _artifacts(self, out: Mapping[str, Any], delta: dict[str, Any]) -> dict[str, str]:
        arts = {"knowledge_graph": self.store.write_json(self.run_id, "outputs/kg_delta.json", delta)}
        if out:
            arts["answer"] = self.store.write_json(self.run_id, "outputs/answer.json", dict(out))
            arts["synthesis"] = self.store.write_text(self.run_id, "outputs/answer.md", answer_markdown(out))
        return arts

    def _result(self, out: Mapping[str, Any] | None = None) -> ResearchResult:
        return result_of(self.manifest, out, str(self.store.root / self.run_id))


def merged_delta(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    nodes: dict[str, Any] = {}
    edges: dict[tuple[str, str, str], Any] = {}
    for d in deltas:
        nodes.update({n["id"]: n for n in d.get("nodes", [])})
        edges.update({(e["source"], e["target"], e["type"]): e for e in d.get("edges", [])})
    return {"format": "kgos-node-link/1", "name": "research delta", "nodes": list(nodes.values()),
            "edges": list(edges.values())}


def answer_markdown(out: Mapping[str, Any]) -> str:
    lines = [f"# {out.get('question', '')}", "", out.get("answer", ""), "", "## Sources", ""]
    for c in out.get("citations", []):
        lines.append(f"[{c['n']}] {c['source']} chars {c['span'][0]}-{c['span'][1]} (claim {c['claim']})")
    for w in out.get("withheld", []):
        lines.append(f"\nWithheld claim {w['claim']} ({', '.join(w['flags'])}): untrusted text, not used")
    for c in out.get("conflicts", []):
        lines.append(f"\nConflict ({c['kind']}): claims {', '.join(c['claims'])}"
                     f" — {'resolved by ' + c['resolution']['by'] if c.get('resolution') else 'open'}")
    return "\n".join(lines) + "\n"


def result_of(m: Mapping[str, Any], out: Mapping[str, Any] | None, folder: str = "") -> ResearchResult:
    out = out or {}
    final = m.get("final_state") or {}
    delta = dict(final.get("kg_delta") or {"nodes": 0, "edges": 0})
    return ResearchResult(
        run_id=m["run_id"], status=m["status"], question=m["query"]["original"], answer=out.get("answer", ""),
        citations=tuple(out.get("citations", [])), sentences=tuple(out.get("sentences", [])),
        conflicts=tuple(out.get("conflicts", [])), iterations=len(m.get("iterations", [])),
        stopped_by=final.get("convergence_reason"), confidence=float(final.get("confidence") or 0.0),
        coverage=float(final.get("coverage") or 0.0), output_sha256=m.get("output_sha256"),
        kg_delta=delta, decisions=tuple(m.get("decisions", [])), pending_question=m.get("pending_question"),
        folder=folder, withheld=tuple(out.get("withheld", [])))


def _jsonable(value: Any) -> Any:
    try:
        content_hash(value)
        return copy.deepcopy(dict(value)) if isinstance(value, Mapping) else value
    except TypeError:
        return str(value)


