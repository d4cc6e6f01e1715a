#!/bin/sh
# The task's own service, started before the agent: the tests query it.
mkdir -p /srv/www /logs/verifier
echo 42 > /srv/www/answer
echo "the entrypoint ran" > /logs/verifier/entrypoint.txt
python3 -m http.server 8099 --bind 127.0.0.1 --directory /srv/www >/dev/null 2>&1 &
exec "$@"
