#!/bin/sh
# apt-get drops to the _apt user (setgroups, setuid) and dpkg chowns what it
# unpacks: both need the capabilities `docker run` gives root.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
apt-get update -qq && apt-get install -y -qq forge-corpus-check >/dev/null || exit 1
touch /tmp/owned && chown nobody /tmp/owned || exit 1
forge-corpus-check && echo 1 > /logs/verifier/reward.txt
