#!/bin/sh
echo 0 > /logs/verifier/reward.txt
