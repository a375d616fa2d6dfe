#!/usr/bin/env bash
# Installs what Organ Workbench needs to build, test and run on Debian 12 (bookworm).
# Every dependency is a Debian package; nothing is downloaded from anywhere else.
set -euo pipefail

packages=(
    build-essential cmake ninja-build ccache pkg-config clang
    qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqcustomplot-dev libgl-dev
    libeigen3-dev nlohmann-json3-dev libyaml-cpp-dev
    qt6-httpserver-dev qt6-websockets-dev
    parallel shellcheck
    xvfb xauth
    python3 python3-jsonschema
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "setup: all ${#packages[@]} packages are installed"
fi
