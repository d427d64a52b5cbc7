#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
! test -e old.log && test -f app.log && test -f README.md
