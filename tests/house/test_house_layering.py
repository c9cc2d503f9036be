"""The folder layout is the architecture: proxy -> gate -> memory -> config, one import root,
and proxy/ (and gate/) reaching memory and gate only through their front doors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("config", "memory", "gate", "proxy")  # each may import only those before it
# Which of memory's and gate's modules a layer above may import: only the package itself.
FRONT_DOORS = {"memory": "mnemoproxy.memory", "gate": "mnemoproxy.gate"}
# The root's own modules, below every layer.
SHARED = ("mnemoproxy.bounded", "mnemoproxy.errors", "mnemoproxy.lazy",
          "mnemoproxy.text_templates")


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    allowed = {f"mnemoproxy.{name}" for name in LAYERS[: LAYERS.index(layer) + 1]}
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources(layer)
        for module in imported_modules(path)
        if module.startswith("mnemoproxy.")
        and not module.startswith(SHARED)
        and not any(module == a or module.startswith(a + ".") for a in allowed)
    ]
    assert wrong == []


@pytest.mark.parametrize(("layer", "door"), [("proxy", "memory"), ("proxy", "gate"),
                                             ("gate", "memory")])
def test_upper_layers_use_the_front_doors(layer: str, door: str) -> None:
    front = FRONT_DOORS[door]
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sources(layer)
        for module in imported_modules(path)
        if module.startswith(front + ".")
    ]
    assert wrong == []


def test_everything_imports_through_the_one_root() -> None:
    """No `import memory` or `from config import ...`: those names are not installed."""
    top_level = {*LAYERS, "bounded", "errors", "lazy", "text_templates"}
    files = [*ROOT.glob("*.py"), *(p for folder in (*LAYERS, "tests") for p in sources(folder))]
    wrong = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in files
        for module in imported_modules(path)
        if module.split(".")[0] in top_level
    ]
    assert wrong == []


def test_the_install_has_one_import_root(tmp_path: Path) -> None:
    import subprocess
    import sys

    probe = (
        "import importlib.util, json; "
        "print(json.dumps({name: importlib.util.find_spec(name) is not None "
        "for name in ('mnemoproxy', 'mnemoproxy.memory', 'config', 'memory', 'gate', 'proxy')}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True,
        env={"PATH": "", "HOME": str(tmp_path)},
    )
    assert result.stdout.strip() == (
        '{"mnemoproxy": true, "mnemoproxy.memory": true, "config": false, "memory": false, '
        '"gate": false, "proxy": false}'
    )
