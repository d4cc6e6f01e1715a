// A task's MCP servers (tasks/mcp_servers.h) in the form each harness reads
// them. A profile names its form with "mcp_format" and places the result
// with the {mcp_servers} placeholder:
//   claude    Claude Code's --mcp-config JSON: {"mcpServers": {NAME: {"type":
//             "stdio", "command", "args"} | {"type": "http"|"sse", "url"}}}
//   codex     Codex's config.toml tables: [mcp_servers.NAME] command/args or
//             url (streamable HTTP; Codex has no SSE client: refused)
//   gemini    the object under settings.json "mcpServers" (Gemini CLI and
//             Qwen Code): {NAME: {"command", "args"} | {"url"} (SSE) |
//             {"httpUrl"} (streamable HTTP)}
//   opencode  the object under opencode's "mcp": {NAME: {"type": "local",
//             "command": [cmd, args...]} | {"type": "remote", "url"}}
//   openclaw  the object under OpenClaw's "mcp.servers": {NAME: {"command",
//             "args"} | {"url", "transport": "sse"|"streamable-http"}}
// With no servers each form is empty ({} for the JSON objects, nothing for
// codex), so a profile's config is valid either way.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tasks/mcp_servers.h"

namespace forge::launch {

// BadConfig naming the format when it is unknown; InvalidArgument naming the server when
// the harness cannot speak its transport.
Result<std::string> RenderMcpServers(const std::string& format, const std::vector<tasks::McpServer>& servers);

// Whether format is one RenderMcpServers knows.
bool KnownMcpFormat(const std::string& format);

}  // namespace forge::launch
