#!/bin/sh
cat /app/hello.txt /app/world.txt > /app/answer.txt
