"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and
strategic merge patch approximated as a merge patch in which lists of objects
with a "name" are merged by name (the patchMergeKey of containers, volumes,
env, ports and conditions' "type")."""
import copy

from .meta import ApiError


def merge_patch(target, patch, strategic=False):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k == "$patch":
            continue
        if v is None:
            out.pop(k, None)
        elif strategic and isinstance(v, list) and isinstance(out.get(k), list) and _keyed(v) and _keyed(out[k]):
            out[k] = _merge_list(out[k], v)
        else:
            out[k] = merge_patch(out.get(k), v, strategic)
    return out


def _key(item):
    return "name" if "name" in item else ("type" if "type" in item else None)


def _keyed(items):
    return items and all(isinstance(i, dict) and _key(i) for i in items)


def _merge_list(current, patch):
    out = [dict(i) for i in current]
    for p in patch:
        k = _key(p)
        match = next((i for i, c in enumerate(out) if c.get(k) == p.get(k)), None)
        if p.get("$patch") == "delete":
            if match is not None:
                out.pop(match)
        elif match is None:
            out.append(merge_patch({}, p, True))
        else:
            out[match] = merge_patch(out[match], p, True)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer: {path}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "json patch must be a list of operations")
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op.get("path", ""))
            parent = _walk(doc, parts[:-1]) if parts else None
            last = parts[-1] if parts else None
            if kind == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise ApiError(422, "Invalid", f"testing value {op.get('path')} failed")
            elif kind in ("add", "replace"):
                if isinstance(parent, list):
                    i = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(i, op["value"])
                    else:
                        parent[i] = op["value"]
                elif kind == "replace" and last not in parent:
                    raise ApiError(422, "Invalid", f"replace operation does not apply: doc is missing key: {op['path']}")
                else:
                    parent[last] = op["value"]
            elif kind == "remove":
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            elif kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = copy.deepcopy(_walk(doc, src))
                if kind == "move":
                    sp = _walk(doc, src[:-1])
                    if isinstance(sp, list):
                        sp.pop(int(src[-1]))
                    else:
                        del sp[src[-1]]
                json_patch_into = [{"op": "add", "path": op["path"], "value": value}]
                doc = json_patch(doc, json_patch_into)
            else:
                raise ApiError(400, "BadRequest", f"unexpected op: {kind}")
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {e}")
    return doc
