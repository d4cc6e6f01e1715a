#!/bin/sh
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8099/answer").read().decode().strip())' > /app/answer.txt
