"""Write-path hooks: guard a client or wrap framework embeddings, so vectors are protected as they are written.

``guard`` and the policies import no engine client until a client is guarded; the LangChain and
LlamaIndex wrappers live in ``vdbguard.hooks.langchain`` / ``vdbguard.hooks.llamaindex`` (optional
extras). Rewriting a collection already stored is a batch job, ``vdbguard.protect.protect_collection``.
"""

from __future__ import annotations

from vdbguard.hooks.guard import guard
from vdbguard.hooks.policy import Candidate, Decision, Policy, ProtectAll, ProtectFlagged
from vdbguard.hooks.protector import Protector, changes_space, redact_then_embed

__all__ = [
    "Candidate",
    "Decision",
    "Policy",
    "ProtectAll",
    "ProtectFlagged",
    "Protector",
    "changes_space",
    "guard",
    "redact_then_embed",
]
