#!/usr/bin/env bash
# `cmake --install` puts fhr-plan on PATH with its man page, bash and zsh
# completions, the docs and the editor grammar; the installed completion
# completes verbs, options and option values.
# usage: install_test.sh BUILD_DIR   (from the repository root)
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
export PATH="$prefix/bin:$PATH"
[ "$(command -v fhr-plan)" = "$prefix/bin/fhr-plan" ] || fail "fhr-plan is not on PATH after install"
fhr-plan --version | grep -q '^fhr-plan [0-9]' || fail "installed fhr-plan --version"
NO_COLOR=1 fhr-plan check examples/inference.fhr || fail "installed fhr-plan check"

man_page=$prefix/share/man/man1/fhr-plan.1
[ -s "$man_page" ] || fail "no man page"
grep -q '^\.TH FHR\\-PLAN 1' "$man_page" || fail "man page header"
for verb in explain check compile disasm run fmt explain-code completion; do
  grep -q "^\.SS $(echo $verb | sed 's/-/\\\\-/g')\$" "$man_page" || fail "man page lacks $verb"
done
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$man_page" 2>"$prefix/groff.err"
  [ ! -s "$prefix/groff.err" ] || fail "groff warns: $(cat "$prefix/groff.err")"
fi
for doc in language.md diagnostics.md explain.md explain-json.md semantics.md; do
  [ -s "$prefix/share/doc/fhr/$doc" ] || fail "docs/$doc not installed"
done
[ -s "$prefix/share/fhr/editors/fhr.tmLanguage.json" ] || fail "editor grammar not installed"
[ -s "$prefix/share/zsh/site-functions/_fhr-plan" ] || fail "zsh completion not installed"
if command -v zsh >/dev/null; then zsh -n "$prefix/share/zsh/site-functions/_fhr-plan" || fail "zsh completion"; fi

completion=$prefix/share/bash-completion/completions/fhr-plan
bash -n "$completion" || fail "bash completion does not parse"
complete_words() { # words... -> the completions of the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fhr_plan; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$completion" "$@"
}
[ "$(complete_words fhr-plan ch)" = check ] || fail "verb completion: $(complete_words fhr-plan ch)"
# Completions are captured before grep reads them: grep -q stops at its
# match, and a writer still writing would die of SIGPIPE (pipefail: a
# failure that depends on timing).
options=$(complete_words fhr-plan check --for)
grep -qx -- '--format=' <<<"$options" || fail "option completion: $options"
[ "$(complete_words fhr-plan check --format s)" = sarif ] || fail "value completion"
[ "$(complete_words fhr-plan explain --format=j)" = json ] || fail "value completion after ="
[ "$(complete_words fhr-plan completion z)" = zsh ] || fail "argument completion"
[ "$(complete_words fhr-plan check -Werror=b)" = -Werror=bare-size ] || fail "-W completion: $(complete_words fhr-plan check -Werror=b)"
files=$(complete_words fhr-plan check examples/infe)
grep -qx examples/infeasible.fhr <<<"$files" || fail "file completion: $files"
echo "install_test: ok"
