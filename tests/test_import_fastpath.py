"""The import's fast paths (orjson chunks for the node array, column-wise rows for clean batches) give
byte-identical rows, reports and errors to the checked paths (ijson record by record) on tricky input."""

from __future__ import annotations

import gzip
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import ijson
import pytest

from kgos.errors import ImportFailed
from kgos.store import importer
from kgos.store.formats import array_chunks, nodelink, open_source

DEEP: dict = {}
_level = DEEP
for _ in range(40):
    _level["x"] = {}
    _level = _level["x"]

TRICKY: list[Any] = [
    {"id": "n0", "name": "Plain", "type": "thing", "description": "clean"},
    {"id": "n1", "name": "  Ｆｕｌｌ Ｗｉｄｔｈ ﬁ  ", "type": "thing"},  # NFKC changes it
    {"id": "n2", "name": "e\u0301 caf\u00e9 \U0001F600 \u2028", "description": "\\\"}, {\"id\": \"x\"}, ]"},
    {"id": "n3", "name": "nested", "properties": {"a": {"b": [1, 2.5, {"c": "ü"}]}, "n": None, "t": True}},
    {"id": "n0", "name": "duplicate of n0"},
    {"id": 42, "name": "numeric id"},
    {"id": True, "name": "bool id"},
    {"name": "no id"},
    {"id": "", "name": "empty id"},
    {"id": "n4"},  # no name: the id stands in
    {"id": "n5", "name": "", "type": ""},
    {"id": "n6", "name": "null description", "description": None},
    {"id": "n7", "name": "props not an object", "properties": [1, 2]},
    {"id": "n8", "name": "too deep", "properties": DEEP},
    {"id": "n9", "name": "networkx attrs", "color": "red", "size": 3},
    {"id": "n10", "name": "dated", "created_at": "2020-01-01T00:00:00Z"},
    "a string", 7, None, [1, 2],
    {"id": "n11", "name": 12345},
    {"id": "n12", "name": "type list", "type": ["thing"]},
    {"id": "n13", "name": "ok after", "type": "thing", "description": "x" * 300},
    {"id": "n13", "name": "dup within batch"},
    {"id": "n14", "name": "big float", "properties": {"f": 1.7976931348623157e308, "tiny": 5e-324, "neg": -0.0}},
]
CLEAN = [{"id": f"c{i}", "name": f"  Name {i} ÄÖ" if i % 7 == 0 else f"Name {i}", "type": "thing",
          "description": f"desc {i}"} for i in range(60)]
EDGES = [{"source": "n0", "target": "n3", "type": "links"}, {"source": "n9", "target": "n13", "type": "links", "weight": 2.0},
         {"source": "c1", "target": "c2", "type": "links"}, {"source": "n8", "target": "n0", "type": "links"},
         {"source": "c1", "target": "c3", "type": "links", "weight": 3}, {"source": "c1", "target": "c4", "weight": "heavy"},
         {"source": "c1", "target": "c5", "type": "ü", "properties": {"why": "é", "n": [1, {"d": 2}]}},
         {"source": "c1", "target": "c6", "type": "links", "id": "e1", "created_at": "2020-01-01T00:00:00Z"},
         {"source": 42, "target": "c7"}, {"source": "c1", "target": "nowhere", "type": "links"},
         {"source": "c1", "target": "c2", "type": "links", "weight": 5.5}, {"source": "c2", "target": "c3", "type": ""},
         {"source": "c2", "target": "c3", "type": "links", "color": "red"}, "not an edge",
         {"source": "c2", "target": "c4", "type": "links", "properties": DEEP}]


@pytest.fixture(autouse=True)
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 bytes and batches of 7 records: every boundary case occurs in a small file."""
    monkeypatch.setattr(array_chunks, "BLOCK", 64)
    monkeypatch.setattr(importer, "BATCH", 7)


def _checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the fast paths off: ijson reads the arrays, each record goes through the loop."""
    monkeypatch.setattr(nodelink, "array_start", lambda f, key: None)
    monkeypatch.setattr(nodelink, "document_items", lambda f, reopen, key: ijson.items(f, f"{key}.item", use_float=True))
    monkeypatch.setattr(importer, "_clean_rows", lambda batch, ids, ts: None)


def _load(path: Path, tmp: Path, name: str, **kw: Any) -> tuple[dict, list[tuple], list[tuple]]:
    db = tmp / f"{name}.db"
    report = importer.bulk_load(db, open_source(path), "t", skip_dangling=True, **kw)
    conn = sqlite3.connect(db)
    # the timestamps of the import differ from run to run; every other byte must not
    nodes = conn.execute("SELECT rowid, id, name, norm_name, type, description, properties, "
                         "created_at = updated_at, created_at LIKE '2020%' FROM nodes ORDER BY rowid").fetchall()
    edges = conn.execute("SELECT rowid, source, target, type, weight, properties, id FROM edges ORDER BY rowid").fetchall()
    conn.close()
    return _no_time(report), nodes, edges


def _no_time(report: Any) -> dict:
    d = report.to_dict()
    d.pop("seconds")
    return d


def _write(path: Path, nodes: list[Any], edges: list[Any], indent: int | None = None) -> Path:
    path.write_text(json.dumps({"format": "kgos-node-link/1", "nodes": nodes, "edges": edges},
                               ensure_ascii=False, indent=indent), encoding="utf-8")
    return path


@pytest.mark.parametrize("indent", [None, 1])
def test_tricky_records_give_the_same_rows_and_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      indent: int | None) -> None:
    path = _write(tmp_path / "tricky.json", CLEAN[:20] + TRICKY + CLEAN[20:], EDGES, indent)
    fast = _load(path, tmp_path, "fast", skip_invalid=True)
    _checked(monkeypatch)
    checked = _load(path, tmp_path, "checked", skip_invalid=True)
    assert fast == checked
    report, nodes, _ = fast
    assert (report["skipped_invalid"], len(nodes), report["nodes"]) == (13 + 4, 60 + 12, 60 + 12)  # + 4 edges
    assert (report["skipped_dangling"], report["duplicate_edges"], report["edges"]) == (1, 1, 9)
    by_id = {row[1]: row for row in nodes}
    assert by_id["n1"][3] == "full width fi" and by_id["n0"][2] == "Plain" and by_id["42"][2] == "numeric id"
    assert json.loads(by_id["n3"][6]) == TRICKY[3]["properties"]


def test_clean_file_takes_the_column_path_with_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "clean.json", CLEAN, EDGES[2:3])
    calls: list[bool] = []
    clean_rows = importer._clean_rows
    monkeypatch.setattr(importer, "_clean_rows", lambda *a: calls.append((rows := clean_rows(*a)) is not None) or rows)
    fast = _load(path, tmp_path, "fast")
    assert calls == [True] * 9  # 60 records in batches of 7, each built by columns
    _checked(monkeypatch)
    assert _load(path, tmp_path, "checked") == fast
    assert [row[3] for row in fast[1][:2]] == ["name 0 äö", "name 1"]


LISTS_33: Any = 1
for _ in range(33):
    LISTS_33 = [LISTS_33]
WITH_PROPS = [{**r, "properties": p} for r, p in zip(CLEAN, [
    {}, {"synonyms": ["a", "b"], "count": 3}, {"f": 1.5e300, "tiny": 5e-324, "neg": -0.0, "t": True, "n": None},
    {"text": "é \U0001F600 \u2028 \"quoted\" {[brackets in a string]}"}, {"a": {"b": {"c": [1, 2, {"d": "e"}]}}},
    {"big": 2 ** 62, "small": -(2 ** 62)}, {"x": 1}] * 9)]


def test_records_with_properties_take_the_column_path_with_the_same_rows(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "props.json", WITH_PROPS, EDGES[2:3])
    calls: list[bool] = []
    clean_rows = importer._clean_rows
    monkeypatch.setattr(importer, "_clean_rows", lambda *a: calls.append((rows := clean_rows(*a)) is not None) or rows)
    fast = _load(path, tmp_path, "fast")
    assert calls == [True] * 9
    _checked(monkeypatch)
    assert _load(path, tmp_path, "checked") == fast
    assert json.loads(fast[1][1][6]) == WITH_PROPS[1]["properties"] and fast[1][0][6] == "{}"


@pytest.mark.parametrize("props", [DEEP, {"deep": LISTS_33}, {"s": "[" * 40}])
def test_properties_the_column_path_cannot_prove_go_to_the_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  props: dict) -> None:
    """Too deep, or brackets enough that the depth must be walked: the batch takes
    the record loop, whose rows and errors are those of the checked path."""
    records = CLEAN[:3] + [{"id": "p", "name": "P", "properties": props}] + CLEAN[3:6]
    path = _write(tmp_path / "odd.json", records, [])
    calls: list[bool] = []
    clean_rows = importer._clean_rows
    monkeypatch.setattr(importer, "_clean_rows", lambda *a: calls.append((rows := clean_rows(*a)) is not None) or rows)
    fast = _load(path, tmp_path, "fast", skip_invalid=True)
    assert calls == [False]
    _checked(monkeypatch)
    assert _load(path, tmp_path, "checked", skip_invalid=True) == fast


INVALID = [r for r in TRICKY if not isinstance(r, dict) or r.get("id") in (True, None, "", "n7", "n8", "n11", "n12")]


@pytest.mark.parametrize("record", INVALID + [{"id": "c3", "name": "duplicate of c3"}])
def test_without_skip_invalid_the_same_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: Any) -> None:
    path = _write(tmp_path / "bad.json", CLEAN[:10] + [record] + CLEAN[10:], [])
    with pytest.raises(ImportFailed) as fast:
        importer.bulk_load(tmp_path / "fast.db", open_source(path), "t")
    _checked(monkeypatch)
    with pytest.raises(ImportFailed) as checked:
        importer.bulk_load(tmp_path / "checked.db", open_source(path), "t")
    assert str(fast.value) == str(checked.value) and "nodes[" in str(fast.value)


MALFORMED = {
    "truncated in a record": lambda text: text[: text.index('"c30"') + 3],
    "truncated after the array": lambda text: text[: text.index('"edges"')],
    "garbage in a record": lambda text: text.replace('"c31"', '"c31" x', 1),
    "trailing comma": lambda text: text.replace('}, {"id": "c33"', '},, {"id": "c33"', 1),
    "integer beyond int64": lambda text: text.replace('"c35"}', '"c35", "properties": {"n": 18446744073709551615}}', 1),
    "long digits in a string": lambda text: text.replace('"desc 36"', '"12345678901234567890123"', 1),
    "form feed as space": lambda text: text.replace('"c37", "name"', '"c37",\f"name"', 1),
    "lone surrogate": lambda text: text.replace('"desc 38"', '"\\ud800"', 1),
    "control character": lambda text: text.replace('"desc 39"', '"a\tb"', 1),
}


@pytest.mark.parametrize("damage", list(MALFORMED))
def test_malformed_files_fail_or_load_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    text = json.dumps({"format": "kgos-node-link/1", "nodes": CLEAN, "edges": EDGES[2:3]})
    path = tmp_path / "damaged.json"
    path.write_text(MALFORMED[damage](text), encoding="utf-8")

    def outcome(name: str) -> Any:
        try:
            return _load(path, tmp_path, name)
        except ImportFailed as exc:
            return str(exc)
    fast = outcome("fast")
    _checked(monkeypatch)
    assert outcome("checked") == fast


@pytest.mark.parametrize(("keep", "where"), [(0.2, "nodes["), (0.5, "nodes["), (0.95, "edges["), (0.99, "edges[")])
def test_truncated_gzip_fails_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: float, where: str) -> None:
    """The same record named: chunks are read in ijson's 64 KB pieces (not with the tiny test blocks)."""
    monkeypatch.setattr(array_chunks, "BLOCK", 1 << 22)
    nodes = [{**node, "id": f"{node['id']}-{i}", "description": f"{i} {node}"} for i in range(120) for node in CLEAN]
    edges = [{"source": f"c1-{i}", "target": f"c2-{i}", "type": "links", "weight": i / 7} for i in range(120)] * 40
    blob = gzip.compress(json.dumps({"nodes": nodes, "edges": edges}).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(blob[: int(len(blob) * keep)])
    with pytest.raises(ImportFailed) as fast:
        importer.bulk_load(tmp_path / "fast.db", open_source(path), "t")
    _checked(monkeypatch)
    with pytest.raises(ImportFailed) as checked:
        importer.bulk_load(tmp_path / "checked.db", open_source(path), "t")
    assert str(fast.value) == str(checked.value)
    assert "truncated" in str(fast.value) and str(fast.value).startswith(where)


def _ijson_items(data: bytes) -> list[Any]:
    return list(array_chunks.ijson_array_items(io.BytesIO(data), "nodes"))


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 22])
def test_chunk_reader_matches_ijson(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(array_chunks, "BLOCK", block)
    items = TRICKY + [{"s": "}, {"}, {"s": "}]"}, [{"a": [{}]}], {"x": [{"y": 1}], "z": 2}] + CLEAN
    data = json.dumps({"name": "x", "graph": {"nodes": [1]}, "nodes": items, "edges": [{"a": 1}]}).encode()
    f = io.BytesIO(data)
    start = array_start_or_fail(f)
    assert list(array_chunks.fast_items(f, "nodes", start)) == _ijson_items(data)


def array_start_or_fail(f: io.BytesIO) -> bytes:
    start = array_chunks.array_start(f, "nodes")
    assert start is not None
    return start


@pytest.mark.parametrize("head", [b'["nodes"]', b'{"nod\\u0065s": [1]}', b'{"a": "' + b"x" * (1 << 21) + b'"}'])
def test_unusual_heads_are_left_to_ijson(head: bytes) -> None:
    assert array_chunks.array_start(io.BytesIO(head), "nodes") is None


def _outcome(items: Any) -> tuple[list[Any], str | None]:
    got: list[Any] = []
    try:
        for item in items:  # the items before an error count too
            got.append(item)  # noqa: PERF402
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return got, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return got, None


E = json.dumps(EDGES)
N = json.dumps(CLEAN[:5])
DOCUMENTS = [
    f'{{"nodes": {N}, "edges": {E}}}', f'{{"edges": {E}, "nodes": {N}}}', (f' {{ "graph" : {{"a": [1, {{"b": "}}"}}]}},'
    f' "directed": false, "n": -1.5e3, "s": "x\\"y", "nodes": {N}, "edges": {E}, "edges": [{{"source": "z"}}] }}\n'),
    '{}', '{"nodes": []}', f'{{"nodes": {N}, "edges": []}}',
    f'{{"nodes": {N}, "edges": {E}}} x', f'{{"nodes": {N}, "edges": {E}', f'{{"nodes": {N}, "edges": {E}}}}}',
    f'{{"nodes": {N}, "edges": {E[:-40]}', f'{{"nodes": {N}, "big": 123456789012345678901, "edges": {E}}}',
    f'{{"nodes": {N}, "edg\\u0065s": {E}}}', f'{{"nodes": {N},\f"edges": {E}}}', f'[{E}]',
    f'{{"nodes": {N}, "edges": {E}, "s": "\\ud800"}}', f'{{"nodes": {N}, "edges": {E}, "t": tru}}',
    f'{{"nodes": {N}, "edges": {E}, "o": {{"a": 1,}}}}', f'{{"nodes": {N} "edges": {E}}}',
]


@pytest.mark.parametrize("block", [16, 1 << 22])
@pytest.mark.parametrize("doc", DOCUMENTS)
def test_document_reader_matches_ijson(doc: str, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(array_chunks, "BLOCK", block)
    data = doc.encode()
    expected = _outcome(ijson.items(io.BytesIO(data), "edges.item", use_float=True))
    assert _outcome(array_chunks.document_items(io.BytesIO(data), lambda: io.BytesIO(data), "edges")) == expected


@pytest.mark.parametrize("doc", DOCUMENTS[:6])
def test_plain_documents_are_read_once(doc: str) -> None:
    def reopen() -> io.BytesIO:
        raise AssertionError("ijson should not have been needed")
    data = doc.encode()
    assert list(array_chunks.document_items(io.BytesIO(data), reopen, "edges")) == list(
        ijson.items(io.BytesIO(data), "edges.item", use_float=True))


def test_bulk_load_ends_with_the_schema_migrations_give(tmp_path: Path) -> None:
    """The bulk load drops the node id index and the others and builds them at the end: the file it
    leaves has the same schema as a new one, duplicate ids included."""
    from kgos.store.native import NativeStore
    NativeStore.create(tmp_path / "new.db", "new").close()
    _load(_write(tmp_path / "clean.json", CLEAN, EDGES[2:3]), tmp_path, "bulk")
    schema = "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    new, bulk = (sqlite3.connect(tmp_path / f"{name}.db") for name in ("new", "bulk"))
    assert bulk.execute(schema).fetchall() == new.execute(schema).fetchall()
    assert ("index", "nodes_id") in {row[:2] for row in bulk.execute(schema)}
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        bulk.execute("INSERT INTO nodes (id, name, norm_name, created_at, updated_at) VALUES ('c0','x','x','t','t')")


def test_properties_orjson_refuses_are_left_to_the_checks() -> None:
    """Integers wider than 64 bits or non-string keys (from sources other than JSON) make orjson raise:
    the column path declines and ``limits.check_properties`` decides, as on the record path."""
    from kgos.store.limits import dumps_within_limits
    assert dumps_within_limits([{"a": 1}, {"n": 2 ** 64}]) is None
    assert dumps_within_limits([{1: "x"}]) is None
    assert dumps_within_limits([{"a": [1, "é"]}, {}]) == ['{"a":[1,"é"]}', "{}"]
