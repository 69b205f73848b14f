"""README and docs/ point only at files that exist, and cite papers by title, not by a path outside the repo."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
# a backticked repo path: starts with one of the repo's top-level folders and ends in a file suffix or a slash
REPO_PATH = re.compile(r"`((?:docs|benchmarks|fedrl_kit|experiments|notebooks|tests|data|figures|papers)/[\w./-]*)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_repo_paths_exist(page):
    text = page.read_text()
    dead = []
    prose = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)  # links live in prose, not in code spans
    for target in LINK.findall(prose):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            dead.append(target)
    for path in REPO_PATH.findall(text):
        path = path.rstrip(".")
        if any(ch in path for ch in "*<{") or path.endswith("/…"):
            continue
        if not ((ROOT / path).exists() or (ROOT / path.split("::")[0]).exists()):
            dead.append(path)
    assert not dead, f"{page.name} points at files that do not exist: {sorted(set(dead))}"
