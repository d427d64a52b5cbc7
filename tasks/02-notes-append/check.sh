#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
test "$(tail -n 1 notes.md)" = "- buy milk" && grep -qx -- "- call the bank" notes.md && grep -qx -- "# Notes" notes.md
