"""Object metadata, label and field selectors, quantities, Status bodies.

Written from the Kubernetes API reference (ObjectMeta, LabelSelector,
Status) and the label/selector concepts pages.
"""
import json
import random
import re
import time
from datetime import datetime, timezone

# generateName's suffix alphabet (k8s.io/apiserver names.go: no vowels, no 0/1/3).
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def rfc3339(t=None):
    return datetime.fromtimestamp(time.time() if t is None else t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(obj):
    """A deep copy of a JSON value (faster than copy.deepcopy for JSON)."""
    return json.loads(json.dumps(obj))


def new_uid():
    return "%08x-%04x-4%03x-8%03x-%012x" % (random.getrandbits(32), random.getrandbits(16),
                                            random.getrandbits(12), random.getrandbits(12),
                                            random.getrandbits(48))


def generated_name(base):
    return base[:58] + "".join(random.choice(_SUFFIX) for _ in range(5))


def status_object(code, reason, message, details=None):
    obj = {"kind": "Status", "apiVersion": "v1", "metadata": {},
           "status": "Failure", "message": message, "reason": reason, "code": code}
    if details:
        obj["details"] = details
    return obj


class ApiError(Exception):
    """An answer that is a metav1.Status: raised anywhere, sent by the server."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details, self.headers = details, headers or {}

    def body(self):
        return status_object(self.code, self.reason, self.message, self.details)


def not_found(resource, name, group=""):
    return ApiError(404, "NotFound", f'{resource}{"." + group if group else ""} "{name}" not found',
                    {"name": name, "group": group, "kind": resource})


def invalid(kind, name, causes, group=""):
    """causes: (reason, field, message) triples, as field.ErrorList prints them."""
    text = ", ".join(f"{f}: {m}" for _, f, m in causes)
    if len(causes) > 1:
        text = "[" + text + "]"
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {text}',
                    {"name": name, "group": group, "kind": kind,
                     "causes": [{"reason": r, "field": f, "message": m} for r, f, m in causes]})


def is_dns_label(s):
    return isinstance(s, str) and len(s) <= 63 and bool(_DNS_LABEL.match(s))


def is_dns_subdomain(s):
    return isinstance(s, str) and len(s) <= 253 and bool(_DNS_SUBDOMAIN.match(s))


def label_key_error(key):
    if not isinstance(key, str) or not key:
        return "name part must be non-empty"
    prefix, _, name = key.rpartition("/")
    if prefix and not is_dns_subdomain(prefix):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if len(name) > 63 or not _QUALIFIED.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character")
    return None


def label_value_error(value):
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
        return ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                "'_' or '.', and must start and end with an alphanumeric character")
    return None


# --- label selectors ------------------------------------------------------

class Selector:
    """A parsed label selector: requirements (key, op, values)."""

    def __init__(self, requirements=(), nothing=False):
        self.requirements = list(requirements)
        self.nothing = nothing  # a nil LabelSelector in some APIs selects nothing

    def matches(self, labels):
        if self.nothing:
            return False
        labels = labels or {}
        for key, op, values in self.requirements:
            has = key in labels
            value = labels.get(key)
            if op == "in" and not (has and value in values):
                return False
            if op == "notin" and has and value in values:
                return False
            if op == "exists" and not has:
                return False
            if op == "!" and has:
                return False
            if op == "Gt" and not (has and value.isdigit() and int(value) > int(values[0])):
                return False
            if op == "Lt" and not (has and value.isdigit() and int(value) < int(values[0])):
                return False
        return True

    def empty(self):
        return not self.requirements and not self.nothing

    def equalities(self):
        """key -> value for the requirements that pin one value (for indexes)."""
        return {k: v[0] for k, op, v in self.requirements if op == "in" and len(v) == 1}


_SEL_TOKEN = re.compile(r"\s*(!=|==|=|!|,|\(|\)|[^\s!=,()]+)")


def parse_selector(text):
    """The string form (?labelSelector=): k=v, k==v, k!=v, k in (a,b), k notin (a), k, !k."""
    text = (text or "").strip()
    if not text:
        return Selector()
    tokens = [t for t in _SEL_TOKEN.findall(text)]
    reqs, i = [], 0

    def need(cond, what):
        if not cond:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {what}")

    while i < len(tokens):
        if tokens[i] == "!":
            need(i + 1 < len(tokens), text)
            reqs.append((tokens[i + 1], "!", []))
            i += 2
        else:
            key = tokens[i]
            need(label_key_error(key) is None, f'invalid label key "{key}"')
            op = tokens[i + 1] if i + 1 < len(tokens) else ","
            if op in ("=", "=="):
                need(i + 2 < len(tokens) and tokens[i + 2] != ",", text)
                reqs.append((key, "in", [tokens[i + 2]]))
                i += 3
            elif op == "!=":
                need(i + 2 < len(tokens) and tokens[i + 2] != ",", text)
                reqs.append((key, "notin", [tokens[i + 2]]))
                i += 3
            elif op in ("in", "notin"):
                need(i + 2 < len(tokens) and tokens[i + 2] == "(", text)
                j, values = i + 3, []
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        values.append(tokens[j])
                    j += 1
                need(j < len(tokens), text)
                reqs.append((key, op, values))
                i = j + 1
            else:
                reqs.append((key, "exists", []))
                i += 1
        if i < len(tokens):
            need(tokens[i] == ",", text)
            i += 1
    return Selector(reqs)


def label_selector(obj, nil_selects_nothing=False):
    """A metav1.LabelSelector object (matchLabels, matchExpressions)."""
    if obj is None:
        return Selector(nothing=nil_selects_nothing)
    reqs = [(k, "in", [v]) for k, v in (obj.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for e in obj.get("matchExpressions") or []:
        op = ops.get(e.get("operator"))
        if op is None:
            raise ApiError(422, "Invalid", f'"{e.get("operator")}" is not a valid label selector operator')
        reqs.append((e.get("key"), op, list(e.get("values") or [])))
    return Selector(reqs)


def parse_field_selector(text, supported):
    """metadata.name=x,status.phase!=Running; supported: field -> getter(obj)."""
    rules = []
    for part in filter(None, (text or "").split(",")):
        m = re.match(r"^\s*([A-Za-z.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = m.groups()
        if field not in supported:
            raise ApiError(400, "BadRequest", f'"{field}" is not a known field selector: only '
                           + ", ".join(f'"{f}"' for f in sorted(supported)))
        rules.append((supported[field], op != "!=", value))
    return rules


def field_matches(obj, rules):
    return all((str(get(obj) or "") == value) == want for get, want, value in rules)


# --- quantities -------------------------------------------------------------

_SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
             "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
             "P": 1e15, "E": 1e18}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(e[+-]?[0-9]+|E[+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def quantity(value):
    """A resource.Quantity ("500m", "1Gi", "2", 1.5) as a float; ValueError if malformed."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _QUANTITY.match(str(value).strip())
    if not m:
        raise ValueError(f"quantities must match the regular expression "
                         f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, exponent, suffix = m.groups()
    return float(number + (exponent or "")) * _SUFFIXES[suffix or ""]


def qualified_user(user):
    """('system:serviceaccount:ns:name') -> (ns, name) or None."""
    parts = (user or "").split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return parts[2], parts[3]
    return None
