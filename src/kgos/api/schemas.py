"""Response models derived from the library's result types: one definition of each JSON shape.

``response_model(cls)`` turns a result dataclass into the pydantic model of its ``to_dict()``
document: one field per dataclass field (all required: ``to_dict()`` writes every one), nested
records as their own derived models, tuples as lists, int mapping keys as strings (as
``kgos.methods.results.jsonable`` writes them), and the class docstring as the schema's
description. A field added to a result type thus reaches the HTTP API and ``/openapi.json`` with
no copy to update. Where a ``to_dict()`` reshapes a field (a path as alternating node and edge
elements, a score pair as an object), the caller overrides that field; tests/test_api_models.py
checks that each route sends exactly the library's document.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, Field, create_model

DROP: Any = object()
"""An override that leaves a dataclass field out of the model (``to_dict()`` does not write it)."""



class DerivedModel(BaseModel):
    """Base of the derived models; ``__kgos_source__`` is the result type a model describes."""

    __kgos_source__: ClassVar[type | None] = None


_DERIVED: dict[type, type[DerivedModel]] = {}


def response_model(cls: type, name: str | None = None, *, register: bool = True,
                   base: type[DerivedModel] = DerivedModel, **overrides: Any) -> type[DerivedModel]:
    """The model of ``cls.to_dict()``; ``overrides`` maps a field to its JSON type, to ``(type,
    default or FieldInfo)``, or to ``DROP``; names that are not fields are added after the fields.
    ``register``: nested fields of type ``cls`` use this model from now on; ``base``: a subclass of
    ``DerivedModel`` with the model config to use."""
    hints = get_type_hints(cls)
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        given = overrides.pop(f.name, None)
        if given is not DROP:
            spec[f.name] = _field(given) if given is not None else (json_type(hints[f.name]), ...)
    spec.update({key: _field(value) for key, value in overrides.items() if value is not DROP})
    model = create_model(name or cls.__name__, __doc__=_doc(cls), __base__=base, **spec)
    model.__kgos_source__ = cls
    if register:
        _DERIVED.setdefault(cls, model)
    return model


def register(cls: type, model: type[DerivedModel]) -> None:
    """Use ``model`` (written out because ``to_dict()`` renames fields) wherever ``cls`` nests."""
    model.__kgos_source__ = cls
    _DERIVED[cls] = model


def json_type(tp: Any) -> Any:
    """The type of ``tp``'s JSON form: records -> their derived model, tuples -> lists, int keys -> str."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _DERIVED.get(tp) or response_model(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return types.GenericAlias(list, json_type(args[0]))
        return types.GenericAlias(tuple, tuple(json_type(a) for a in args))
    if origin in (list, Sequence):
        return types.GenericAlias(list, json_type(args[0]))
    if origin in (dict, Mapping):
        key = str if args[0] is int else args[0]
        return types.GenericAlias(dict, (key, json_type(args[1])))
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, [json_type(a) for a in args])
    return tp


def api_model(name: str, doc: str | None = None, **fields: Any) -> type[BaseModel]:
    """A shape the API composes itself around derived models: ``fields`` maps names to types (or
    ``(type, default)``), all required unless a default is given."""
    spec: dict[str, Any] = {k: _field(v) for k, v in fields.items()}
    return create_model(name, __doc__=doc, **spec)


def list_of(item: Any) -> Any:
    """``list[item]`` for an item type made at run time (a derived model)."""
    return types.GenericAlias(list, item)


def omitted_when_none(tp: Any, description: str | None = None) -> Any:
    """An optional field that ``to_dict()`` leaves out when it has no value (not written as null)."""
    return (tp | None, Field(None, description=description, exclude_if=is_none))


def is_none(value: Any) -> bool:
    return value is None


def _field(given: Any) -> tuple[Any, Any]:
    return given if isinstance(given, tuple) else (given, ...)


def _doc(cls: type) -> str | None:
    doc = cls.__doc__ or ""
    return None if doc.startswith(f"{cls.__name__}(") else doc.strip() or None  # dataclass's generated doc


def derived(cls: type) -> type[DerivedModel]:
    """The model registered for the result type ``cls`` (derived on first use)."""
    return _DERIVED.get(cls) or response_model(cls)
