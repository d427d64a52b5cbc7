#!/bin/sh
# Runs in the project copy after the agent; $ANSWER is the file holding its final reply.
. "$(dirname "$0")/../lib/answer.sh"
answer_is 13
