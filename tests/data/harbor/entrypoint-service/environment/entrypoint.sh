#!/bin/sh
# Starts the task's service, names it in /etc/hosts, then runs what it is given.
mkdir -p /srv/www && echo 42 > /srv/www/answer
echo "127.0.0.1 answers.local" >> /etc/hosts
(sleep 2; httpd -p 127.0.0.1:8099 -h /srv/www) &
exec "$@"
