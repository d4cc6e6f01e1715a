// A task's MCP servers (Harbor's [[environment.mcp_servers]]): the tool
// servers the harness is told about. forge-launch writes them into each
// MCP-speaking harness's own configuration (launch/mcp.h).
//
// Harbor's fields: name; transport "sse" (the default), "streamable-http" or
// "stdio"; url (sse, streamable-http); command and args (stdio). A URL may
// name a compose service (http://mcp-server:8000/mcp): in a pod every
// service name resolves to 127.0.0.1. A stdio command runs where the
// harness runs, in the sandbox.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"

namespace forge::tasks {

struct McpServer {
  std::string name;
  std::string transport = "sse";
  std::string url;
  std::string command;
  std::vector<std::string> args;
};

// One entry, checked as Harbor checks it; errors name `field` and the key
// ("environment.mcp_servers[0].url: required for transport \"sse\"").
Result<McpServer> McpServerFromJson(const records::Json& entry, const std::string& field);

// The whole list (absent or null: none); names must be unique.
Result<std::vector<McpServer>> McpServersFromJson(const records::Json* list, const std::string& field);

}  // namespace forge::tasks
