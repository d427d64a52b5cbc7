#!/bin/sh
# A reference solution: what a passing run does (tested by `cargo test -p xtask`).
sed -i "s/Hello/Welcome/" app.py; echo "Done." > "$ANSWER"
