#!/bin/sh
set -e
mkdir -p /work
seq 1 100 | awk '{ s += $1 } END { print s }' > /work/sum.txt
