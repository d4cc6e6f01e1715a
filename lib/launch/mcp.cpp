#include "launch/mcp.h"

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

namespace forge::launch {
namespace {

using Json = nlohmann::json;

Json StdioCommand(const tasks::McpServer& s) { return {{"command", s.command}, {"args", s.args}}; }

Json ClaudeEntry(const tasks::McpServer& s) {
  if (s.transport == "stdio") {
    Json j = StdioCommand(s);
    j["type"] = "stdio";
    return j;
  }
  return {{"type", s.transport == "sse" ? "sse" : "http"}, {"url", s.url}};
}

Json GeminiEntry(const tasks::McpServer& s) {
  if (s.transport == "stdio") return StdioCommand(s);
  return {{s.transport == "sse" ? "url" : "httpUrl", s.url}};
}

Json OpencodeEntry(const tasks::McpServer& s) {
  if (s.transport != "stdio") return {{"type", "remote"}, {"url", s.url}};
  Json command = Json::array({s.command});
  for (const auto& arg : s.args) command.push_back(arg);
  return {{"type", "local"}, {"command", command}};
}

Json OpenclawEntry(const tasks::McpServer& s) {
  if (s.transport == "stdio") return StdioCommand(s);
  return {{"url", s.url}, {"transport", s.transport}};
}

// TOML basic strings accept JSON's escapes for everything JSON escapes.
std::string TomlString(const std::string& text) { return Json(text).dump(); }

Result<std::string> CodexTables(const std::vector<tasks::McpServer>& servers) {
  std::string out;
  for (const auto& s : servers) {
    out += "\n[mcp_servers." + TomlString(s.name) + "]\n";
    if (s.transport == "sse") {
      return Status::InvalidArgument("MCP server " + s.name + ": Codex speaks stdio and streamable-http MCP servers, not sse");
    }
    if (s.transport == "stdio") {
      out += "command = " + TomlString(s.command) + "\nargs = [";
      for (size_t i = 0; i < s.args.size(); ++i) out += (i ? ", " : "") + TomlString(s.args[i]);
      out += "]\n";
    } else {
      out += "url = " + TomlString(s.url) + "\n";
    }
  }
  return out;
}

}  // namespace

constexpr EnumNames<McpFormat, 5> kMcpFormats = {{{McpFormat::kClaude, "claude"},
                                                  {McpFormat::kCodex, "codex"},
                                                  {McpFormat::kGemini, "gemini"},
                                                  {McpFormat::kOpencode, "opencode"},
                                                  {McpFormat::kOpenclaw, "openclaw"}}};

std::optional<McpFormat> McpFormatOf(std::string_view name) { return ValueOf(kMcpFormats, name); }

std::string McpFormatNames() { return NameList(kMcpFormats); }

Result<std::string> RenderMcpServers(McpFormat format, const std::vector<tasks::McpServer>& servers) {
  if (format == McpFormat::kCodex) return CodexTables(servers);
  Json object = Json::object();
  for (const auto& s : servers) {
    switch (format) {
      case McpFormat::kClaude: object[s.name] = ClaudeEntry(s); break;
      case McpFormat::kGemini: object[s.name] = GeminiEntry(s); break;
      case McpFormat::kOpencode: object[s.name] = OpencodeEntry(s); break;
      case McpFormat::kOpenclaw: object[s.name] = OpenclawEntry(s); break;
      case McpFormat::kCodex: break;
    }
  }
  if (format == McpFormat::kClaude) return Json{{"mcpServers", object}}.dump();
  return object.dump();
}

}  // namespace forge::launch
