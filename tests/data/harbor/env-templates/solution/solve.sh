#!/bin/sh
echo "$GREETING$SUFFIX" > /work/answer.txt
