#!/usr/bin/env bash
# The pictures in a real browser (docs/pictures.md): renders the HTML page
# of every example in headless Chromium and checks that
#   - the page's own check passed: every chart rectangle, budget and peak
#     line, failure mark and table row exists with the size the embedded
#     data gives it (the page writes data-fhr-check="ok" and the count of
#     elements it checked into the DOM), and
#   - the browser logged no console message at all (the page logs only
#     its problems; an exception would be logged too),
# then takes a screenshot of each page, and checks the SVG output is
# well-formed XML.
#
#   render_examples.sh path/to/fhr-plan [OUT_DIR]
#
# Installs nothing: scripts/install-deps.sh installs chromium. Without it
# the test is skipped (exit 77) unless FHR_REQUIRE_CHROMIUM=1.
set -euo pipefail
tool=$1
out=${2:-$(mktemp -d)}
mkdir -p "$out"
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "render_examples: chromium is not installed (bash scripts/install-deps.sh --browser)"
  [ "${FHR_REQUIRE_CHROMIUM:-0}" = 1 ] && exit 1
  exit 77
fi

browse() { # browse PROFILE_DIR ARGS... : one headless run, nothing from the network
  local profile=$1; shift
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
}

status=0
for example in examples/*.fhr; do
  name=$(basename "$example" .fhr)
  page="$out/$name.html"
  set +e
  "$tool" explain --format html -o "$page" "$example"
  code=$?
  set -e
  if [ "$code" -gt 1 ] || [ ! -s "$page" ]; then
    echo "FAIL $name: explain --format html exited $code"; status=1; continue
  fi
  if grep -Eq '<(script|link|img)[^>]* (src|href)=' "$page"; then
    echo "FAIL $name: the page loads something from outside"; status=1
  fi
  profile=$(mktemp -d)
  browse "$profile" --dump-dom "file://$(realpath "$page")" >"$out/$name.dom" 2>"$out/$name.log" || true
  rm -rf "$profile"
  if ! grep -q 'data-fhr-check="ok"' "$out/$name.dom"; then
    echo "FAIL $name: the page's check did not pass:"; grep -o 'fhr-check: [^<]*' "$out/$name.dom" | head -20
    status=1
  fi
  checked=$(grep -o 'fhr-check: ok, [0-9]* elements checked' "$out/$name.dom" | grep -o '[0-9][0-9]*' || echo 0)
  if [ "${checked:-0}" -lt 10 ]; then
    echo "FAIL $name: only ${checked:-0} elements checked"; status=1
  fi
  if grep -q ':CONSOLE' "$out/$name.log"; then
    echo "FAIL $name: console messages:"; grep ':CONSOLE' "$out/$name.log"; status=1
  fi
  profile=$(mktemp -d)
  browse "$profile" --hide-scrollbars --window-size=1280,1000 --screenshot="$out/$name.png" \
    "file://$(realpath "$page")" >/dev/null 2>"$out/$name.screenshot.log" || true
  rm -rf "$profile"
  if [ ! -s "$out/$name.png" ] || [ "$(stat -c %s "$out/$name.png")" -lt 10000 ]; then
    echo "FAIL $name: no screenshot"; status=1
  fi
  svg="$out/$name.svg"
  set +e
  "$tool" explain --format svg -o "$svg" "$example"
  set -e
  if ! python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$svg"; then
    echo "FAIL $name: the SVG is not well-formed"; status=1
  fi
  [ $status = 0 ] && echo "ok $name: $checked elements checked, screenshot $out/$name.png"
done
exit $status
