#!/bin/sh
# A reference solution: what a passing run does (tested by `cargo test -p xtask`).
sed -i "s/teh/the/" README.md; echo "Fixed." > "$ANSWER"
