#!/bin/sh
# No retry: the service must be listening when the harness starts.
wget -q -O /app/answer.txt http://127.0.0.1:8099/answer
