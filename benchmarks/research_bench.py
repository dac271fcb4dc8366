"""Research pipeline benchmark (issue 17): 20 questions end to end on real data, offline provider.

    python benchmarks/research_bench.py                    # the 20 questions, MiniLM corpus vectors
    python benchmarks/research_bench.py --embedder hash    # quicker (lexical vectors)
    python benchmarks/research_bench.py --json-out out.json

Data, all installed from Debian packages or in ../shared/bench:

- the corpus: the Debian 12 man pages of 64 common commands (tar, gzip, grep, sed, find, ssh, curl, ...,
  from packages coreutils, tar, gzip, grep, sed, findutils, openssh-client, curl, wget, zip, ...)
  rendered to text with man(1) (``MANWIDTH=100 man --nh --nj -l PAGE | col -bx``: no hyphenation, so a
  sentence is the same text in every page) into a cache folder;
- the KG: ``bench/cli-man/kg.json.gz`` (3,073 man-page nodes), imported without vectors.

For each question (written for this benchmark with the facts a good answer must contain) one run with the
default reasoner, ``--max-iterations 5``, the extractive offline answer, the delta staged nowhere
(``store_mode=none``); then the run is replayed and its hashes compared. Reported: fact recall,
citation correctness (every citation's span, read back from the cited file, is the cited sentence),
iterations and the stopping criterion, p50 time per run and per stage, peak RSS, and the same-run
anchor: one ``kg.search`` + one corpus search (BM25 and vector) per question.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import kgos
from kgos.research import replay, research
from kgos.research.corpus import open_corpus
from kgos.research.extract import claim_frame

BENCH = HERE.parents[1] / "shared" / "bench"
COMMANDS = ("tar gzip gunzip zip unzip bzip2 xz grep sed find xargs ssh scp ssh-keygen sftp curl wget sort uniq "
            "cut wc head tail ln cp mv rm mkdir rmdir chmod chown du df ls ps kill top tmux git diff patch cat tee "
            "tr date touch stat file which env nice nohup timeout split join paste comm md5sum sha256sum base64 "
            "mktemp readlink realpath basename dirname seq").split()

# (question, facts): a fact is a list of alternatives; it is found when one occurs in the answer
# (options case-sensitive, words case-insensitive).
QUESTIONS: list[tuple[str, list[list[str]]]] = [
    ("How do I exclude files when creating a tar archive?", [["--exclude"], ["PATTERN", "pattern"]]),
    ("How do I compress a tar archive with gzip?", [["-z", "--gzip"], ["gzip"]]),
    ("What is the difference between tar and zip?", [["archive"], ["compress"]]),
    ("How does grep search directories recursively?", [["-r", "--recursive"], ["director"]]),
    ("How do I make grep ignore case?", [["-i", "--ignore-case"], ["case"]]),
    ("How do I edit a file in place with sed?", [["-i", "--in-place"], ["in place", "in-place"]]),
    ("How do I find files modified in the last days with find?", [["-mtime", "-mmin"], ["modif"]]),
    ("How do I delete the files that find finds?", [["-delete", "-exec"], ["delete", "remove"]]),
    ("How does xargs handle file names containing spaces?", [["-0", "--null"], ["null", "whitespace", "blank"]]),
    ("How do I copy a directory recursively with scp?", [["-r"], ["recursive"]]),
    ("How do I forward a local port with ssh?", [["-L"], ["port"]]),
    ("How do I generate a new ssh key pair?", [["ssh-keygen"], ["-t"]]),
    ("How do I make curl follow redirects?", [["-L", "--location"], ["redirect", "location"]]),
    ("How do I continue an interrupted download with wget?", [["-c", "--continue"], ["partial", "continue"]]),
    ("How do I sort lines numerically?", [["-n", "--numeric-sort"], ["numeric"]]),
    ("How do I count the lines of a file?", [["-l", "--lines"], ["newline", "line"]]),
    ("How do I follow a growing log file with tail?", [["-f", "--follow"], ["grow", "appended", "follow"]]),
    ("How do I create a symbolic link?", [["-s", "--symbolic"], ["symbolic"]]),
    ("How do I show disk usage in human readable sizes?", [["-h", "--human-readable"], ["human"]]),
    ("What does chmod do?", [["mode"], ["file"]]),
]


def build_corpus(folder: Path) -> tuple[Path, int]:
    """Render the man pages of COMMANDS to text (once; kept in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": "0"}
    for cmd in COMMANDS:
        target = folder / f"{cmd}.txt"
        if target.exists():
            continue
        page = subprocess.run(["man", "-w", cmd], capture_output=True, text=True, check=False).stdout.strip().splitlines()
        if not page:
            continue
        text = subprocess.run(f"man --nh --nj -l {page[0]} 2>/dev/null | col -bx", shell=True, capture_output=True,
                              text=True, env=env, check=False).stdout
        if text.strip():
            target.write_text(text, encoding="utf-8")
    return folder, len(list(folder.glob("*.txt")))


def found(fact: list[str], answer: str) -> bool:
    return any((alt in answer) if alt.startswith("-") or alt.isupper() else (alt.lower() in answer.lower())
               for alt in fact)


def citations_correct(result: object, corpus: Path, ws: kgos.Workspace) -> tuple[int, int]:
    """(correct, checked): a citation is correct when the cited span of the cited source (a file of the
    corpus, or a KG node's "name: description" text), whitespace squashed, contains the sentence that
    cites it, or (a corroborating source) says it with the same content words (``claim_frame``)."""
    ok = n = 0
    for s in result.sentences:
        for num in s["citations"]:
            c = result.citations[num - 1]
            n += 1
            if c["source"].startswith("kg:"):
                node = ws.kg(c["kg_node"]["db"]).get_node(c["kg_node"]["id"])
                text = f"{node.name}: {node.description}".strip(": ") if node else ""
            else:
                text = (corpus / c["source"]).read_text(encoding="utf-8")
            cited = " ".join(text[c["span"][0]:c["span"][1]].split())
            # a corroborating source says the same thing in its own words (same claim frame), or its
            # copy runs on (a KG description without paragraph breaks)
            ok += s["text"] in cited or claim_frame(cited) == claim_frame(s["text"])
    return ok, n


def anchor(ws: kgos.Workspace, corpus_dir: Path, embedder: str) -> list[float]:
    corpus = open_corpus(corpus_dir, ws.cache_dir / "research-corpus", embedder)
    kg = ws.kg("cli-man")
    times = []
    for q, _ in QUESTIONS:
        kg.engine.cache.clear()  # a cold result cache: the warm-up pass searched the same questions
        t0 = time.perf_counter()
        kg.search(q, k=20)
        corpus.search_scored(q, 20, "bm25")
        corpus.search_scored(q, 20, "vector")
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embedder", default="minilm", help="corpus vectors (default minilm, the product default)")
    ap.add_argument("--corpus-dir", default=str(HERE / "out" / "research-corpus"))
    ap.add_argument("--max-iterations", type=int, default=5)
    ap.add_argument("--home", default=str(HERE / "out" / "research-home"), help="the bench workspace (kept)")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    kg_file = BENCH / "cli-man" / "kg.json.gz"
    if shutil.which("man") is None or not kg_file.exists():
        sys.exit("needs man(1) with the Debian man pages (apt-get install man-db coreutils tar ...) and "
                 f"{kg_file}")
    corpus_dir, pages = build_corpus(Path(args.corpus_dir))
    # a kept workspace: the corpus index (MiniLM vectors take minutes on loaded cores) is built once
    home = Path(args.home)
    shutil.rmtree(home / "research", ignore_errors=True)
    ws = kgos.Workspace(home)
    t0 = time.perf_counter()
    if not ws.exists("cli-man"):
        ws.import_file("cli-man", kg_file)
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    corpus = open_corpus(corpus_dir, ws.cache_dir / "research-corpus", args.embedder)
    t_index = time.perf_counter() - t0
    anchor(ws, corpus_dir, args.embedder)  # warm: the KG snapshot and the embedder are loaded once
    anchors = anchor(ws, corpus_dir, args.embedder)
    rows, stage_times = [], {}
    for q, facts in QUESTIONS:
        ws.kg("cli-man").engine.cache.clear()  # nor may a run reuse the anchor's cached results
        t0 = time.perf_counter()
        r = research(ws, q, corpus=str(corpus_dir), kgs=["cli-man"], max_iterations=args.max_iterations,
                     store_mode="none", embedder=args.embedder)
        seconds = time.perf_counter() - t0
        rep = replay(ws, r.run_id)
        m = json.loads((Path(r.folder) / "manifest.json").read_text())
        for it in m["iterations"]:
            for e in it["stages"]:
                stage_times.setdefault(e["stage"], []).append(e["seconds"])
        ok, checked = citations_correct(r, corpus_dir, ws)
        rows.append({"question": q, "facts": len(facts), "found": sum(found(f, r.answer) for f in facts),
                     "citations_ok": ok, "citations": checked, "iterations": r.iterations,
                     "stopped_by": r.stopped_by, "seconds": round(seconds, 3), "confidence": r.confidence,
                     "coverage": r.coverage, "replay_identical": rep.identical,
                     "same_output_sha256": rep.output_sha256 == r.output_sha256, "run_id": r.run_id})
        print(f"{len(rows):2}. {rows[-1]['found']}/{len(facts)} facts, {r.iterations} it, {r.stopped_by:20} "
              f"{seconds:6.2f}s replay {'identical' if rep.identical else 'DIFFERS'}  {q}", file=sys.stderr)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p50_run, p50_anchor = statistics.median(r["seconds"] for r in rows), statistics.median(anchors)
    summary = {
        "corpus": {"pages": pages, "chunks": len(corpus), "embedder": args.embedder,
                   "index_seconds": round(t_index, 2)},
        "kg": {"db_id": "cli-man", "nodes": ws.kg("cli-man").node_count(), "import_seconds": round(t_import, 2)},
        "fact_recall": round(sum(r["found"] for r in rows) / sum(r["facts"] for r in rows), 3),
        "questions_all_facts": sum(r["found"] == r["facts"] for r in rows),
        "citation_correctness": round(sum(r["citations_ok"] for r in rows) / max(1, sum(r["citations"] for r in rows)), 3),
        "citations_checked": sum(r["citations"] for r in rows),
        "replays_identical": sum(r["replay_identical"] and r["same_output_sha256"] for r in rows),
        "stopped_by": {k: sum(r["stopped_by"] == k for r in rows) for k in sorted({r["stopped_by"] for r in rows})},
        "iterations_p50": statistics.median(r["iterations"] for r in rows),
        "iterations_max": max(r["iterations"] for r in rows),
        "p50_run_seconds": round(p50_run, 3), "p50_anchor_seconds": round(p50_anchor, 4),
        "run_vs_anchor": round(p50_run / p50_anchor, 1),
        "p50_stage_seconds": {k: round(statistics.median(v), 4) for k, v in stage_times.items()},
        "peak_rss_mb": round(peak_mb, 1), "cpus": os.cpu_count(), "rows": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=1))
    ws.close()


if __name__ == "__main__":
    main()
