#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
grep -q "Welcome" app.py && ! grep -q "Hello" app.py && python3 app.py | grep -q "Welcome, Ada"
