#!/usr/bin/env bash
# Regenerates crates/parser/src/grammar.rs (and its fingerprint) from
# crates/parser/src/grammar.lalrpop after a change to the grammar; commit
# the three files together. Ordinary builds do not run lalrpop.
set -euo pipefail
cd "$(dirname "$0")/.."
touch crates/parser/src/grammar.lalrpop
cargo build -p tirc-parser --features regenerate
git status --short -- crates/parser/src
