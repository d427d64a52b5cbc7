#!/bin/sh
# A reference solution: what a passing run does (tested by `cargo test -p xtask`).
sed -i "s/MAX_RETRIES = 3/MAX_RETRIES = 5/" settings.py; echo "Done." > "$ANSWER"
