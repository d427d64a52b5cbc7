#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
grep -q "headers\.py" "$ANSWER" && ! grep -q "client\.py\|util\.py" "$ANSWER"
