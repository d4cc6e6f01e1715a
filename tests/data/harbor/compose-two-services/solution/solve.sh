#!/bin/sh
wget -q -O /work/answer.txt http://api:8000/secret.txt
