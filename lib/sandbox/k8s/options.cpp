#include "sandbox/k8s/options.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

struct Line {
  int indent;
  std::string text;  // without indent, comment and trailing space
  int number;        // 1-based, for messages
};

std::string StripComment(const std::string& s) {
  // A '#' starts a comment at the line start or after a space, outside quotes.
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

class YamlParser {
 public:
  explicit YamlParser(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string raw;
    int number = 0;
    while (std::getline(in, raw)) {
      ++number;
      std::string s = TrimRight(StripComment(raw));
      size_t indent = s.find_first_not_of(' ');
      if (indent == std::string::npos) continue;
      if (s.compare(indent, 3, "---") == 0 && indent == 0) continue;
      lines_.push_back({static_cast<int>(indent), s.substr(indent), number});
    }
  }

  Result<Json> Parse() {
    if (lines_.empty()) return Json::object();
    Result<Json> node = ParseNode(lines_[0].indent);
    if (!node.ok()) return node;
    if (pos_ < lines_.size()) return Error(lines_[pos_], "unexpected indentation");
    return node;
  }

 private:
  static bool IsSeqItem(const std::string& t) { return t == "-" || t.rfind("- ", 0) == 0; }

  static Status Error(const Line& line, const std::string& why) {
    return Status::BadConfig("line " + std::to_string(line.number) + ": " + why);
  }

  Result<Json> ParseNode(int indent) {
    if (IsSeqItem(lines_[pos_].text)) return ParseSequence(indent);
    return ParseMapping(indent);
  }

  Result<Json> ParseSequence(int indent) {
    Json seq = Json::array();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && IsSeqItem(lines_[pos_].text)) {
      Line& line = lines_[pos_];
      std::string rest = line.text == "-" ? "" : line.text.substr(2);
      size_t skip = rest.find_first_not_of(' ');
      if (skip == std::string::npos) {
        ++pos_;
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          Result<Json> child = ParseNode(lines_[pos_].indent);
          if (!child.ok()) return child;
          seq.push_back(std::move(*child));
        } else {
          seq.push_back(nullptr);
        }
        continue;
      }
      rest = rest.substr(skip);
      if (FindKeySeparator(rest) != std::string::npos) {
        // "- key: value" opens a mapping whose keys sit where "key" sits.
        line.indent = indent + 2 + static_cast<int>(skip);
        line.text = rest;
        Result<Json> child = ParseMapping(line.indent);
        if (!child.ok()) return child;
        seq.push_back(std::move(*child));
      } else {
        Result<Json> scalar = Scalar(rest, line);
        if (!scalar.ok()) return scalar;
        seq.push_back(std::move(*scalar));
        ++pos_;
      }
    }
    return seq;
  }

  // Position of the ':' that ends a mapping key, or npos.
  static size_t FindKeySeparator(const std::string& t) {
    size_t start = 0;
    if (!t.empty() && (t[0] == '"' || t[0] == '\'')) {
      size_t close = t.find(t[0], 1);
      if (close == std::string::npos) return std::string::npos;
      start = close + 1;
    }
    for (size_t i = start; i < t.size(); ++i) {
      if (t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ')) return i;
    }
    return std::string::npos;
  }

  Result<Json> ParseMapping(int indent) {
    Json map = Json::object();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && !IsSeqItem(lines_[pos_].text)) {
      const Line line = lines_[pos_];
      size_t colon = FindKeySeparator(line.text);
      if (colon == std::string::npos) return Error(line, "expected 'key: value'");
      Result<Json> key = Scalar(line.text.substr(0, colon), line);
      if (!key.ok()) return key;
      std::string value = line.text.substr(colon + 1);
      size_t skip = value.find_first_not_of(' ');
      value = skip == std::string::npos ? "" : value.substr(skip);
      ++pos_;
      std::string name = key->is_string() ? key->get<std::string>() : key->dump();
      if (!value.empty()) {
        Result<Json> scalar = Scalar(value, line);
        if (!scalar.ok()) return scalar;
        map[name] = std::move(*scalar);
      } else if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
        Result<Json> child = ParseNode(lines_[pos_].indent);
        if (!child.ok()) return child;
        map[name] = std::move(*child);
      } else if (pos_ < lines_.size() && lines_[pos_].indent == indent &&
                 IsSeqItem(lines_[pos_].text)) {
        // kubectl writes "clusters:\n- cluster:" with the dash at the key's indent.
        Result<Json> child = ParseSequence(indent);
        if (!child.ok()) return child;
        map[name] = std::move(*child);
      } else {
        map[name] = nullptr;
      }
    }
    return map;
  }

  static Result<Json> Scalar(const std::string& t, const Line& line) {
    if (t == "{}") return Json::object();
    if (t == "[]") return Json::array();
    if (t == "null" || t == "~") return Json(nullptr);
    if (t == "true" || t == "false") return Json(t == "true");
    if (t.front() == '\'') {
      if (t.size() < 2 || t.back() != '\'') return Error(line, "unterminated quoted string");
      std::string out;
      for (size_t i = 1; i + 1 < t.size(); ++i) {
        out += t[i];
        if (t[i] == '\'' && t[i + 1] == '\'') ++i;  // '' is a quote
      }
      return Json(out);
    }
    if (t.front() == '"') {
      if (t.size() < 2 || t.back() != '"') return Error(line, "unterminated quoted string");
      std::string out;
      for (size_t i = 1; i + 1 < t.size(); ++i) {
        if (t[i] != '\\') { out += t[i]; continue; }
        char e = t[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      return Json(out);
    }
    if (t.front() == '{' || t.front() == '[' || t.front() == '|' || t.front() == '>' ||
        t.front() == '&' || t.front() == '*') {
      return Error(line, "YAML feature not supported in kubeconfig: '" + t.substr(0, 1) + "'");
    }
    return Json(t);
  }

  std::vector<Line> lines_;
  size_t pos_ = 0;
};

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot read");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Base64Decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, buffer = 0;
  for (char c : in) {
    int v = value(c);
    if (v < 0) continue;  // padding, newlines
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// The element of a named list ("clusters", "contexts", "users") called name.
const Json* FindNamed(const Json& config, const char* list, const char* field,
                      const std::string& name) {
  if (!config.contains(list) || !config[list].is_array()) return nullptr;
  for (const Json& item : config[list]) {
    if (item.is_object() && item.value("name", "") == name && item.contains(field) &&
        item[field].is_object()) {
      return &item[field];
    }
  }
  return nullptr;
}

std::string Str(const Json& obj, const char* key) {
  if (!obj.contains(key) || !obj[key].is_string()) return "";
  return obj[key].get<std::string>();
}

std::string TrimAll(std::string s) {
  s = TrimRight(std::move(s));
  while (!s.empty() && (s.back() == '\n')) s.pop_back();
  size_t start = s.find_first_not_of(" \t\r\n");
  return start == std::string::npos ? "" : s.substr(start);
}

}  // namespace

Result<nlohmann::json> ParseYamlSubset(std::string_view text) {
  YamlParser parser(text);
  return parser.Parse();
}

Result<Cluster> ClusterFromKubeconfig(std::string_view text, const std::string& context_name,
                                      const std::string& base_dir) {
  Result<Json> parsed = ParseYamlSubset(text);
  if (!parsed.ok()) return parsed.status();
  const Json& config = *parsed;
  if (!config.is_object()) return Status::BadConfig("kubeconfig is not a mapping");
  std::string name = context_name.empty() ? Str(config, "current-context") : context_name;
  if (name.empty()) return Status::BadConfig("kubeconfig has no current-context; pass a context");
  const Json* context = FindNamed(config, "contexts", "context", name);
  if (!context) return Status::BadConfig("kubeconfig has no context '" + name + "'");
  const Json* cluster = FindNamed(config, "clusters", "cluster", Str(*context, "cluster"));
  if (!cluster) {
    return Status::BadConfig("context '" + name + "' names cluster '" + Str(*context, "cluster") +
                          "', which the kubeconfig does not define");
  }
  Cluster out;
  out.source = "kubeconfig context " + name;
  out.server = Str(*cluster, "server");
  if (out.server.empty()) return Status::BadConfig("cluster of context '" + name + "' has no server");
  if (!Str(*context, "namespace").empty()) out.namespace_ = Str(*context, "namespace");
  out.ca_file = Resolve(Str(*cluster, "certificate-authority"), base_dir);
  out.ca_data = Base64Decode(Str(*cluster, "certificate-authority-data"));
  out.insecure_skip_tls_verify = cluster->value("insecure-skip-tls-verify", false) == true;

  std::string user_name = Str(*context, "user");
  if (!user_name.empty()) {
    const Json* user = FindNamed(config, "users", "user", user_name);
    if (!user) {
      return Status::BadConfig("context '" + name + "' names user '" + user_name +
                            "', which the kubeconfig does not define");
    }
    out.token = Str(*user, "token");
    out.token_file = Resolve(Str(*user, "tokenFile"), base_dir);
    out.client_cert_file = Resolve(Str(*user, "client-certificate"), base_dir);
    out.client_key_file = Resolve(Str(*user, "client-key"), base_dir);
    out.client_cert_data = Base64Decode(Str(*user, "client-certificate-data"));
    out.client_key_data = Base64Decode(Str(*user, "client-key-data"));
    if (user->contains("exec") || user->contains("auth-provider")) {
      if (out.token.empty() && out.token_file.empty() && out.client_cert_data.empty() &&
          out.client_cert_file.empty()) {
        return Status::BadConfig("user '" + user_name +
                              "' authenticates with an exec/auth-provider plugin, which forge "
                              "does not run; pass --k8s-token or a token kubeconfig");
      }
    }
  }
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  return out;
}

Result<Cluster> ResolveCluster(const K8sOptions& options, const Env& env) {
  Cluster cluster;
  std::string kubeconfig = options.kubeconfig;
  bool explicit_kubeconfig = !kubeconfig.empty();
  if (options.in_cluster && !options.kubeconfig.empty()) {
    return Status::InvalidArgument("in-cluster and a kubeconfig path exclude each other");
  }
  if (kubeconfig.empty() && options.server.empty() && !options.in_cluster) {
    if (std::string from_env = env.VarOr("KUBECONFIG", ""); !from_env.empty()) {
      kubeconfig = from_env;
      if (size_t colon = kubeconfig.find(':'); colon != std::string::npos) {
        kubeconfig = kubeconfig.substr(0, colon);  // the first file decides
      }
      explicit_kubeconfig = true;
    } else if (std::string home = env.VarOr("HOME", ""); !home.empty()) {
      std::string path = home + "/.kube/config";
      if (std::ifstream(path).good()) kubeconfig = path;
    }
  }

  const std::string service_host = env.VarOr("KUBERNETES_SERVICE_HOST", "");
  if (!kubeconfig.empty()) {
    Result<std::string> text = ReadWholeFile(kubeconfig);
    if (!text.ok()) {
      return explicit_kubeconfig ? Status::BadConfig("kubeconfig " + text.status().message())
                                 : text.status();
    }
    std::string dir = kubeconfig.find('/') == std::string::npos
                          ? "."
                          : kubeconfig.substr(0, kubeconfig.rfind('/'));
    Result<Cluster> from_file = ClusterFromKubeconfig(*text, options.context, dir);
    if (!from_file.ok()) return from_file.status().Prefixed(kubeconfig);
    cluster = std::move(*from_file);
    cluster.source = kubeconfig + " (" + cluster.source + ")";
  } else if (options.server.empty() && options.in_cluster && service_host.empty()) {
    return Status::BadConfig("in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a pod)");
  } else if (options.server.empty() && !service_host.empty()) {
    // In-cluster: the service account the pod runs as.
    const std::string& dir = options.service_account_dir;
    std::string host = service_host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
    cluster.server = "https://" + host + ":" + env.VarOr("KUBERNETES_SERVICE_PORT", "443");
    cluster.token_file = dir + "/token";
    cluster.ca_file = dir + "/ca.crt";
    if (Result<std::string> ns = ReadWholeFile(dir + "/namespace"); ns.ok()) {
      if (std::string n = TrimAll(*ns); !n.empty()) cluster.namespace_ = n;
    }
    cluster.source = "in-cluster service account " + dir;
  } else if (options.server.empty()) {
    return Status::BadConfig(
        "no Kubernetes API server: pass --k8s-server or --kubeconfig, set KUBECONFIG, "
        "or run in a pod (KUBERNETES_SERVICE_HOST)");
  } else {
    cluster.source = "options";
  }

  if (!options.server.empty()) cluster.server = options.server;
  while (!cluster.server.empty() && cluster.server.back() == '/') cluster.server.pop_back();
  if (!options.token.empty()) cluster.token = options.token;
  if (!options.token_file.empty()) cluster.token_file = options.token_file;
  if (!options.namespace_.empty()) cluster.namespace_ = options.namespace_;
  if (!options.ca_file.empty()) cluster.ca_file = options.ca_file;
  if (options.insecure_skip_tls_verify) cluster.insecure_skip_tls_verify = true;
  if (cluster.server.rfind("http://", 0) != 0 && cluster.server.rfind("https://", 0) != 0) {
    return Status::BadConfig("API server URL must start with http:// or https://: '" +
                          cluster.server + "'");
  }
  if (!cluster.token_file.empty() && cluster.token.empty()) {
    Result<std::string> token = ReadWholeFile(cluster.token_file);
    if (!token.ok()) return Status::BadConfig("token file " + token.status().message());
    cluster.token = TrimAll(*token);
  }
  return cluster;
}

}  // namespace forge::sandbox::k8s
