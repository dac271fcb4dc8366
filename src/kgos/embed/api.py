"""Embedding services over HTTP (extra ``api``: httpx, imported lazily).

- :class:`OpenAIEmbedder`: any OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, Ollama, vLLM,
  llama.cpp server, LM Studio...). ``base_url`` from the argument, else ``$KGOS_EMBED_BASE_URL``, else
  ``https://api.openai.com/v1``; the key from ``$OPENAI_API_KEY`` (required only for api.openai.com).
- :class:`GeminiEmbedder`: Google's ``models/{model}:batchEmbedContents`` with ``$GEMINI_API_KEY``
  (``RETRIEVAL_DOCUMENT`` for texts, ``RETRIEVAL_QUERY`` for queries).

Texts go out in batches (``batch_size``, capped by the service's limit) with a timeout per request; 429
and 5xx answers and network errors are retried with exponential backoff (honouring ``Retry-After``).
Anything else raises :class:`~kgos.embed.base.EmbeddingServiceError` with the service's own message.
Returned vectors are L2-normalised (not every server does it). Keys are never put into error messages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any, Self
from urllib.parse import urlparse

import numpy as np

from kgos.errors import InvalidArgument, MissingDependency

from .base import Embedder, EmbeddingServiceError, _check_batch_size, _check_texts, l2_normalize

__all__ = ["GeminiEmbedder", "OpenAIEmbedder"]

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com/v1beta"
_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_GEMINI_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "embedding-001": 768}


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise MissingDependency("httpx", "api") from None
    return httpx


class _HTTPEmbedder(Embedder):
    """Shared HTTP plumbing: client, retries, error messages, lazy ``dims``."""

    max_batch = 2048
    service = "embedding service"
    #: first retry delay in seconds (doubles per retry, at most 30 s)
    backoff = 0.5

    def __init__(self, *, timeout: float, max_retries: int, dims: int | None) -> None:
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise InvalidArgument(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgument(f"max_retries must be a non-negative integer, got {max_retries!r}")
        if dims is not None and (not isinstance(dims, int) or dims < 1):
            raise InvalidArgument(f"dims must be a positive integer, got {dims!r}")
        self._httpx = _httpx()
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._dims = dims
        self._client = self._httpx.Client(timeout=self.timeout)

    @property  # type: ignore[override]
    def dims(self) -> int:
        """Vector width; for a model of unknown width, one probe request finds it."""
        if self._dims is None:
            self._dims = int(self._request_vectors(["dimension probe"], query=False).shape[1])
        return self._dims

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, url: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        httpx = self._httpx
        delay = self.backoff
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                resp = self._client.post(url, json=payload, headers=headers)
            except httpx.TimeoutException:
                if last:
                    raise EmbeddingServiceError(
                        f"{self.service} at {_host(url)} did not answer within {self.timeout:g} s "
                        f"({self.max_retries + 1} attempts)"
                    ) from None
            except httpx.HTTPError as exc:
                if last:
                    raise EmbeddingServiceError(
                        f"cannot reach {self.service} at {_host(url)}: {type(exc).__name__}: {exc}"
                    ) from None
            else:
                if resp.status_code == 200:
                    try:
                        return resp.json()
                    except ValueError:
                        raise EmbeddingServiceError(
                            f"{self.service} at {_host(url)} answered 200 with a body that is not JSON"
                        ) from None
                retryable = resp.status_code == 429 or resp.status_code >= 500
                if not retryable or last:
                    raise EmbeddingServiceError(
                        f"{self.service} at {_host(url)} answered HTTP {resp.status_code}: {_message(resp)}"
                    )
                retry_after = resp.headers.get("retry-after")
                if retry_after:
                    try:
                        delay = max(delay, min(float(retry_after), 60.0))
                    except ValueError:
                        pass
            time.sleep(delay)
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")  # pragma: no cover

    def _request_vectors(self, texts: list[str], *, query: bool) -> np.ndarray:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), self.max_batch):
            out.append(self._request_vectors(texts[start : start + self.max_batch], query=False))
        vecs = np.concatenate(out) if len(out) > 1 else out[0]
        if self._dims is None:
            self._dims = int(vecs.shape[1])
        elif vecs.shape[1] != self._dims:
            raise EmbeddingServiceError(
                f"{self.service} returned {vecs.shape[1]}-d vectors, expected {self._dims}"
            )
        return vecs

    def _embed_query(self, text: str) -> np.ndarray:
        vec = self._request_vectors([text], query=True)[0]
        if self._dims is None:
            self._dims = int(vec.shape[0])
        return vec


def _host(url: str) -> str:
    p = urlparse(url)
    return f"{p.scheme}://{p.netloc}"


def _message(resp: Any) -> str:
    try:
        body = resp.json()
        err = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(err, dict):
            err = err.get("message") or err
        text = str(err)
    except ValueError:
        text = resp.text
    text = " ".join(text.split())
    return text[:300] or "(empty body)"


def _matrix(rows: list[Any], n: int, service: str) -> np.ndarray:
    if len(rows) != n:
        raise EmbeddingServiceError(f"{service} returned {len(rows)} vectors for {n} texts")
    try:
        arr = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingServiceError(f"{service} returned vectors of unequal length or non-numbers") from None
    if arr.ndim != 2 or arr.shape[1] == 0 or not np.all(np.isfinite(arr)):
        raise EmbeddingServiceError(f"{service} returned malformed vectors (shape {arr.shape})")
    return arr


class OpenAIEmbedder(_HTTPEmbedder):
    """OpenAI-compatible ``/embeddings``. ``dimensions`` asks text-embedding-3 models for shorter vectors."""

    max_batch = 2048
    service = "OpenAI-compatible embedding service"

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        if not model or not isinstance(model, str):
            raise InvalidArgument(
                "an OpenAI-compatible embedder needs a model name, e.g. openai:text-embedding-3-small"
            )
        url = (base_url or os.environ.get("KGOS_EMBED_BASE_URL") or OPENAI_DEFAULT_URL).rstrip("/")
        if urlparse(url).scheme not in ("http", "https"):
            raise InvalidArgument(f"base_url must be an http(s) URL, got {url!r}")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and urlparse(url).netloc == urlparse(OPENAI_DEFAULT_URL).netloc:
            raise InvalidArgument(
                "OPENAI_API_KEY is not set: export it, or point KGOS_EMBED_BASE_URL at an OpenAI-compatible "
                "server that needs no key (e.g. http://127.0.0.1:11434/v1 for Ollama)"
            )
        super().__init__(timeout=timeout, max_retries=max_retries, dims=dimensions or _OPENAI_DIMS.get(model))
        self.model = model
        self.base_url = url
        self.dimensions = dimensions
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.name = f"openai:{model}" + (f"@{dimensions}" if dimensions else "")
        self.spec = f"openai:{model}"

    def _request_vectors(self, texts: list[str], *, query: bool) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        body = self._post(f"{self.base_url}/embeddings", payload, self._headers)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingServiceError(f"{self.service} answered without a 'data' list")
        try:
            data = sorted(data, key=lambda d: d.get("index", 0))
            rows = [d["embedding"] for d in data]
        except (AttributeError, KeyError, TypeError):
            raise EmbeddingServiceError(f"{self.service} answered with malformed 'data' items") from None
        return _matrix(rows, len(texts), self.service)


class GeminiEmbedder(_HTTPEmbedder):
    """Gemini ``batchEmbedContents``. ``dimensions`` sets ``outputDimensionality``."""

    max_batch = 100
    service = "Gemini embedding service"

    def __init__(
        self,
        model: str = "gemini-embedding-001",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        if not model or not isinstance(model, str):
            raise InvalidArgument("a Gemini embedder needs a model name, e.g. gemini:gemini-embedding-001")
        key = api_key if api_key is not None else os.environ.get("GEMINI_API_KEY")
        if not key:
            raise InvalidArgument("GEMINI_API_KEY is not set: export it to use gemini:<model> embeddings")
        url = (base_url or os.environ.get("KGOS_GEMINI_BASE_URL") or GEMINI_DEFAULT_URL).rstrip("/")
        if urlparse(url).scheme not in ("http", "https"):
            raise InvalidArgument(f"base_url must be an http(s) URL, got {url!r}")
        model = model.removeprefix("models/")
        super().__init__(timeout=timeout, max_retries=max_retries, dims=dimensions or _GEMINI_DIMS.get(model))
        self.model = model
        self.base_url = url
        self.dimensions = dimensions
        self._headers = {"x-goog-api-key": key}
        self.name = f"gemini:{model}" + (f"@{dimensions}" if dimensions else "")
        self.spec = f"gemini:{model}"

    def embed_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        items = _check_texts(texts)
        _check_batch_size(batch_size)
        out = np.zeros((len(items), self.dims), dtype=np.float32)
        keep = [i for i, t in enumerate(items) if t.strip()]
        step = min(batch_size, self.max_batch)
        for start in range(0, len(keep), step):
            idx = keep[start : start + step]
            out[idx] = self._request_vectors([items[i] for i in idx], query=True)
        return l2_normalize(out)

    def _request_vectors(self, texts: list[str], *, query: bool) -> np.ndarray:
        task = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
        reqs = []
        for t in texts:
            r: dict[str, Any] = {
                "model": f"models/{self.model}",
                "content": {"parts": [{"text": t}]},
                "taskType": task,
            }
            if self.dimensions:
                r["outputDimensionality"] = self.dimensions
            reqs.append(r)
        body = self._post(
            f"{self.base_url}/models/{self.model}:batchEmbedContents", {"requests": reqs}, self._headers
        )
        embs = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(embs, list):
            raise EmbeddingServiceError(f"{self.service} answered without an 'embeddings' list")
        try:
            rows = [e["values"] for e in embs]
        except (KeyError, TypeError):
            raise EmbeddingServiceError(
                f"{self.service} answered with malformed 'embeddings' items"
            ) from None
        return _matrix(rows, len(texts), self.service)
