"""Write-path hooks: guard a client, wrap framework embeddings, or rewrite a stored collection.

``guard`` and the policies import no engine client until a client is guarded; the LangChain and
LlamaIndex wrappers live in ``vdbguard.hooks.langchain`` / ``vdbguard.hooks.llamaindex`` (optional
extras) and ``protect_collection`` in ``vdbguard.hooks.protect``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vdbguard.hooks.guard import Protector, changes_space, guard
from vdbguard.hooks.policy import Candidate, Decision, Policy, ProtectAll, ProtectFlagged

if TYPE_CHECKING:
    from vdbguard.hooks.protect import ProtectResult, protect_collection

__all__ = [
    "Candidate",
    "Decision",
    "Policy",
    "ProtectAll",
    "ProtectFlagged",
    "ProtectResult",
    "Protector",
    "changes_space",
    "guard",
    "protect_collection",
]


def __getattr__(name: str) -> Any:
    if name in ("protect_collection", "ProtectResult"):  # imports connectors.base; kept lazy
        from vdbguard.hooks import protect

        return getattr(protect, name)
    raise AttributeError(f"module 'vdbguard.hooks' has no attribute {name!r}")
