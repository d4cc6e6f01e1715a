"""Defaulting, validation and admission for the kinds the fake gives meaning to.

From the API reference (PodSpec, Container, Service, NetworkPolicy,
EndpointSlice) and the admission plugins a default cluster runs: ServiceAccount
(the named account must exist), RuntimeClass (must exist), DefaultTolerationSeconds,
and Pod Security Admission (namespace label pod-security.kubernetes.io/enforce,
else the fake's default level). Errors have the API's shapes: 422 Invalid with
field causes, 403 Forbidden for admission.
"""
import base64
import ipaddress

from .meta import (ApiError, invalid, is_dns_label, is_dns_subdomain, label_key_error,
                   label_value_error, quantity)

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
VOLUME_SOURCES = ("emptyDir", "configMap", "secret", "hostPath", "projected", "downwardAPI",
                  "persistentVolumeClaim", "csi", "ephemeral", "nfs", "image")
IMPLEMENTED_VOLUMES = ("emptyDir", "configMap", "secret", "hostPath")
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                 "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}


def _meta_causes(meta, causes, subdomain=True):
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        causes.append(("FieldValueRequired", "metadata.name", "Required value: name or generateName is required"))
    elif name and not (is_dns_subdomain(name) if subdomain else is_dns_label(name)):
        causes.append(("FieldValueInvalid", "metadata.name",
                       f'Invalid value: "{name}": a lowercase RFC 1123 '
                       f'{"subdomain" if subdomain else "label"} must consist of lower case alphanumeric '
                       "characters, '-' or '.', and must start and end with an alphanumeric character"))
    for k, v in (meta.get("labels") or {}).items():
        err = label_key_error(k) or label_value_error(v)
        if err:
            causes.append(("FieldValueInvalid", f"metadata.labels", f'Invalid value: "{v}": {err}'))
    for k, v in (meta.get("annotations") or {}).items():
        if label_key_error(k) or not isinstance(v, str):
            causes.append(("FieldValueInvalid", "metadata.annotations", f'Invalid value: "{k}"'))


def image_pull_policy_default(image):
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    if "@" in image:
        return "IfNotPresent"
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


# --- Pod -----------------------------------------------------------------------

def default_pod(pod):
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
    spec["serviceAccount"] = spec["serviceAccountName"]
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint for t in tolerations):
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300})
    for v in spec.get("volumes") or []:
        if "emptyDir" in v and v["emptyDir"] is None:
            v["emptyDir"] = {}
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        if c.get("image"):
            c.setdefault("imagePullPolicy", image_pull_policy_default(c["image"]))
        c.setdefault("resources", {})
        res = c["resources"]
        if res.get("limits") and not res.get("requests"):
            res["requests"] = dict(res["limits"])  # requests default to limits
        elif res.get("limits"):
            for k, v in res["limits"].items():
                res["requests"].setdefault(k, v)
        for p in c.get("ports") or []:
            p.setdefault("protocol", "TCP")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if probe in c:
                p = c[probe]
                p.setdefault("timeoutSeconds", 1)
                p.setdefault("periodSeconds", 10)
                p.setdefault("successThreshold", 1)
                p.setdefault("failureThreshold", 3)
    return pod


def _container_causes(c, path, names, volume_names, causes, init, sidecar_ok):
    name = c.get("name")
    if not name:
        causes.append(("FieldValueRequired", f"{path}.name", "Required value"))
    elif not is_dns_label(name):
        causes.append(("FieldValueInvalid", f"{path}.name", f'Invalid value: "{name}": a lowercase RFC 1123 label'))
    elif name in names:
        causes.append(("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{name}"'))
    else:
        names.add(name)
    if not c.get("image"):
        causes.append(("FieldValueRequired", f"{path}.image", "Required value"))
    if c.get("imagePullPolicy") not in PULL_POLICIES:
        causes.append(("FieldValueNotSupported", f"{path}.imagePullPolicy",
                       f'Unsupported value: "{c.get("imagePullPolicy")}": supported values: "Always", "IfNotPresent", "Never"'))
    rp = c.get("restartPolicy")
    if rp is not None and not (init and rp == "Always"):
        causes.append(("FieldValueForbidden" if not init else "FieldValueNotSupported", f"{path}.restartPolicy",
                       "Forbidden: may not be set for non-init containers" if not init
                       else f'Unsupported value: "{rp}": supported values: "Always"'))
    sidecar = init and rp == "Always"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(probe)
        if p is None:
            continue
        if init and not sidecar:
            causes.append(("FieldValueForbidden", f"{path}.{probe}", "Forbidden: may not be set for init containers without restartPolicy=Always"))
        handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if h in p]
        if len(handlers) != 1:
            causes.append(("FieldValueRequired", f"{path}.{probe}", "Required value: must specify a handler type"))
        if probe in ("livenessProbe", "startupProbe") and p.get("successThreshold", 1) != 1:
            causes.append(("FieldValueInvalid", f"{path}.{probe}.successThreshold", "Invalid value: must be 1"))
    mounts = set()
    for j, m in enumerate(c.get("volumeMounts") or []):
        mp = f"{path}.volumeMounts[{j}]"
        if m.get("name") not in volume_names:
            causes.append(("FieldValueNotFound", f"{mp}.name", f'Not found: "{m.get("name")}"'))
        if not m.get("mountPath"):
            causes.append(("FieldValueRequired", f"{mp}.mountPath", "Required value"))
        elif m["mountPath"] in mounts:
            causes.append(("FieldValueInvalid", f"{mp}.mountPath", f'Invalid value: "{m["mountPath"]}": must be unique'))
        mounts.add(m.get("mountPath"))
    for j, p in enumerate(c.get("ports") or []):
        port = p.get("containerPort")
        if not isinstance(port, int) or not 0 < port < 65536:
            causes.append(("FieldValueInvalid", f"{path}.ports[{j}].containerPort",
                           f"Invalid value: {port}: must be between 1 and 65535, inclusive"))
        if p.get("protocol") not in PROTOCOLS:
            causes.append(("FieldValueNotSupported", f"{path}.ports[{j}].protocol",
                           f'Unsupported value: "{p.get("protocol")}": supported values: "SCTP", "TCP", "UDP"'))
        if "name" in p and (not is_dns_label(p["name"]) or len(p["name"]) > 15):
            causes.append(("FieldValueInvalid", f"{path}.ports[{j}].name", f'Invalid value: "{p["name"]}"'))
    for j, e in enumerate(c.get("env") or []):
        if not e.get("name") or "=" in e["name"]:
            causes.append(("FieldValueInvalid", f"{path}.env[{j}].name", f'Invalid value: "{e.get("name")}"'))
    res = c.get("resources") or {}
    for kind in ("limits", "requests"):
        for k, v in (res.get(kind) or {}).items():
            try:
                quantity(v)
            except ValueError as err:
                causes.append(("FieldValueInvalid", f"{path}.resources.{kind}[{k}]", f'Invalid value: "{v}": {err}'))
    for k, v in (res.get("requests") or {}).items():
        lim = (res.get("limits") or {}).get(k)
        try:
            if lim is not None and quantity(v) > quantity(lim):
                causes.append(("FieldValueInvalid", f"{path}.resources.requests",
                               f'Invalid value: "{v}": must be less than or equal to {k} limit of {lim}'))
        except ValueError:
            pass
    return sidecar


def validate_pod(pod):
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    causes = []
    if pod.get("apiVersion") not in (None, "v1") or pod.get("kind") not in (None, "Pod"):
        causes.append(("FieldValueInvalid", "kind", "Invalid value: must be v1 Pod"))
    _meta_causes(meta, causes)
    volume_names = set()
    for i, v in enumerate(spec.get("volumes") or []):
        path = f"spec.volumes[{i}]"
        if not is_dns_label(v.get("name") or ""):
            causes.append(("FieldValueInvalid", f"{path}.name", f'Invalid value: "{v.get("name")}"'))
        elif v["name"] in volume_names:
            causes.append(("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{v["name"]}"'))
        volume_names.add(v.get("name"))
        sources = [s for s in v if s != "name"]
        if len(sources) != 1:
            causes.append(("FieldValueRequired" if not sources else "FieldValueForbidden", path,
                           "Required value: must specify a volume type" if not sources
                           else "Forbidden: may not specify more than 1 volume type"))
    containers = spec.get("containers") or []
    if not containers:
        causes.append(("FieldValueRequired", "spec.containers", "Required value"))
    names = set()
    for i, c in enumerate(spec.get("initContainers") or []):
        _container_causes(c, f"spec.initContainers[{i}]", names, volume_names, causes, True, True)
    for i, c in enumerate(containers):
        _container_causes(c, f"spec.containers[{i}]", names, volume_names, causes, False, False)
    if spec.get("restartPolicy") not in RESTART_POLICIES:
        causes.append(("FieldValueNotSupported", "spec.restartPolicy",
                       f'Unsupported value: "{spec.get("restartPolicy")}": supported values: "Always", "OnFailure", "Never"'))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or isinstance(ads, bool) or ads <= 0):
        causes.append(("FieldValueInvalid", "spec.activeDeadlineSeconds",
                       f"Invalid value: {ads}: must be between 1 and 2147483647, inclusive"))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < 0):
        causes.append(("FieldValueInvalid", "spec.terminationGracePeriodSeconds", f"Invalid value: {grace}"))
    for i, h in enumerate(spec.get("hostAliases") or []):
        try:
            ipaddress.ip_address(h.get("ip", ""))
        except ValueError:
            causes.append(("FieldValueInvalid", f"spec.hostAliases[{i}].ip", f'Invalid value: "{h.get("ip")}": must be a valid IP address'))
    if causes:
        raise invalid("Pod", meta.get("name") or meta.get("generateName") or "", causes)


def _containers(spec):
    return (spec.get("initContainers") or []) + (spec.get("containers") or [])


def _who(names, what):
    quoted = ", ".join(f'"{n}"' for n in names)
    return f'{"container" if len(names) == 1 else "containers"} {quoted} {what}'


def pod_security_violations(pod, level):
    """Pod Security Standards checks for level baseline or restricted (psa's messages)."""
    if level == "privileged":
        return []
    spec = pod["spec"]
    psc = spec.get("securityContext") or {}
    out = []
    hostns = [f"{f}=true" for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f)]
    if hostns:
        out.append(f"host namespaces ({', '.join(hostns)})")
    cs = _containers(spec)
    priv = [c["name"] for c in cs if (c.get("securityContext") or {}).get("privileged")]
    if priv:
        out.append(f"privileged ({_who(priv, 'must not set securityContext.privileged=true')})")
    for c in cs:
        add = ((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or []
        bad = [a for a in add if a not in BASELINE_CAPS]
        if bad:
            out.append(f'non-default capabilities (container "{c["name"]}" must not include '
                       + ", ".join(f'"{a}"' for a in bad) + " in securityContext.capabilities.add)")
    host_path = [v["name"] for v in spec.get("volumes") or [] if "hostPath" in v]
    if host_path:
        out.append("hostPath volumes (" + ("volume " if len(host_path) == 1 else "volumes ")
                   + ", ".join(f'"{n}"' for n in host_path) + ")")
    ports = [(c["name"], p["hostPort"]) for c in cs for p in c.get("ports") or [] if p.get("hostPort")]
    if ports:
        out.append("hostPort (" + ", ".join(f'container "{n}" uses hostPort {p}' for n, p in ports) + ")")
    if (psc.get("seccompProfile") or {}).get("type") == "Unconfined":
        out.append('seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")')
    if level != "restricted":
        return out
    restricted = [f'volume "{v["name"]}" uses restricted volume type "{k}"' for v in spec.get("volumes") or []
                  for k in v if k != "name" and k not in RESTRICTED_VOLUMES]
    if restricted:
        out.append("restricted volume types (" + ", ".join(restricted) + ")")
    ape = [c["name"] for c in cs if (c.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False]
    if ape:
        out.append(f"allowPrivilegeEscalation != false ({_who(ape, 'must set securityContext.allowPrivilegeEscalation=false')})")
    drop = [c["name"] for c in cs if "ALL" not in (((c.get("securityContext") or {}).get("capabilities") or {}).get("drop") or [])]
    if drop:
        what = 'must set securityContext.capabilities.drop=["ALL"]'
        out.append(f"unrestricted capabilities ({_who(drop, what)})")
    non_root = [c["name"] for c in cs if (c.get("securityContext") or {}).get("runAsNonRoot") is not True
                and not ((c.get("securityContext") or {}).get("runAsNonRoot") is None and psc.get("runAsNonRoot") is True)]
    if non_root:
        out.append(f"runAsNonRoot != true (pod or {_who(non_root, 'must set securityContext.runAsNonRoot=true')})")
    root = [c["name"] for c in cs if (c.get("securityContext") or {}).get("runAsUser") == 0]
    if psc.get("runAsUser") == 0:
        out.append("runAsUser=0 (pod must not set runAsUser=0)")
    elif root:
        out.append(f"runAsUser=0 ({_who(root, 'must not set runAsUser=0')})")
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    seccomp = [c["name"] for c in cs
               if ((c.get("securityContext") or {}).get("seccompProfile") or {}).get("type", pod_seccomp)
               not in ("RuntimeDefault", "Localhost")]
    if seccomp:
        out.append("seccompProfile (pod or " + _who(seccomp, 'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"') + ")")
    return out


def admit_pod(store, pod, ns, default_level):
    """The validating admission plugins; raises 403 Forbidden as they do."""
    name = pod["metadata"]["name"]
    nso = store.get("namespaces", "", ns)
    level = ((nso or {}).get("metadata", {}).get("labels") or {}).get("pod-security.kubernetes.io/enforce", default_level)
    bad = pod_security_violations(pod, level)
    if bad:
        raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: violates PodSecurity "{level}:latest": '
                       + ", ".join(bad), {"name": name, "kind": "pods"})
    sa = pod["spec"].get("serviceAccountName", "default")
    account = store.get("serviceaccounts", ns, sa)
    if account is None:
        raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: error looking up service account '
                       f'{ns}/{sa}: serviceaccount "{sa}" not found', {"name": name, "kind": "pods"})
    if not pod["spec"].get("imagePullSecrets") and account.get("imagePullSecrets"):
        pod["spec"]["imagePullSecrets"] = [dict(s) for s in account["imagePullSecrets"]]
    rc = pod["spec"].get("runtimeClassName")
    if rc and store.get("runtimeclasses", "", rc) is None:
        raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: pod rejected: RuntimeClass "{rc}" not found',
                       {"name": name, "kind": "pods"})


def qos_class(pod):
    cs = _containers(pod["spec"])
    any_set, guaranteed = False, True
    for c in cs:
        res = c.get("resources") or {}
        lim, req = res.get("limits") or {}, res.get("requests") or {}
        if lim or req:
            any_set = True
        for r in ("cpu", "memory"):
            if r not in lim or quantity(req.get(r, lim[r])) != quantity(lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_requests(pod):
    """The scheduler's view: max(any init container, sum of containers + sidecars)."""
    spec = pod["spec"]

    def req(c, r):
        res = c.get("resources") or {}
        v = (res.get("requests") or {}).get(r, (res.get("limits") or {}).get(r))
        return quantity(v) if v is not None else 0.0

    out = {}
    for r in ("cpu", "memory"):
        sidecars = sum(req(c, r) for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always")
        total = sum(req(c, r) for c in spec.get("containers") or []) + sidecars
        inits = [req(c, r) for c in spec.get("initContainers") or [] if c.get("restartPolicy") != "Always"]
        out[r] = max([total] + inits)
    return out


# --- Service, Endpoints, EndpointSlice, NetworkPolicy, others -------------------

def default_and_validate(key, obj, store, ns):
    """Per-kind defaults and checks on create and update; raises ApiError."""
    meta = obj.setdefault("metadata", {})
    causes = []
    if key == "namespaces":
        _meta_causes(meta, causes, subdomain=False)
        if meta.get("name"):
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        obj["status"] = obj.get("status") or {"phase": "Active"}
    else:
        _meta_causes(meta, causes, subdomain=key not in ("services",))
    if key == "services":
        _service(obj, causes)
    elif key == "networkpolicies":
        _network_policy(obj, causes)
    elif key == "endpoints":
        for i, s in enumerate(obj.get("subsets") or []):
            for j, a in enumerate((s.get("addresses") or []) + (s.get("notReadyAddresses") or [])):
                _endpoint_ip(a.get("ip"), f"subsets[{i}].addresses[{j}].ip", causes)
    elif key == "discovery.k8s.io/endpointslices":
        if obj.get("addressType") not in ("IPv4", "IPv6", "FQDN"):
            causes.append(("FieldValueNotSupported", "addressType", f'Unsupported value: "{obj.get("addressType")}"'))
        for i, e in enumerate(obj.get("endpoints") or []):
            for j, a in enumerate(e.get("addresses") or []):
                _endpoint_ip(a, f"endpoints[{i}].addresses[{j}]", causes)
    elif key == "secrets":
        obj.setdefault("type", "Opaque")
        for k, v in (obj.pop("stringData", None) or {}).items():
            obj.setdefault("data", {})[k] = base64.b64encode(v.encode()).decode()
        for k, v in (obj.get("data") or {}).items():
            try:
                base64.b64decode(v, validate=True)
            except (ValueError, TypeError):
                causes.append(("FieldValueInvalid", f"data[{k}]", "Invalid value: illegal base64 data"))
        if obj["type"] == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" not in (obj.get("data") or {}):
            causes.append(("FieldValueRequired", "data[.dockerconfigjson]", "Required value"))
    if causes:
        kind = {"services": "Service", "networking.k8s.io/networkpolicies": "NetworkPolicy",
                "endpoints": "Endpoints", "discovery.k8s.io/endpointslices": "EndpointSlice",
                "secrets": "Secret", "namespaces": "Namespace"}.get(key, key)
        raise invalid(kind, meta.get("name") or meta.get("generateName") or "", causes)


def _endpoint_ip(ip, field, causes):
    try:
        addr = ipaddress.ip_address(ip or "")
    except ValueError:
        causes.append(("FieldValueInvalid", field, f'Invalid value: "{ip}": must be a valid IP address'))
        return
    if addr.is_loopback:
        causes.append(("FieldValueInvalid", field, f'Invalid value: "{ip}": may not be in the loopback range (127.0.0.0/8, ::1/128)'))
    elif addr.is_link_local:
        causes.append(("FieldValueInvalid", field, f'Invalid value: "{ip}": may not be in the link-local range (169.254.0.0/16, fe80::/10)'))


def _service(svc, causes):
    spec = svc.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    svc.setdefault("status", {"loadBalancer": {}})
    if spec["internalTrafficPolicy"] not in ("Cluster", "Local"):
        causes.append(("FieldValueNotSupported", "spec.internalTrafficPolicy",
                       f'Unsupported value: "{spec["internalTrafficPolicy"]}": supported values: "Cluster", "Local"'))
    ports = spec.get("ports") or []
    if not ports and spec.get("clusterIP") != "None" and spec["type"] != "ExternalName":
        causes.append(("FieldValueRequired", "spec.ports", "Required value"))
    seen = set()
    for i, p in enumerate(ports):
        p.setdefault("protocol", "TCP")
        if "targetPort" not in p:
            p["targetPort"] = p.get("port")
        if len(ports) > 1 and not p.get("name"):
            causes.append(("FieldValueRequired", f"spec.ports[{i}].name", "Required value"))
        if p.get("name") in seen:
            causes.append(("FieldValueDuplicate", f"spec.ports[{i}].name", f'Duplicate value: "{p["name"]}"'))
        seen.add(p.get("name"))
        if not isinstance(p.get("port"), int) or not 0 < p["port"] < 65536:
            causes.append(("FieldValueInvalid", f"spec.ports[{i}].port", f"Invalid value: {p.get('port')}: must be between 1 and 65535, inclusive"))
        if p["protocol"] not in PROTOCOLS:
            causes.append(("FieldValueNotSupported", f"spec.ports[{i}].protocol", f'Unsupported value: "{p["protocol"]}"'))


def _network_policy(np, causes):
    spec = np.setdefault("spec", {})
    if "podSelector" not in spec:
        causes.append(("FieldValueRequired", "spec.podSelector", "Required value"))
    types = spec.get("policyTypes")
    if not types:
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    for t in spec["policyTypes"]:
        if t not in ("Ingress", "Egress"):
            causes.append(("FieldValueNotSupported", "spec.policyTypes", f'Unsupported value: "{t}": supported values: "Ingress", "Egress"'))
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            for j, port in enumerate(rule.get("ports") or []):
                port.setdefault("protocol", "TCP")
                if port["protocol"] not in PROTOCOLS:
                    causes.append(("FieldValueNotSupported", f"spec.{direction}[{i}].ports[{j}].protocol", f'Unsupported value: "{port["protocol"]}"'))
                if "endPort" in port and not isinstance(port.get("port"), int):
                    causes.append(("FieldValueRequired", f"spec.{direction}[{i}].ports[{j}].port", "Required value: must be specified when endPort is specified"))
            for j, peer in enumerate(rule.get(peers_key) or []):
                path = f"spec.{direction}[{i}].{peers_key}[{j}]"
                if "ipBlock" in peer:
                    if len(peer) > 1:
                        causes.append(("FieldValueForbidden", path, "Forbidden: may not specify both ipBlock and another peer"))
                    try:
                        net = ipaddress.ip_network(peer["ipBlock"].get("cidr", ""), strict=False)
                        for e in peer["ipBlock"].get("except") or []:
                            if not ipaddress.ip_network(e, strict=False).subnet_of(net):
                                causes.append(("FieldValueInvalid", f"{path}.ipBlock.except", f'Invalid value: "{e}": must be a strict subset of `cidr`'))
                    except (ValueError, TypeError):
                        causes.append(("FieldValueInvalid", f"{path}.ipBlock.cidr", f'Invalid value: "{peer["ipBlock"].get("cidr")}"'))
                elif not ("podSelector" in peer or "namespaceSelector" in peer):
                    causes.append(("FieldValueRequired", path, "Required value: must specify a peer"))
