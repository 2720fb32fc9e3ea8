#!/usr/bin/env bash
# Rewrites every kind of expected output at once after a reviewed change:
# insta snapshots (tests/snapshots), the example goldens (golden/), and the
# per-pass files (tests/lower/<pass>/*.expected.tir). Read `git diff`
# afterwards as you would review code. CI never blesses (INSTA_UPDATE=no,
# TIRC_BLESS unset).
set -euo pipefail
cd "$(dirname "$0")/.."
TIRC_BLESS=1 INSTA_UPDATE=always cargo test --workspace "$@"
git status --short -- tests/snapshots golden tests/lower
