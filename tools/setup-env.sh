#!/usr/bin/env bash
# Prepare a new machine: Debian packages from bindep.txt (when root), then a
# virtualenv in .venv with the project and its test requirements.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v dpkg-query >/dev/null; then
    wanted=$(sed -e 's/#.*//' bindep.txt | awk 'NF && /platform:dpkg/ {print $1}')
    missing=()
    for pkg in $wanted; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" -eq 0 ]; then
            echo "setup: installing Debian packages: ${missing[*]}"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        else
            echo "setup: missing Debian packages (run as root to install): ${missing[*]}" >&2
        fi
    fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(cat setup.cfg pyproject.toml | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
    .venv/bin/pip install -q --upgrade pip wheel
    .venv/bin/pip install -q -e '.[test,server,agent]'
    rm -f .venv/.installed-*
    touch "$stamp"
fi
