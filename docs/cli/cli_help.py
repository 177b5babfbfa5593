# SPDX-License-Identifier: GPL-2.0-only
"""Reads mysqltrace's command line from the built binary's --help output.

The program itself is the one description of its options (CLI11 declares
them); the man page and the bash completion are generated from what
`mysqltrace --help` and `mysqltrace SUB --help` print, so a new subcommand or
option shows up in both without anyone listing it here.

CLI11 (2.x) prints, per command: its description, `Usage: ...`, then sections
("Positionals:", "Options:", "Subcommands:", or an option group's name), each
item as two spaces, the name and its value spec padded to column 30, then the
description; a name of 28 characters or more puts the description on the next
line, indented 30 columns, as are the continuation lines of a multi-line
description.
"""

import re
import subprocess
from dataclasses import dataclass, field

COLUMN = 30

# A whole item line that is only a name and its value spec (the description
# follows on the next line), as opposed to a short name, padding and the
# first line of the description.
SPEC = re.compile(r"\S+(?: \S+?(?::(?:\{[^}]*\}|\w+(?: in \[[^\]]*\])?))*(?:=\S+)?)?"
                  r"(?: \.\.\.)?(?: REQUIRED)?(?: \(Env:\S+\))?(?: Needs:(?: -\S+)+)?"
                  r"(?: Excludes:(?: -\S+)+)?")


@dataclass
class Item:
    names: list  # ["-p", "--pid"], or ["command"] for a positional
    spec: str  # what follows the names: "INT REQUIRED", "TEXT:{text,json}=text", ...
    desc: str

    # The parts of `spec`, filled by parse_spec().
    metavar: str = ""
    choices: list = field(default_factory=list)
    constraint: str = ""
    default: str = ""
    required: bool = False
    repeatable: bool = False
    relations: list = field(default_factory=list)  # "needs --output", ...

    @property
    def takes_value(self):
        return bool(self.metavar)


@dataclass
class Command:
    name: str  # "" for the program itself
    description: str = ""
    usage: str = ""
    sections: list = field(default_factory=list)  # [(title, [Item])]

    def items(self, kind=None):
        for title, items in self.sections:
            if kind is None or (title == kind) or (kind == "Options" and title not in
                                                   ("Positionals", "Subcommands")):
                yield from items

    @property
    def options(self):
        return list(self.items("Options"))

    @property
    def positionals(self):
        return list(self.items("Positionals"))

    @property
    def subcommands(self):
        return [i.names[0] for i in self.items("Subcommands")]


def parse_spec(item):
    spec = item.spec.strip()
    # Trailing relations first: "Needs: --a --b", "Excludes: --c", "(Env:X)".
    while True:
        m = re.search(r"\s*\b(Needs|Excludes):((?:\s+-\S+)+)$", spec)
        if not m:
            break
        item.relations.insert(0, m.group(1).lower() + " " + ", ".join(m.group(2).split()))
        spec = spec[: m.start()]
    m = re.search(r"\s*\(Env:(\S+)\)$", spec)
    if m:
        item.relations.insert(0, "environment variable " + m.group(1))
        spec = spec[: m.start()]
    if spec.endswith(" REQUIRED") or spec == "REQUIRED":
        item.required = True
        spec = spec[: -len("REQUIRED")].rstrip()
    if spec.endswith(" ...") or spec == "...":
        item.repeatable = True
        spec = spec[: -len("...")].rstrip()
    if not spec:
        return
    # TYPE[:CONSTRAINT...][=DEFAULT]; a default never holds ']' or '}'.
    if "=" in spec:
        head, default = spec.rsplit("=", 1)
        if "]" not in default and "}" not in default:
            spec, item.default = head, default
    metavar, _, constraint = spec.partition(":")
    item.metavar = metavar
    m = re.fullmatch(r"\{(.*)\}", constraint)
    if m:
        item.choices = m.group(1).split(",")
        return
    m = re.fullmatch(r"(?:\w+ )?in \[(\S+) - (\S+)\]", constraint)
    if m:
        item.constraint = "from %s to %s" % m.groups()
        return
    item.constraint = {"NONNEGATIVE": "non-negative", "POSITIVE": "positive"}.get(
        constraint, constraint.lower())


def parse_help(name, text):
    cmd = Command(name)
    lines = text.rstrip("\n").split("\n")
    i = 0
    desc = []
    while i < len(lines) and not lines[i].startswith("Usage: "):
        desc.append(lines[i])
        i += 1
    if i == len(lines):
        raise ValueError("no 'Usage:' line in the help of %r" % (name or "mysqltrace"))
    cmd.description = "\n".join(desc).strip()
    cmd.usage = lines[i][len("Usage: "):].strip()
    items = None
    current = None
    rest = lines[i + 1:]
    for n, line in enumerate(rest):
        if not line.strip():
            current = None
            continue
        if not line.startswith(" ") and line.rstrip().endswith(":"):
            items = []
            cmd.sections.append((line.rstrip()[:-1], items))
            current = None
            continue
        if items is None:
            raise ValueError("unexpected line in the help of %r: %r" % (name, line))
        if line.startswith(" " * COLUMN) and current is not None:
            current.desc = (current.desc + "\n" if current.desc else "") + line.strip()
            continue
        if not line.startswith("  ") or line[2] == " ":
            raise ValueError("unexpected line in the help of %r: %r" % (name, line))
        described_below = n + 1 < len(rest) and rest[n + 1].startswith(" " * COLUMN)
        if len(line) <= COLUMN or line[COLUMN - 1] != " " or (described_below and
                                                               SPEC.fullmatch(line.strip())):
            head, item_desc = line.strip(), ""
        else:
            head, item_desc = line[:COLUMN].strip(), line[COLUMN:].strip()
        first, _, spec = head.partition(" ")
        current = Item(first.split(","), spec, item_desc)
        parse_spec(current)
        items.append(current)
    return cmd


def run_help(binary, args):
    out = subprocess.run([binary, *args, "--help"], check=True, capture_output=True, text=True,
                         env={"LC_ALL": "C.UTF-8", "COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    return out.stdout


def read_cli(binary):
    """The program's own options and subcommands, then each subcommand."""
    top = parse_help("", run_help(binary, []))
    subs = [parse_help(s, run_help(binary, [s])) for s in top.subcommands]
    if not subs:
        raise ValueError("%s --help lists no subcommands" % binary)
    return top, subs
