"""Deterministic extraction (spec/002 phase 1): every pattern family, its weights, and precision."""

from __future__ import annotations

import pytest

from kgos.memory.extract import USER, extract, find_files, find_tools, sentences
from kgos.memory.pii import is_pii, mask, pii_reason


def rels(text: str, **kw) -> set[tuple[str, str, str, str, float]]:
    return {(r.subject.name, r.predicate, r.object.type, r.object.name, r.weight) for r in extract(text, **kw).relations}


def ents(text: str, **kw) -> set[tuple[str, str]]:
    return {(e.type, e.name) for e in extract(text, **kw).entities}


U = USER.name


# -- each family -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["I'm working on meshalyzer.", "the Meshalyzer project is late",
                                  "Notes on project Meshalyzer"])
def test_project_patterns_title_case(text):
    assert ("project", "Meshalyzer") in ents(text)


def test_project_phrases_keep_inner_capitals_and_drop_generic_words():
    assert ("project", "PhD Research") in ents("My PhD research project needs work.")
    assert ents("It is a side project.") == set()
    assert ents("The project manager called.") == set()


@pytest.mark.parametrize("text,name", [("using python daily", "Python"), ("Deploy with DOCKER.", "Docker"),
                                       ("we moved to Node.js and C++", "Node.js"), ("via k8s", "Kubernetes"),
                                       ("Visual Studio Code is open", "VS Code"), ("postgres is up", "PostgreSQL")])
def test_known_tools_case_insensitive_with_canonical_names(text, name):
    assert ("tool", name) in ents(text)


def test_tools_that_are_english_words_need_their_capital_and_not_sentence_start():
    assert ("tool", "Go") in ents("The service is written in Go.")
    assert ("tool", "Go") not in ents("Go to the shop. Let's go home.")
    assert ("tool", "Swift") not in ents("He made a swift exit.")


def test_versioned_tool_is_its_own_entity():
    assert ("tool", "Python3") in ents("run it with python3 please")
    assert ("tool", "Python") in ents("Python 3.11 is out")


def test_file_patterns_unix_windows_and_home_redaction():
    names = {p for _, _, p in find_files("see /etc/nginx/nginx.conf, ./src/app.py and ../lib/x.js")}
    assert names == {"/etc/nginx/nginx.conf", "./src/app.py", "../lib/x.js"}
    assert {p for _, _, p in find_files(r"open C:\Projects\kg\main.py and \\server\share\doc.txt")} == \
        {r"C:\Projects\kg\main.py", r"\\server\share\doc.txt"}
    # user names in home folders are personal: they become ~
    assert {p for _, _, p in find_files("/home/alice/code/main.py /Users/bob/x.py")} == {"~/code/main.py", "~/x.py"}
    assert {p for _, _, p in find_files(r"C:\Users\carol\notes.txt")} == {r"~\notes.txt"}
    assert find_files("and/or 24/7 https://example.org/a/b /s") == []


def test_preference_patterns_weight_1():
    assert rels("I prefer dark mode.") == {(U, "prefers", "concept", "Dark Mode", 1.0)}
    assert (U, "prefers", "tool", "Vim", 1.0) in rels("I really like to use vim")
    assert (U, "prefers", "concept", "Hiking", 1.0) in rels("I enjoy hiking")
    assert {r[3] for r in rels("I prefer Python, Rust and Go for backends.")} == {"Python", "Rust", "Go"}


def test_preference_precision():
    assert rels("I like it when tests pass. I'd like to go. I don't like meetings. I like to run.") == set()
    assert rels("I prefer tabs over spaces") == {(U, "prefers", "concept", "Tabs", 1.0)}


def test_decision_patterns_weight_1():
    assert rels("We decided to use SQLite for the KG because it is simple.") == \
        {(U, "decided", "decision", "Use SQLite for the KG", 1.0)}
    assert (U, "decided", "decision", "Postgres for storage", 1.0) in rels("Going with Postgres for storage.")
    assert (U, "decided", "decision", "FastAPI", 1.0) in rels("After a week, choosing FastAPI.")


def test_decision_precision():
    assert not any(r[1] == "decided" for r in rels("I'm going with my friends. Choosing between A and B."))


def test_work_patterns_weight_09():
    assert rels("I'm working on meshalyzer") == {(U, "works_on", "project", "Meshalyzer", 0.9)}
    assert (U, "works_on", "project", "Parser", 0.9) in rels("I am building a parser")
    assert (U, "works_on", "project", "Milton", 0.9) in rels("Developing Milton this month")


def test_first_person_work_takes_a_one_word_lowercase_name():
    assert rels("I'm developing quokkadb") == {(U, "works_on", "project", "Quokkadb", 0.9)}
    assert rels("I am building zebrafish") == {(U, "works_on", "project", "Zebrafish", 0.9)}
    assert (U, "works_on", "project", "Quokkadb", 0.9) in rels("I have been developing quokkadb for a year")
    assert ("Zebrafish", "uses", "tool", "Rust", 0.8) in rels("We're currently developing zebrafish using Rust")
    # without a first-person subject, or with more than one lowercase word, it stays prose
    assert rels("developing quokkadb is fun") == set() and rels("I am building up speed slowly") == set()


def test_work_precision():
    assert rels("developing countries grow. working on it. working on improving tests. The building is old.") == set()


def test_usage_patterns_weights():
    assert rels("deploying via Docker") == {(U, "uses", "tool", "Docker", 0.8)}
    assert rels("plots with matplotlib") == {(U, "uses", "tool", "Matplotlib", 0.8)}
    assert rels("I'm using Meshtastic Relay") == {(U, "uses", "tool", "Meshtastic Relay", 0.8)}  # name-like
    assert rels("I always use Vim.") == {(U, "uses", "tool", "Vim", 0.9)}
    assert {r[3] for r in rels("using Python, Docker and Git for the backend")} == {"Python", "Docker", "Git"}


def test_with_and_via_only_take_known_tools():
    text = "I went to the park with John and my team, then via Mary; using a lot of memory, with 3 people."
    assert rels(text) == set()
    assert ents(text) == set()


def test_context_edges_between_project_tool_and_file():
    r = rels("Building the Milton project with FastAPI. Meshalyzer project uses Rust at ./src/main.rs")
    assert ("Milton", "uses", "tool", "FastAPI", 0.8) in r          # "building X with Y"
    assert ("Meshalyzer", "uses", "tool", "Rust", 0.7) in r         # same sentence: contextual
    assert ("Meshalyzer", "references", "file", "./src/main.rs", 0.7) in r
    assert (U, "works_on", "project", "Milton", 0.9) in r


def test_no_entity_from_stopwords_or_pronouns():
    for text in ["I'm working on it.", "using this and that", "I prefer them", "I like you", "building something"]:
        assert ents(text) == set() and rels(text) == set(), text


def test_assistant_turn_adds_no_user_edges():
    e = extract("I prefer Python and I'm working on Milton with Docker.", about_user=False)
    assert not any(r.subject.type == "user" for r in e.relations)
    assert ("tool", "Python") in {(x.type, x.name) for x in e.entities}


# -- PII ---------------------------------------------------------------------------------------------
PERSONAL = ("Contact me at john.smith@example.com or jane@work.io, call +1 (555) 123-4567 or 020 7946 0958. "
            "I live at 221B Baker Street, London NW1 6XE. I prefer john.smith@example.com. "
            "Working on 555-123-4567. Using jane@work.io via bob@corp.org. I like 42 Elm Street. "
            "My phone is with Phone Link; my email address is elsewhere. https://www.example.com/u/john")


def test_text_full_of_emails_and_phones_yields_no_personal_entity():
    e = extract(PERSONAL)
    for entity in e.entities:
        assert not is_pii(entity.name), entity
        assert not any(token in entity.name.lower() for token in ("john", "jane", "bob", "555", "baker", "elm"))
    assert all(not is_pii(r.object.name) for r in e.relations)


def test_pii_filter_spec_markers_and_patterns():
    for name in ["bob@x.io", "example.com", "Phone Link", "Email Server", "IP address", "+44 20 7946 0958",
                 "221B Baker Street", "SW1A 1AA", "4111 1111 1111 1111", "https://x.io"]:
        assert pii_reason(name), name
    for name in ["Python", "Meshalyzer", "Use SQLite for the KG", "~/code/main.py", "Python 3.11.4"]:
        assert pii_reason(name) is None, name
    assert "bob" not in mask("mail bob@example.com now")


# -- bounds --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("junk", ["a" * 100_000, "1" * 99_999 + "a", "/a" * 50_000, "aaa@" * 25_000,
                                  "with " * 20_000, "C:\\" + "a\\" * 49_000, "I prefer " * 11_000],
                         ids=["letters", "digits", "slashes", "ats", "with", "backslashes", "prefer"])
def test_extraction_finishes_on_pathological_text(junk):
    """Backtracking-prone input ends with a bounded result; its speed is timed in
    benchmarks/memory_bench.py --pathological (a test has no time limit to assert under load)."""
    e = extract(junk)
    assert len(e.entities) <= 64 and len(e.relations) <= 64
    assert all(len(x.name) < 200 for x in e.entities)


def test_caps_on_entities_and_relations():
    text = " ".join(f"I'm working on Project{i}." for i in range(200))
    e = extract(text, max_entities=10, max_relations=5)
    assert len(e.entities) <= 10 and len(e.relations) <= 5 and e.truncated


def test_sentences_and_tools_helpers():
    assert sentences("One. Two!\nThree; four") == ["One.", "Two!", "Three", "four"]
    assert [t[2] for t in find_tools("Docker Compose and GitHub Actions, then node.js")] == \
        ["Docker Compose", "GitHub Actions", "Node.js"]
