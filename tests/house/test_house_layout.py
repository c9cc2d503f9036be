"""The folders are the architecture and stay walkable: no package or test folder of more
than a dozen modules, every package drawn in its `__init__`, the built wheel holding every
module and template, and tests that import helpers from tests/support, never another test
or a benchmark."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("config", "gate", "memory", "proxy")
MAX_MODULES = 12


def packages() -> list[Path]:
    return sorted(
        init.parent for folder in PACKAGE_FOLDERS for init in (ROOT / folder).rglob("__init__.py")
    )


def crowded(folders: Iterable[Path]) -> dict[str, int]:
    return {
        str(folder.relative_to(ROOT)): count
        for folder in folders
        if (count := sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")) > MAX_MODULES
    }


def test_no_package_folder_keeps_more_than_a_dozen_modules() -> None:
    assert crowded(packages()) == {}


def test_no_test_folder_keeps_more_than_a_dozen_modules() -> None:
    assert crowded({path.parent for path in (ROOT / "tests").rglob("*.py")}) == {}


def test_test_files_have_names_of_their_own() -> None:
    # tests/ has no __init__.py: pytest imports a test file by its name alone.
    names = [path.name for path in (ROOT / "tests").rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_every_package_says_what_it_holds() -> None:
    silent = [
        str(folder.relative_to(ROOT)) for folder in packages()
        if folder.name != "config"
        and not ast.get_docstring(ast.parse((folder / "__init__.py").read_text("utf-8")))
    ]
    assert silent == []


def test_the_wheel_holds_every_module_and_template(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", str(tmp_path)],
        check=True, capture_output=True, timeout=300,
    )
    [wheel] = tmp_path.glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        "mnemoproxy/" + str(path.relative_to(ROOT))
        for folder in PACKAGE_FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".j2") and "__pycache__" not in path.parts
    } | {f"mnemoproxy/{p.name}" for p in ROOT.glob("*.py")}
    assert wanted - shipped == set()
    assert not any(name.startswith(("mnemoproxy/tests/", "tests/")) for name in shipped)


def imported(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return names


def test_tests_import_support_never_another_test_or_a_benchmark() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        for name in imported(path)
        if name.startswith(("tests.test_", "tests.benchmarks"))
    ]
    assert wrong == []


def test_support_serves_tests_and_benchmarks_without_depending_on_either() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "tests" / "support").glob("*.py"))
        for name in imported(path)
        if name.startswith(("tests.test_", "tests.benchmarks"))
    ]
    assert wrong == []
