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

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tasks/mcp_servers.h"

namespace forge::launch {

enum class McpFormat { kClaude, kCodex, kGemini, kOpencode, kOpenclaw };

// The format a profile's "mcp_format" names; nullopt for an unknown name.
std::optional<McpFormat> McpFormatOf(std::string_view name);
// "claude, codex, gemini, opencode, openclaw", for messages.
std::string McpFormatNames();

// InvalidArgument naming the server when the harness cannot speak its transport.
Result<std::string> RenderMcpServers(McpFormat format, const std::vector<tasks::McpServer>& servers);

}  // namespace forge::launch
