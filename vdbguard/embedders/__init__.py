"""The embedding model behind a store: load it offline, or identify it from the stored vectors."""

from vdbguard.embedders.loading import DEFAULT_EMBEDDER, SAME_TEXT, Embedder, resolve_model_path

__all__ = ["DEFAULT_EMBEDDER", "SAME_TEXT", "Embedder", "resolve_model_path"]
