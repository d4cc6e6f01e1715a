#!/bin/sh
echo 42 > answer.txt
