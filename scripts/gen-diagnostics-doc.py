#!/usr/bin/env python3
"""Regenerates docs/diagnostics.md: every diagnostic code (errors E0xxx,
warnings W0xxx) with an example input and the exact output of
`fhr-plan check` on it. The tool embeds the page: `fhr-plan explain-code
CODE` prints a section, SARIF rules carry its first paragraph.

Usage: scripts/gen-diagnostics-doc.py build/tools/fhr-plan
"""
import os
import re
import subprocess
import sys
import tempfile

TOOL = os.path.abspath(sys.argv[1])
DEF = open("dsl/include/fhr/dsl/diagnostic_codes.def").read()
CODES = re.findall(r'FHR_DIAGNOSTIC\((\w+), "(E\d+)", "([^"]*)"\)', DEF)
CODES += [(identifier, code, summary) for identifier, code, _flag, summary in
          re.findall(r'FHR_WARNING\((\w+), "(W\d+)", "([^"]*)", "([^"]*)"\)', DEF)]
FLAGS = dict((code, flag) for _, code, flag, _ in re.findall(r'FHR_WARNING\((\w+), "(W\d+)", "([^"]*)", "([^"]*)"\)', DEF))

# code -> (explanation, example input or None, extra command-line arguments)
EXAMPLES = {
    "E0001": ("A line does not start with a statement keyword.", "this is not a plan\n", []),
    "E0002": ("A declaration is missing its name, or the name is a keyword.", "const = 3\n", []),
    "E0003": ("A size or number was expected.", "budget pinned 1 GiB +\n", []),
    "E0004": ("A specific token is missing; the message names it.", "value w[4 1 MiB at pinned\n", []),
    "E0005": ("A location was expected: `pageable`, `pinned`, `pageable-host`, `pinned-host` or `cuda:N`.",
              "budget disk 1 TiB\n", []),
    "E0006": ("A quoted string (plan name, label) was expected.", "plan rotate { }\n", []),
    "E0007": ("A string is not closed on its line.", "plan \"rotate { }\n", []),
    "E0008": ("Only `\\\"`, `\\\\`, `\\n`, `\\t`, `\\{` and `\\}` are escapes.", "plan \"a\\qb\" { }\n", []),
    "E0009": ("Units are case-sensitive: B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024).",
              "budget cuda:0 40 gib\n", []),
    "E0010": ("A block holds something that does not belong there, or is not closed.",
              "plan \"p\" {\n  ensure w at cuda:0\n}\n", []),
    "E0011": ("Parentheses, `for` loops and scopes nest at most 64 deep.",
              "budget pinned " + "(" * 70 + "1" + ")" * 70 + "\n", []),
    "E0012": ("A value operand (`name`, `name[i]`, `name[a..b]`, `name[*]`) was expected.",
              "value a 1 MiB at pinned\nhold a, at pinned\n", []),
    "E0013": ("A value declaration ends with `at LOCATION` (adopted, must be preserved) or `source LOCATION` (reconstructible).",
              "value w 15 MiB replicable\n", []),
    "E0014": ("The input is larger than 1 GiB (source offsets are 32-bit).", None, []),
    "E0015": ("The file cannot be read.", None, ["missing.fhr"]),
    "E0016": ("A file starts with the bytecode magic `FHRB` but does not load: it is truncated, its checksum "
              "does not match, or a field is out of range. The message names the problem and its byte offset "
              "(see docs/bytecode.md).", "FHRB but not really a module\n", []),
    "E0101": ("A name is not declared; a close match is suggested.",
              "value rotkey 120 MiB replicable source pageable\nensure rotky at cuda:0\n", []),
    "E0102": ("A name is declared twice (values, constants, loop variables and `as` names share one namespace per kind).",
              "const ct = 30 MiB\nconst ct = 10 MiB\n", []),
    "E0103": ("Only a family can be indexed.", "value w 1 MiB at pinned\nensure w[0] at cuda:0\n", []),
    "E0104": ("A family is used where one or more of its members must be chosen.",
              "value rk[8] 1 MiB replicable source pageable\nensure rk at cuda:0\n", []),
    "E0105": ("A family index or range end is past the family's size.",
              "value rk[8] 1 MiB replicable source pageable\nensure rk[8] at cuda:0\n", []),
    "E0106": ("A range `a..b` is half-open and must hold at least one index; a family needs at least one value.",
              "value rk[8] 1 MiB replicable source pageable\nensure rk[4..4] at cuda:0\n", []),
    "E0107": ("A value name is used inside a size expression.", "value w 1 MiB at pinned\nbudget pinned 2 * w\n", []),
    "E0201": ("A size does not fit in 64 bits.", "budget pinned 20000000 TiB\n", []),
    "E0202": ("A subtraction goes below zero (sizes are unsigned).", "const ct = 30 MiB\nbudget pinned ct - 31 MiB\n", []),
    "E0203": ("Division by zero.", "const keys = 0\nbudget pinned 1 GiB / keys\n", []),
    "E0204": ("`storage` is the per-replica charge and cannot be below the logical size.",
              "value w 16 MiB storage 15 MiB at pinned\n", []),
    "E0205": ("The file would expand to more than 10,000,000 statements, declare more than 1,000,000 values "
              "or more than 100,000 plans and programs together, make more than 1,000,000 setup steps besides its "
              "declarations (actions, holds, leases, reservations, releases), unroll its programs to more than "
              "1,000,000 statements, or ask explain for more than "
              "10,000,000 steps in all (a plan of many actions run by a program many times; docs/bytecode.md, "
              "\"Limits\").",
              "for i in 0..100000000000 { }\n", []),
    "E0206": ("A decimal size must come to a whole number of bytes: `1.5 GiB` is 1610612736 B, `1.1 KiB` "
              "(1126.4 B) is an error.", "value w 1.1 KiB at pinned\n", []),
    "E0301": ("A location is spelled wrongly: `cuda` without an index, a non-canonical index, or an index past 127.",
              "budget cuda:128 80 GiB\n", []),
    "E0302": ("`devices` must be between 0 and 128.", "devices 200\n", []),
    "E0303": ("A location has two `budget` or `location` lines.", "budget pinned 1 GiB\nbudget pinned-host 2 GiB\n", []),
    "E0401": ("Plan names, action-list names and reservation labels must not be blank.", "plan \"\" { }\n", []),
    "E0402": ("Two plans, or two programs, have the same name (an unnamed program is called `program-N`, "
              "N its position among the programs).", "plan \"p\" { }\nplan \"p\" { }\n", []),
    "E0403": ("`run` or `scope` names a plan that is not declared; a close match is suggested.",
              "plan \"stage-1\" { }\nprogram { run \"stage1\" }\n", []),
    "E0404": ("`release` names nothing, or something already released.", "release workspace\n", []),
    "E0405": ("`{name}` in a string must name a loop variable or constant.",
              "for level in 0..2 { plan \"level-{lvl}\" { } }\n", []),
    "E0406": ("A statement is valid elsewhere but not here (for example `as` on a plan's reservation).",
              "plan \"p\" { reserve cuda:0 1 MiB \"tmp\" as t }\n", []),
    "E0407": ("A plan marked `in program` is explained only where programs run it; when no program runs it, "
              "it is checked nowhere. Add a `run` or `scope` for it, or remove the mark.",
              "plan \"upload\" in program { }\nprogram { }\n", []),
    # Workloads (docs/language.md, "Workloads")
    "E0701": ("A step's `compute` takes a decimal number and a time unit: `s`, `ms`, `us` or `ns`.",
              "value k 1 MiB replicable source pinned\nstep \"s\" { need k at cuda:0; compute 3 min }\n", []),
    "E0702": ("A step names what it reads (`need`) or reserves (`workspace`); a step with neither is a typo.",
              "step \"idle\" { compute 1 ms }\n", []),
    "E0703": ("A step has one compute time.",
              "value k 1 MiB replicable source pinned\n"
              "step \"s\" { need k at cuda:0; compute 1 ms; compute 2 ms }\n", []),
    "E0704": ("An EXCLUSIVE value has one replica, so one step cannot read it at two locations.",
              "value ct 35 MiB exclusive at pinned\nstep \"s\" { need ct at cuda:0; need ct at cuda:1 }\n", []),
    "E0705": ("A step's compute time is at most a day (86400 s).",
              "value k 1 MiB replicable source pinned\nstep \"s\" { need k at cuda:0; compute 100000 s }\n", []),
    "E0706": ("`fhr-plan solve` takes a file with steps that follows the planner's rules for a whole workload "
              "(docs/planner.md, \"Model\"); the message names the rule and the step.",
              "value k 1 MiB replicable source pinned\nplan \"p\" { enter { ensure k at cuda:0 } }\n", [], "solve"),
    "E0501": ("A `--budget` option is not `LOCATION=SIZE`.", "budget pinned 1 GiB\n", ["--budget", "cuda=1GiB"]),
    "E0502": ("A `--budget` names a device the file does not declare (`devices N`): a manager for that machine "
              "could not be built, so `check` refuses it as `run` would. It is reported at the `devices` line.",
              "devices 1\nbudget cuda:0 40 GiB\n", ["--budget", "cuda:7=10GiB"]),
    "E0503": ("An option's value is not one the tool knows: an unknown `-W` warning, an unknown code for "
              "`explain-code`, a `--plan` or `--program` name that no file has (with the closest name).", "budget pinned 1 GiB\n", ["-Wbogus"]),
    "E0504": ("The front end stops after `--error-limit` errors (20 by default; 0 means no limit), so that a "
              "broken file cannot flood the output.", "const a = x\nconst b = y\nconst c = z\n", ["--error-limit=2"]),
    "W0001": ("A size without a unit is a number of bytes: `budget cuda:0 40` budgets 40 bytes. Write `40 B` if "
              "that is meant (the fix-it), or give a unit. Zero and sizes computed from constants are not "
              "reported.", "budget cuda:0 40\n", []),
    "W0002": ("A `for` range whose first bound is above its last runs no iteration; ranges count up and exclude "
              "the last bound.", "for i in 5..2 { }\n", []),
    "W0003": ("In a file with programs, a plan that no program runs (`run`, `scope`) is checked only on its own; "
              "it is usually a misspelt or forgotten `run`.",
              "plan \"stage-1\" { }\nplan \"stage-2\" { }\nprogram { run \"stage-1\" }\n", []),
    "W0004": ("A `budget` line for a device the file does not declare with `devices N`: `run` cannot build a "
              "manager for it.", "devices 1\nbudget cuda:3 1 GiB\n", []),
    "W0005": ("The same location is given twice with `--budget`; the last one applies (as with most options), "
              "and the warning says which was replaced.", "budget pinned 1 GiB\n",
              ["--budget", "cuda:0=40GiB", "--budget", "cuda:0=80GiB"]),
    "W0006": ("An `ensure` or `copy` whose values are already resident at the destination, or a `drop` of a "
              "replica that is not there, in the state the simulator finds at that step: setup's, each program's "
              "where it runs, and for a plan that no program runs, the setup state. A statement is reported "
              "when it does nothing in every run that reaches it; a loop's iterations count as one statement. `check`, `explain` and "
              "the other verbs that load a `.fhr` file find it by running the file (`-Wno-redundant-action` "
              "skips that run).",
              "value w 1 MiB replicable at pinned\nensure w at pinned\nplan \"p\" { exit { drop w at cuda:0 } }\n",
              []),
}

out = ["# Diagnostics", "",
       "Every diagnostic `fhr-plan` reports has a stable code: `E0xxx` for errors, `W0xxx` for",
       "warnings. They print as `file:line:col: error: [CODE] message`, then the source line",
       "with a caret under the offending text, then `note:` lines: other places that explain",
       "it (\"first declared here\", \"unclosed '{' opened here\", the loop iteration it",
       "happened in) and a hint or suggested fix. Columns count Unicode characters. The",
       "parser resumes at the next line that starts a top-level statement, so one run shows",
       "every independent error; a loop stops expanding at its first error, the same",
       "diagnostic reported again counts as one (\"in N iterations\"), and after",
       "`--error-limit` errors (20) the front end stops (E0504). Any error makes `explain`,",
       "`check`, `compile` and `run` exit with status 2; warnings do not, unless made errors.",
       "",
       "Warnings are controlled as in C compilers: `-Wno-FLAG` turns one off, `-Werror` makes",
       "them all errors, `-Werror=FLAG` one, `-Wnone` all off. `check --format github`,",
       "`--format sarif` and `explain --format json` carry every diagnostic too, and",
       "`fhr-plan explain-code CODE` (or `--explain CODE`) prints its entry below.", "",
       "| flag | code |", "|---|---|"]
out += [f"| `-W{FLAGS[code]}` | [{code}](#{code}) |" for _, code, _ in CODES if code in FLAGS]
out += ["",
       "This page is generated by `scripts/gen-diagnostics-doc.py build/tools/fhr-plan`;",
       "each example is the tool's real output.", ""]
missing = [code for _, code, _ in CODES if code not in EXAMPLES]
if missing:
    sys.exit("no example for " + ", ".join(missing))
with tempfile.TemporaryDirectory() as tmp:
    for identifier, code, summary in CODES:
        text, example, args, *verb = EXAMPLES[code]
        verb = verb[0] if verb else "check"
        out += [f'<a id="{code}"></a>', "", f"## {code}: {summary}", "", text, ""]
        if example is None and not args:
            out += ["(No short example: it needs an input over 1 GiB.)", ""]
            continue
        path = os.path.join(tmp, "example.fhr")
        if example is not None:
            with open(path, "w") as f:
                f.write(example)
            out += ["```", example.rstrip("\n"), "```", ""]
        files = [path] if example is not None else []
        if args and not args[0].startswith("-"):
            files, args = args, []
        result = subprocess.run([TOOL, verb, *args, *files], capture_output=True, text=True,
                                cwd=tmp, env={**os.environ, "NO_COLOR": "1"})
        shown = result.stderr.replace(path, "example.fhr")
        cmd = " ".join([f"fhr-plan {verb}", *args, *(["example.fhr"] if example is not None else files)])
        out += ["```console", f"$ {cmd}", shown.rstrip("\n"), "```", ""]
        expected = 0 if code.startswith("W") else 2
        if result.returncode != expected:
            sys.exit(f"{code}: expected exit {expected}, got {result.returncode}:\n{result.stderr}")
        if f"[{code}]" not in result.stderr:
            sys.exit(f"{code}: example does not produce it:\n{result.stderr}")
open("docs/diagnostics.md", "w").write("\n".join(out).rstrip("\n") + "\n")
