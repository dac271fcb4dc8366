"""LLM layer: chat providers behind one interface (offline grounded default, Anthropic, Gemini,
OpenAI-compatible)."""
