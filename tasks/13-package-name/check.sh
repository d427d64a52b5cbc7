#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
grep -q "tally-web" "$ANSWER"
