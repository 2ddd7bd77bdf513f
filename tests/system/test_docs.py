"""The documentation a user and a contributor read, and the extension's listing, hold together.

Every link and picture in README.md, CONTRIBUTING.md, CHANGELOG.md, docs/*.md and extension/README.md
resolves to a file of this repository (a heading, where it names one) and none leaves it: no web
address, nothing outside the checkout (the shared design picture is docs/architecture.md). README.md's
first screen shows a picture and an install step, and still names the contributors' two commands.
The pictures are the small PNG/GIF files under docs/images/ that vsce can package; the manifest has the
listing's icon and banner and is not private.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import ROOT

DOCS = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", ROOT / "extension" / "README.md"]
    + list((ROOT / "docs").glob("*.md"))
)
FIRST_SCREEN = 40  # lines of README.md a visitor sees before scrolling
MAX_PICTURE = 1024 * 1024

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target); the text may hold one nested image (a linked picture)
INLINE = re.compile(r"(!?)\[((?:[^\[\]]|!\[[^\]]*\]\([^)]*\))*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML = re.compile(r"<(?:img|a|source|video)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
PICTURE = re.compile(r"\.(png|gif|jpe?g|svg|webp)$", re.IGNORECASE)


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for n, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((n, CODE_SPAN.sub("``", line)))
    return lines


def targets(path: Path) -> list[tuple[int, str, bool]]:
    """(line, target, is a picture) of every link and image in a Markdown file."""
    found: list[tuple[int, str, bool]] = []
    for n, line in prose(path.read_text(encoding="utf-8")):
        for m in INLINE.finditer(line):
            found.append((n, m.group(3), m.group(1) == "!"))
            for inner in INLINE.finditer(m.group(2)):  # a picture inside a link's text
                found.append((n, inner.group(3), inner.group(1) == "!"))
        for m in REFERENCE.finditer(line):
            found.append((n, m.group(1), bool(PICTURE.search(m.group(1)))))
        for m in HTML.finditer(line):
            found.append((n, m.group(1), m.group(0).lower().startswith(("<img", "<source", "<video"))))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without markup, lower case, punctuation dropped, spaces as -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def ignored_by_git(path: Path) -> bool:
    """Whether git ignores the file (it would be missing from a fresh clone); False without git."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return False
    done = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT, capture_output=True)
    return done.returncode == 0


def test_the_documents_exist() -> None:
    for name in ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "extension/README.md", "docs/architecture.md"]:
        assert (ROOT / name).is_file(), f"{name} is missing"


@pytest.mark.parametrize("doc", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_link_and_picture_resolves_inside_the_repository(doc: Path) -> None:
    problems: list[str] = []
    for line, target, picture in targets(doc):
        where = f"{doc.relative_to(ROOT)}:{line}: {target!r}"
        if not target:
            problems.append(f"{where}: an empty link")
            continue
        if SCHEME.match(target) or target.startswith("//"):
            problems.append(f"{where}: leaves the repository (link to a file of it instead)")
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (doc.parent / file_part).resolve() if file_part else doc
        if not resolved.is_relative_to(ROOT):
            problems.append(f"{where}: points outside the repository ({resolved})")
            continue
        if not resolved.exists():
            problems.append(f"{where}: no such file ({resolved.relative_to(ROOT)})")
            continue
        if ignored_by_git(resolved):
            problems.append(f"{where}: git ignores {resolved.relative_to(ROOT)}, so a clone lacks it")
        if picture and not resolved.is_file():
            problems.append(f"{where}: a picture that is not a file")
        if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: {resolved.relative_to(ROOT)} has no heading #{anchor}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_nothing_points_at_the_shared_folder(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    assert "../shared" not in text and "shared/DESIGN.md" not in text, (
        f"{doc.relative_to(ROOT)} names the shared folder outside the repository: use docs/architecture.md"
    )


def test_no_tracked_file_names_the_shared_design_outside_the_repository() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git checkout")
    done = subprocess.run(
        ["git", "grep", "-n", "-e", "shared/DESIGN.md", "--", ".", ":(exclude)tests/system/test_docs.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, f"the shared design is docs/architecture.md in this repository:\n{done.stdout}"


def test_the_readme_first_screen_shows_a_picture_and_an_install_step() -> None:
    first = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    assert re.search(r"!\[[^\]]*\]\([^)]+\)|<img\b", first), f"no picture in README.md's first {FIRST_SCREEN} lines"
    assert "code --install-extension" in first, f"no install step for the .vsix in README.md's first {FIRST_SCREEN} lines"
    assert "pip install" in first, f"no install step for the Python package in README.md's first {FIRST_SCREEN} lines"


def test_the_contributors_commands_are_named() -> None:
    for name in ["README.md", "CONTRIBUTING.md"]:
        text = (ROOT / name).read_text(encoding="utf-8")
        for command in ["make demo", "make test"]:
            assert command in text, f"{name} does not name `{command}`"
    assert "make screenshots" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_pictures_are_small_and_of_a_kind_vsce_packages() -> None:
    pictures = sorted((ROOT / "docs" / "images").glob("*"))
    assert pictures, "docs/images/ holds no pictures"
    for p in pictures:
        if p.suffix == ".md" or p.is_dir():
            continue
        assert p.suffix.lower() in {".png", ".gif"}, f"{p.name}: vsce refuses SVG; use PNG or GIF"
        assert p.stat().st_size <= MAX_PICTURE, f"{p.name} is {p.stat().st_size} bytes (at most {MAX_PICTURE})"
    for line, target, picture in targets(ROOT / "extension" / "README.md"):
        if picture:
            assert PICTURE.search(target) and not target.lower().endswith(".svg"), (
                f"extension/README.md:{line}: {target} (the extension's page shows PNG, GIF or JPEG)"
            )


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_listing() -> None:
    manifest = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert "private" not in manifest, "a private package cannot be published"
    icon = ROOT / manifest["icon"]
    assert png_size(icon) == (128, 128), f"{manifest['icon']}: the Marketplace's icon is a 128x128 PNG"
    assert manifest["galleryBanner"]["theme"] in {"dark", "light"}
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", manifest["galleryBanner"]["color"])
    ignore = (ROOT / ".vscodeignore").read_text(encoding="utf-8").splitlines()
    for shipped in [f"!{manifest['icon']}", "!CHANGELOG.md"]:
        assert shipped in ignore, f".vscodeignore does not ship {shipped[1:]}"


def test_the_vsix_readme_carries_its_pictures_inline(tmp_path: Path) -> None:
    """VS Code's extension page shows only https: and data: pictures: the .vsix's README inlines them."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node")
    out = tmp_path / "README.md"
    subprocess.run([node, str(ROOT / "extension" / "vsix-readme.mjs"), str(out)], cwd=ROOT, check=True, capture_output=True)
    source = targets(ROOT / "extension" / "README.md")
    packed = targets(out)
    pictures = sum(picture for _, _, picture in source)
    assert pictures >= 1 and sum(picture for _, _, picture in packed) == pictures, "every picture kept"
    for line, target, picture in packed:
        if picture:
            assert target.startswith(("data:image/png;base64,", "data:image/gif;base64,")), f"line {line}: {target[:60]}"
        else:
            assert target.startswith("#") or SCHEME.match(target), f"line {line}: a relative link {target} in the .vsix"
