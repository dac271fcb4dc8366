"""The pipeline module protocol and registry of spec/004, shared by ingestion and research.

See ``docs/pipeline.md``. ``PipelineModule`` is the protocol, ``BaseModule`` the usual base class,
``register`` the decorator and ``REGISTRY`` the process-wide registry (entry-point group
``kgos.modules``).
"""

from .digest import canonical_json, content_hash
from .module import (
                     BaseModule,
                     ExternalResponses,
                     ModuleState,
                     PipelineModule,
                     ProcessContext,
                     Snapshot,
                     StageInput,
                     StageOutput,
                     public_config,
)
from .registry import ENTRY_POINT_GROUP, REGISTRY, Registry, register

__all__ = ["ENTRY_POINT_GROUP", "REGISTRY", "BaseModule", "ExternalResponses", "ModuleState", "PipelineModule",
           "ProcessContext", "Registry", "Snapshot", "StageInput", "StageOutput", "canonical_json", "content_hash",
           "public_config", "register"]
