"""A language model's key/value cache across transformers versions.

transformers 5 renamed a model's ``past_key_values`` argument and output to ``cache``; the old name logs a warning in
every scan that decodes and goes away in 5.40. These speak whichever name the installed version understands.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


@functools.cache
def _argument(model_class: type) -> str:
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def run_cached(model: Any, *args: Any, cache: Any = None, **inputs: Any) -> tuple[Any, Any]:
    """The model's output on ``inputs`` continuing from ``cache`` (None: from the start), and the grown cache."""
    if cache is not None:
        inputs[_argument(type(model))] = cache
    output = model(*args, use_cache=True, **inputs)
    grown = output.get("cache")
    return output, grown if grown is not None else output.past_key_values
