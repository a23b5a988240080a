"""The generic proxy every client wrapper is built from: delegate everything, intercept what writes.

A wrapper class names the client methods it rewrites (``_rewrites``: the method's arguments, bound by
parameter name, go through a converter before the client sees them), those whose results or attribute
values come back wrapped (``_calls`` / ``_attrs``, by wrapper class name) and those it refuses
(``_refused``); everything else reaches the client unchanged.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks.policy import Decision
from vdbguard.hooks.protector import Protector, vector_label

_WRAPPERS: dict[str, type[GuardedProxy]] = {}  # every wrapper class by name, for ``_calls`` and ``_attrs``


def with_changes(obj: Any, **changes: Any) -> Any:
    """A copy of a record object with some fields changed; the caller's object is never mutated."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **changes)
    if hasattr(obj, "model_copy"):
        return obj.model_copy(update=changes)
    try:
        import msgspec

        if isinstance(obj, msgspec.Struct):
            return msgspec.structs.replace(obj, **changes)
    except ImportError:
        pass
    new = copy.copy(obj)
    for key, value in changes.items():
        setattr(new, key, value)
    return new


@functools.lru_cache(maxsize=512)
def _signature(cls: type, name: str) -> inspect.Signature | None:
    """The parameters of ``cls.name`` as declared on the class (instances may hold generic wrappers)."""
    static = inspect.getattr_static(cls, name, None)
    if isinstance(static, staticmethod):
        return inspect.signature(static.__func__)
    if inspect.isfunction(static):
        sig = inspect.signature(static)
        return sig.replace(parameters=list(sig.parameters.values())[1:])
    return None


def _rebind(owner: Any, name: str, args: tuple, kwargs: dict, convert: Callable[[dict[str, Any]], None]) -> Any:
    """Call ``owner.name`` after ``convert`` rewrote its arguments, bound by parameter name, in place."""
    method = getattr(owner, name)
    try:
        sig = _signature(type(owner), name) or inspect.signature(method)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError) as exc:  # never pass vectors on unconverted: fail closed
        raise VdbguardError(
            f"{type(owner).__name__}.{name}() was called with arguments its signature does not take ({exc}); "
            "nothing was written",
            "fix the call; the guard protects only arguments it can match to the client's parameters",
        ) from exc
    convert(bound.arguments)
    return method(*bound.args, **bound.kwargs)


class Refused:
    """Stands in for a write path the guard cannot protect: calling it, or reaching into it, raises."""

    def __init__(self, what: str, hint: str) -> None:
        self._what, self._hint = what, hint

    def _error(self) -> VdbguardError:
        return VdbguardError(f"{self._what} is not protected by vdbguard's guard and was refused", self._hint)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._error()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._error()


class GuardedProxy:
    """Delegates everything to the wrapped client object; subclasses intercept what writes vectors.

    ``_rewrites`` maps a client method to the name of the converter that rewrites its bound arguments
    in place; ``_calls`` wraps the results of those methods (e.g. collections a client hands out) and
    ``_attrs`` wraps attribute values, so nothing obtained through a guarded object is unguarded.
    """

    _rewrites: ClassVar[dict[str, str]] = {}
    _calls: ClassVar[dict[str, str]] = {}
    _attrs: ClassVar[dict[str, str]] = {}
    _refused: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _WRAPPERS[cls.__name__] = cls

    def __init__(self, inner: Any, protector: Protector) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "protector", protector)

    def _rewritten(self, name: str, method: Any, convert: Callable[[dict[str, Any]], None]) -> Any:
        """The client's ``name`` method, called with the arguments ``convert`` rewrote."""
        return functools.wraps(method)(lambda *args, **kwargs: _rebind(self._inner, name, args, kwargs, convert))

    def __getattr__(self, name: str) -> Any:
        if name in ("_inner", "protector"):  # not yet set (copy, pickle): never recurse
            raise AttributeError(name)
        if name in self._refused:
            return Refused(f"{type(self._inner).__name__}.{name}", self._refused[name])
        value = getattr(self._inner, name)
        if name in self._rewrites:
            return self._rewritten(name, value, getattr(self, self._rewrites[name]))
        if name in self._attrs:
            return _WRAPPERS[self._attrs[name]](value, self.protector)
        if name in self._calls:
            wrapper = _WRAPPERS[self._calls[name]]

            @functools.wraps(value)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                result = value(*args, **kwargs)
                if isinstance(result, list):
                    return [wrapper(r, self.protector) for r in result]
                return wrapper(result, self.protector)

            return wrapped
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._inner)) | set(super().__dir__()))

    def __repr__(self) -> str:
        return f"guard({self._inner!r}, transform={self.protector.name!r})"

    def __enter__(self) -> Any:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self._inner.__exit__(*exc)

    @property
    def last_decisions(self) -> list[Decision]:
        """The policy's decisions for the records of the last write call."""
        return self.protector.last_decisions


def inference_error(record_id: str, label: str, value: Any) -> RecordError:
    return RecordError(
        record_id,
        label,
        f"is a {type(value).__name__}, not a list of numbers: guard protects only explicit vectors "
        "(vectors the store computes itself would be stored unprotected)",
    )


def rebuild(original: Any, protected: dict[str, Any]) -> Any:
    """The point's vector value with the protected labels replaced (as lists, for the client)."""
    if "vector" in protected:
        return as_list(protected["vector"])
    new = dict(original)
    for name in original:
        label = vector_label(name)
        if label in protected:
            new[name] = as_list(protected[label])
    return new


def as_list(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value
