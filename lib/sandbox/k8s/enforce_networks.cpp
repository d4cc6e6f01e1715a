// K8sBackend::EnforceNetworks: the run's NetworkPolicies written, applied
// and checked (network_policy.h).
#include <algorithm>

#include "base/atomic_file.h"
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/k8s/network_policy.h"
#include "sandbox/k8s/pod_spec.h"

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

bool Restricted(const std::string& network) {
  return network == "none" || network == "loopback" || network == "proxy-only";
}

std::string PoliciesPath(const std::string& namespace_) {
  return "/apis/networking.k8s.io/v1/namespaces/" + ApiClient::Escape(namespace_) + "/networkpolicies";
}

Result<Json> Get(ApiClient& client, const std::string& path, const std::string& what) {
  auto response = client.Call("GET", path, "", what);
  if (!response.ok()) return response.status();
  if (response->status != 200) return ApiError(*response, what);
  return ParseJsonBody(*response, what);
}

// The egress rule towards the proxy, from its Service (and Endpoints).
Result<Json> ProxyRule(ApiClient& client, const std::string& proxy_url, const std::string& namespace_) {
  auto proxy = ParseProxyService(proxy_url, namespace_);
  if (!proxy.ok()) return proxy.status();
  const std::string base = "/api/v1/namespaces/" + ApiClient::Escape(proxy->namespace_);
  auto service = Get(client, base + "/services/" + ApiClient::Escape(proxy->name),
                     "get the proxy's Service " + proxy->namespace_ + "/" + proxy->name);
  if (!service.ok()) return service.status();
  Json endpoints = Json::object();
  if (service->value("/spec/selector"_json_pointer, Json::object()).empty()) {
    auto got = Get(client, base + "/endpoints/" + ApiClient::Escape(proxy->name),
                   "get the proxy's Endpoints " + proxy->namespace_ + "/" + proxy->name);
    if (!got.ok()) return got.status();
    endpoints = std::move(*got);
  }
  return ProxyEgressRule(*proxy, *service, endpoints);
}

// Creates each policy, or replaces the one of that name.
Status Apply(ApiClient& client, const std::vector<Json>& policies, const std::string& namespace_) {
  for (const Json& policy : policies) {
    const std::string name = policy["metadata"]["name"];
    const std::string what = "create NetworkPolicy " + namespace_ + "/" + name;
    auto created = client.Call("POST", PoliciesPath(namespace_), policy.dump(), what);
    if (!created.ok()) return created.status();
    if (created->status == 201 || created->status == 200) continue;
    if (created->status != 409) return ApiError(*created, what);
    const std::string replace = "replace NetworkPolicy " + namespace_ + "/" + name;
    auto replaced = client.Call("PUT", PoliciesPath(namespace_) + "/" + ApiClient::Escape(name), policy.dump(), replace);
    if (!replaced.ok()) return replaced.status();
    if (replaced->status != 200) return ApiError(*replaced, replace);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> K8sBackend::EnforceNetworks(const std::vector<std::string>& networks,
                                                             const std::string& proxy_url, const std::string& why) {
  std::vector<std::string> restricted;
  for (const auto& n : networks) {
    if (Restricted(n) && std::find(restricted.begin(), restricted.end(), n) == restricted.end()) restricted.push_back(n);
  }
  if (restricted.empty()) return restricted;
  const std::string& ns = cluster().namespace_;
  if (options_.apply_network_policies || !options_.network_policies_file.empty()) {
    Json proxy_rule;
    if (std::find(restricted.begin(), restricted.end(), "proxy-only") != restricted.end()) {
      auto rule = ProxyRule(client_, proxy_url, ns);
      if (!rule.ok()) return rule.status().Prefixed("the proxy-only NetworkPolicy");
      proxy_rule = std::move(*rule);
    }
    const std::vector<Json> policies = BuildNetworkPolicies(restricted, ns, proxy_rule);
    if (!options_.network_policies_file.empty()) {
      Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", policies}};
      FORGE_RETURN_IF_ERROR(WriteFileAtomically(options_.network_policies_file, list.dump(2) + "\n"));
    }
    if (options_.apply_network_policies) FORGE_RETURN_IF_ERROR(Apply(client_, policies, ns));
  }
  auto listed = Get(client_, PoliciesPath(ns), "list NetworkPolicies in namespace " + ns);
  if (!listed.ok()) return listed.status();
  std::vector<std::string> unenforced;
  for (const auto& network : restricted) {
    const std::map<std::string, std::string> labels = {{kManagedByLabel, "forge"}, {kNetworkLabel, network}};
    if (EgressPolicyFor(listed->value("items", Json::array()), labels).empty()) unenforced.push_back(network);
  }
  if (unenforced.empty() || options_.allow_unenforced_network) return unenforced;
  std::string names;
  for (const auto& n : unenforced) names += (names.empty() ? "" : ", ") + n;
  return Status::BadConfig(
      "no NetworkPolicy in namespace " + ns + " polices the egress of pods labelled " + kNetworkLabel + "=" + names +
      (why.empty() ? "" : " (" + why + ")") +
      ", so the cluster would not enforce their network: pass --k8s-apply-network-policies, or apply what "
      "--k8s-network-policies FILE writes (or deploy/k8s/network-policies.yaml), or run them unenforced with "
      "--k8s-allow-unenforced-network");
}

}  // namespace forge::sandbox::k8s
