#!/bin/sh
# A reference solution: what a passing run does (tested by `cargo test -p xtask`).
sed -i "s/foo/bar/g" main.py; echo "Renamed." > "$ANSWER"
