"""Embedding services, through their official SDKs (extra ``api``: ``openai``, ``google-genai``,
imported when an embedder is created).

- :class:`OpenAIEmbedder`: any OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, Ollama, vLLM,
  llama.cpp server, LM Studio...). ``base_url`` from the argument, else ``$KGOS_EMBED_BASE_URL``, else
  ``https://api.openai.com/v1``; the key from ``$OPENAI_API_KEY`` (required only for api.openai.com).
- :class:`GeminiEmbedder`: Google's ``models/{model}:batchEmbedContents`` with ``$GEMINI_API_KEY``
  (``RETRIEVAL_DOCUMENT`` for texts, ``RETRIEVAL_QUERY`` for queries).

Texts go out in batches (``batch_size``, capped by the service's limit) with a timeout per request.
Retries are the SDKs', bounded by ``max_retries``: 429 and 5xx answers with exponential backoff,
honouring ``Retry-After`` (openai: from 0.5 s, at most 8 s, network errors too; google-genai: from
``backoff`` s, at most 30 s). Anything else raises :class:`~kgos.embed.base.EmbeddingServiceError` with
the service's own message. Returned vectors are L2-normalised (not every server does it). Keys are
never put into error messages.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import Any, Self
from urllib.parse import urlparse

import numpy as np

from kgos.errors import InvalidArgument, MissingDependency
from kgos.settings import current

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
_RETRY_STATUSES = [429, 500, 502, 503, 504]


def _sdk(module: str, pip_name: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(pip_name, "api") from None


class _APIEmbedder(Embedder):
    """What both services share: argument checks, lazy ``dims``, batches, closing."""

    max_batch = 2048
    service = "embedding service"
    #: first retry delay in seconds where the SDK lets it be set (google-genai; doubles, at most 30 s)
    backoff = 0.5

    def __init__(self, *, timeout: float, max_retries: int, dims: int | None) -> None:
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise InvalidArgument(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgument(f"max_retries must be a non-negative integer, got {max_retries!r}")
        if dims is not None and (not isinstance(dims, int) or dims < 1):
            raise InvalidArgument(f"dims must be a positive integer, got {dims!r}")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._dims = dims
        self._close: Callable[[], None] = lambda: None

    @property  # type: ignore[override]
    def dims(self) -> int:
        """Vector width; for a model of unknown width, one probe request finds it."""
        if self._dims is None:
            self._dims = int(self._request_vectors(["dimension probe"], query=False).shape[1])
        return self._dims

    def close(self) -> None:
        self._close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attempts(self) -> str:
        return f"{self.max_retries + 1} attempt{'s' if self.max_retries else ''}"

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


def _message(body: Any) -> str:
    """The service's own words from an error body (a parsed JSON body, or its text)."""
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        err = err.get("message") or err
    text = " ".join(str(err if err is not None else "").split())
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


class OpenAIEmbedder(_APIEmbedder):
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
        url = (base_url or current().embed_base_url or OPENAI_DEFAULT_URL).rstrip("/")
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
        self._sdk = sdk = _sdk("openai", "openai")
        # a local server needs no key, the SDK insists on one: a stand-in, never sent
        self._client = sdk.OpenAI(api_key=key or "no-key", base_url=url, timeout=self.timeout,
                                  max_retries=max_retries)
        self._close = self._client.close
        self._headers: dict[str, Any] = {} if key else {"Authorization": sdk.Omit()}
        self.name = f"openai:{model}" + (f"@{dimensions}" if dimensions else "")
        self.spec = f"openai:{model}"

    def _request_vectors(self, texts: list[str], *, query: bool) -> np.ndarray:
        sdk, where = self._sdk, f"{self.service} at {_host(self.base_url)}"
        extra = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            resp = self._client.embeddings.create(model=self.model, input=texts, encoding_format="float",
                                                  extra_headers=self._headers, **extra)
        except sdk.APITimeoutError:
            raise EmbeddingServiceError(f"{where} did not answer within {self.timeout:g} s "
                                        f"({self._attempts()})") from None
        except sdk.APIConnectionError as exc:
            raise EmbeddingServiceError(f"cannot reach {where}: {exc.__cause__ or exc}") from None
        except sdk.APIStatusError as exc:
            raise EmbeddingServiceError(f"{where} answered HTTP {exc.status_code}: {_message(exc.body)}") from None
        except sdk.APIError as exc:  # a 200 whose body is not what the API answers
            raise EmbeddingServiceError(f"{where} answered with a body that is not an embedding list: "
                                        f"{_message(exc.body)}") from None
        data = getattr(resp, "data", None)
        if not isinstance(data, list):
            raise EmbeddingServiceError(f"{self.service} answered without a 'data' list")
        try:
            rows = [d.embedding for d in sorted(data, key=lambda d: d.index or 0)]
        except (AttributeError, TypeError):
            raise EmbeddingServiceError(f"{self.service} answered with malformed 'data' items") from None
        return _matrix(rows, len(texts), self.service)


class GeminiEmbedder(_APIEmbedder):
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
        url = (base_url or current().gemini_base_url or GEMINI_DEFAULT_URL).rstrip("/")
        if urlparse(url).scheme not in ("http", "https"):
            raise InvalidArgument(f"base_url must be an http(s) URL, got {url!r}")
        model = model.removeprefix("models/")
        super().__init__(timeout=timeout, max_retries=max_retries, dims=dimensions or _GEMINI_DIMS.get(model))
        self.model = model
        self.base_url = url
        self.dimensions = dimensions
        self._key = key
        self._genai = _sdk("google.genai", "google-genai")
        self._client: Any = None  # made on first use: the retry options read ``backoff`` as set then
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

    def _gemini(self) -> Any:
        if self._client is None:
            types = self._genai.types
            base, _, version = self.base_url.rpartition("/")  # the SDK adds the version to the base URL
            retry = types.HttpRetryOptions(attempts=self.max_retries + 1, initial_delay=self.backoff, max_delay=30.0,
                                           exp_base=2, jitter=0, http_status_codes=_RETRY_STATUSES)
            options = types.HttpOptions(base_url=base, api_version=version, timeout=int(self.timeout * 1000),
                                        retry_options=retry)
            self._client = self._genai.Client(api_key=self._key, vertexai=False, http_options=options)
            self._close = self._client.close
        return self._client

    def _request_vectors(self, texts: list[str], *, query: bool) -> np.ndarray:
        types, where = self._genai.types, f"{self.service} at {_host(self.base_url)}"
        config = types.EmbedContentConfig(task_type="RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT",
                                          output_dimensionality=self.dimensions)
        try:
            resp = self._gemini().models.embed_content(model=self.model, contents=texts, config=config)
        except self._genai.errors.APIError as exc:
            raise EmbeddingServiceError(f"{where} answered HTTP {exc.code}: {_message(exc.message)}") from None
        except Exception as exc:  # google-genai lets httpx's own errors through
            names = {c.__name__ for c in type(exc).__mro__}
            if "TimeoutException" in names:
                raise EmbeddingServiceError(f"{where} did not answer within {self.timeout:g} s") from None
            if "TransportError" in names:
                raise EmbeddingServiceError(f"cannot reach {where}: {type(exc).__name__}: {exc}") from None
            raise
        try:
            rows = [e.values for e in resp.embeddings or []]
        except (AttributeError, TypeError):
            raise EmbeddingServiceError(f"{self.service} answered with malformed 'embeddings' items") from None
        return _matrix(rows, len(texts), self.service)
