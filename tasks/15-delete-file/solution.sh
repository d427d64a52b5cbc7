#!/bin/sh
# A reference solution: what a passing run does (tested by `cargo test -p xtask`).
rm old.log; echo "Deleted." > "$ANSWER"
