"""Agent memory that grows a knowledge graph from text (spec/002; spec/000 section 9 stages 2 and 8).

>>> import tempfile, kgos
>>> from kgos.memory import MemoryService
>>> mem = MemoryService(kgos.Workspace(tempfile.mkdtemp()))
>>> r = mem.add("I prefer Python. I'm working on meshalyzer.")
>>> sorted((x.predicate, x.object.name) for x in r.relations)
[('prefers', 'Python'), ('works_on', 'Meshalyzer')]

Layout: ``store`` (memory items in workspace.db), ``extract`` (deterministic patterns), ``enrich``
(optional LLM), ``graph`` (upserts into the memory KG), ``context`` (the injected block), ``snapshot``
(spec/002 export/import), ``aliases`` (entity merging), ``temporal`` (time ranges, decay), and
``service`` (``MemoryService``, the API the CLI and the expert chat loop call).
"""

from .aliases import AliasProposal, alias_key
from .config import MemoryConfig
from .context import ContextEdge, MemoryContext, ScoredEntity, relevance
from .enrich import Enrichment, LLMEnricher, LLMOutput, parse_output
from .extract import USER_ID, EntityRef, Extraction, Relation, extract
from .pii import is_pii, pii_reason
from .service import AddResult, DecayReport, MemoryService, MemoryStats, RebuildReport, Timeline, TimelineItem
from .snapshot import SnapshotReport
from .store import Memory, MemoryFilter, MemoryHit, MemoryNotFound
from .temporal import TimeRange, decayed_weight, parse_question, parse_time_range

__all__ = [
                      "USER_ID",
                      "AddResult",
                      "AliasProposal",
                      "ContextEdge",
                      "DecayReport",
                      "Enrichment",
                      "EntityRef",
                      "Extraction",
                      "LLMEnricher",
                      "LLMOutput",
                      "Memory",
                      "MemoryConfig",
                      "MemoryContext",
                      "MemoryFilter",
                      "MemoryHit",
                      "MemoryNotFound",
                      "MemoryService",
                      "MemoryStats",
                      "RebuildReport",
                      "Relation",
                      "ScoredEntity",
                      "SnapshotReport",
                      "TimeRange",
                      "Timeline",
                      "TimelineItem",
                      "alias_key",
                      "decayed_weight",
                      "extract",
                      "is_pii",
                      "parse_output",
                      "parse_question",
                      "parse_time_range",
                      "pii_reason",
                      "relevance",
]
