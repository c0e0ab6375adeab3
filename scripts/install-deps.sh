#!/usr/bin/env bash
# Installs what fhr needs on a fresh Debian 12 machine (as root, or with sudo).
# Pass --fuzz to also install clang and its sanitizer runtimes for libFuzzer,
# --browser to install Chromium for the pictures' browser test, --lint to
# install clang-format and clang-tidy.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config tao-pegtl-dev llvm-14-dev nlohmann-json3-dev doctest-dev
          libxxhash-dev zlib1g-dev libtinfo-dev libxml2-dev libedit-dev libffi-dev
          python3-dev pybind11-dev libdlpack-dev python3-numpy python3-pytest coinor-libcbc-dev)
for option in "$@"; do
  case "$option" in
  --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
  --browser) packages+=(chromium) ;;
  --lint) packages+=(clang-format-14 clang-tidy-14) ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
