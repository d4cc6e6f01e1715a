#include "tasks/compose.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>

// GCC 12 at -O2 warns "may be used uninitialized" inside yaml-cpp's own
// iterator proxy (impl.h, Node::Type) when a map is iterated: a false
// positive in the library's header, silenced for it alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop

namespace forge::tasks {
namespace {

namespace fs = std::filesystem;
using Json = records::Json;

// Keys read for a companion service; "main" takes only kMainKeys.
const std::set<std::string> kServiceKeys = {"image", "build", "command", "entrypoint", "environment",
                                            "working_dir", "user", "depends_on", "healthcheck",
                                            "volumes", "expose"};
const std::set<std::string> kMainKeys = {"depends_on", "environment", "volumes", "expose", "healthcheck"};

// Why a key is refused, when there is more to say than "not supported".
std::string RefusalReason(const std::string& key, bool main) {
  if (key == "ports") return "a pod's services share one network namespace; reach them by service name instead";
  if (key == "networks" || key == "network_mode") {
    return "a pod's services share main's network namespace, and every service name resolves to 127.0.0.1; no "
           "other network is made";
  }
  if (main && (key == "build" || key == "image")) {
    return "main is built from environment/Dockerfile or [environment] docker_image";
  }
  if (main && (key == "command" || key == "entrypoint")) return "main runs the harness; its command is forge's";
  return "not supported by forge's pods";
}

// One reference in compose's interpolation syntax.
struct ComposeRef {
  std::string name;
  bool has_fallback = false;
  bool empty_counts = false;  // ":-": an empty value takes the fallback too
  std::string fallback;
  std::string spelling;  // as written
};

// Walks text: literal pieces ($$ as one $) to on_text, references to
// on_ref. InvalidData (no location) for a malformed reference.
Status WalkCompose(const std::string& text, const std::function<void(const std::string&)>& on_text,
                   const std::function<void(const ComposeRef&)>& on_ref) {
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      literal += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      literal += '$';
      ++i;
      continue;
    }
    ComposeRef ref;
    const size_t start = i;
    if (i + 1 < text.size() && text[i + 1] == '{') {
      const size_t close = text.find('}', i + 2);
      if (close == std::string::npos) return Status::InvalidData("unterminated ${ in \"" + text + "\"");
      const std::string inner = text.substr(i + 2, close - i - 2);
      const size_t op = inner.find_first_of(":-");
      ref.name = inner.substr(0, op);
      if (op != std::string::npos) {
        ref.empty_counts = inner[op] == ':';
        const size_t value_at = op + (ref.empty_counts ? 1 : 0);
        if (value_at >= inner.size() || inner[value_at] != '-') {
          return Status::InvalidData("unsupported substitution \"${" + inner + "}\" (only ${VAR:-default})");
        }
        ref.fallback = inner.substr(value_at + 1);
        ref.has_fallback = true;
      }
      i = close;
    } else {
      size_t end = i + 1;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
      ref.name = text.substr(i + 1, end - i - 1);
      i = end - 1;
    }
    if (ref.name.empty()) return Status::InvalidData("a $ with no variable name in \"" + text + "\"");
    ref.spelling = text.substr(start, i + 1 - start);
    if (!literal.empty()) on_text(literal);
    literal.clear();
    on_ref(ref);
  }
  if (!literal.empty()) on_text(literal);
  return Status::Ok();
}

// What a reference becomes, given its variable's value (nullopt: unset).
std::string ValueOf(const ComposeRef& ref, const std::optional<std::string>& value) {
  if (ref.has_fallback && (!value || (ref.empty_counts && value->empty()))) return ref.fallback;
  return value.value_or("");
}

class ComposeReader {
 public:
  ComposeReader(std::string path, const std::map<std::string, std::string>& vars, const Env& host,
                std::vector<std::string>* warnings)
      : path_(std::move(path)), dir_(fs::path(path_).parent_path()), vars_(vars), host_(host), warnings_(warnings) {}

  Result<Json> Read() {
    YAML::Node root;
    try {
      root = YAML::LoadFile(path_);
    } catch (const YAML::ParserException& e) {
      return Error(e.mark, "", e.msg);
    } catch (const YAML::Exception& e) {
      return Status::InvalidData(path_ + ": " + e.what());
    }
    if (!root.IsMap()) return Error(root.Mark(), "", "expected a mapping with a services key");
    Json pod = {{"compose_file", path_}, {"main", Json::object()}, {"services", Json::object()},
                {"volumes", Json::array()}};
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (key == "version" || key == "name" || key.rfind("x-", 0) == 0) continue;
      if (key == "volumes") {
        FORGE_RETURN_IF_ERROR(ReadVolumes(it->second, pod["volumes"]));
      } else if (key != "services") {
        return Error(it->first.Mark(), key, "not supported (" + RefusalReason(key, false) + ")");
      }
    }
    const YAML::Node services = root["services"];
    if (!services || !services.IsMap()) return Error(root.Mark(), "services", "missing, or not a mapping");
    for (auto it = services.begin(); it != services.end(); ++it) {
      names_.insert(it->first.Scalar());
    }
    for (auto it = services.begin(); it != services.end(); ++it) {
      const std::string name = it->first.Scalar();
      const bool main = name == kMainService;
      Json service = Json::object();
      FORGE_RETURN_IF_ERROR(ReadService(name, it->second, main, service));
      if (main) {
        pod["main"] = std::move(service);
      } else {
        pod["services"][name] = std::move(service);
      }
    }
    FORGE_RETURN_IF_ERROR(CheckVolumeNames(pod));
    return pod;
  }

 private:
  Status Error(const YAML::Mark& mark, const std::string& key, const std::string& message) const {
    std::string where = path_;
    if (mark.line >= 0) where += ":" + std::to_string(mark.line + 1);
    return Status::InvalidData(where + ": " + (key.empty() ? "" : key + ": ") + message);
  }

  void Warn(const YAML::Mark& mark, const std::string& message) {
    if (warnings_ != nullptr) warnings_->push_back(path_ + ":" + std::to_string(mark.line + 1) + ": " + message);
  }

  // A variable's value: Harbor's compose variables, then the host's.
  std::optional<std::string> Lookup(const std::string& name) const {
    if (auto it = vars_.find(name); it != vars_.end()) return it->second;
    return host_.Var(name);
  }

  void WarnUnset(const YAML::Node& node, const std::string& key, const ComposeRef& ref) {
    if (!ref.has_fallback && !Lookup(ref.name)) {
      Warn(node.Mark(), key + ": variable " + ref.name + " is not set; it becomes an empty string");
    }
  }

  // ${VAR}, ${VAR:-default}, ${VAR-default}, $VAR and $$, as compose does.
  Result<std::string> Interpolate(const YAML::Node& node, const std::string& key) {
    std::string out;
    Status walked = WalkCompose(
        node.Scalar(), [&](const std::string& text) { out += text; },
        [&](const ComposeRef& ref) {
          WarnUnset(node, key, ref);
          out += ValueOf(ref, Lookup(ref.name));
        });
    if (!walked.ok()) return Error(node.Mark(), key, walked.message());
    return out;
  }

  // An environment value as a template: Harbor's compose variables are put
  // in, the host's stay references, to be resolved when a container is made.
  Result<std::string> Template(const YAML::Node& node, const std::string& key) {
    std::string out;
    auto escaped = [&](const std::string& text) {
      for (char c : text) out += c == '$' ? std::string("$$") : std::string(1, c);
    };
    Status walked = WalkCompose(node.Scalar(), escaped, [&](const ComposeRef& ref) {
      WarnUnset(node, key, ref);
      if (auto it = vars_.find(ref.name); it != vars_.end()) {
        escaped(ValueOf(ref, it->second));
      } else {
        out += ref.spelling;
      }
    });
    if (!walked.ok()) return Error(node.Mark(), key, walked.message());
    return out;
  }

  Result<std::string> Scalar(const YAML::Node& node, const std::string& key) {
    if (!node.IsScalar()) return Error(node.Mark(), key, "expected a string");
    return Interpolate(node, key);
  }

  Result<Json> StringList(const YAML::Node& node, const std::string& key) {
    Json list = Json::array();
    if (node.IsScalar()) {
      auto text = Scalar(node, key);
      if (!text.ok()) return text.status();
      auto words = SplitComposeCommand(*text);
      if (!words.ok()) return Error(node.Mark(), key, words.status().message());
      for (auto& w : *words) list.push_back(w);
      return list;
    }
    if (!node.IsSequence()) return Error(node.Mark(), key, "expected a string or a list of strings");
    for (const auto& item : node) {
      auto text = Scalar(item, key);
      if (!text.ok()) return text.status();
      list.push_back(*text);
    }
    return list;
  }

  Status ReadVolumes(const YAML::Node& node, Json& out) {
    if (!node.IsMap()) return Error(node.Mark(), "volumes", "expected a mapping of volume names");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string name = it->first.Scalar();
      const YAML::Node& spec = it->second;
      if (!spec.IsNull() && !(spec.IsMap() && spec.size() == 0)) {
        return Error(spec.Mark(), "volumes." + name,
                     "volume options (driver, external, ...) are not supported: a pod volume is a fresh empty "
                     "directory shared by the services that mount it");
      }
      out.push_back(name);
      volume_names_.insert(name);
    }
    return Status::Ok();
  }

  Status ReadService(const std::string& name, const YAML::Node& node, bool main, Json& out) {
    const std::string prefix = "services." + name;
    if (!node.IsMap()) return Error(node.Mark(), prefix, "expected a mapping");
    const std::set<std::string>& allowed = main ? kMainKeys : kServiceKeys;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.Scalar();
      const std::string dotted = prefix + "." + key;
      const YAML::Node& value = it->second;
      if (key.rfind("x-", 0) == 0 || key == "expose") continue;
      if (allowed.count(key) == 0) {
        return Error(it->first.Mark(), dotted, "not supported (" + RefusalReason(key, main) + ")");
      }
      if (key == "image" || key == "working_dir" || key == "user") {
        auto text = Scalar(value, dotted);
        if (!text.ok()) return text.status();
        out[key] = *text;
      } else if (key == "build") {
        FORGE_RETURN_IF_ERROR(ReadBuild(value, dotted, out));
      } else if (key == "command" || key == "entrypoint") {
        auto list = StringList(value, dotted);
        if (!list.ok()) return list.status();
        out[key] = std::move(*list);
      } else if (key == "environment") {
        FORGE_RETURN_IF_ERROR(ReadEnvironment(value, dotted, out[key]));
      } else if (key == "depends_on") {
        FORGE_RETURN_IF_ERROR(ReadDependsOn(name, value, dotted, out[key]));
      } else if (key == "healthcheck") {
        FORGE_RETURN_IF_ERROR(ReadHealthcheck(value, dotted, out));
      } else if (key == "volumes") {
        FORGE_RETURN_IF_ERROR(ReadMounts(value, dotted, out[key]));
      }
    }
    if (!main && !out.contains("image") && !out.contains("build")) {
      return Error(node.Mark(), prefix, "needs an image or a build");
    }
    return Status::Ok();
  }

  Status ReadBuild(const YAML::Node& value, const std::string& key, Json& out) {
    YAML::Node context = value;
    if (value.IsMap()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string k = it->first.Scalar();
        if (k == "dockerfile" && it->second.IsScalar() && it->second.Scalar() == "Dockerfile") continue;
        if (k != "context") {
          return Error(it->first.Mark(), key + "." + k,
                       "not supported (forge builds the context's own Dockerfile, without build options)");
        }
      }
      context = value["context"];
      if (!context) return Error(value.Mark(), key, "needs a context");
    }
    auto text = Scalar(context, key);
    if (!text.ok()) return text.status();
    fs::path dir = *text;
    if (dir.is_relative()) dir = dir_ / dir;
    dir = dir.lexically_normal();
    std::error_code ec;
    if (!fs::is_regular_file(dir / "Dockerfile", ec)) {
      return Error(context.Mark(), key, (dir / "Dockerfile").string() + " does not exist");
    }
    out["build"] = dir.string();
    return Status::Ok();
  }

  // KEY with no value takes the host's when a container is made (null).
  Status ReadEnvironment(const YAML::Node& value, const std::string& key, Json& out) {
    out = Json::object();
    if (value.IsMap()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string name = it->first.Scalar();
        if (it->second.IsNull()) {
          out[name] = nullptr;
          continue;
        }
        if (!it->second.IsScalar()) return Error(it->second.Mark(), key + "." + name, "expected a string");
        auto text = Template(it->second, key + "." + name);
        if (!text.ok()) return text.status();
        out[name] = *text;
      }
      return Status::Ok();
    }
    if (!value.IsSequence()) return Error(value.Mark(), key, "expected a mapping or a list of KEY=VALUE");
    for (const auto& item : value) {
      if (!item.IsScalar()) return Error(item.Mark(), key, "expected a string");
      auto text = Template(item, key);
      if (!text.ok()) return text.status();
      const size_t eq = text->find('=');
      if (eq == std::string::npos) {
        out[*text] = nullptr;
      } else {
        out[text->substr(0, eq)] = text->substr(eq + 1);
      }
    }
    return Status::Ok();
  }

  Status ReadDependsOn(const std::string& self, const YAML::Node& value, const std::string& key, Json& out) {
    out = Json::object();
    auto add = [&](const YAML::Node& name_node, const std::string& condition) -> Status {
      const std::string name = name_node.Scalar();
      if (names_.count(name) == 0 || name == self || name == kMainService) {
        return Error(name_node.Mark(), key, "\"" + name + "\" is not another service of this file");
      }
      out[name] = condition;
      return Status::Ok();
    };
    if (value.IsSequence()) {
      for (const auto& item : value) FORGE_RETURN_IF_ERROR(add(item, "service_started"));
      return Status::Ok();
    }
    if (!value.IsMap()) return Error(value.Mark(), key, "expected a list or a mapping of services");
    for (auto it = value.begin(); it != value.end(); ++it) {
      std::string condition = "service_started";
      const std::string dotted = key + "." + it->first.Scalar();
      if (it->second.IsMap()) {
        for (auto c = it->second.begin(); c != it->second.end(); ++c) {
          const std::string k = c->first.Scalar();
          if (k == "condition") {
            condition = c->second.Scalar();
          } else if (k != "required" && k != "restart") {
            return Error(c->first.Mark(), dotted + "." + k, "not supported");
          }
        }
      }
      if (condition != "service_started" && condition != "service_healthy" &&
          condition != "service_completed_successfully") {
        return Error(it->second.Mark(), dotted + ".condition", "unknown condition \"" + condition + "\"");
      }
      FORGE_RETURN_IF_ERROR(add(it->first, condition));
    }
    return Status::Ok();
  }

  Result<double> Duration(const YAML::Node& node, const std::string& key) {
    auto text = Scalar(node, key);
    if (!text.ok()) return text.status();
    auto seconds = ParseComposeDuration(*text);
    if (!seconds.ok()) return Error(node.Mark(), key, seconds.status().message());
    return *seconds;
  }

  Status ReadHealthcheck(const YAML::Node& value, const std::string& key, Json& out) {
    if (!value.IsMap()) return Error(value.Mark(), key, "expected a mapping");
    // Docker's defaults.
    Json check = {{"interval_sec", 30.0}, {"timeout_sec", 30.0}, {"retries", 3}, {"start_period_sec", 0.0}};
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string k = it->first.Scalar();
      const std::string dotted = key + "." + k;
      const YAML::Node& v = it->second;
      if (k == "test") {
        Json test = Json::array();
        if (v.IsScalar()) {
          auto text = Scalar(v, dotted);
          if (!text.ok()) return text.status();
          test = {"CMD-SHELL", *text};
        } else {
          auto list = StringList(v, dotted);
          if (!list.ok()) return list.status();
          test = std::move(*list);
          const std::string form = test.empty() ? "" : test[0].get<std::string>();
          if (form != "CMD" && form != "CMD-SHELL") {
            return Error(v.Mark(), dotted, "expected [\"CMD\", ...] or [\"CMD-SHELL\", \"...\"]");
          }
          if (test.size() < 2) return Error(v.Mark(), dotted, "no command");
        }
        check["test"] = std::move(test);
      } else if (k == "interval" || k == "timeout" || k == "start_period") {
        auto seconds = Duration(v, dotted);
        if (!seconds.ok()) return seconds.status();
        check[k + "_sec"] = *seconds;
      } else if (k == "retries") {
        auto text = Scalar(v, dotted);
        if (!text.ok()) return text.status();
        char* end = nullptr;
        const long n = std::strtol(text->c_str(), &end, 10);
        if (text->empty() || *end != '\0' || n < 1) return Error(v.Mark(), dotted, "expected a positive integer");
        check["retries"] = n;
      } else if (k == "disable") {
        if (v.Scalar() == "true") return Status::Ok();
      } else {
        return Error(it->first.Mark(), dotted, "not supported");
      }
    }
    if (!check.contains("test")) return Error(value.Mark(), key, "needs a test");
    out["healthcheck"] = std::move(check);
    return Status::Ok();
  }

  // Short syntax "data:/data[:ro]" or "./file:/etc/file:ro"; long syntax
  // {type, source, target, read_only}.
  Status ReadMounts(const YAML::Node& value, const std::string& key, Json& out) {
    if (!value.IsSequence()) return Error(value.Mark(), key, "expected a list");
    out = Json::array();
    for (const auto& item : value) {
      std::string source, target;
      bool read_only = false;
      if (item.IsMap()) {
        for (auto it = item.begin(); it != item.end(); ++it) {
          const std::string k = it->first.Scalar();
          if (k == "source") source = it->second.Scalar();
          else if (k == "target") target = it->second.Scalar();
          else if (k == "read_only") read_only = it->second.Scalar() == "true";
          else if (k == "type" && (it->second.Scalar() == "volume" || it->second.Scalar() == "bind")) continue;
          else return Error(it->first.Mark(), key + "." + k, "not supported");
        }
      } else {
        auto text = Scalar(item, key);
        if (!text.ok()) return text.status();
        std::vector<std::string> parts;
        size_t from = 0;
        for (size_t colon; (colon = text->find(':', from)) != std::string::npos; from = colon + 1) {
          parts.push_back(text->substr(from, colon - from));
        }
        parts.push_back(text->substr(from));
        if (parts.size() < 2 || parts.size() > 3 || (parts.size() == 3 && parts[2] != "ro" && parts[2] != "rw")) {
          return Error(item.Mark(), key, "\"" + *text + "\": expected SOURCE:TARGET[:ro] (an anonymous volume "
                                         "has no one to share it with)");
        }
        source = parts[0];
        target = parts[1];
        read_only = parts.size() == 3 && parts[2] == "ro";
      }
      if (target.empty() || target[0] != '/') return Error(item.Mark(), key, "target must be an absolute path");
      if (source.empty()) return Error(item.Mark(), key, "a mount needs a source");
      const bool path = source[0] == '.' || source[0] == '/' || source[0] == '~';
      if (path) {
        if (source[0] != '.') {
          return Error(item.Mark(), key, "bind mount of " + source + ": only paths under the task's "
                                         "environment/ (./...) are mounted; a host path makes a task unportable");
        }
        fs::path host = (dir_ / source).lexically_normal();
        std::error_code ec;
        if (!fs::exists(host, ec)) return Error(item.Mark(), key, host.string() + " does not exist");
        source = host.string();
      } else {
        mounted_volumes_.emplace_back(source, item.Mark());
      }
      out.push_back({{"source", source}, {"target", target}, {"read_only", read_only}});
    }
    return Status::Ok();
  }

  Status CheckVolumeNames(const Json&) {
    for (const auto& [name, mark] : mounted_volumes_) {
      if (volume_names_.count(name) == 0) {
        return Error(mark, "volumes", "volume \"" + name + "\" is not declared under the top-level volumes");
      }
    }
    return Status::Ok();
  }

  std::string path_;
  fs::path dir_;
  const std::map<std::string, std::string>& vars_;
  const Env& host_;
  std::vector<std::string>* warnings_;
  std::set<std::string> names_;
  std::set<std::string> volume_names_;
  std::vector<std::pair<std::string, YAML::Mark>> mounted_volumes_;
};

}  // namespace

Result<double> ParseComposeDuration(const std::string& text) {
  const std::string bad = "invalid duration \"" + text + "\" (expected e.g. \"2s\", \"1m30s\", \"500ms\")";
  if (text.empty()) return Status::InvalidData(bad);
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = i;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
    if (end == i) return Status::InvalidData(bad);
    const double number = std::strtod(text.substr(i, end - i).c_str(), nullptr);
    size_t unit_end = end;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) ++unit_end;
    const std::string unit = text.substr(end, unit_end - end);
    if (unit == "h") total += number * 3600;
    else if (unit == "m") total += number * 60;
    else if (unit == "s") total += number;
    else if (unit == "ms") total += number / 1000;
    else if (unit == "us") total += number / 1e6;
    else return Status::InvalidData(bad);
    i = unit_end;
  }
  return total;
}

Result<std::vector<std::string>> SplitComposeCommand(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) return Status::InvalidData("unterminated quote in \"" + text + "\"");
  if (in_word) words.push_back(std::move(word));
  return words;
}

Result<ComposeEnv> ComposeEnvFromJson(const records::Json& value, const std::string& field) {
  if (!value.is_object()) return Status::InvalidData(field + ": expected an object of strings");
  ComposeEnv env;
  for (const auto& [key, v] : value.items()) {
    if (v.is_null()) {
      env[key] = std::nullopt;
    } else if (v.is_string()) {
      env[key] = v.get<std::string>();
    } else {
      return Status::InvalidData(field + "." + key + ": expected a string or null");
    }
  }
  return env;
}

Result<std::map<std::string, std::string>> ResolveComposeEnv(const ComposeEnv& env, const std::string& field,
                                                             const EnvLookup& lookup) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : env) {
    if (!value) {
      if (auto host = lookup(key)) out[key] = *host;
      continue;
    }
    std::string resolved;
    Status walked = WalkCompose(
        *value, [&](const std::string& text) { resolved += text; },
        [&](const ComposeRef& ref) { resolved += ValueOf(ref, lookup(ref.name)); });
    if (!walked.ok()) return Status::InvalidData(field + "." + key + ": " + walked.message());
    out[key] = std::move(resolved);
  }
  return out;
}

Result<records::Json> ReadCompose(const std::string& path, const std::map<std::string, std::string>& vars,
                                  const Env& host, std::vector<std::string>* warnings) {
  return ComposeReader(path, vars, host, warnings).Read();
}

}  // namespace forge::tasks
