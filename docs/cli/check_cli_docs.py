#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks the generated man page and bash completion against the binary.

  check_cli_docs.py BINARY MAN_PAGE COMPLETION [PAGES_DIR]

Independently of the generator's parser: every subcommand that
`mysqltrace --help` lists must have its section in the man page (and with
PAGES_DIR its own page there, mysqltrace-SUB.8), and every option name that
a `--help` prints (an item line starting with "  -") must appear in that
section (and page) and in the subcommand's completion list. The pages must
format without groff warnings, and the completion must complete
subcommands, options and option values in a real bash.
"""

import os
import re
import shutil
import subprocess
import sys


def helptext(binary, *args):
    return subprocess.run([binary, *args, "--help"], check=True, capture_output=True,
                          text=True, env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}).stdout


def option_names(text):
    names = []
    for line in text.split("\n"):
        m = re.match(r"  (-\S+)", line)
        if m:
            names += m.group(1).split(",")
    return names


def subcommands(text):
    subs, inside = [], False
    for line in text.split("\n"):
        if line == "Subcommands:":
            inside = True
        elif inside and re.match(r"  \S", line):
            subs.append(line.split()[0])
        elif inside and not line.startswith(" "):
            inside = False
    return subs


def plain(roff):
    """The words of a man page: font escapes gone, \\- as -."""
    text = re.sub(r"\\f[BIRP]", "", roff)
    return text.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


def sections(page):
    """{'': GLOBAL OPTIONS text, 'server': its .SS text, ...}"""
    out = {}
    m = re.search(r"^\.SH GLOBAL OPTIONS\n(.*?)^\.SH ", page, re.M | re.S)
    out[""] = m.group(1) if m else ""
    for m in re.finditer(r"^\.SS mysqltrace (\S+)\n(.*?)(?=^\.S[SH] )", page, re.M | re.S):
        out[m.group(1)] = m.group(2)
    return out


def completion_words(script, sub):
    key = "''" if sub == "" else sub
    m = re.search(r"^    %s\)\n        opts='([^']*)'" % re.escape(key), script, re.M)
    return set(m.group(1).split()) if m else set()


COMPLETE = r"""
source "$1"
complete_line() {
    # The words of the line typed so far, the last one being completed.
    read -r -a COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _mysqltrace
    echo "$1=> ${COMPREPLY[*]}"
}
complete_line "mysqltrace ser"
complete_line "mysqltrace server --for"
complete_line "mysqltrace server --format "
complete_line "mysqltrace -"
"""


def main():
    binary, man_path, completion_path = sys.argv[1:4]
    pages_dir = sys.argv[4] if len(sys.argv) > 4 else None
    problems = []
    pages = [man_path]
    with open(man_path, encoding="utf-8") as f:
        page = plain(f.read())
    with open(completion_path, encoding="utf-8") as f:
        script = f.read()
    top = helptext(binary)
    subs = subcommands(top)
    if not subs:
        problems.append("mysqltrace --help lists no subcommands")
    found = sections(page)
    checked = 0
    for sub in [""] + subs:
        what = "mysqltrace " + (sub + " " if sub else "") + "--help"
        if sub not in found:
            problems.append("man page: no section for %s" % (sub or "the global options"))
            continue
        words = completion_words(script, sub)
        if not words:
            problems.append("completion: no option list for %r" % (sub or "mysqltrace"))
        own = None
        if sub and pages_dir:
            path = os.path.join(pages_dir, "mysqltrace-%s.8" % sub)
            if not os.path.exists(path):
                problems.append("no page %s for %s" % (path, sub))
            else:
                pages.append(path)
                with open(path, encoding="utf-8") as f:
                    own = plain(f.read())
                if not re.search(r"^\.SH NAME\nmysqltrace-%s - \S" % re.escape(sub), own, re.M):
                    problems.append("%s: no NAME line 'mysqltrace-%s - ...'" % (path, sub))
        for name in option_names(helptext(binary, *([sub] if sub else []))):
            checked += 1
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), found[sub]):
                problems.append("man page: %s prints %s, its section does not" % (what, name))
            if own is not None and not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), own):
                problems.append("mysqltrace-%s.8: %s prints %s, the page does not" %
                                (sub, what, name))
            if name not in words:
                problems.append("completion: %s prints %s, the completion does not" % (what, name))

    if shutil.which("groff"):
        for path in pages:
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path],
                               capture_output=True, text=True)
            if r.returncode != 0 or r.stderr.strip():
                problems.append("groff warnings in %s:\n%s" % (path, r.stderr))

    r = subprocess.run(["bash", "-c", COMPLETE, "check", completion_path], capture_output=True,
                       text=True)
    got = r.stdout + r.stderr
    for want in ("mysqltrace ser=> server", "mysqltrace server --for=> --format",
                 "mysqltrace server --format => text json profile pfs-sql", "--version"):
        if want not in got:
            problems.append("completion: expected %r in:\n%s" % (want, got))

    for p in problems:
        print("check_cli_docs: " + p, file=sys.stderr)
    if problems:
        return 1
    print("check_cli_docs: %d subcommands, %d options: all in the man page%s and the completion" %
          (len(subs), checked, ", the subcommands' pages" if pages_dir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
