"""Retrieval layer: intents, weight profiles, the hybrid scorer and its explanations."""
