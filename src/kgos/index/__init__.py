"""Index layer: derived, in-memory views of a KG (text, vectors, graph), rebuilt per KG version."""
