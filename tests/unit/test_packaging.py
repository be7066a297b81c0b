"""Packaging and start-up (STYLE.md sections 10, 13, 15 and 16; DESIGN.md section 2)."""
from __future__ import annotations

import fnmatch
import pathlib
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
TOOL_DIRS = sorted(p for p in (ROOT / "tools").iterdir() if (p / "__init__.py").exists())
TOOL_NAMES = [p.name for p in TOOL_DIRS]
HEAVY = ("numpy", "networkx", "tabulate")


def test_the_six_tools_exist():
    assert TOOL_NAMES == ["pypto-emit", "pypto-lower", "pypto-prof", "pypto-run", "pypto-sched",
                          "pypto-trace"]


def test_every_library_package_is_listed():
    packages = set(SETUPTOOLS["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "libpypto").rglob("__init__.py") if "__pycache__" not in p.parts}
    assert "libpypto" in found
    missing = found - packages
    assert not missing, f"packages not in pyproject.toml [tool.setuptools] packages: {missing}"
    stale = {p for p in packages if p.startswith("libpypto")} - found
    assert not stale, f"listed packages without an __init__.py: {stale}"


def test_every_tool_folder_maps_to_a_package():
    packages = set(SETUPTOOLS["packages"])
    package_dir = PYPROJECT["tool"]["setuptools"]["package-dir"]
    scripts = PYPROJECT["project"]["scripts"]
    for d in TOOL_DIRS:
        pkg = d.name.replace("-", "_")
        assert pkg in packages, pkg
        assert package_dir.get(pkg) == f"tools/{d.name}", pkg
        assert scripts.get(d.name) == f"{pkg}.main:main", d.name
    assert {k for k in package_dir} == {d.name.replace("-", "_") for d in TOOL_DIRS}
    assert set(scripts) == set(TOOL_NAMES)


def tracked_files(folder: str) -> list[pathlib.Path]:
    """Files of a folder that git tracks (leftovers like *.orig are not the package's)."""
    p = subprocess.run(["git", "ls-files", folder], capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / line for line in p.stdout.splitlines()]


def test_package_data_covers_every_data_file():
    data = SETUPTOOLS.get("package-data", {})
    for f in tracked_files("libpypto"):
        if f.suffix == ".py":
            continue
        pkg = ".".join(f.parent.relative_to(ROOT).parts)
        patterns = data.get(pkg, [])
        assert any(fnmatch.fnmatch(f.name, pat) for pat in patterns), \
            f"{f.relative_to(ROOT)} is not in [tool.setuptools.package-data] {pkg!r}"


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_tool_folder_layout(tool):
    d = ROOT / "tools" / tool
    main = (d / "main.py").read_text().splitlines()
    assert len(main) < 80, f"tools/{tool}/main.py has {len(main)} lines (budget: 80)"
    assert main[0].startswith('"""' + tool + ":"), "main.py opens with a one-line purpose"
    dunder = [ln for ln in (d / "__main__.py").read_text().splitlines() if ln.strip()]
    assert len(dunder) <= 2 and any("main()" in ln for ln in dunder)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_tool_has_a_man_page(tool):
    readme = ROOT / "tools" / tool / "README.md"
    assert readme.exists(), f"tools/{tool}/README.md is missing"
    text = readme.read_text()
    assert text.startswith(f"# {tool}\n")
    assert " | pypto-" in text, f"tools/{tool}/README.md has no pipe example"
    assert f"tools/{tool}/README.md" in (ROOT / "README.md").read_text()


def test_console_scripts_are_installed():
    for tool in TOOL_NAMES:
        assert (pathlib.Path(sys.executable).parent / tool).exists(), tool


# -- cheap start-up --------------------------------------------------------------------------

def imported_after(code: str) -> set:
    probe = (f"import sys\n{code}\n"
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=60, cwd="/")
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_importing_libpypto_is_light():
    assert imported_after("import libpypto") == set()
    # reaching a library function lazily still costs nothing heavy
    assert imported_after("import libpypto\nlibpypto.trace\nlibpypto.read_ir") == set()


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_help_is_light(tool):
    """python -X importtime -m pypto_x --help, from outside the repo (STYLE.md section 10)."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", tool.replace("-", "_"),
                        "--help"], capture_output=True, text=True, timeout=60, cwd="/")
    assert p.returncode == 0, p.stderr
    assert "Examples:" in p.stdout
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in p.stderr.splitlines()
                if ln.startswith("import time:")}
    assert "libpypto" in imported and "typer" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
