#!/bin/sh
cp /etc/shared-marker /work/answer.txt
