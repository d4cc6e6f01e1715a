#include "sandbox/k8s/network_policy.h"

#include <algorithm>

#include "sandbox/k8s/pod_spec.h"

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

Json NamespacePeer(const std::string& namespace_) {
  return {{"matchLabels", {{"kubernetes.io/metadata.name", namespace_}}}};
}

// Egress to the cluster DNS, so the proxy's Service name resolves.
Json DnsRule() {
  Json peer = {{"namespaceSelector", NamespacePeer("kube-system")},
               {"podSelector", {{"matchLabels", {{"k8s-app", "kube-dns"}}}}}};
  Json ports = Json::array({Json{{"protocol", "UDP"}, {"port", 53}}, Json{{"protocol", "TCP"}, {"port", 53}}});
  return {{"to", Json::array({peer})}, {"ports", ports}};
}

Json Policy(const std::string& name, const std::string& namespace_, Json selector, Json egress) {
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", {{"name", name}, {"namespace", namespace_}, {"labels", {{kManagedByLabel, "forge"}}}}},
          {"spec", {{"podSelector", std::move(selector)}, {"policyTypes", Json::array({"Egress"})}, {"egress", std::move(egress)}}}};
}

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

bool ExpressionMatches(const Json& e, const std::map<std::string, std::string>& labels) {
  const std::string key = e.value("key", "");
  const std::string op = e.value("operator", "");
  auto it = labels.find(key);
  std::vector<std::string> values;
  for (const auto& v : e.value("values", Json::array())) {
    if (v.is_string()) values.push_back(v.get<std::string>());
  }
  if (op == "In") return it != labels.end() && Contains(values, it->second);
  if (op == "NotIn") return it == labels.end() || !Contains(values, it->second);
  if (op == "Exists") return it != labels.end();
  if (op == "DoesNotExist") return it == labels.end();
  return false;  // an operator we do not know selects nothing
}

}  // namespace

Result<ProxyService> ParseProxyService(const std::string& url, const std::string& default_namespace) {
  const std::string what = "--proxy " + url + " on --backend k8s";
  std::string rest;
  ProxyService out;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7), out.port = 80;
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8), out.port = 443;
  } else {
    return Status::InvalidArgument(what + ": expected an http:// or https:// URL");
  }
  const std::string authority = rest.substr(0, rest.find_first_of("/?#"));
  const size_t colon = authority.rfind(':');
  const std::string host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) {
      return Status::InvalidArgument(what + ": bad port '" + port + "'");
    }
    out.port = std::stoi(port);
  }
  // NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.<cluster domain>
  std::vector<std::string> parts;
  for (size_t at = 0; at <= host.size();) {
    size_t dot = std::min(host.find('.', at), host.size());
    parts.push_back(host.substr(at, dot - at));
    at = dot + 1;
  }
  const bool svc = parts.size() >= 3 && parts[2] == "svc";
  if (host.empty() || authority.find('@') != std::string::npos || (parts.size() > 2 && !svc) ||
      std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }) ||
      std::all_of(host.begin(), host.end(), [](char c) { return ::isdigit(c) || c == '.'; })) {
    return Status::InvalidArgument(
        what + ": pods reach forge-proxy through a Service, named by its cluster DNS name "
               "(http://NAME.NAMESPACE.svc:PORT, e.g. http://forge-proxy.forge.svc:8080; deploy/k8s/forge.yaml): "
               "a pod's 127.0.0.1 is its own, and a bare address cannot be matched to a Service for the "
               "NetworkPolicy that lets proxy-only pods reach it");
  }
  out.name = parts[0];
  out.namespace_ = parts.size() >= 2 ? parts[1] : default_namespace;
  return out;
}

Result<Json> ProxyEgressRule(const ProxyService& proxy, const Json& service, const Json& endpoints) {
  const std::string what = "Service " + proxy.namespace_ + "/" + proxy.name;
  const Json spec = service.value("spec", Json::object());
  const Json ports = spec.value("ports", Json::array());
  const Json* port = nullptr;
  for (const auto& p : ports) {
    if (p.is_object() && p.value("port", 0) == proxy.port) port = &p;
  }
  if (port == nullptr) {
    return Status::BadConfig(what + " has no port " + std::to_string(proxy.port) + " (the --proxy URL's)");
  }
  const std::string protocol = port->value("protocol", "TCP");
  Json rule = {{"to", Json::array()}, {"ports", Json::array()}};
  const Json selector = spec.value("selector", Json::object());
  if (!selector.empty()) {
    // Traffic goes to the selected pods' targetPort (a number, or a name the
    // pods' containers give a port, which NetworkPolicy also accepts).
    rule["to"].push_back(Json{{"namespaceSelector", NamespacePeer(proxy.namespace_)},
                              {"podSelector", Json{{"matchLabels", selector}}}});
    rule["ports"].push_back(Json{{"protocol", protocol}, {"port", port->value("targetPort", (*port)["port"])}});
    return rule;
  }
  // No selector: whatever its Endpoints name (e.g. a proxy outside the cluster).
  const std::string port_name = port->value("name", "");
  for (const auto& subset : endpoints.value("subsets", Json::array())) {
    for (const auto& address : subset.value("addresses", Json::array())) {
      Json peer = {{"ipBlock", {{"cidr", address.value("ip", "") + "/32"}}}};
      if (std::find(rule["to"].begin(), rule["to"].end(), peer) == rule["to"].end()) rule["to"].push_back(peer);
    }
    for (const auto& p : subset.value("ports", Json::array())) {
      if (p.value("name", "") != port_name) continue;
      Json allowed = {{"protocol", p.value("protocol", "TCP")}, {"port", p.value("port", 0)}};
      if (std::find(rule["ports"].begin(), rule["ports"].end(), allowed) == rule["ports"].end()) {
        rule["ports"].push_back(allowed);
      }
    }
  }
  if (rule["to"].empty() || rule["ports"].empty()) {
    return Status::BadConfig(what + " has no selector and its Endpoints list no address and port for port " +
                             std::to_string(proxy.port) + ": nothing for a NetworkPolicy to allow");
  }
  return rule;
}

std::vector<Json> BuildNetworkPolicies(const std::vector<std::string>& networks, const std::string& namespace_,
                                       const Json& proxy_rule) {
  std::vector<Json> policies;
  if (Contains(networks, "none") || Contains(networks, "loopback")) {
    Json in = {{"key", kNetworkLabel}, {"operator", "In"}, {"values", Json::array({"none", "loopback"})}};
    Json selector = {{"matchLabels", {{kManagedByLabel, "forge"}}}, {"matchExpressions", Json::array({in})}};
    policies.push_back(Policy(kDenyEgressPolicy, namespace_, std::move(selector), Json::array()));
  }
  if (Contains(networks, "proxy-only")) {
    Json selector = {{"matchLabels", {{kManagedByLabel, "forge"}, {kNetworkLabel, "proxy-only"}}}};
    policies.push_back(Policy(kProxyOnlyPolicy, namespace_, std::move(selector), Json::array({proxy_rule, DnsRule()})));
  }
  return policies;
}

bool SelectorMatches(const Json& selector, const std::map<std::string, std::string>& labels) {
  if (!selector.is_object()) return false;
  const Json match_labels = selector.value("matchLabels", Json::object());
  for (const auto& [key, value] : match_labels.items()) {
    auto it = labels.find(key);
    if (it == labels.end() || !value.is_string() || it->second != value.get<std::string>()) return false;
  }
  for (const auto& e : selector.value("matchExpressions", Json::array())) {
    if (!e.is_object() || !ExpressionMatches(e, labels)) return false;
  }
  return true;  // {} selects every pod of the namespace
}

std::string EgressPolicyFor(const Json& policies, const std::map<std::string, std::string>& labels) {
  for (const auto& policy : policies) {
    if (!policy.is_object()) continue;
    const Json spec = policy.value("spec", Json::object());
    // Without policyTypes, a policy polices egress when it has egress rules.
    const Json types = spec.value("policyTypes", Json::array());
    const bool egress = types.empty() ? spec.contains("egress")
                                      : std::find(types.begin(), types.end(), "Egress") != types.end();
    if (egress && SelectorMatches(spec.value("podSelector", Json()), labels)) {
      return policy.value("/metadata/name"_json_pointer, std::string("?"));
    }
  }
  return "";
}

}  // namespace forge::sandbox::k8s
