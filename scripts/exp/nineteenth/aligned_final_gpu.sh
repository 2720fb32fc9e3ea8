#!/usr/bin/env bash
# Nineteenth stop, the final binary: `align_input_rows` with its count of
# thread loops fixed and runs that start anywhere in a row left alone.
# step4 and step6_async at 1000x1100x999 (no copy now) beside their
# multiple, then the issue-12 table for step5 and step6.
T=${T:-./target/release/tirc}
SHAPES="1000,1100,999 992,1088,992" bash scripts/boundary_bench.sh "$T" step4 step6_async
bash scripts/boundary_bench.sh "$T" step5 step6 | tail -n +2
