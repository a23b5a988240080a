"""Write-path defenses, found through the ``vdbguard.transforms`` entry point group."""

from __future__ import annotations

from vdbguard import plugins
from vdbguard.transforms.base import Transform

__all__ = ["Transform", "load_transform_class", "needs_help", "needs_of", "transform_classes"]


def transform_classes() -> dict[str, type[Transform]]:
    return plugins.loaded("transforms")


def load_transform_class(name: str) -> type[Transform]:
    return plugins.load("transforms", name)


def needs_of(cls: type[Transform]) -> list[str]:
    """What a transform needs: any of "fit", "labels", "key", and "text" for one that runs before the embedder
    (``transforms list``, ``--help``)."""
    flags = (("fit", cls.needs_fit), ("labels", cls.needs_labels), ("key", cls.needs_key), ("text", cls.text_side))
    return [need for need, flag in flags if flag]


def needs_help() -> str:
    """Which installed transforms need a fit, labels or a key, for the ``--transform`` help of commands."""
    from vdbguard.transforms.keyed import KEY_ENV

    classes = transform_classes()

    def having(need: str) -> str:
        return ", ".join(name for name, cls in sorted(classes.items()) if need in needs_of(cls)) or "none"

    return (
        f"Need a fit, made once and kept (--fit-file, or beside --state for a resume): {having('fit')}; "
        f"of these, fitted on vdbguard's corpus labelled for --concept: {having('labels')}, the others on a sample "
        f"of the collection. Need a secret key in ${KEY_ENV}: {having('key')}. "
        f"Redact the stored text and embed it again with --embedder (a collection that keeps its text): "
        f"{having('text')}."
    )
