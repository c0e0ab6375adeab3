#!/usr/bin/env python3
"""The TextMate grammar (editors/fhr.tmLanguage.json) against the language.

A small tokenizer applies the grammar as TextMate editors do (the earliest
match wins, ties go to the first pattern; begin/end regions with their own
patterns) to every example and to snippets of each construct, and checks:
every keyword of the parser (dsl grammar.hpp) is scoped as a keyword, every
comment, string, escape, interpolation, location and size gets its scope,
and no keyword inside a comment or string is scoped as a keyword.

usage: editor_grammar_test.py   (from the repository root)
"""
import glob
import json
import re
import sys

grammar = json.load(open("editors/fhr.tmLanguage.json"))
repository = grammar["repository"]
failures = []


def expand(patterns):
    """Flattens includes into (rule) entries."""
    out = []
    for p in patterns:
        if "include" in p:
            rule = repository[p["include"].lstrip("#")]
            out += expand(rule["patterns"]) if "patterns" in rule and "match" not in rule and "begin" not in rule else [rule]
        else:
            out.append(p)
    return out


def tokenize(line, patterns, scopes=()):
    """Returns [(start, end, scopes)] for the matched pieces of `line`."""
    tokens = []
    pos = 0
    rules = expand(patterns)
    while pos <= len(line):
        best = None
        for rule in rules:
            regex = rule.get("match", rule.get("begin"))
            m = re.compile(regex).search(line, pos)
            if m and (best is None or m.start() < best[1].start()):
                best = (rule, m)
        if best is None or best[1].end() == best[1].start() == len(line):
            break
        rule, m = best
        name = (rule["name"],) if "name" in rule else ()
        if "match" in rule:
            tokens.append((m.start(), m.end(), scopes + name))
            for group, capture in rule.get("captures", {}).items():
                if m.group(int(group)) is not None:
                    tokens.append((m.start(int(group)), m.end(int(group)), scopes + name + (capture["name"],)))
            pos = max(m.end(), pos + 1)
            continue
        # a begin/end region on this line
        inner_start = m.end()
        for group, capture in rule.get("beginCaptures", {}).items():
            tokens.append((m.start(int(group)), m.end(int(group)), scopes + name + (capture["name"],)))
        end_re = re.compile(rule["end"])
        p = inner_start
        inner_rules = rule.get("patterns", [])
        while True:
            e = end_re.search(line, p)
            inner = tokenize_one(line, inner_rules, p, scopes + name)
            if inner and (e is None or inner[0][0] < e.start()):
                tokens += inner[1]
                p = inner[0][1]
                continue
            end = e.end() if e else len(line)
            tokens.append((m.start(), end, scopes + name))
            pos = max(end, pos + 1)
            break
    return tokens


def tokenize_one(line, patterns, pos, scopes):
    """The earliest single match of `patterns` at or after pos: (start, end), tokens."""
    best = None
    for rule in expand(patterns):
        m = re.compile(rule["match"]).search(line, pos) if "match" in rule else None
        if m and m.end() > m.start() and (best is None or m.start() < best[1].start()):
            best = (rule, m)
    if best is None:
        return None
    rule, m = best
    return (m.start(), m.end()), [(m.start(), m.end(), scopes + ((rule["name"],) if "name" in rule else ()))]


def scopes_at(tokens, start, end):
    """Every scope of the tokens covering [start, end)."""
    found = set()
    for s, e, names in tokens:
        if s <= start and end <= e:
            found.update(names)
    return found


def expect(line, text, prefix, occurrence=0, where=""):
    tokens = tokenize(line, grammar["patterns"])
    start = -1
    for _ in range(occurrence + 1):
        start = line.index(text, start + 1)
    got = scopes_at(tokens, start, start + len(text))
    if not any(scope.startswith(prefix) for scope in got):
        failures.append(f"{where}{line!r}: {text!r} has {sorted(got)}, expected {prefix}*")
    return got


# 1. Every keyword of the parser is a keyword (or storage type) alone and in context.
keywords = re.findall(r'TAO_PEGTL_KEYWORD\("([a-z]+)"\)', open("dsl/include/fhr/dsl/grammar.hpp").read())
keywords = [k for k in keywords if k[0].islower() and k not in ("b",)]
assert len(keywords) >= 34, keywords
for keyword in keywords:
    got = expect(keyword + " x", keyword, "")
    if not any(s.startswith(("keyword.", "storage.type")) for s in got):
        failures.append(f"keyword {keyword!r} is scoped {sorted(got)}")

# 2. Constructs.
expect('budget cuda:0 40 GiB  # note', "# note", "comment.line")
expect('budget cuda:0 40 GiB', "cuda:0", "constant.language.location")
expect('budget pinned-host 1.5 GiB', "pinned-host", "constant.language.location")
expect('budget pinned-host 1.5 GiB', "1.5 GiB", "constant.numeric.size")
expect('value w 1_000_000 B at pageable', "1_000_000 B", "constant.numeric.size")
expect('ensure rk[i] at cuda:{level + 1}', "cuda:", "constant.language.location")
expect('ensure rk[i] at cuda:{level + 1}', "level", "variable.other")
expect('ensure rk[0..8] at cuda:0', "..", "keyword.operator.range")
expect('ensure rk[*] at cuda:0', "*", "keyword.operator")
expect('plan "level-{level}\\n" { }', "{level}", "variable.other.interpolated")
expect('plan "level-{level}\\n" { }', "\\n", "constant.character.escape")
expect('plan "level-{level}\\n" { }', '"level', "string.quoted.double")
expect('@line 42', "@line", "keyword.control.directive")
expect('const limb = 8 * 65536', "=", "keyword.operator.assignment")
# keywords inside comments and strings are not keywords
for line, word in (('# ensure the plan runs', "ensure"), ('plan "ensure at cuda:0" { }', "ensure")):
    got = scopes_at(tokenize(line, grammar["patterns"]), line.index(word), line.index(word) + len(word))
    if any(s.startswith("keyword.") for s in got):
        failures.append(f"{line!r}: {word!r} inside a comment or string is scoped {sorted(got)}")

# 3. Every example: each word outside comments and strings is scoped, keywords as keywords.
checked = 0
for path in sorted(glob.glob("examples/*.fhr")):
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        tokens = tokenize(line, grammar["patterns"])
        for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_-]*|[0-9]", line):
            got = scopes_at(tokens, m.start(), m.end())
            where = f"{path}:{number}: "
            if not got:
                failures.append(f"{where}{m.group()!r} has no scope")
            inside = any(s.startswith(("comment.", "string.")) for s in got)
            if m.group() in keywords and not inside and not any(
                    s.startswith(("keyword.", "storage.type")) for s in got):
                failures.append(f"{where}keyword {m.group()!r} is scoped {sorted(got)}")
            checked += 1
        if "#" in line and '"' not in line.split("#")[0]:
            comment = line[line.index("#"):]
            expect(line, comment, "comment.line", where=f"{path}:{number}: ")
assert checked > 500, checked

for failure in failures:
    print("FAIL", failure)
print(f"editor grammar: {len(keywords)} keywords, {checked} words of the examples, {len(failures)} failures")
sys.exit(1 if failures else 0)
