#!/bin/sh
wget -q -O /work/answer.txt http://web:8080/id
