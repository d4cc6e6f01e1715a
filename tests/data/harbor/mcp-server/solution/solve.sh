#!/bin/sh
# What an MCP client does: initialize, then call the tool, over streamable HTTP.
url=http://mcp-server:8000/cgi-bin/mcp
post() { wget -q -O - --header 'Content-Type: application/json' --header 'Accept: application/json, text/event-stream' --post-data "$1" "$url"; }
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"oracle","version":"1"}}}' >/dev/null
post '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret_code","arguments":{}}}' |
  sed -n 's/.*"text":"\([^"]*\)".*/\1/p' > /work/answer.txt
