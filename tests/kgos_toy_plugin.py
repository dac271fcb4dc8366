"""A third-party plugin for tests/test_plugins.py: an embedder, a predictor, a chat provider, a merge
strategy, a file format and an ingest extractor, registered through the hooks of kgos.plugins exactly as an installed
package's ``kgos`` entry point would."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kgos.embed.base import Embedder
from kgos.embed.registry import Backend
from kgos.ingest.facts import Facts
from kgos.ingest.files import Extractor
from kgos.linkpred.base import Predictor
from kgos.llm.base import ChatProvider
from kgos.plugins import hookimpl
from kgos.research.fusion import fuse
from kgos.store.formats import Format, Source


class LetterEmbedder(Embedder):
    """Counts of the letters a, e, i, o: texts with the same vowels embed alike."""

    name = "toy-letters-4"
    dims = 4
    spec = "toyletters"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.array([[t.lower().count(c) + 0.01 for c in "aeio"] for t in texts], dtype=np.float32)


class InDegree(Predictor):
    """Every entity scored by how many edges already point to it (as a tail) or leave it (as a head)."""

    name = "toy_indegree"
    light = True
    relation_blind = True

    def _fit(self, graph, valid) -> None:
        n = graph.n_entities
        self.into = np.bincount(graph.triples.tail, minlength=n).astype(np.float32)
        self.out = np.bincount(graph.triples.head, minlength=n).astype(np.float32)

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return np.tile(self.into, (len(head), 1))

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return np.tile(self.out, (len(tail), 1))


@hookimpl
def register_embedders() -> dict[str, Backend]:
    return {"toyletters": Backend("toyletters", f"{__name__}:LetterEmbedder", name="toy-letters-4", dims=4,
                                  description="vowel counts (a test plugin)")}


@hookimpl
def register_predictors() -> dict[str, type[Predictor]]:
    return {"toy_indegree": InDegree}


class Echo(ChatProvider):
    """Answers with the last user message, upper-cased (``echo:<model>``)."""

    def __init__(self, model: str | None) -> None:
        self.name = f"echo:{model or 'plain'}"

    def stream(self, messages, *, system=None, max_tokens=1024, timeout=60.0, tools=None, cancel=None,
               grounding=None):
        yield next(m.content for m in reversed(messages) if m.role == "user").upper()


def first_list_only(lists):
    """A merge strategy that keeps the first backend's ranking (to tell it apart from the built-ins)."""
    return fuse("round_robin", {"first": lists[0]})


def read_pairs(path: Path) -> Source:
    """``source<TAB>type<TAB>target`` lines: an edge each, its nodes made up from the names."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = sorted({r[0] for r in rows} | {r[2] for r in rows})
    return Source("pairs", {"name": path.stem},
                  lambda: iter((f"{path.name}:{n}", {"id": n, "name": n, "type": "thing"}) for n in names),
                  lambda: iter((f"{path.name}:{i}", {"source": s, "type": t, "target": d})
                               for i, (s, t, d) in enumerate(rows, 1)))


def write_pairs(store, path: Path, progress=None) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{e.source}\t{e.type}\t{e.target}\n" for e in store.iter_edges())


@hookimpl
def register_llm_providers() -> dict:
    return {"echo": lambda name, model, timeout, options: Echo(model)}


@hookimpl
def register_fusions() -> dict:
    return {"first_list_only": first_list_only}


@hookimpl
def register_formats() -> dict:
    return {"pairs": Format(read_pairs, write_pairs)}


def extract_ini(source, root: Path) -> Facts:
    """``[section]`` headers of an INI file, each a node linked to the file's node."""
    facts = Facts(source.rel)
    file_id = facts.node(f"file:{source.rel}", source.rel, "config_file")
    for line in (source.text or "").splitlines():
        if line.strip().startswith("[") and line.strip().endswith("]"):
            name = line.strip()[1:-1]
            facts.edge(file_id, facts.node(f"section:{source.rel}:{name}", name, "config_section"), "contains")
    return facts


@hookimpl
def register_extractors() -> dict:
    return {"ini": Extractor(extract_ini, (".ini", ".cfg"))}
