#!/bin/sh
wget -q -O - --post-data 'What is your favorite color?' http://user-server:8000/cgi-bin/chat |
  sed -n 's/.*color is \([a-z]*\)\..*/\1/p' > /work/answer.txt
