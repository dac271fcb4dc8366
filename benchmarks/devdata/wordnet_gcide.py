"""Build the ``wordnet-gcide`` dev set: WordNet artifact and food nouns, queried by GCIDE definitions.

    cd /tmp/debs && apt-get download wordnet-base dict-gcide      # the only online step
    python benchmarks/devdata/wordnet_gcide.py --debs /tmp/debs   # -> benchmarks/data/wordnet-gcide/

KG: one node per WordNet 3.0 noun synset in the lexicographer files ``noun.artifact`` and
``noun.food`` (Debian ``wordnet-base``): name = first lemma, aliases = the other lemmas,
description = the WordNet gloss; edges ``is_a`` (hypernym and instance hypernym), ``has_part``,
``has_member``, ``has_substance`` between synsets of the set.

Probes (level ``definition``): a reverse dictionary. For each noun that WordNet lists with exactly
one noun sense, in this set, and that the GNU Collaborative International Dictionary of English
(Debian ``dict-gcide``) defines with exactly one noun entry of exactly one sense, the query is
GCIDE's definition and the answer is the synset. Definitions GCIDE took from WordNet (tagged
``[WordNet 1.5]``) are skipped, so query text and node text come from independent dictionaries.
The probes never depend on any search result.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from benchfiles import (
    clip,
    counts,
    dedupe_edges,
    merge_probes,
    run_builder,
    unpack,
    write_kg,
    write_probes,
)

NAME = "wordnet-gcide"
LEXFILES = {"06": "artifact", "13": "food"}
POINTERS = {"@": "is_a", "@i": "is_a", "%p": "has_part", "%m": "has_member", "%s": "has_substance"}
WEBSTER_TAGS = re.compile(r"^\[(1913 Webster|Webster 1913 Suppl\.)\]$")  # PJC additions often paraphrase WordNet
MAX_PROBES = 1000
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def synsets(wordnet: Path) -> dict[str, dict]:
    """``{offset: {lemmas, lexfile, gloss, pointers}}`` for the noun synsets of ``LEXFILES``."""
    out = {}
    for line in (wordnet / "data.noun").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue  # licence header
        head, _, gloss = line.partition(" | ")
        f = head.split()
        if f[1] not in LEXFILES:
            continue
        n = int(f[3], 16)
        lemmas = [f[4 + 2 * i].replace("_", " ") for i in range(n)]
        rest = f[4 + 2 * n:]
        pointers = [(rest[1 + 4 * i], rest[2 + 4 * i], rest[3 + 4 * i]) for i in range(int(rest[0]))]
        out[f[0]] = {"lemmas": lemmas, "lexfile": LEXFILES[f[1]], "gloss": gloss.strip(),
                     "pointers": [(sym, off) for sym, off, pos in pointers if pos == "n" and sym in POINTERS]}
    return out


def monosemous(wordnet: Path) -> dict[str, str]:
    """``{lemma: synset offset}`` for nouns WordNet gives exactly one noun sense."""
    out = {}
    for line in (wordnet / "index.noun").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue
        f = line.split()
        if int(f[2]) == 1:
            out[f[0].replace("_", " ")] = f[-1]
    return out


def b64(s: str) -> int:
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def gcide_nouns(dictd: Path) -> dict[str, list[str | None]]:
    """``{headword (casefolded): [definition or None per noun entry]}``; None when not usable."""
    data = _gunzip(dictd / "gcide.dict.dz")
    out: dict[str, list[str | None]] = {}
    for line in (dictd / "gcide.index").read_text(encoding="utf-8").splitlines():
        head, off, size = line.split("\t")
        block = data[b64(off): b64(off) + b64(size)].decode("utf-8", "replace")
        first, _, body = block.partition("\n")
        if not re.match(re.escape(head) + r"\s*\\", first, re.IGNORECASE):
            continue  # a phrase indexed into another word's entry ("Windsor chair" -> "Windsor")
        first, body = _skip_etymology(first, body)
        if not re.search(r",\s*n\.(\s|$|,)", first) or re.search(r"\bv\. [ti]\.|\ba\.(\s|$)", first):
            continue
        out.setdefault(head.casefold(), []).append(_definition(body))
    return out


def _skip_etymology(first: str, body: str) -> tuple[str, str]:
    """Move the rest of a bracketed etymology that runs past the header line out of ``body``."""
    depth = first.count("[") - first.count("]")
    lines = body.splitlines()
    while depth > 0 and lines:
        depth += lines[0].count("[") - lines[0].count("]")
        first += " " + lines.pop(0).strip()
    return first, "\n".join(lines)


def _gunzip(path: Path) -> bytes:
    import gzip
    return gzip.open(path).read()


def _definition(body: str) -> str | None:
    """The one definition of a single-sense entry, markup removed; None for several senses or WordNet text."""
    lines = body.splitlines()
    if any(re.match(r"\s+(\d+\.|\(a\))\s", ln) for ln in lines):
        return None  # several senses
    text = []
    for ln in lines:
        s = ln.strip()
        if s.startswith("["):
            return _clean(" ".join(text)) if WEBSTER_TAGS.match(s) and text else None
        if s.startswith(("Note:", "Syn:")):
            return None  # a note before the source tag: the definition's end is unclear
        text.append(s)
    return None


def _clean(text: str) -> str | None:
    text = re.sub(r"\{([^}]*)\}", r"\1", text)                  # {cross reference}
    text = re.sub(r"\[(Obs|Colloq|R|Prov|Eng|U\. S|Scot|Archaic|Local)[^\]]*\]", "", text)
    text = re.sub(r"\[([a-zA-Z])[=^~`'\":.,]{1,2}\]", r"\1", text)  # [e^] accent codes
    text = re.sub(r"\s--[A-Z][\w.' ]*\.?$", "", text)            # trailing author citation
    text = re.sub(r"\s+", " ", text).strip(" ;")
    if re.match(r"(See|Same as|Alt\. of|Var\. of|Plural of|pl\. of)\b", text, re.IGNORECASE):
        return None  # a cross-reference, not a definition
    if re.match(r"(One|A person|He|She|A player)\b( \w+)?,? who\b|One who|A person\b", text, re.IGNORECASE):
        return None  # a person: never an artifact or a food, so a sense WordNet files elsewhere
    return text if len(text.split()) >= 3 and not re.search(r"[\[\\]", text) else None


def level(query: str, lemmas: list[str]) -> str:
    """``literal`` when the definition names its synset (a lemma as a whole word), else ``definition``."""
    named = any(re.search(rf"(?<!\w){re.escape(lemma)}(?!\w)", query, re.IGNORECASE) for lemma in lemmas)
    return "literal" if named else "definition"


def build(debs: Path, out: Path, seed: int = 13) -> dict:
    root, versions = unpack(debs, ["wordnet-base", "dict-gcide"])
    wordnet, dictd = root / "usr/share/wordnet", root / "usr/share/dictd"
    syn = synsets(wordnet)
    nodes, edges = [], []
    for off, s in syn.items():
        props = {"lexfile": f"noun.{s['lexfile']}", "aliases": s["lemmas"][1:]}
        nodes.append({"id": f"wn:{off}-n", "name": s["lemmas"][0], "type": s["lexfile"],
                      "description": clip(s["gloss"]), "properties": props})
        edges += [{"source": f"wn:{off}-n", "target": f"wn:{t}-n", "type": POINTERS[sym]} for sym, t in s["pointers"]]
    edges = dedupe_edges(edges, {n["id"] for n in nodes})
    defs = gcide_nouns(dictd)
    raw = []
    for lemma, off in sorted(monosemous(wordnet).items()):
        entries = defs.get(lemma.casefold(), [])
        if off in syn and len(entries) == 1 and entries[0]:
            raw.append({"query": entries[0], "relevant": [f"wn:{off}-n"], "lemma": lemma})
    source = f"dict-gcide {versions['dict-gcide']} (GCIDE definition of '{{}}')"
    probes = merge_probes(raw)
    probes = sorted(random.Random(seed).sample(probes, min(MAX_PROBES, len(probes))), key=lambda p: p["lemma"])
    probes = [{"id": f"wng-{i:04d}", "query": p["query"], "relevant": p["relevant"], "lenient": [],
               "level": level(p["query"], syn[p["relevant"][0][3:-2]]["lemmas"]),
               "source": source.format(p["lemma"])} for i, p in enumerate(probes)]
    meta = {"name": NAME,
            "description": "WordNet 3.0 noun synsets of noun.artifact and noun.food: first lemma as name, "
                           "other lemmas as aliases, gloss as description; hypernym, part, member and "
                           "substance edges. Probes are GCIDE (Webster 1913) definitions of monosemous nouns.",
            "source": ", ".join(f"Debian 12 {k} {v}" for k, v in versions.items()),
            "license": "WordNet 3.0 licence (Princeton University, permissive); probe queries from GCIDE, GPL-2+"}
    write_kg(out / "kg.json.gz", meta, nodes, edges)
    write_probes(out / "probes-dev.jsonl", probes)
    return {"versions": versions, "nodes": len(nodes), "node_types": counts(nodes, "type"), "edges": len(edges),
            "edge_types": counts(edges, "type"), "eligible": len(raw), "probes": len(probes),
            "levels": counts(probes, "level"), "answers": len({r for p in probes for r in p["relevant"]})}


if __name__ == "__main__":
    run_builder(build, __doc__, NAME)
