#include "tasks/mcp_servers.h"

#include <set>

namespace forge::tasks {

using records::Json;

Result<McpServer> McpServerFromJson(const Json& entry, const std::string& field) {
  auto error = [&](const std::string& key, const std::string& message) {
    return Status::InvalidData(field + (key.empty() ? "" : "." + key) + ": " + message);
  };
  if (!entry.is_object()) return error("", "expected a table with name, transport and url or command");
  McpServer server;
  for (const auto& [key, value] : entry.items()) {
    if (key == "args") {
      if (!value.is_array()) return error(key, "expected a list of strings");
      for (const auto& arg : value) {
        if (!arg.is_string()) return error(key, "expected a list of strings");
        server.args.push_back(arg.get<std::string>());
      }
      continue;
    }
    if (key != "name" && key != "transport" && key != "url" && key != "command") {
      return error(key, "unknown key (Harbor's MCP server has name, transport, url, command, args)");
    }
    if (!value.is_string()) return error(key, "expected a string");
    std::string text = value.get<std::string>();
    if (key == "name") server.name = text;
    if (key == "transport") server.transport = text;
    if (key == "url") server.url = text;
    if (key == "command") server.command = text;
  }
  if (server.name.empty()) return error("name", "missing");
  for (char c : server.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return error("name", "\"" + server.name + "\": only letters, digits, - and _ (harnesses put it in tool names)");
    }
  }
  if (server.transport == "sse" || server.transport == "streamable-http") {
    if (server.url.empty()) return error("url", "required for transport \"" + server.transport + "\"");
    if (server.url.rfind("http://", 0) != 0 && server.url.rfind("https://", 0) != 0) {
      return error("url", "\"" + server.url + "\": expected an http:// or https:// URL");
    }
  } else if (server.transport == "stdio") {
    if (server.command.empty()) return error("command", "required for transport \"stdio\"");
  } else {
    return error("transport", "\"" + server.transport + "\": expected sse, streamable-http or stdio");
  }
  return server;
}

Result<std::vector<McpServer>> McpServersFromJson(const Json* list, const std::string& field) {
  std::vector<McpServer> servers;
  if (list == nullptr || list->is_null()) return servers;
  if (!list->is_array()) return Status::InvalidData(field + ": expected a list of tables");
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    auto server = McpServerFromJson((*list)[i], at);
    if (!server.ok()) return server.status();
    if (!names.insert(server->name).second) {
      return Status::InvalidData(at + ".name: \"" + server->name + "\" is given twice");
    }
    servers.push_back(std::move(*server));
  }
  return servers;
}

}  // namespace forge::tasks
