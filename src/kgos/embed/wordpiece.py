"""BERT uncased WordPiece tokenisation: the ``tokenizers`` library when installed, pure Python otherwise.

Both paths implement the pipeline of the all-MiniLM-L6-v2 ``tokenizer.json`` (BertNormalizer with
clean_text, Chinese-character spacing, accent stripping and lowercasing; BertPreTokenizer; WordPiece with
``##`` continuation and ``[UNK]`` for words over 100 characters or with no segmentation). The pure-Python
path is checked against ``tokenizers`` on the benchmark corpora in ``tests/test_embed.py``.

``Tokenize`` objects map texts to lists of token ids *without* special tokens, truncated to
``max_tokens`` content tokens; callers add ``[CLS]``/``[SEP]`` when their model needs them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "MINILM_VOCAB",
    "BertWordPiece",
    "load_vocab",
    "make_tokenizer",
]

#: vocab.txt of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), see assets/README.md
MINILM_VOCAB = "minilm-vocab.txt"

_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_ASCII_SPLIT = re.compile(r"[a-z0-9]+|[^a-z0-9 ]")
_ASCII_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_ASCII_WS = re.compile(r"[\t\n\r]")
# Unicode White_Space (what Rust's char::is_whitespace uses), minus the C0/C1 controls handled first
_WHITESPACE = frozenset(" \t\n\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(c) for c in range(0x2000, 0x200B)
)


def load_vocab(path: str | Path | None = None) -> list[str]:
    """Tokens of a vocab.txt (one a line, id = line number); ``None`` loads the bundled MiniLM vocab."""
    if path is None:
        text = (resources.files("kgos.embed") / "assets" / MINILM_VOCAB).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _is_chinese(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B920 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class BertWordPiece:
    """Pure-Python BERT uncased tokenizer (normaliser + pre-tokenizer + WordPiece), with a word cache."""

    def __init__(
        self,
        vocab: Sequence[str],
        *,
        unk_token: str = "[UNK]",
        prefix: str = "##",
        max_input_chars_per_word: int = 100,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        special_tokens: Sequence[str] = _SPECIALS,
    ) -> None:
        self.vocab = {tok: i for i, tok in enumerate(vocab)}
        self.unk_token = unk_token
        self.unk_id = self.vocab[unk_token]
        self.prefix = prefix
        self.max_chars = max_input_chars_per_word
        self.lowercase = lowercase
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        specials = [s for s in special_tokens if s in self.vocab]
        self._special_re = re.compile("|".join(re.escape(s) for s in specials)) if specials else None
        self._cache: dict[str, list[int]] = {}
        self._max_len = max((len(t) for t in self.vocab), default=1)

    # -- normalisation and pre-tokenisation --------------------------------------------------------

    def _normalize_general(self, text: str) -> str:
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD:
                continue
            if ch in "\t\n\r":
                out.append(" ")
                continue
            cat = unicodedata.category(ch)
            if cat[0] == "C" and cat != "Cn":  # Rust's table leaves unassigned code points alone
                continue
            if ch in _WHITESPACE:
                out.append(" ")
            elif _is_chinese(cp):
                out.append(" " + ch + " ")
            else:
                out.append(ch)
        s = "".join(out)
        if self.strip_accents:
            s = "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")
        if self.lowercase:
            # per character, as the Rust normaliser does (str.lower() would apply final-sigma rules)
            s = "".join(c.lower() for c in s) if "\u03a3" in s else s.lower()
        return s

    def _pretokenize(self, text: str) -> list[str]:
        if text.isascii():
            s = _ASCII_CTRL.sub("", text)
            s = _ASCII_WS.sub(" ", s)
            if self.lowercase:
                s = s.lower()
                return _ASCII_SPLIT.findall(s)
            return self._split_general(s)
        return self._split_general(self._normalize_general(text))

    @staticmethod
    def _split_general(s: str) -> list[str]:
        words: list[str] = []
        for chunk in s.split(" "):
            if not chunk:
                continue
            if chunk.isalnum():
                words.append(chunk)
                continue
            cur: list[str] = []
            for ch in chunk:
                if ch in _WHITESPACE:
                    if cur:
                        words.append("".join(cur))
                        cur = []
                elif _is_punct(ch):
                    if cur:
                        words.append("".join(cur))
                        cur = []
                    words.append(ch)
                else:
                    cur.append(ch)
            if cur:
                words.append("".join(cur))
        return words

    # -- WordPiece ---------------------------------------------------------------------------------

    def _wordpiece(self, word: str) -> list[int]:
        ids = self._cache.get(word)
        if ids is not None:
            return ids
        vocab = self.vocab
        if len(word) > self.max_chars:
            ids = [self.unk_id]
        else:
            ids = []
            start, n = 0, len(word)
            while start < n:
                end = min(n, start + self._max_len)
                found = None
                while start < end:
                    piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                    tid = vocab.get(piece)
                    if tid is not None:
                        found = tid
                        break
                    end -= 1
                if found is None:
                    ids = [self.unk_id]
                    break
                ids.append(found)
                start = end
        if len(self._cache) > 1_000_000:
            self._cache.clear()
        self._cache[word] = ids
        return ids

    def _encode_plain(self, text: str, out: list[int], limit: int) -> None:
        for w in self._pretokenize(text):
            out.extend(self._wordpiece(w))
            if len(out) >= limit:
                return

    def encode(self, text: str, max_tokens: int | None = None) -> list[int]:
        """Token ids of ``text`` without special tokens, at most ``max_tokens`` of them."""
        limit = max_tokens if max_tokens is not None else 1 << 62
        out: list[int] = []
        if self._special_re is not None and "[" in text:
            pos = 0
            for m in self._special_re.finditer(text):
                self._encode_plain(text[pos : m.start()], out, limit)
                out.append(self.vocab[m.group(0)])
                pos = m.end()
            self._encode_plain(text[pos:], out, limit)
        else:
            self._encode_plain(text, out, limit)
        return out[:limit]

    def encode_batch(self, texts: Sequence[str], max_tokens: int | None = None) -> list[list[int]]:
        return [self.encode(t, max_tokens) for t in texts]


class _HFTokenize:
    """Adapter over a ``tokenizers.Tokenizer`` with the same ``encode_batch`` contract."""

    def __init__(self, tok: Any) -> None:
        tok.no_padding()
        tok.no_truncation()
        tok.post_processor = None
        self.tok = tok

    def encode(self, text: str, max_tokens: int | None = None) -> list[int]:
        return self.encode_batch([text], max_tokens)[0]

    def encode_batch(self, texts: Sequence[str], max_tokens: int | None = None) -> list[list[int]]:
        encs = self.tok.encode_batch(list(texts), add_special_tokens=False)
        if max_tokens is None:
            return [e.ids for e in encs]
        return [e.ids[:max_tokens] for e in encs]


def _hf_from_vocab(vocab: Sequence[str]) -> Any:
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer(WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens([t for t in _SPECIALS if t in ids])
    return tok


def _bert_wordpiece_config(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The BertWordPiece arguments of a tokenizer.json, or None if it is not a plain BERT WordPiece."""
    model, norm, pre = spec.get("model") or {}, spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}
    if model.get("type") != "WordPiece" or pre.get("type") != "BertPreTokenizer":
        return None
    if norm.get("type") != "BertNormalizer" or not norm.get("clean_text", True):
        return None
    if not norm.get("handle_chinese_chars", True):
        return None
    vocab_map: dict[str, int] = model["vocab"]
    vocab = [""] * len(vocab_map)
    for tok, i in vocab_map.items():
        if i >= len(vocab):
            return None
        vocab[i] = tok
    return {
        "vocab": vocab,
        "unk_token": model.get("unk_token", "[UNK]"),
        "prefix": model.get("continuing_subword_prefix", "##"),
        "max_input_chars_per_word": model.get("max_input_chars_per_word", 100),
        "lowercase": norm.get("lowercase", True),
        "strip_accents": norm.get("strip_accents"),
        "special_tokens": [t["content"] for t in spec.get("added_tokens", []) if t.get("special")],
    }


def make_tokenizer(
    *,
    vocab: Sequence[str] | None = None,
    tokenizer_json: str | Path | None = None,
    backend: str = "auto",
) -> BertWordPiece | _HFTokenize:
    """A tokenizer from a vocab list (BERT uncased pipeline) or a ``tokenizer.json`` file.

    ``backend``: ``"python"`` (pure Python; BERT WordPiece tokenizers only), ``"hf"`` (the ``tokenizers``
    library, extra ``tokenizers``) or ``"auto"``: pure Python when the tokenizer is a BERT WordPiece (it
    gives the same ids and is faster on short texts), else ``tokenizers``.
    """
    from kgos.errors import InvalidArgument, MissingDependency

    if backend not in ("auto", "hf", "python"):
        raise InvalidArgument(f"tokenizer backend must be auto, hf or python, got {backend!r}")
    if (vocab is None) == (tokenizer_json is None):
        raise InvalidArgument("give exactly one of vocab or tokenizer_json")

    cfg = None
    if tokenizer_json is not None and backend != "hf":
        cfg = _bert_wordpiece_config(json.loads(Path(tokenizer_json).read_text(encoding="utf-8")))
    use_hf = backend == "hf" or (backend == "auto" and tokenizer_json is not None and cfg is None)
    if use_hf:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise MissingDependency("tokenizers", "tokenizers") from None
        if vocab is not None:
            return _HFTokenize(_hf_from_vocab(vocab))
        return _HFTokenize(Tokenizer.from_file(str(tokenizer_json)))
    if vocab is not None:
        return BertWordPiece(vocab)
    if cfg is None:
        raise MissingDependency("tokenizers", "tokenizers")
    vocab_list = cfg.pop("vocab")
    return BertWordPiece(vocab_list, **cfg)
