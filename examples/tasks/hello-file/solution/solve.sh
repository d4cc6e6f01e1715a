#!/bin/sh
set -e
mkdir -p /work
echo hello > /work/hello.txt
