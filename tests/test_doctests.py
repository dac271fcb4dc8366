"""The runnable examples in docstrings stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["kgos", "kgos.kg.workspace", "kgos.retrieval.intents", "kgos.experts.config", "kgos.experts.service",
           "kgos.experts.citations", "kgos.experts.feedback", "kgos.experts.learning", "kgos.experts.ab", "kgos.kg.links", "kgos.api.origin", "kgos.api.turns"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
