#!/bin/sh
mkdir -p /work && wget -q -O /work/answer.txt http://answers.local:8099/answer
