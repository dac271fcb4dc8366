"""The 56 semantic dimensions of spec/000 section 5, as data: name, category, description and what
the low (0.0) and high (1.0) ends mean. Values live in node ``properties`` as floats in 0..1.

>>> len(CATALOG), len(CATEGORIES)
(56, 9)
>>> DIMENSIONS["pricing_tier"].low
'Free / very cheap'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dimension:
    name: str
    category: str
    description: str
    low: str
    high: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "category": self.category, "description": self.description,
                "low": self.low, "high": self.high}


_TABLE: dict[str, list[tuple[str, str, str, str]]] = {
    "Performance & Cost": [
        ("latency_sensitivity", "How sensitive the tool/pattern is to response time", "Tolerant of delays", "Requires sub-second responses"),
        ("throughput_requirement", "Volume of data/requests it needs to handle", "Single requests", "High-volume batch processing"),
        ("pricing_tier", "Cost level of the tool or API", "Free / very cheap", "Expensive per-call pricing"),
        ("token_efficiency", "How efficiently it uses tokens", "Token-heavy", "Minimal token usage"),
        ("batch_suitability", "How well it works with batch processing", "Real-time only", "Designed for batch"),
        ("cache_effectiveness", "Benefit from caching strategies", "No caching benefit", "Massive savings from caching"),
        ("rate_limit_sensitivity", "Impact of rate limits on functionality", "Unaffected", "Severely constrained"),
        ("compute_intensity", "CPU/memory requirements", "Lightweight", "Heavy compute"),
    ],
    "Complexity & Effort": [
        ("implementation_complexity", "Difficulty to implement correctly", "Copy-paste simple", "Requires deep expertise"),
        ("configuration_depth", "Amount of configuration needed", "Zero-config", "Complex multi-file config"),
        ("learning_curve", "Time to become proficient", "Minutes", "Weeks of study"),
        ("error_handling_need", "Importance of robust error handling", "Errors are rare/benign", "Errors are common/critical"),
        ("debugging_difficulty", "How hard it is to debug when broken", "Obvious error messages", "Silent failures, complex state"),
        ("maintenance_burden", "Ongoing maintenance required", "Set and forget", "Frequent updates needed"),
    ],
    "Interaction Patterns": [
        ("streaming_support", "Capability for streaming responses", "Batch-only", "Full streaming support"),
        ("batching_capability", "Support for batched operations", "Single-item only", "Native batch APIs"),
        ("async_compatibility", "Works with async/await patterns", "Sync-only", "Fully async"),
        ("real_time_requirement", "Needs real-time interaction", "Offline/async is fine", "Must be real-time"),
        ("multi_turn_depth", "Benefit from multi-turn conversation", "Single-turn sufficient", "Deep multi-turn needed"),
        ("context_dependency", "How much context affects behavior", "Context-independent", "Highly context-dependent"),
        ("state_management", "Statefulness requirements", "Stateless", "Complex state tracking"),
    ],
    "Data Characteristics": [
        ("data_volume_sensitivity", "How data size affects performance", "Small data only", "Handles massive datasets"),
        ("format_flexibility", "Range of input formats accepted", "Single format", "Any format"),
        ("schema_strictness", "How strict the expected schema is", "Schema-free", "Exact schema required"),
        ("data_sensitivity_level", "Privacy/security classification of data", "Public data", "PII/PHI/classified"),
        ("multimodal_support", "Works with non-text modalities", "Text-only", "Images, audio, video"),
        ("structured_vs_unstructured", "Type of data it handles best", "Unstructured text", "Structured data (JSON, SQL)"),
    ],
    "API Capabilities": [
        ("tool_use_support", "Support for function calling / tool use", "No tool use", "Rich tool ecosystem"),
        ("system_prompt_control", "How much system prompts influence behavior", "Minimal effect", "Full behavioral control"),
        ("temperature_sensitivity", "Impact of temperature parameter", "No effect", "Dramatically changes output"),
        ("max_context_utilization", "How much of the context window it uses", "Short prompts", "Uses full context window"),
        ("function_calling_depth", "Sophistication of function calling", "None", "Multi-step function chains"),
        ("grounding_support", "Built-in grounding/citation capabilities", "No grounding", "Native grounding"),
        ("safety_filter_level", "Aggressiveness of safety filtering", "Permissive", "Very strict"),
        ("output_format_control", "Control over response format", "Free-form only", "JSON, XML, structured"),
    ],
    "Problem Domains": [
        ("code_generation_strength", "Quality of generated code", "Poor/no code ability", "Excellent, production-ready"),
        ("analytical_reasoning", "Ability to analyze and reason", "Shallow analysis", "Deep multi-step reasoning"),
        ("creative_capability", "Creative writing, brainstorming", "Formulaic", "Highly creative"),
        ("instruction_following", "Adherence to complex instructions", "Ignores constraints", "Precise instruction following"),
        ("multilingual_support", "Proficiency across languages", "English-only", "100+ languages"),
        ("summarization_quality", "Quality of text summarization", "Poor compression", "Excellent distillation"),
        ("extraction_accuracy", "Accuracy of information extraction", "Misses entities", "Precise, complete extraction"),
    ],
    "Architectural Patterns": [
        ("rag_suitability", "How well it works in RAG pipelines", "Not suitable", "Designed for RAG"),
        ("agent_compatibility", "Works as an autonomous agent", "Not agentic", "Full agent loop"),
        ("fine_tuning_benefit", "Improvement from fine-tuning", "Minimal benefit", "Massive improvement"),
        ("pipeline_composability", "Can be composed into larger pipelines", "Standalone only", "Highly composable"),
        ("orchestration_complexity", "Complexity of orchestrating with other tools", "Simple integration", "Complex orchestration"),
    ],
    "NLKE Meta-Dimensions": [
        ("knowledge_density", "Information density of the node", "Sparse, mostly boilerplate", "Dense, every word matters"),
        ("relationship_richness", "Number and quality of graph connections", "Isolated node", "Hub with many typed edges"),
        ("emergence_potential", "Likelihood of producing emergent insights", "Predictable", "Produces unexpected combinations"),
    ],
    "CLI Tool Characteristics": [
        ("file_system_dependency", "How much the tool depends on filesystem state", "No FS access", "Heavy FS read/write"),
        ("git_integration_level", "Coupling with git operations", "No git awareness", "Deep git integration"),
        ("shell_command_execution", "Executes shell commands", "No shell access", "Runs arbitrary commands"),
        ("sandbox_sensitivity", "Behavior changes in sandboxed environments", "Works anywhere", "Breaks in sandbox"),
        ("permission_requirement_level", "System permissions needed", "No special permissions", "Root/admin required"),
        ("idempotency_guarantee", "Safe to run multiple times", "Side effects on each run", "Fully idempotent"),
    ],
}

CATALOG: tuple[Dimension, ...] = tuple(Dimension(name, category, desc, low, high)
                                       for category, rows in _TABLE.items() for name, desc, low, high in rows)
DIMENSIONS: dict[str, Dimension] = {d.name: d for d in CATALOG}
CATEGORIES: tuple[str, ...] = tuple(_TABLE)
