"""PostgreSQL as the system of record (docs/postgres.md): layout, import, search, two servers.

    python benchmarks/postgres_bench.py                  # go KG, 60 s load; a throwaway cluster
    python benchmarks/postgres_bench.py --quick          # a 5k-node synthetic KG, 10 s load
    python benchmarks/postgres_bench.py --database-url postgresql://...   # an existing (empty) database

Sections, each against an anchor measured in the same run:
- layout: one schema per KG against one shared table with a kg_id column (the choice of
  docs/postgres.md): loading a small KG's graph beside a big one, a lookup by id, dropping a KG;
- import: go into PostgreSQL (nodes/s) against a bare COPY of the same rows, and against SQLite;
- search: warm p50 on go in PostgreSQL against the same KG in SQLite (budget: ratio <= 1.2);
- visibility: a write on one ``kgos serve`` until search on another finds it (budget: 1 s), on a
  2,000-node KG and on go (the other server applies the change feed to its snapshot: issue 31);
- freshness: a write then a search on one process, go, PostgreSQL and SQLite, node and edge writes,
  against the same with snapshot deltas off (a full rebuild per version) in the same run;
- load: 8 readers + 2 writers across two servers: failed reads, lost writes.

    python benchmarks/postgres_bench.py --freshness      # only import, freshness and visibility on go
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the throwaway cluster of the tests

import httpx
import psycopg

import kgos
from kgos.store.importer import node_row

GO = HERE.parent.parent / "shared" / "bench" / "go"


# -- data --------------------------------------------------------------------------------------------
def dataset(quick: bool, folder: Path) -> tuple[Path, list[str]]:
    if not quick and (GO / "kg.json.gz").exists():
        queries = [json.loads(line)["query"] for line in (GO / "probes-dev.jsonl").open()][:300]
        return GO / "kg.json.gz", queries
    rng = random.Random(7)
    words = [f"w{i}" for i in range(800)]
    nodes = [{"id": f"n{i}", "name": " ".join(rng.sample(words, 3)), "type": f"t{i % 7}",
              "description": " ".join(rng.sample(words, 8))} for i in range(5000)]
    edges = [{"source": f"n{rng.randrange(5000)}", "target": f"n{rng.randrange(5000)}", "type": "rel"}
             for _ in range(10000)]
    path = folder / "synthetic.json"
    path.write_text(json.dumps({"format": "kgos-node-link/1", "nodes": nodes, "edges": edges}))
    return path, [" ".join(rng.sample(words, 3)) for _ in range(300)]


def load_rows(path: Path) -> tuple[list[tuple], list[tuple]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    ts = "2026-01-01T00:00:00Z"
    nodes = [(i + 1, *node_row(f"nodes[{i}]", n, ts)) for i, n in enumerate(data["nodes"])]
    index = {row[1]: row[0] for row in nodes}
    edges = [(index[e["source"]], index[e["target"]], e.get("type", "relates_to"), float(e.get("weight", 1.0)),
              "{}", ts, None) for e in data.get("edges", data.get("links", [])) if e["source"] in index
             and e["target"] in index]
    return nodes, edges


# -- layout: schema per KG against a kg_id column -------------------------------------------------------
LAYOUT_SCHEMA = """
CREATE TABLE {p}nodes ({c}rowid bigint, id text, name text, type text, properties jsonb, PRIMARY KEY ({k}rowid));
CREATE UNIQUE INDEX ON {p}nodes ({k}id);
CREATE TABLE {p}edges ({c}source bigint, target bigint, type text, weight float8, rowid bigserial);
CREATE INDEX ON {p}edges ({k}source); CREATE INDEX ON {p}edges ({k}target);
"""


def layout(url: str, big: int, small: int) -> list[dict]:
    rng = random.Random(3)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS lay_big, lay_small, lay_shared CASCADE")
        for schema in ("lay_big", "lay_small"):
            conn.execute(f"CREATE SCHEMA {schema}")
            conn.execute(LAYOUT_SCHEMA.format(p=f"{schema}.", k="", c=""))
        conn.execute("CREATE SCHEMA lay_shared")
        conn.execute(LAYOUT_SCHEMA.format(p="lay_shared.", k="kg_id, ", c="kg_id int, "))
        for kg, n in ((1, big), (2, small)):
            nodes = [(i, f"id{i}", f"name {i}", f"t{i % 9}", "{}") for i in range(1, n + 1)]
            edges = [(rng.randint(1, n), rng.randint(1, n), "rel", 1.0) for _ in range(2 * n)]
            schema = "lay_big" if kg == 1 else "lay_small"
            _copy(conn, f"{schema}.nodes (rowid, id, name, type, properties)", nodes)
            _copy(conn, f"{schema}.edges (source, target, type, weight)", edges)
            _copy(conn, "lay_shared.nodes (kg_id, rowid, id, name, type, properties)", [(kg, *r) for r in nodes])
            _copy(conn, "lay_shared.edges (kg_id, source, target, type, weight)", [(kg, *r) for r in edges])
        conn.execute("ANALYZE")
        ids = [f"id{rng.randint(1, small)}" for _ in range(300)]
        per_schema = {
            "small KG's graph (nodes + edges) beside a big one": _p50(lambda: (
                conn.execute("SELECT rowid, id, type FROM lay_small.nodes ORDER BY rowid").fetchall(),
                conn.execute("SELECT source, target, type, weight FROM lay_small.edges ORDER BY rowid").fetchall()), 7),
            "lookup by id (300)": _p50(lambda: [conn.execute("SELECT * FROM lay_small.nodes WHERE id = %s", (i,))
                                                .fetchone() for i in ids], 5)}
        shared = {
            "small KG's graph (nodes + edges) beside a big one": _p50(lambda: (
                conn.execute("SELECT rowid, id, type FROM lay_shared.nodes WHERE kg_id = 2 ORDER BY rowid").fetchall(),
                conn.execute("SELECT source, target, type, weight FROM lay_shared.edges WHERE kg_id = 2 "
                             "ORDER BY rowid").fetchall()), 7),
            "lookup by id (300)": _p50(lambda: [conn.execute("SELECT * FROM lay_shared.nodes WHERE kg_id = 2 AND "
                                                             "id = %s", (i,)).fetchone() for i in ids], 5)}
        per_schema["drop the big KG"] = _once(lambda: conn.execute("DROP SCHEMA lay_big CASCADE"))
        shared["drop the big KG"] = _once(lambda: (conn.execute("DELETE FROM lay_shared.edges WHERE kg_id = 1"),
                                                   conn.execute("DELETE FROM lay_shared.nodes WHERE kg_id = 1")))
        conn.execute("DROP SCHEMA IF EXISTS lay_small, lay_shared CASCADE")
    return [{"what": w, "schema_per_kg_ms": per_schema[w], "kg_id_column_ms": shared[w],
             "ratio": shared[w] / per_schema[w]} for w in per_schema]


def _copy(conn: psycopg.Connection, target: str, rows: list[tuple]) -> None:
    with conn.cursor().copy(f"COPY {target} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _p50(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _once(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


# -- import and search -------------------------------------------------------------------------------
def bare_copy(url: str, nodes: list[tuple], edges: list[tuple]) -> float:
    """The same rows, already parsed, COPYed into two plain tables: no checks, no indexes, no triggers."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TEMP TABLE bn (rowid bigint, id text, name text, norm_name text, type text, "
                     "description text, properties jsonb, created_at text, updated_at text)")
        conn.execute("CREATE TEMP TABLE be (source bigint, target bigint, type text, weight float8, "
                     "properties jsonb, created_at text, id text)")
        t0 = time.perf_counter()
        _copy(conn, "bn", nodes)
        _copy(conn, "be", edges)
        return time.perf_counter() - t0


def import_and_search(url: str, path: Path, queries: list[str], home: Path) -> dict:
    pg_ws, lite_ws = kgos.Workspace(home / "pg", database_url=url), kgos.Workspace(home / "lite")
    t0 = time.perf_counter()
    report = pg_ws.import_file("go", path)
    pg_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lite_ws.import_file("go", path)
    lite_s = time.perf_counter() - t0
    nodes, edges = load_rows(path)
    copy_s = bare_copy(url, nodes, edges)
    search = {name: _search_p50(ws.kg("go"), queries) for name, ws in (("postgres", pg_ws), ("sqlite", lite_ws))}
    return {"nodes": report.nodes, "edges": report.edges, "postgres_import_s": pg_s, "sqlite_import_s": lite_s,
            "bare_copy_s": copy_s, "postgres_nodes_per_s": report.nodes / pg_s,
            "bare_copy_nodes_per_s": report.nodes / copy_s, "sqlite_nodes_per_s": report.nodes / lite_s,
            "search_p50_ms": search, "search_ratio": search["postgres"] / search["sqlite"]}


def _search_p50(kg: kgos.KG, queries: list[str]) -> float:
    for q in queries[:20]:  # warm: the snapshot is built and loaded
        kg.search(q)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        kg.search(q)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


# -- freshness: a write, then search on the same process --------------------------------------------------
def same_server(kg: kgos.KG, writes: int, tag: str) -> dict:
    """Write + search on one process with snapshot deltas, then with them off (the anchor: each new
    version rebuilt from the KG, as before issue 31), node adds then edge adds."""
    from kgos.index import snapshot as snapshots
    kg.search("warm up")
    out = {}
    for mode in ("delta", "full"):
        real = snapshots._updated
        if mode == "full":
            snapshots._updated = lambda *a, **k: None  # type: ignore[assignment]
        try:
            out[mode] = {"node": _node_writes(kg, writes, f"{tag}{mode}"), "edge": _edge_writes(kg, writes)}
        finally:
            snapshots._updated = real  # type: ignore[assignment]
    return out


def _node_writes(kg: kgos.KG, writes: int, tag: str) -> dict:
    times = []
    for i in range(writes):
        name = f"zyxfresh{tag}{i} marker"
        t0 = time.perf_counter()
        kg.add_node(name, "probe")
        hits = kg.search(name, k=1).results
        times.append((time.perf_counter() - t0) * 1000)
        assert hits and hits[0].node.name == name, name
    return {"writes": writes, "p50_ms": statistics.median(times), "max_ms": max(times)}


def _edge_writes(kg: kgos.KG, writes: int) -> dict:
    rng = random.Random(len(kg.engine.snapshot().node_ids))
    ids = kg.engine.snapshot().node_ids
    times = []
    for _ in range(writes):
        a, b = rng.choice(ids), rng.choice(ids)
        t0 = time.perf_counter()
        kg.add_edge(a, b, "related_to")
        kg.search("mitochondrial membrane", k=10)
        times.append((time.perf_counter() - t0) * 1000)
    return {"writes": writes, "p50_ms": statistics.median(times), "max_ms": max(times)}


def freshness(url: str, home: Path, writes: int) -> dict:
    return {"postgres": same_server(kgos.Workspace(home / "pg", database_url=url).kg("go"), writes, "pg"),
            "sqlite": same_server(kgos.Workspace(home / "lite").kg("go"), writes, "lite")}


# -- two servers -------------------------------------------------------------------------------------
def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_servers(url: str, home: Path) -> tuple[list[subprocess.Popen], list[str]]:
    ports = [_port(), _port()]
    env = {**os.environ, "KGOS_DATABASE_URL": url, "KGOS_EMBEDDER": "hash"}
    procs = [subprocess.Popen([sys.executable, "-m", "kgos", "--home", str(home / f"s{i}"), "serve", "--port",
                               str(p)], env=env, stdout=subprocess.DEVNULL,
                              stderr=(home / f"s{i}.log").open("w"))
             for i, p in enumerate(ports)]
    bases = [f"http://127.0.0.1:{p}/api" for p in ports]
    for base in bases:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise SystemExit(f"server {base} did not start: " + "".join(
                (home / f"s{i}.log").read_text()[-2000:] for i in range(2)))
    return procs, bases


def notify_latency(url: str, writes: int) -> dict:
    """Commit on one ``PgDatabase`` until another's listener holds the new version (no snapshot)."""
    from kgos.store.postgres import PostgresStore
    from kgos.store.postgres_db import PgDatabase
    a, b = PgDatabase(url), PgDatabase(url)
    store = PostgresStore(a, "team")
    while not b.listening:
        time.sleep(0.01)
    times = []
    for i in range(writes):
        store.add_node(f"notify probe {i}", "probe")
        v, t0 = a.versions.get(store.schema), time.perf_counter()
        while b.versions.get(store.schema) != v and time.perf_counter() - t0 < 5:
            time.sleep(0.0005)
        times.append((time.perf_counter() - t0) * 1000)
    a.close()
    b.close()
    return {"writes": writes, "p50_ms": statistics.median(times), "max_ms": max(times)}


def small_kg(url: str, home: Path, nodes: int = 2000) -> None:
    """The KG "team" of the visibility and load sections: a KG a team edits (search rebuilds fast)."""
    rng = random.Random(5)
    words = [f"v{i}" for i in range(400)]
    data = {"format": "kgos-node-link/1", "nodes": [{"id": f"t{i}", "name": " ".join(rng.sample(words, 3)),
                                                     "type": "item"} for i in range(nodes)],
            "edges": [{"source": f"t{i}", "target": f"t{rng.randrange(nodes)}", "type": "rel"} for i in range(nodes)]}
    (home / "team.json").write_text(json.dumps(data))
    kgos.Workspace(home / "team", database_url=url).import_file("team", home / "team.json")


def visibility(bases: list[str], writes: int, kg: str) -> dict:
    a, b = bases
    httpx.post(f"{b}/kg/{kg}/search", json={"query": "warm up"}, timeout=300)
    times = []
    for i in range(writes):
        name = f"zyxvis{i} marker"
        assert httpx.post(f"{a}/kg/{kg}/nodes", json={"name": name, "type": "probe"}, timeout=300).status_code == 201
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 60:
            hits = httpx.post(f"{b}/kg/{kg}/search", json={"query": name, "k": 1}, timeout=300).json()["results"]
            if hits and hits[0]["node"]["name"] == name:
                break
        times.append((time.perf_counter() - t0) * 1000)
    return {"writes": writes, "p50_ms": statistics.median(times), "max_ms": max(times)}


def load(url: str, bases: list[str], queries: list[str], seconds: float, kg: str) -> dict:
    stop = time.monotonic() + seconds
    stats = {"reads": 0, "failed_reads": 0, "writes": 0, "failed_writes": 0}
    written: list[str] = []
    read_ms: list[float] = []
    lock = threading.Lock()

    def reader(base: str, seed: int) -> None:
        rng, c = random.Random(seed), httpx.Client(timeout=60)
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                ok = c.post(f"{base}/kg/{kg}/search", json={"query": rng.choice(queries), "k": 10}).status_code == 200
            except httpx.HTTPError:
                ok = False
            with lock:
                stats["reads"] += 1
                stats["failed_reads"] += not ok
                read_ms.append((time.perf_counter() - t0) * 1000)

    def writer(base: str, tag: str) -> None:
        c, i = httpx.Client(timeout=60), 0
        while time.monotonic() < stop:
            i += 1
            try:
                ok = c.post(f"{base}/kg/{kg}/nodes", json={"name": f"load {tag} {i}", "type": "load",
                                                          "id": f"load:{tag}:{i}"}).status_code == 201
            except httpx.HTTPError:  # a timeout: failed, unless the node shows up (then it is not lost either)
                ok = False
            with lock:
                stats["writes"] += 1
                if ok:
                    written.append(f"load:{tag}:{i}")
                else:
                    stats["failed_writes"] += 1

    threads = [threading.Thread(target=reader, args=(bases[i % 2], i)) for i in range(8)]
    threads += [threading.Thread(target=writer, args=(bases[i], f"w{i}")) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = kgos.Workspace(tempfile.mkdtemp(), database_url=url).kg(kg).store
    present = set(store.get_nodes(written))
    return {**stats, "seconds": seconds, "lost_writes": len(set(written) - present),
            "read_p50_ms": statistics.median(read_ms) if read_ms else float("nan")}


# -- main --------------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 5k-node synthetic KG, 10 s of load")
    ap.add_argument("--database-url", help="an existing empty database (default: a throwaway cluster)")
    ap.add_argument("--seconds", type=float, help="duration of the load section (default 60, quick 10)")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--freshness", action="store_true", help="only import, freshness and visibility on go")
    ap.add_argument("--writes", type=int, default=10, help="writes per freshness and visibility measure")
    args = ap.parse_args()
    os.environ.setdefault("KGOS_EMBEDDER", "hash")
    url = args.database_url or _throwaway()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path, queries = dataset(args.quick, home)
        out: dict = {"dataset": path.name}
        if not args.freshness:
            out["layout"] = layout(url, 20_000 if args.quick else 300_000, 2_000)
        out["import_search"] = import_and_search(url, path, queries, home)
        out["freshness"] = freshness(url, home, args.writes)
        if not args.freshness:
            small_kg(url, home)
            out["notify"] = notify_latency(url, 20)
        procs, bases = start_servers(url, home)
        try:
            out["visibility_big"] = visibility(bases, args.writes, "go")
            if not args.freshness:
                out["visibility"] = visibility(bases, 10, "team")
                team_queries = [f"v{i} v{i + 1}" for i in range(300)]
                out["load"] = load(url, bases, team_queries, args.seconds or (10 if args.quick else 60), "team")
        finally:
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                p.wait(30)
    print(report(out))
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=1))


def _throwaway() -> str:
    from postgres_cluster import cluster
    c, why = cluster()
    if c is None:
        raise SystemExit(why)
    return c.new_database()


def report(out: dict) -> str:
    s, vb = out["import_search"], out["visibility_big"]
    lines = [f"dataset: {out['dataset']} ({s['nodes']:,} nodes, {s['edges']:,} edges)", ""]
    if "layout" in out:
        lines += ["| layout (ms) | schema per KG | kg_id column | kg_id / schema |", "|---|---:|---:|---:|"]
        lines += [f"| {r['what']} | {r['schema_per_kg_ms']:.1f} | {r['kg_id_column_ms']:.1f} | {r['ratio']:.2f}x |"
                  for r in out["layout"]]
    lines += ["", "| measure | figure | anchor | ratio | budget |", "|---|---:|---:|---:|---|",
              (f"| import into PostgreSQL | {s['postgres_nodes_per_s']:,.0f} nodes/s ({s['postgres_import_s']:.1f} s) "
              f"| bare COPY {s['bare_copy_nodes_per_s']:,.0f} nodes/s ({s['bare_copy_s']:.1f} s) "
              f"| {s['bare_copy_nodes_per_s'] / s['postgres_nodes_per_s']:.1f}x | - |"),
              (f"| import into SQLite (same run) | {s['sqlite_nodes_per_s']:,.0f} nodes/s ({s['sqlite_import_s']:.1f} s) "
              "| | | - |"),
              (f"| warm search p50 | {s['search_p50_ms']['postgres']:.2f} ms | SQLite {s['search_p50_ms']['sqlite']:.2f} ms "
              f"| {s['search_ratio']:.2f}x | <= 1.2x |")]
    lines += _freshness_rows(out["freshness"], out["dataset"])
    lines.append(f"| write on server A -> search on B, {out['dataset']} | p50 {vb['p50_ms']:.0f} ms, max "
                 f"{vb['max_ms']:.0f} ms ({vb['writes']} writes; B applies the change feed) | | | <= 1000 ms |")
    if "load" not in out:
        return "\n".join(lines)
    v, n, ld = out["visibility"], out["notify"], out["load"]
    lines += [(f"| write -> other server's listener (NOTIFY) | p50 {n['p50_ms']:.1f} ms, max {n['max_ms']:.1f} ms "
               f"({n['writes']} writes) | | | - |"),
              (f"| write on server A -> search on B, 2,000-node KG | p50 {v['p50_ms']:.0f} ms, max {v['max_ms']:.0f} ms "
               f"({v['writes']} writes) | | | <= 1000 ms |"),
              (f"| 8 readers + 2 writers, 2 servers, 2,000-node KG, {ld['seconds']:.0f} s | {ld['reads']:,} reads "
              f"({ld['failed_reads']} failed, p50 {ld['read_p50_ms']:.0f} ms), {ld['writes']:,} writes "
              f"({ld['failed_writes']} failed, {ld['lost_writes']} lost) | | | 0 failed, 0 lost |")]
    return "\n".join(lines)


def _freshness_rows(f: dict, dataset: str) -> list[str]:
    rows = []
    for store in ("postgres", "sqlite"):
        for kind, what in (("node", "add a node, search finds it"), ("edge", "add an edge, then search")):
            d, a = f[store]["delta"][kind], f[store]["full"][kind]
            rows.append(f"| same server, {dataset}, {store}: {what} | p50 {d['p50_ms']:.0f} ms, max {d['max_ms']:.0f} ms "
                        f"({d['writes']} writes) | full rebuild per version: p50 {a['p50_ms']:.0f} ms, max "
                        f"{a['max_ms']:.0f} ms | {a['p50_ms'] / d['p50_ms']:.1f}x faster | - |")
    return rows


if __name__ == "__main__":
    main()
