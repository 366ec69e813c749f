"""The README, CI and settings page stay in step with the code (no GPU, no install needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_COMMANDS = (
    'pip install . && python -m tunedgemm demo',
    'pip install -e ".[test]" && python -m pytest',
)


def _read(relative: str) -> str:
    path = ROOT / relative
    if not path.is_file():
        pytest.skip(f"{relative} is not here (an installed copy without the repository)")
    return path.read_text()


def test_readme_keeps_its_two_commands_and_ci_runs_the_test_one():
    readme, ci = _read("README.md"), _read(".ci/run")
    commands = [line.strip() for line in readme.splitlines() if line.startswith("    pip ")]
    assert commands[:2] == list(README_COMMANDS)
    ci_lines = [line.strip() for line in ci.splitlines()]
    assert README_COMMANDS[1] in ci_lines
    later = ci_lines[ci_lines.index(README_COMMANDS[1]) + 1 :]
    assert "python -m pytest -m slow" in later
    assert any("mkdocs build --strict" in line for line in later)


def test_every_setting_is_in_the_settings_table():
    code = "".join(p.read_text() for p in (ROOT / "tunedgemm").rglob("*.py"))
    names = set(re.findall(r'"(TUNEDGEMM_[A-Z_]+)"', code))
    assert len(names) >= 8
    table = _read("docs/settings.md")
    assert not {n for n in names if f"| `{n}` |" not in table}


@pytest.mark.parametrize("script", sorted((ROOT / "benchmarks").glob("*.py")), ids=lambda p: p.name)
def test_every_benchmark_with_a_main_runs_it_as_a_script(script):
    """`python benchmarks/X.py` must do what its docstring says: a script whose main() is never
    called runs nothing and exits 0 (bench_device did so for a day, unnoticed)."""
    text = script.read_text()
    if re.search(r"^def main\(", text, re.MULTILINE):
        assert re.search(r'^if __name__ == "__main__":\n    .*main\(\)', text, re.MULTILINE)
