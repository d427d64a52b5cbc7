#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
! grep -q "def foo" main.py && grep -q "def bar" main.py && python3 -m unittest -q test_main 2>/dev/null
