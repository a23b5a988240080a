"""Nothing vdbguard loads is ever unpickled: a model or state file from a shared cache must not run code.

A static check over the source, so a new loader cannot slip in: pickle and its relatives are never called,
``torch.load`` always passes ``weights_only=True``, and ``numpy.load`` never turns ``allow_pickle`` on (its
default is off).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
FORBIDDEN_CALLS = {"read_pickle", "to_pickle"}


def _sources() -> Iterator[Path]:
    for folder in ("vdbguard", "connectors"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _problems(path: Path, root: Path = ROOT) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(root)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in FORBIDDEN_MODULES:
                    yield f"{where}:{node.lineno} imports {name}"
        if not isinstance(node, ast.Call):
            continue
        called = _dotted(node.func)
        if called.rsplit(".", 1)[-1] in FORBIDDEN_CALLS:
            yield f"{where}:{node.lineno} calls {called}"
        if called == "torch.load":
            weights_only = _keyword(node, "weights_only")
            if not (isinstance(weights_only, ast.Constant) and weights_only.value is True):
                yield f"{where}:{node.lineno} torch.load without weights_only=True"
        if called in ("np.load", "numpy.load"):
            allow = _keyword(node, "allow_pickle")
            if allow is not None and not (isinstance(allow, ast.Constant) and allow.value is False):
                yield f"{where}:{node.lineno} numpy.load with allow_pickle={ast.unparse(allow)}"


def test_nothing_is_ever_unpickled() -> None:
    sources = list(_sources())
    assert len(sources) > 50, "the check must see the whole source tree"
    problems = [problem for path in sources for problem in _problems(path)]
    assert problems == []


def test_the_check_catches_each_kind_of_unpickling(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import pickle\nimport torch\nimport numpy as np\nimport pandas as pd\n"
        "torch.load('m.pt')\ntorch.load('m.pt', weights_only=False)\ntorch.load('m.pt', weights_only=True)\n"
        "np.load('a.npy', allow_pickle=True)\nnp.load('a.npy')\npd.read_pickle('f')\n"
    )
    found = list(_problems(probe, tmp_path))
    assert [line.split()[0] for line in found] == [f"probe.py:{n}" for n in (1, 5, 6, 8, 10)], found
