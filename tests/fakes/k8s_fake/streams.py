"""pods/log, pods/exec and pods/attach, with the API server's checks first
(container name, a pod bound to a node, a container that runs) and the
kubelet's answer after: the runtime's process or log stream."""
import json
import time

from .meta import ApiError
from .websocket import Session, accept_key


def _names(cs):
    return " ".join(c["name"] for c in cs)


def pick_container(pod, name, container):
    spec = pod["spec"]
    if not container:
        if len(spec["containers"]) == 1:
            return spec["containers"][0]["name"]
        msg = f"a container name must be specified for pod {name}, choose one of: [{_names(spec['containers'])}]"
        if spec.get("initContainers"):
            msg += f" or one of the init containers: [{_names(spec['initContainers'])}]"
        raise ApiError(400, "BadRequest", msg)
    all_names = [c["name"] for c in (spec.get("initContainers") or []) + spec["containers"] + (spec.get("ephemeralContainers") or [])]
    if container not in all_names:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
    return container


def _status_of(pod, container):
    st = pod.get("status", {})
    for s in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
        if s["name"] == container:
            return s
    return None


def logs(handler, ns, name, query):
    c = handler.cluster
    with c.lock:
        c.stats.add("logs")
        pod = c.get("pods", ns, name)
        container = pick_container(pod, name, query.get("container", [""])[0])
        status = _status_of(pod, container)
        previous = query.get("previous", ["false"])[0] == "true"
        worker = c.kubelet.workers.get(pod["metadata"]["uid"]) if c.kubelet else None
        state = (status or {}).get("state", {})
        if previous:
            if not (status or {}).get("lastState", {}).get("terminated"):
                raise ApiError(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" not found')
        elif "waiting" in state or status is None or worker is None:
            reason = state.get("waiting", {}).get("reason", "ContainerCreating")
            if reason in ("ErrImagePull", "ImagePullBackOff"):
                reason = "trying and failing to pull image"
            elif reason == "CrashLoopBackOff":
                reason = None
            if reason is not None or worker is None:
                raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: '
                               f'{reason or "ContainerCreating"}')
        cs = worker.find(container)
    opts = {"follow": query.get("follow", ["false"])[0] == "true", "previous": previous,
            "timestamps": query.get("timestamps", ["false"])[0] == "true"}
    for k in ("tailLines", "limitBytes", "sinceSeconds"):
        if k in query:
            try:
                opts[k] = int(query[k][0])
            except ValueError:
                raise ApiError(400, "BadRequest", f'{k}: Invalid value: "{query[k][0]}"')
            if opts[k] < 0 or (k != "tailLines" and opts[k] == 0):
                raise ApiError(422, "Invalid", f'PodLogOptions "{name}" is invalid: {k}: Invalid value: {opts[k]}: must be greater than 0')
    stream = c.runtime.logs(worker, cs, opts)
    limit = opts.get("limitBytes")
    handler.record("log", 200)
    if not opts["follow"]:
        body = b"".join(stream)
        if limit is not None:
            body = body[:limit]
        return handler.send_raw(200, body, "text/plain")
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.close_connection = True
    sent = 0
    try:
        for data in stream:
            if limit is not None:
                data = data[:max(0, limit - sent)]
            if data:
                handler.chunk(data)
                sent += len(data)
            if limit is not None and sent >= limit:
                break
        handler.wfile.write(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError, OSError):
        pass
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()


def exec_or_attach(handler, ns, name, sub, query):
    c = handler.cluster
    flag = lambda k: query.get(k, ["false"])[0] in ("true", "1")
    with c.lock:
        c.stats.add("execs" if sub == "exec" else "attaches")
        pod = c.get("pods", ns, name)
        container = pick_container(pod, name, query.get("container", [""])[0])
        if not pod["spec"].get("nodeName"):
            raise ApiError(400, "BadRequest", f"pod {name} does not have a host assigned")
        accepted = list(c.config["exec_protocols"])
        worker = c.kubelet.workers.get(pod["metadata"]["uid"]) if c.kubelet else None
        cs = worker.find(container) if worker else None
        phase = pod.get("status", {}).get("phase")
    if handler.headers.get("Upgrade", "").lower() != "websocket" or not handler.headers.get("Sec-WebSocket-Key"):
        raise ApiError(400, "BadRequest", "Upgrade request required")
    command = query.get("command", [])
    if sub == "exec" and not command:
        raise ApiError(400, "BadRequest", "you must specify at least 1 command")
    use_stdin, tty = flag("stdin"), flag("tty")
    if not (use_stdin or flag("stdout") or flag("stderr")):
        raise ApiError(400, "BadRequest", "you must specify at least 1 of stdin, stdout, stderr")
    if cs is None or cs.state != "running" or phase in ("Succeeded", "Failed"):
        if phase in ("Succeeded", "Failed") or cs is None:
            raise ApiError(400, "BadRequest", f"unable to upgrade connection: pod {name} is not running (phase {phase})")
        raise ApiError(400, "BadRequest", f'unable to upgrade connection: container not found ("{container}")')
    offered = [p.strip() for p in handler.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    chosen = next((p for p in accepted if p in offered), None)
    if chosen is None:
        raise ApiError(400, "BadRequest", "unable to upgrade connection: no supported subprotocol offered: " + ", ".join(offered))
    if sub == "exec":
        proc = c.runtime.exec_process(worker, cs, command, use_stdin, tty)
    else:
        proc = c.runtime.attach_process(worker, cs, use_stdin, tty)
    handler.send_response(101, "Switching Protocols")
    handler.send_header("Upgrade", "websocket")
    handler.send_header("Connection", "Upgrade")
    handler.send_header("Sec-WebSocket-Accept", accept_key(handler.headers["Sec-WebSocket-Key"]))
    handler.send_header("Sec-WebSocket-Protocol", chosen)
    handler.end_headers()
    handler.wfile.flush()
    handler.close_connection = True
    handler.record(sub, 101)
    session = Session(handler, chosen, proc, use_stdin)
    session.command = command if sub == "exec" else []
    session.run()
