#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
! grep -q "teh" README.md && grep -q "Install the package" README.md && grep -q "Run the tests" README.md
