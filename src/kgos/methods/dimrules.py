"""The word rules of ``dims auto``: for each dimension of the catalogue whose ends a node's own words
can show, the words that put a node at the high end and those that put it at the low end.

A rule gives a value only when exactly one of its sides matches the node's text (name, description,
aliases, keywords, tags): a node that says both "batch" and "real-time" gets no ``batch_suitability``.
The words come from the catalogue's own descriptions of each end (spec/000 section 5), not from any
KG; ``benchmarks/dims_bench.py`` measures them against the values a person set on the demo KG.

>>> RULES["batch_suitability"].value("Submit requests as one asynchronous batch job")
0.85
>>> RULES["batch_suitability"].value("Stream tokens for a real-time chat")
0.15
>>> RULES["batch_suitability"].value("Batch the requests overnight, then stream the summary") is None
True
>>> RULES["data_sensitivity_level"].value("Redact PII before sending")
0.9
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    """Whole-word alternatives as one pattern, with the literal text each alternative starts with.
    ``re`` tries every alternative at every position, so a text in which no start begins a word is not
    searched at all (see :class:`Text`): on the go KG that leaves 79 thousand searches of 5 million."""

    pattern: re.Pattern[str]
    starts: frozenset[str]

    def search(self, text: Text) -> bool:
        if "" not in self.starts and self.starts.isdisjoint(text.starts):
            return False
        return self.pattern.search(text.lowered) is not None


@dataclass(frozen=True)
class WordRule:
    """High words -> ``high``; low words -> ``low``; both or neither -> no value."""

    high_words: Words | None
    high: float
    low_words: Words | None = None
    low: float = 0.15

    def value(self, text: str | Text) -> float | None:
        text = text if isinstance(text, Text) else Text(text)
        up = bool(self.high_words and self.high_words.search(text))
        down = bool(self.low_words and self.low_words.search(text))
        if up == down:
            return None
        return self.high if up else self.low


class Text:
    """A node's text, lower-cased once, with the rule starts that begin one of its words.

    A start made of word characters only ("stream") is present when a word begins with it; a longer
    one ("api key", "tl;") when its leading word is a word of the text (the pattern checks the rest).
    What each distinct word contributes is remembered across nodes: a KG repeats its vocabulary.
    """

    __slots__ = ("lowered", "starts")

    def __init__(self, text: str) -> None:
        self.lowered = text.lower()
        self.starts: set[str] = set().union(*map(_word_starts, set(_WORD.findall(self.lowered))))


_WORD = re.compile(r"\w+")
_PREFIX_STARTS: set[str] = set()  # starts of word characters only: present as the beginning of a word
_WORD_STARTS: dict[str, set[str]] = {}  # a leading word -> the longer starts that begin with it
_SEEN: dict[str, frozenset[str]] = {}
_SEEN_MAX = 200_000


def _word_starts(word: str) -> frozenset[str]:
    found = _SEEN.get(word)
    if found is None:
        found = frozenset({word[:i] for i in range(2, len(word) + 1) if word[:i] in _PREFIX_STARTS}
                          | _WORD_STARTS.get(word, set()))
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN[word] = found
    return found


def words(*patterns: str) -> Words:
    """One pattern matching any of ``patterns`` (lower case, regular expressions) as whole words."""
    starts = frozenset(s for p in patterns for s in literal_starts(p))
    if any(len(s) < 2 for s in starts):
        starts = frozenset({""})  # a start this short filters nothing: always searched
    for s in starts - {""}:
        lead = _WORD.match(s)
        if lead and lead.group(0) == s:
            _PREFIX_STARTS.add(s)
        elif lead:
            _WORD_STARTS.setdefault(lead.group(0), set()).add(s)
        else:
            raise ValueError(f"a rule pattern must start with a word character: {s!r}")
    return Words(re.compile(r"\b(?:" + "|".join(patterns) + r")\b"), starts)


def literal_starts(pattern: str) -> list[str]:
    """The literal text any match of ``pattern`` starts with, one per top-level branch of a leading group.

    >>> literal_starts("real[- ]?time"), literal_starts("(?:thousands|millions) of"), literal_starts("gpus?")
    (['real'], ['thousands', 'millions'], ['gpu'])
    """
    if pattern.startswith("(?:"):
        depth, branches, start = 0, [], 3
        for i, ch in enumerate(pattern):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 1 and ch == "|" or depth == 0 and ch == ")":
                branches.append(pattern[start:i])
                start = i + 1
            if depth == 0 and ch == ")":
                return [s for b in branches for s in literal_starts(b)] if pattern[i + 1:i + 2] not in ("?", "*") else [""]
        return [""]
    literal = re.match(r"[a-z0-9 _;']*", pattern)
    head = literal.group(0) if literal else ""
    if pattern[len(head):len(head) + 1] in ("?", "*", "{"):
        head = head[:-1]  # the last character is optional
    return [head]


def rule(high: tuple[str, ...], value: float = 0.85, low: tuple[str, ...] = (), low_value: float = 0.15) -> WordRule:
    return WordRule(words(*high) if high else None, value, words(*low) if low else None, low_value)


_BATCH = (r"batch(?:es|ed|ing)?", r"bulk", r"offline", r"overnight", r"backlogs?")
_LIVE = (r"real[- ]?time", r"live", r"low[- ]latency", r"interactive", r"instant(?:ly)?", r"sub[- ]second")
_STREAM = (r"stream(?:s|ed|ing)?", r"server[- ]sent events", r"sse", r"incremental(?:ly)? output")
_FORMATS = (r"json", r"xml", r"csv", r"tsv", r"yaml", r"markdown", r"html", r"pdfs?", r"docx", r"spreadsheets?",
            r"excel")

RULES: dict[str, WordRule] = {
    # Performance & Cost
    "latency_sensitivity": rule(_LIVE + (r"latency", r"fast(?:er|est)? responses?", r"time to first token",
                                         r"typing effect", r"response time"),
                                low=_BATCH + (r"within 24 hours", r"asynchronous job", r"completion window")),
    "throughput_requirement": rule((r"high[- ]volume", r"throughput", r"at scale", r"bulk", r"backlogs?",
                                    r"(?:thousands|millions) of", r"in parallel", r"job queues?", r"workers?"),
                                   low=(r"single request", r"one[- ]off", r"one at a time")),
    "pricing_tier": rule((r"expensive", r"premium", r"costly", r"pricey", r"high[- ]cost", r"per[- ]call pricing",
                          r"enterprise pricing", r"(?:doubles?|triples?|multiplies) (?:the )?cost"),
                         low=(r"free(?![- ]form)", r"cheap(?:er|est)?", r"inexpensive", r"low[- ]cost", r"no cost",
                              r"discount(?:s|ed)?", r"half[- ]price", r"open[- ]source", r"saves? money"),
                         value=0.85, low_value=0.15),
    "token_efficiency": rule((r"fewer tokens", r"(?:reduce|cut|save|saves|trim|trims|caps?) (?:the )?tokens?",
                              r"concise", r"compress(?:ed|es|ion)?", r"token budget(?:ing)?", r"shorter (?:prompts|answers)"),
                             low=(r"token[- ]heavy", r"more tokens", r"extra tokens", r"reasoning tokens",
                                  r"whole documents?", r"long preambles?")),
    "batch_suitability": rule(_BATCH, low=_LIVE + _STREAM),
    "cache_effectiveness": rule((r"cache[sd]?", r"caching", r"memoi[sz](?:e|ed|ation)", r"reuse[sd]?")),
    "rate_limit_sensitivity": rule((r"rate[- ]limit(?:s|ed|ing)?", r"quotas?", r"throttl(?:e|ed|es|ing)", r"429",
                                    r"requests per minute", r"overload(?:ed)?")),
    "compute_intensity": rule((r"gpus?", r"compute[- ]heavy", r"heavy compute", r"test[- ]time compute",
                               r"train(?:ing)? (?:a )?models?", r"cpu[- ]intensive"),
                              low=(r"lightweight", r"cheap to run", r"negligible (?:cost|overhead)")),
    # Complexity & Effort
    "configuration_depth": rule((r"configur(?:e|ed|es|ation|ations)", r"config files?", r"settings", r"yaml",
                                 r"environment variables?", r"iam"),
                                value=0.7, low=(r"zero[- ]config(?:uration)?", r"no setup", r"out of the box")),
    "learning_curve": rule((r"steep learning", r"deep expertise", r"advanced", r"expert[- ]level"), value=0.75,
                           low=(r"beginners?", r"easy", r"simple", r"copy[- ]paste", r"one line"), low_value=0.2),
    "error_handling_need": rule((r"errors?", r"retr(?:y|ies|ied|ying)", r"fail(?:s|ed|ing|ures?)?", r"exceptions?",
                                 r"time[- ]?outs?", r"fallbacks?", r"outages?", r"transient", r"overloaded",
                                 r"untrusted", r"invalid")),
    "debugging_difficulty": rule((r"silent(?:ly)?", r"hard to (?:debug|trace|reproduce)", r"non[- ]?deterministic",
                                  r"race conditions?", r"hallucinat(?:e|es|ed|ion|ions)", r"intermittent",
                                  r"multi[- ]agent", r"unpredictabl[ey]"),
                                 value=0.8, low=(r"clear error", r"obvious", r"easy to (?:debug|test)")),
    "maintenance_burden": rule((r"maintenance", r"maintain(?:ed|ing)?", r"deprecat(?:e|ed|ion|ions)",
                                r"retire(?:d|ment)?", r"rotat(?:e|ed|es|ion)", r"drift", r"keep up to date",
                                r"on a schedule"),
                               value=0.7, low=(r"set and forget", r"one[- ]time"), low_value=0.1),
    # Interaction Patterns
    "streaming_support": rule(_STREAM, value=0.9),
    "batching_capability": rule(_BATCH[:2] + (r"batch api", r"many (?:items|requests) at once")),
    "async_compatibility": rule((r"async(?:hronous(?:ly)?)?", r"await", r"non[- ]blocking", r"queues?", r"queued",
                                 r"background", r"webhooks?", r"callbacks?", r"jobs?"),
                                low=(r"synchronous(?:ly)?", r"blocking"), low_value=0.2),
    "real_time_requirement": rule(_LIVE, value=0.85, low=_BATCH + (r"asynchronous", r"within 24 hours"),
                                  low_value=0.1),
    "multi_turn_depth": rule((r"multi[- ]turn", r"conversations?", r"conversational", r"dialogues?",
                              r"chat history", r"follow[- ]ups?", r"turns")),
    "context_dependency": rule((r"context", r"history", r"earlier turns", r"prior messages"), value=0.8,
                               low=(r"context[- ]independent", r"stateless"), low_value=0.2),
    "state_management": rule((r"stateful", r"states?", r"sessions?", r"memory", r"history", r"persist(?:ent|ence|s)?"),
                             value=0.8, low=(r"stateless",), low_value=0.1),
    # Data Characteristics
    "data_volume_sensitivity": rule((r"large (?:datasets?|files?|documents?|volumes?|backlogs?|codebases?|log files?)",
                                     r"big data", r"massive", r"(?:tera|giga)bytes?", r"long documents?",
                                     r"datasets?", r"(?:thousands|millions) of", r"at scale"),
                                    low=(r"a few (?:dozen|rows|items)", r"small data", r"small inputs?"),
                                    low_value=0.15),
    "format_flexibility": rule((r"any format", r"(?:many|multiple|several|different) (?:file )?formats",
                                r"formats such as"), value=0.8, low=(r"single format", r"only accepts"),
                               low_value=0.2),
    "schema_strictness": rule((r"schemas?", r"json[- ]schema", r"strict(?:ly)?", r"typed", r"validat(?:e|es|ed|ion|or)",
                               r"grammars?", r"constrain(?:ed|s|ts)?"),
                              low=(r"schema[- ]?free", r"schemaless", r"free[- ]form"), low_value=0.1),
    "data_sensitivity_level": rule((r"pii", r"personal (?:data|information)", r"phi", r"hipaa", r"gdpr", r"privacy",
                                    r"confidential", r"secrets?", r"credentials?", r"api keys?", r"passwords?",
                                    r"sensitive", r"data residency", r"encrypt(?:ed|ion)?"),
                                   value=0.9, low=(r"public data", r"non[- ]sensitive"), low_value=0.1),
    "multimodal_support": rule((r"images?", r"vision", r"audio", r"video", r"pdfs?", r"screenshots?", r"photos?",
                                r"speech", r"voice", r"ocr", r"scanned", r"charts?", r"diagrams?"), value=0.8,
                               low=(r"text[- ]only",), low_value=0.1),
    "structured_vs_unstructured": rule((r"json", r"sql", r"csv", r"tables?", r"tabular", r"spreadsheets?", r"excel",
                                        r"databases?", r"structured", r"records", r"columns?"), value=0.9,
                                       low=(r"unstructured", r"free text", r"prose", r"narratives?", r"transcripts?",
                                            r"emails?"), low_value=0.2),
    # API Capabilities
    "tool_use_support": rule((r"tool use", r"tool calls?", r"function call(?:ing|s)?", r"tools", r"plugins?", r"mcp"),
                             low=(r"no tool use", r"without tools")),
    "system_prompt_control": rule((r"system prompts?", r"system messages?", r"personas?", r"roles?"), value=0.8),
    "temperature_sensitivity": rule((r"temperature", r"sampling", r"top[-_ ]?[pk]", r"nucleus", r"randomness"),
                                    value=0.8),
    "max_context_utilization": rule((r"long[- ]context", r"context windows?", r"whole documents?", r"long documents?",
                                     r"books?", r"large codebases?", r"transcripts?"),
                                    low=(r"short prompts?", r"short answers?", r"a few (?:dozen )?rows"),
                                    low_value=0.2),
    "function_calling_depth": rule((r"function call(?:ing|s)?", r"tool calls?", r"multi[- ]step", r"agent loops?",
                                    r"chain(?:s|ed|ing)? (?:of )?(?:tools|calls)")),
    "grounding_support": rule((r"ground(?:ing|ed)", r"citations?", r"cit(?:e|es|ed|ing)", r"sources?",
                               r"attributions?", r"search results?", r"verif(?:y|iable|ied)"), value=0.9),
    "safety_filter_level": rule((r"safety", r"moderation", r"content (?:filters?|polic(?:y|ies))", r"harmful",
                                 r"abuse", r"harassment", r"jailbreaks?", r"prompt[- ]injections?", r"toxic(?:ity)?"),
                                value=0.85, low=(r"permissive", r"unfiltered"), low_value=0.15),
    "output_format_control": rule((r"json(?: mode)?", r"structured outputs?", r"response_format", r"xml",
                                   r"output formats?", r"markdown", r"bullet points?", r"templates?"), value=0.8,
                                  low=(r"free[- ]form only",), low_value=0.15),
    # Problem Domains
    "code_generation_strength": rule((r"code generation", r"coding", r"programming", r"generat(?:e|es|ed) code",
                                      r"write(?:s)? code", r"scripts?", r"plotting library"), value=0.8),
    "analytical_reasoning": rule((r"reason(?:s|ing)?", r"analy(?:sis|se|ze|ses|tical|sing|zing)", r"step[- ]by[- ]step",
                                  r"chain[- ]of[- ]thought", r"maths?", r"root causes?", r"multi[- ]step",
                                  r"planning", r"trends?"), value=0.8),
    "creative_capability": rule((r"creative", r"creativity", r"brainstorm(?:s|ing)?", r"stor(?:y|ies)", r"fiction",
                                 r"marketing copy", r"poems?", r"ideas"), value=0.8,
                                low=(r"formulaic", r"deterministic"), low_value=0.2),
    "instruction_following": rule((r"instructions?", r"rubrics?", r"constraints?", r"follow(?:s|ing)? (?:the )?",
                                   r"adhere(?:s|nce)?"), value=0.8, low=(r"ignores? (?:the )?instructions",),
                                  low_value=0.2),
    "multilingual_support": rule((r"multilingual", r"translat(?:e|es|ed|ion|ions|ing)", r"languages",
                                  r"locali[sz](?:e|ed|ation)", r"non[- ]english"),
                                 low=(r"english[- ]only",), low_value=0.1),
    "summarization_quality": rule((r"summar(?:y|ies|ise|ize|ised|ized|isation|ization|ising|izing)", r"digests?",
                                   r"condens(?:e|es|ed|ing)", r"distil(?:l|ls|led|ling)?", r"tl;?dr")),
    "extraction_accuracy": rule((r"extract(?:s|ed|ing|ion)?", r"entit(?:y|ies)", r"ner", r"pars(?:e|es|ed|ing)",
                                 r"classif(?:y|ies|ied|ication|ier)", r"label(?:s|led|ling)?", r"ocr",
                                 r"typed records", r"fields"), value=0.8),
    # Architectural Patterns
    "rag_suitability": rule((r"rag", r"retriev(?:e|es|ed|al|er|ing)", r"embeddings?", r"vector (?:search|stores?|databases?)",
                             r"semantic search", r"chunk(?:s|ing)?", r"rerank(?:s|ing|er)?", r"knowledge bases?",
                             r"bm25"), value=0.9),
    "agent_compatibility": rule((r"agents?", r"agentic", r"autonomous(?:ly)?", r"agent loops?", r"computer use",
                                 r"multi[- ]agent", r"plan(?:s|ning)? and execut(?:e|es|ion)"), value=0.9),
    "fine_tuning_benefit": rule((r"fine[- ]?tun(?:e|ed|es|ing)", r"lora", r"custom models?", r"distillation",
                                 r"training data", r"train(?:ed|ing)? (?:a |your own )?models?"), value=0.85),
    "orchestration_complexity": rule((r"orchestrat(?:e|es|ed|ion|or|ors)", r"workflows?", r"multi[- ]agent",
                                      r"workers?", r"rout(?:e|es|ing|er)", r"gateways?", r"coordinat(?:e|es|ion)"),
                                     value=0.8, low=(r"simple integration", r"single call"), low_value=0.2),
    # CLI Tool Characteristics
    "file_system_dependency": rule((r"files?", r"file ?system", r"director(?:y|ies)", r"folders?", r"disk",
                                    r"paths?", r"upload(?:s|ed|ing)?"), value=0.8,
                                   low=(r"no file(?:system)? access", r"in[- ]memory only"), low_value=0.1),
    "git_integration_level": rule((r"git", r"commits?", r"repositor(?:y|ies)", r"pull requests?", r"branches"),
                                  value=0.9),
    "shell_command_execution": rule((r"shell", r"bash", r"command[- ]line", r"terminal", r"subprocess(?:es)?",
                                     r"exec(?:ute|utes|uted|ution)", r"run(?:s)? (?:a )?commands?"), value=0.85),
    "sandbox_sensitivity": rule((r"sandbox(?:ed|es)?", r"containers?", r"containeri[sz]ed", r"docker", r"chroot",
                                 r"jails?", r"isolat(?:ed|ion)", r"virtual machines?"), value=0.85),
    "permission_requirement_level": rule((r"permissions?", r"root", r"sudo", r"superuser", r"admin(?:istrator)?s?",
                                          r"privileged?", r"iam", r"access control", r"authori[sz](?:e|ed|ation)"),
                                         value=0.8, low=(r"no special permissions", r"unprivileged"),
                                         low_value=0.1),
    "idempotency_guarantee": rule((r"idempoten(?:t|cy)", r"safe to (?:retry|re-?run|repeat)", r"identical requests?",
                                   r"same (?:input|request) gives the same"), value=0.9,
                                  low=(r"side[- ]effect(?:s|ing)?", r"non[- ]idempotent"), low_value=0.2),
}

# start -> the dimensions whose rule has it; the rules with a start too short to filter on are always tried
_BY_START: dict[str, set[str]] = {}
_ALWAYS: set[str] = set()
for _dim, _rule in RULES.items():
    for _side in (_rule.high_words, _rule.low_words):
        for _start in (_side.starts if _side else ()):
            (_ALWAYS.add(_dim) if _start == "" else _BY_START.setdefault(_start, set()).add(_dim))


def values(text: str | Text, dims: frozenset[str] | set[str] | None = None) -> dict[str, float]:
    """{dimension: value} of every word rule that gives one for ``text`` (only ``dims`` if given):
    only the rules one of whose starts begins a word of the text are tried.

    >>> values("Cache the prompt prefix; an overnight batch at half price")  # doctest: +NORMALIZE_WHITESPACE
    {'batch_suitability': 0.85, 'batching_capability': 0.85, 'cache_effectiveness': 0.85,
     'latency_sensitivity': 0.15, 'pricing_tier': 0.15, 'real_time_requirement': 0.1}
    """
    text = text if isinstance(text, Text) else Text(text)
    candidates = set(_ALWAYS).union(*(_BY_START[s] for s in text.starts))
    found = {d: RULES[d].value(text) for d in sorted(candidates) if dims is None or d in dims}
    return {d: v for d, v in found.items() if v is not None}
