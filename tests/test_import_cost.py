"""``import kgos`` loads no heavy dependency: scipy, onnxruntime, fastapi and the query layers come
with the first use of the names that need them (DESIGN.md section 7: ``import kgos`` <= 0.5 s)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "onnxruntime", "fastapi", "igraph", "uvicorn", "kgos.kg", "kgos.methods")


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_kgos_loads_no_heavy_module() -> None:
    loaded = loaded_after("import kgos")
    assert not {m for m in HEAVY if m in loaded}


def test_errors_and_model_without_the_engine() -> None:
    loaded = loaded_after("from kgos import KGOSError, Node\nfrom kgos.errors import ImportFailed")
    assert not {m for m in HEAVY if m in loaded}


def test_public_names_still_resolve() -> None:
    import kgos
    from kgos import RetrievalConfig, Workspace, classify_intent

    assert kgos.Workspace is Workspace and kgos.KG.__name__ == "KG"
    assert callable(classify_intent) and RetrievalConfig.__name__ == "RetrievalConfig"
    assert set(kgos.__all__) <= set(dir(kgos)) | set(kgos._LAZY)


def test_unknown_name_is_an_attribute_error() -> None:
    import kgos

    try:
        kgos.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("kgos.NoSuchThing resolved")


SDKS = ("openai", "anthropic", "httpx_sse", "google.genai")


def test_the_providers_sdks_load_on_first_use_only() -> None:
    """openai (1.6 s) and anthropic (3.4 s) import on a provider's first request, not with kgos.llm nor
    when a provider object is built."""
    loaded = loaded_after("import kgos.llm\nfrom kgos.llm import get_provider\nget_provider('offline')\n"
                          "get_provider('openai:gpt-4o-mini', api_key='k')\n"
                          "get_provider('anthropic:claude-haiku-4-5', api_key='k')\n"
                          "get_provider('gemini:gemini-2.5-flash', api_key='k')")
    assert not {m for m in SDKS if m in loaded}
