"""The retrieval layer's names, without its machinery: the search modes and the retrieval intents.
Importing this module imports nothing else, so a command line can offer them as choices at once."""

MODES = ("hybrid", "fixed3", "fixed4", "embedding", "bm25", "fts", "text", "graph", "names", "rrf")
INTENTS = ("exact_match", "capability_check", "debugging", "workflow", "comparison", "goal_based",
           "exploratory", "semantic")
