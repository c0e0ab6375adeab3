#!/usr/bin/env bash
# Every --help and every command the docs show, run: help texts name only
# options the verb accepts, the documented command lines work, and the
# known false claims stay fixed.
# usage: help_test.sh path/to/fhr-plan   (from the repository root)
source "$(dirname "$0")/setup.sh" "$1"

verbs=$("$tool" --help | awk '/^SUBCOMMANDS:/{on=1; next} /^  Type/{on=0} on && NF {print $1}')
[ "$(echo "$verbs" | wc -w)" -ge 9 ] || fail "top-level help lists too few verbs: $verbs"
"$tool" --help | grep -q -- '--color' && fail "top-level --help lists --color, which no verb takes"

checked=0
for verb in $verbs; do
  "$tool" "$verb" --help >"$work/help" || fail "$verb --help exits $?"
  # Every option in the help is accepted by the verb (no "Unknown command line argument").
  for option in $(grep -oE '^  +-{1,2}[A-Za-z][A-Za-z-]*' "$work/help" | tr -d ' '); do
    case $option in --help|--help-list|--version) continue ;; esac
    set +e; "$tool" "$verb" "$option" >/dev/null 2>"$work/err"; set -e
    if grep -q "Unknown command line argument '$option'" "$work/err"; then
      fail "$verb --help lists $option, which $verb rejects"
    fi
    checked=$((checked + 1))
  done
  # The man page and both completions list every option of the help.
  "$tool" man >"$work/man"
  "$tool" completion bash >"$work/bash"
  "$tool" completion zsh >"$work/zsh"
  for option in $(grep -oE '^  +-{1,2}[A-Za-z][A-Za-z-]*' "$work/help" | tr -d ' ' | sed 's/^-*//'); do
    case $option in help-list) continue ;; esac
    grep -qF -- "$(echo "$option" | sed 's/-/\\-/g')" "$work/man" || fail "man page lacks $verb $option"
    grep -qE -- "-{1,2}$option\b" "$work/bash" || fail "bash completion lacks $verb $option"
    grep -qE -- "-{1,2}$option\b" "$work/zsh" || fail "zsh completion lacks $verb $option"
  done
done
[ $checked -ge 20 ] || fail "only $checked options checked"

# Known false claims, fixed.
"$tool" compile --help | grep -q 'compile \[options\] <file.fhr | - >$' || fail "compile --help claims several inputs"
"$tool" disasm --help | grep -q '<module.fhrb | - >' || fail "disasm --help does not name a module"
set +e; "$tool" compile examples/inference.fhr examples/bootstrapping.fhr -o "$work/x.fhrb" 2>"$work/err"; code=$?; set -e
[ $code = 2 ] && grep -q 'exactly one input' "$work/err" || fail "compile with two inputs: exit $code"
set +e; "$tool" chek examples/inference.fhr 2>"$work/err"; code=$?; set -e
[ $code = 2 ] && grep -q "did you mean 'check'" "$work/err" || fail "a misspelt verb: exit $code, $(cat "$work/err")"

# Every `fhr-plan ...` line of a code block in the README and docs runs
# (placeholder files replaced by real ones) without a usage error.
cp examples/inference.fhr "$work/plan.fhr"
mkdir -p "$work/plans" && cp examples/*.fhr "$work/plans/"
cp -r examples "$work/"
# What calibrate would write (a profile with round figures).
cp tests/golden/inputs/diff/round-links.json "$work/links.json"
ran=0
while IFS= read -r line; do
  command=${line#\$ }
  command=${command%%#*}
  # Synopsis lines ([--format text|json] FILE...) are checked against the help instead.
  if [[ $command == *"["* || $command == *"..."* ]]; then
    verb=$(echo "$command" | awk '{print $2}')
    for option in $(echo "$command" | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
      "$tool" "$verb" --help | grep -qE -- "^ +$option\b" || fail "docs synopsis names $verb $option, not in its help"
    done
    continue
  fi
  # calibrate measures for a minute (on a GPU, or on the simulated clock):
  # the golden case calibrate-sim runs it with small sizes instead.
  [[ $command == *" calibrate "* ]] && continue
  set +e
  (cd "$work" && eval "\"$tool\" ${command#fhr-plan }" >/dev/null 2>"$work/err")
  code=$?
  set -e
  [ $code -le 1 ] || fail "documented command '$command' exits $code: $(cat "$work/err")"
  ran=$((ran + 1))
done < <(awk '/^```/{block=!block; next} block && /^(\$ )?fhr-plan /' README.md docs/explain.md docs/runtime.md docs/language.md docs/explain-json.md docs/testing.md docs/ci.md docs/pictures.md docs/links.md)
[ $ran -ge 8 ] || fail "only $ran documented commands ran"
echo "help_test: ok ($checked options, $ran documented commands)"
