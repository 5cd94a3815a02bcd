"""The docs against the code: every `%%step` flag, `%step` subcommand and
`resumable-cells` command is documented, and nothing documented is missing from the
code; every relative link leads to a file and, for a markdown anchor, to a heading; the
README stays short enough for a new user to read.

The names come from the parsers the code builds (the `%%step` spec, the CLI's argparse
tree) and from the table `%step` dispatches on, so a flag or a command added, renamed or
removed without its docs fails here. Markdown is read with a few regular expressions:
the docs use plain pipe tables and `#` headings, nothing a parser would be needed for.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from resumable_cells import cli
from resumable_cells.ipython import commands, stepargs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference.md"
VERIFY = DOCS / "verify.md"
README_MAX_LINES = 320
# Pages whose links are checked: the user's pages, and CONTRIBUTING.md, which points
# into them.
LINKED_PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]


# --- reading markdown -------------------------------------------------------------------


def without_code(text: str) -> str:
    """The text without fenced blocks and inline code: a `# comment` in a shell block is
    no heading, and `[NAME]` in a usage line is no link."""
    text = re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)
    # An inline span may wrap onto the next line, never across a blank one.
    return re.sub(r"`(?:[^`\n]|\n(?![ \t]*\n))*`", "", text)


def tables(text: str) -> list[list[list[str]]]:
    """Every pipe table: its rows (header first, the `|---|` line left out), each a list
    of cells with `\\|` read as a plain `|`."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            cells = [c.strip().replace("\\|", "|") for c in cells]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def first_cells(text: str, header: str) -> list[str]:
    """The first cell of each row of the tables whose first column is headed `header`,
    without its backticks' outer pair (`` `--ignore VAR ...` `` gives `--ignore VAR ...`)."""
    cells = []
    for table in tables(text):
        if table[0][0] == header:
            cells += [row[0] for row in table[1:]]
    return [c[1:-1] if c.startswith("`") and c.endswith("`") else c for c in cells]


def section(text: str, title: str) -> str:
    """The body of the section headed `title`, up to the next heading of its level or
    above."""
    m = re.search(rf"^(#+) {re.escape(title)}\s*$", text, flags=re.M)
    assert m, f"no section headed {title!r}"
    rest = text[m.end() :]
    end = re.search(rf"^#{{1,{len(m.group(1))}}} ", rest, flags=re.M)
    return rest[: end.start()] if end else rest


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (backticks, `%`,
    `?`, `:`), spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    text = re.sub(r"^```.*?^```[^\n]*$", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")  # GitHub numbers repeated headings
    return out


def links(path: Path) -> list[str]:
    text = without_code(path.read_text(encoding="utf-8"))
    return re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)


# --- what the code declares -------------------------------------------------------------


def usage_form(action: argparse.Action) -> str:
    """An argument as the docs write it: `NAME`, `--effect`, `--version TAG`,
    `--ignore VAR ...`, `--remote [URL]`."""
    many = action.nargs in ("+", "*")
    if not action.option_strings:
        return (action.metavar or action.dest).upper() + (" ..." if many else "")
    opt = max(action.option_strings, key=len)
    if action.nargs == 0:
        return opt
    metavar = action.metavar or action.dest.upper()
    if action.nargs == "?":
        return f"{opt} [{metavar}]"
    return f"{opt} {metavar}" + (" ..." if many else "")


def step_flags() -> set[str]:
    """`%%step`'s arguments, from the parser the magic's spec builds (`%%step?` prints
    its help)."""
    return {usage_form(a) for a in stepargs.parser()._actions if a.dest != "help"}


def step_subcommands() -> set[str]:
    """What `%step NAME` dispatches on (a private table: the code keeps no public one;
    the tuple for its error message could drift from what it runs)."""
    return set(commands._HANDLERS)


def cli_commands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def named(cells: list[str], prefix: str) -> list[str]:
    """The command names a table's first cells give after `prefix` (`%step why NAME`
    gives `why`)."""
    return [m.group(1) for c in cells if (m := re.match(rf"{re.escape(prefix)} (\w+)", c))]


# --- (a) the %%step flags ---------------------------------------------------------------


@pytest.mark.parametrize("page", [README, REFERENCE], ids=lambda p: p.name)
def test_the_flag_table_lists_every_flag_of_the_step_magic_and_no_other(page):
    documented = first_cells(page.read_text(encoding="utf-8"), "flag")
    assert documented, f"{page.name} has no table headed `flag`"
    assert len(documented) == len(set(documented)), f"a flag is listed twice: {documented}"
    spec = step_flags()
    assert set(documented) - spec == set(), f"{page.name} documents flags %%step lacks"
    assert spec - set(documented) == set(), f"{page.name} lacks flags of %%step"


@pytest.mark.parametrize("page", [README, REFERENCE], ids=lambda p: p.name)
def test_the_usage_line_of_the_step_magic_shows_every_flag(page):
    text = page.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith("`%%step [")]
    assert len(lines) == 1, f"{page.name} should show one `%%step [...]` usage line"
    shown = re.findall(r"\[([^\[\]]+)\]", lines[0])
    assert sorted(shown) == sorted(step_flags())


# --- (b) the %step subcommands ----------------------------------------------------------


@pytest.mark.parametrize("page", [README, REFERENCE], ids=lambda p: p.name)
def test_the_subcommand_table_lists_every_step_subcommand_and_no_other(page):
    documented = named(first_cells(page.read_text(encoding="utf-8"), "command"), "%step")
    assert documented, f"{page.name} has no `%step` subcommand table"
    assert len(documented) == len(set(documented)), f"listed twice: {documented}"
    assert set(documented) - step_subcommands() == set(), f"{page.name}: not in %step"
    assert step_subcommands() - set(documented) == set(), f"{page.name}: undocumented"


# --- (c) the resumable-cells command ----------------------------------------------------


@pytest.mark.parametrize("page", [README, REFERENCE], ids=lambda p: p.name)
def test_the_command_table_lists_every_cli_command_and_no_other(page):
    documented = named(first_cells(page.read_text(encoding="utf-8"), "command"), "resumable-cells")
    assert documented, f"{page.name} has no `resumable-cells` command table"
    assert len(documented) == len(set(documented)), f"listed twice: {documented}"
    assert set(documented) - set(cli_commands()) == set(), f"{page.name}: not in the CLI"
    assert set(cli_commands()) - set(documented) == set(), f"{page.name}: undocumented"


def test_the_reference_shows_every_argument_of_each_cli_command():
    rows = first_cells(REFERENCE.read_text(encoding="utf-8"), "command")
    by_name = {m.group(1): r for r in rows if (m := re.match(r"resumable-cells (\w+)", r))}
    for name, parser in cli_commands().items():
        for action in parser._actions:
            if action.dest == "help":
                continue
            if action.option_strings:
                word = max(action.option_strings, key=len)
            else:
                word = (action.metavar or action.dest).upper()
            assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", by_name[name]), (
                f"reference.md: `resumable-cells {name}` does not show {word}"
            )


def test_the_reference_names_the_options_of_the_cli_itself():
    text = section(REFERENCE.read_text(encoding="utf-8"), "The command line")
    for action in cli._parser()._actions:
        if action.option_strings and action.dest != "help":
            option = max(action.option_strings, key=len)
            assert option in text, f"reference.md's command line does not mention {option}"


def test_the_verify_option_table_matches_the_options_verify_takes():
    documented = first_cells(VERIFY.read_text(encoding="utf-8"), "option")
    parser = cli_commands()["verify"]
    declared = {usage_form(a) for a in parser._actions if a.option_strings and a.dest != "help"}
    assert sorted(documented) == sorted(declared)


# --- (d) links --------------------------------------------------------------------------


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_a_heading(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.name}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_the_docs_index_links_every_docs_page():
    index = DOCS / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
    pages = {p.resolve() for p in DOCS.glob("*.md")} - {index.resolve()}
    assert sorted(p.name for p in pages - linked) == []
    assert "docs/README.md" in links(README)


# --- (e) the README stays a user's page -------------------------------------------------


def test_the_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, (
        f"README.md has {n} lines (at most {README_MAX_LINES}): move the detail to a page "
        "in docs/ and link it"
    )


def test_the_readme_starts_with_the_commands_a_fresh_clone_runs():
    # `make demo` and `make test` are the project's contract with a new user: first.
    top = README.read_text(encoding="utf-8").splitlines()[:20]
    assert any(ln.startswith("make demo") for ln in top)
    assert any(ln.startswith("make test") for ln in top)
