// The NetworkPolicies that make a run's --network real on a cluster, and the
// check that some policy selects a rollout's pods before it starts.
//
// A pod never shares its node's network (hostNetwork pods are selected by
// no NetworkPolicy); it is labelled forge.network=<none|loopback|proxy-only|
// host> (pod_spec.h), and these policies select by that label:
//
//   forge-deny-egress   none, loopback: no egress at all (a pod's own
//                       loopback is never policed)
//   forge-proxy-only    proxy-only: egress to the proxy's endpoints on its
//                       target port, and to the cluster DNS (UDP/TCP 53)
//
// Egress is policed after a Service's DNAT, so the proxy's rule names what
// the proxy Service sends traffic to: its selector's pods (in its
// namespace), or, for a Service without a selector, its Endpoints' addresses.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::sandbox::k8s {

inline constexpr const char* kDenyEgressPolicy = "forge-deny-egress";
inline constexpr const char* kProxyOnlyPolicy = "forge-proxy-only";

// Where a pod's proxy URL leads: http(s)://NAME.NS.svc[.cluster.local][:PORT].
struct ProxyService {
  std::string name, namespace_;
  int port = 0;
};
// InvalidArgument naming the URL unless it is a Service's cluster DNS name
// (a pod's loopback is its own, and a node's address is what NetworkPolicy
// cannot tell from the rest of the node).
Result<ProxyService> ParseProxyService(const std::string& url, const std::string& default_namespace);

// The egress peers and ports that reach the proxy, from its Service (and,
// for one without a selector, its Endpoints object; null otherwise).
Result<nlohmann::json> ProxyEgressRule(const ProxyService& proxy, const nlohmann::json& service,
                                       const nlohmann::json& endpoints);

// The policies for the given forge.network values, in namespace_;
// proxy_rule is used when "proxy-only" is among them.
std::vector<nlohmann::json> BuildNetworkPolicies(const std::vector<std::string>& networks,
                                                 const std::string& namespace_,
                                                 const nlohmann::json& proxy_rule);

// Whether a label selector (metav1.LabelSelector) selects these labels.
bool SelectorMatches(const nlohmann::json& selector, const std::map<std::string, std::string>& labels);

// The name of a policy in `policies` (a NetworkPolicyList's items) that
// polices the egress of a pod with these labels; "" when none does.
std::string EgressPolicyFor(const nlohmann::json& policies, const std::map<std::string, std::string>& labels);

}  // namespace forge::sandbox::k8s
