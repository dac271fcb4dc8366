"""``ExpertService``: create, read, update, delete, duplicate, export and import experts, and read
their conversations. The API, the CLI and the chat loop all go through it.

>>> import tempfile, kgos
>>> from kgos.data import load_demo
>>> ws = kgos.Workspace(tempfile.mkdtemp()); _ = load_demo(ws, embedder=None)
>>> svc = ExpertService(ws)
>>> e = svc.create({"name": "Tax helper", "kg_db_id": "finance"})
>>> e.id, svc.get(e.id).config.retrieval.limit
('expert_tax_helper', 10)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidConfig
from ..model import slugify
from .config import SCHEMA_VERSION, Expert, ExpertConfig, merge_patch, parse_config
from .store import Conversation, ExpertStore, ExpertSummary, check_id

if TYPE_CHECKING:
    from ..kg import Workspace

EXPORT_FORMAT = "kgos-expert/1"


class ExpertService:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.store = ExpertStore(workspace.shared)

    # -- validation against the workspace ------------------------------------------------------------------
    def _checked(self, data: Any) -> ExpertConfig:
        """A config whose KGs all exist (422 naming the field otherwise)."""
        cfg = parse_config(data)
        missing = [(f, d) for f, ids in (("kg_db_id", [cfg.kg_db_id] if cfg.kg_db_id else []),
                                         ("kg_db_ids", cfg.kg_db_ids)) for d in ids if not self.workspace.exists(d)]
        if missing:
            known = ", ".join(self.workspace.db_ids()) or "none yet (try: kgos demo)"
            text = "; ".join(f"{f}: no KG named '{d}'" for f, d in missing)
            raise InvalidConfig(f"invalid expert config — {text}; known KGs: {known}", [f for f, _ in missing])
        return cfg

    def _new_id(self, base: str) -> str:
        candidate, n = base, 1
        while self.store.exists(candidate):
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    # -- CRUD ------------------------------------------------------------------------------------------------
    def create(self, data: ExpertConfig | Mapping[str, Any], id: str | None = None) -> Expert:
        """Store a new expert; ``id`` defaults to ``expert_<slug of name>`` (made unique)."""
        cfg = self._checked(data)
        expert_id = check_id(id, "expert id") if id else self._new_id(f"expert_{slugify(cfg.name)}"[:100])
        return self.store.insert(expert_id, cfg)

    def get(self, expert_id: str) -> Expert:
        return self.store.get(check_id(expert_id, "expert id"))

    def list(self) -> list[ExpertSummary]:
        return self.store.summaries()

    def update(self, expert_id: str, patch: Mapping[str, Any]) -> Expert:
        """Partial update as a JSON merge patch (nested objects merge, ``null`` removes a key)."""
        current = self.get(expert_id)
        if not isinstance(patch, Mapping):
            raise InvalidConfig("an update must be a JSON object of the fields to change")
        for key in ("id", "created_at", "updated_at"):
            if key in patch:
                raise InvalidConfig(f"{key} cannot be changed", [key])
        merged = merge_patch(current.config.model_dump(mode="json"), patch)
        return self.store.replace(current.id, self._checked(merged))

    def delete(self, expert_id: str, delete_conversations: bool = False) -> dict[str, Any]:
        n = self.store.delete(check_id(expert_id, "expert id"), delete_conversations)
        return {"deleted": True, "conversations_deleted": n}

    def duplicate(self, expert_id: str, new_name: str | None = None,
                  overrides: Mapping[str, Any] | None = None) -> Expert:
        """A copy under a new id (``<id>_copy_<n>``), renamed and with ``overrides`` merged in."""
        source = self.get(expert_id)
        patch = dict(overrides or {})
        if new_name is not None:
            patch["name"] = new_name
        cfg = self._checked(merge_patch(source.config.model_dump(mode="json"), patch))
        n = 1
        while self.store.exists(f"{source.id}_copy_{n}"):
            n += 1
        return self.store.insert(f"{source.id}_copy_{n}"[:128], cfg)

    # -- portable JSON (the roadmap's marketplace) ---------------------------------------------------
    def export(self, expert_id: str) -> dict[str, Any]:
        """A portable document: the config without the workspace's id and timestamps."""
        e = self.get(expert_id)
        return {"format": EXPORT_FORMAT, "id": e.id, "expert": e.config.model_dump(mode="json")}

    def import_(self, document: Mapping[str, Any], id: str | None = None, replace: bool = False) -> Expert:
        """Create (or with ``replace`` overwrite) an expert from ``export``'s document; a bare config
        object is accepted too. Conversations of a replaced expert are kept."""
        if not isinstance(document, Mapping):
            raise InvalidConfig("an expert file must hold a JSON object")
        fmt = document.get("format")
        if fmt is not None and fmt != EXPORT_FORMAT:
            raise InvalidConfig(f"unknown expert file format {fmt!r}; expected {EXPORT_FORMAT!r}", ["format"])
        config = document.get("expert", document) if fmt else document
        if isinstance(config, Mapping) and config.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise InvalidConfig(f"expert schema_version {config.get('schema_version')!r} is not supported "
                                f"(this KG-OS reads version {SCHEMA_VERSION})", ["schema_version"])
        wanted = id or (document.get("id") if fmt else None)
        if replace and wanted and self.store.exists(check_id(wanted, "expert id")):
            return self.store.replace(wanted, self._checked(config))
        return self.create(config, wanted)

    # -- conversations -------------------------------------------------------------------------------------
    def conversations(self, expert_id: str, limit: int = 20, offset: int = 0) -> dict[str, Any]:
        self.get(expert_id)
        rows, total = self.store.conversations(expert_id, limit, offset)
        return {"conversations": [c.summary() for c in rows], "total": total, "limit": limit, "offset": offset}

    def conversation(self, expert_id: str, conversation_id: str) -> Conversation:
        self.get(expert_id)
        return self.store.conversation(expert_id, check_id(conversation_id, "conversation id"))

    def delete_conversation(self, expert_id: str, conversation_id: str) -> dict[str, Any]:
        self.get(expert_id)
        self.store.delete_conversation(expert_id, check_id(conversation_id, "conversation id"))
        return {"deleted": True}
