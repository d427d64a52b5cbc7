#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
grep -qx "MAX_RETRIES = 5" settings.py && grep -qx "TIMEOUT = 30" settings.py && ! grep -q "MAX_RETRIES = 3" settings.py
