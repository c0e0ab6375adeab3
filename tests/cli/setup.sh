# Sourced by the CLI test scripts: strict mode, the tool under test as an
# absolute path ($1), a scratch folder removed at exit, fail(), no colour.
set -euo pipefail
tool=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
export NO_COLOR=1
