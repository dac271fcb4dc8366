"""Expert agents (spec/000 sections 8 and 9): a KG + persona + retrieval config + playbook skills +
dimension filters + goal mappings, stored in ``workspace.db``, answering through an LLM with
citations to graph nodes.

Layout: ``config`` (the validated schema), ``store`` (SQL for experts, conversations, messages),
``service`` (``ExpertService``: CRUD, duplicate, export/import), ``playbooks`` (skill injection),
``context`` (retrieval and prompt assembly for one turn), ``citations`` (the citation check) and
``chat`` (``ExpertChat``: the 8-stage loop as a stream of SSE events).
"""

from .config import (
           SCHEMA_VERSION,
           Expert,
           ExpertConfig,
           GoalMapping,
           Persona,
           Retrieval,
           merge_patch,
           parse_config,
)
from .service import EXPORT_FORMAT, ExpertService
from .store import Conversation, ExpertSummary, StoredMessage

__all__ = ["EXPORT_FORMAT", "SCHEMA_VERSION", "Conversation", "Expert", "ExpertConfig", "ExpertService",
           "ExpertSummary", "GoalMapping", "Persona", "Retrieval", "StoredMessage", "merge_patch", "parse_config"]
