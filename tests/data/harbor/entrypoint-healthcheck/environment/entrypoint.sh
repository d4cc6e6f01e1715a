#!/bin/sh
# As harbor-cookbook's dns-blacklisting: the entrypoint starts the task's
# service (here after a delay, as a real one takes time to listen) and
# makes /logs/verifier, then runs what it is given.
mkdir -p /srv/www && echo 42 > /srv/www/answer
(sleep 3; exec httpd -f -p 127.0.0.1:8099 -h /srv/www) &
mkdir -p /logs/verifier
chmod 777 /logs /logs/verifier
exec "$@"
