#include "forge-launch/flags.h"

#include "common/k8s_flags.h"
#include "launch/network.h"
#include "sandbox/sandbox.h"

namespace forge::tools::launch {
namespace {

std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (const auto& [kind, name] : sandbox::kBackendNames) names.emplace_back(name);
  return names;
}

std::vector<cli::Flag> RunFlags(Args& a) {
  forge::launch::LaunchOptions& o = a.options;
  return {
      {.names = "tasks", .value = "TASKS", .bind = cli::Bind(o.inputs),
       .help = "Task JSONL files, Harbor task dirs or datasets; '-' or none reads stdin"},
      {.names = "-n,--attempts", .value = "N", .bind = cli::Bind(o.attempts), .show_default = true,
       .help = "Rollouts per task"},
      {.names = "-j,--jobs", .value = "N", .bind = cli::Bind(o.jobs), .show_default = true,
       .help = "Rollouts running at once"},
      {.names = "--backend", .value = "local|docker|k8s", .bind = cli::Bind(a.backend), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::IsMember(BackendNames())); },
       .help = "Sandbox backend: local, docker or k8s",
       .doc = R"~(Where sandboxes run. k8s uses the Kubernetes flags below,
else $KUBECONFIG, ~/.kube/config or the in\-cluster service account.)~"},
      {.names = "--bubblewrap", .bind = cli::Bind(a.bubblewrap),
       .help = "local backend: run each command under bwrap (host read-only, private /tmp, own pid/ipc/uts "
               "namespaces; own network for --network none or loopback)",
       .doc = R"~(With \fB\-\-backend local\fR: run every command under
.BR bwrap (1):
the host's file system read\-only, the sandbox's directory writable, a private
/tmp, its own /dev, /proc, pid, ipc and uts namespaces, and for
\fB\-\-network none\fR or \fBloopback\fR a network of its own with only lo.
A missing or unusable bwrap is a configuration error (78) before any rollout;
with another backend, a usage error (64).)~"},
      {.names = "--proxy", .value = "URL", .bind = cli::Bind(o.proxy),
       .help = "Base URL of forge-proxy the harness is pointed at",
       .doc = R"~(Base URL of forge\-proxy. The harness gets it as FORGE_PROXY_URL (and through
its profile, e.g. OPENAI_BASE_URL=URL/v1) with the secret as FORGE_API_KEY.)~"},
      {.names = "--run-id", .value = "ID", .bind = cli::Bind(o.run_id),
       .help = "Run id (labels, store, resume); rerun with the same id to resume. Default: new",
       .doc = R"~(Names the run in labels and the store; the same id resumes. Default: a new id,
printed on stderr.)~"},
      {.names = "--store", .value = "PATH", .bind = cli::Bind(a.store_path), .show_default = true,
       .help = "SQLite store ($FORGE_STORE)",
       .doc = "The SQLite store; $FORGE_STORE when it is set."},
      {.names = "--hold", .bind = cli::Bind(o.hold),
       .help = "Keep each sandbox after the harness for forge-verify",
       .doc = R"~(Keep each sandbox after its harness; the record's "sandbox" names it.)~"},
      {.names = "--harness", .value = "NAME", .bind = cli::Bind(o.harness), .show_default = true,
       .help = "Harness profile for tasks naming none",
       .doc = R"~(Harness profile for tasks that name none. Profiles are
harnesses/\fIname\fR.json: command, claude\-code, codex, gemini\-cli, qwen\-code,
opencode, openclaw, react, and oracle (runs the task's solution/solve.sh) and
nop (does nothing) for forge\-verify solvable.)~"},
      {.names = "--command", .value = "STRING", .bind = cli::Bind(o.command),
       .help = "Shell command for the 'command' harness",
       .doc = R"~(The shell command of the generic \fBcommand\fR harness (a task's "command"
field wins).)~"},
      {.names = "--harness-dir", .value = "DIR", .bind = cli::Bind(o.harness_dir),
       .help = "Directory of harness profiles ($FORGE_HARNESS_DIR)",
       .doc = "Where profiles are read ($FORGE_HARNESS_DIR)."},
      {.names = "--harness-install-dir", .value = "DIR", .bind = cli::Bind(o.harness_install_dir),
       .help = "Where scripts/install-harnesses.sh put the real harnesses ({harnesses} in profiles)",
       .doc = R"~(Where scripts/install\-harnesses.sh installed the real harnesses from npm
($FORGE_HARNESS_INSTALL_DIR, else ~/.cache/forge/harnesses); profiles name
it as {harnesses}.)~"},
      {.names = "--harness-mount", .value = "PATH", .bind = cli::Bind(o.harness_mount), .show_default = true,
       .help = "Where docker sandboxes see that directory, mounted read-only (k8s: where --registry's harness layer puts it)",
       .doc = R"~(Where docker sandboxes see the install directory. When a profile names {harnesses},
forge\-launch bind\-mounts the install directory there read\-only and {harnesses}
expands to this path; on the local backend it expands to the host directory itself.
On k8s {harnesses} expands to this path too: an image built with \fB\-\-registry\fR
has the install directory copied there (the harness layer); a prebuilt image must
have it there.)~"},
      {.names = "--model", .value = "NAME", .bind = cli::Bind(o.model),
       .help = "Model name handed to the harness"},
      {.names = "--image", .value = "IMAGE", .bind = cli::Bind(o.image),
       .help = "Image for tasks naming none",
       .doc = R"~(Image for tasks naming none. A task's image the engine does not have is
pulled (POST /images/create), once for all its rollouts; an image or tag the
registry does not have is not retried, a registry or network failure is.)~"},
      {.names = "--docker-config", .value = "FILE", .bind = cli::Bind(a.docker.config),
       .help = "Docker config giving registry credentials for pulls and builds: credHelpers, credsStore, auths, "
               "as the docker CLI reads them (default $DOCKER_CONFIG/config.json, else ~/.docker/config.json)",
       .doc = R"~(Docker config that gives registry credentials for pulls (X\-Registry\-Auth)
and for builds whose FROM names a private registry (X\-Registry\-Config),
found as the docker CLI finds them: the registry's \fBcredHelpers\fR entry,
then \fBcredsStore\fR (each runs \fBdocker\-credential\-\fIname\fB get\fR), then
its \fBauths\fR entry (default \fB$DOCKER_CONFIG/config.json\fR, else
\fB~/.docker/config.json\fR). Refused credentials are not retried. On a
terminal a pull shows its bytes on the rollout's progress line. On
\fB\-\-backend k8s\fR its credentials for the registries the pods pull from go
into the run's image pull Secret (see \fB\-\-k8s\-image\-pull\-secret\fR).)~"},
      {.names = "--registry", .value = "REGISTRY[/PATH]", .bind = cli::Bind(a.docker.registry),
       .help = "--backend k8s: build tasks' environment/Dockerfile, push to REGISTRY[/PATH]/forge-task:<input hash>, "
               "run pods from the pushed digest",
       .doc = R"~(On \fB\-\-backend k8s\fR, where a task's \fBenvironment/Dockerfile\fR cannot be
built by the cluster: forge\-launch builds it with the local Docker engine (the
same builder as \fB\-\-backend docker\fR, \fB\-\-legacy\-builder\fR included), adds the
harness layer when the harness profile names {harnesses} (the
\fB\-\-harness\-install\-dir\fR copied to \fB\-\-harness\-mount\fR), tags it
\fIREGISTRY\fR[/\fIPATH\fR]\fB/forge\-task:\fIhash\fR, where \fIhash\fR covers the build context's
files (paths, types, permission bits, contents), the Dockerfile among them,
and the harness layer's, and pushes it with the credentials
\fB\-\-docker\-config\fR gives for that registry (X\-Registry\-Auth). A tag the
registry already has (\fBHEAD /v2/\fIname\fB/manifests/\fItag\fR) is neither built
nor pushed. Pods get \fIREGISTRY\fR[/\fIPATH\fR]\fB/forge\-task@sha256:...\fR, the
digest the registry reports (Docker\-Content\-Digest); TLS as \fB\-\-registry\-ca\fR
says. A compose service's \fBbuild:\fR is built and pushed the same way (no harness
layer), and its sidecar gets the digest (the record's \fBservice_images\fR). The
rollout that built or pushed says so in its record (\fBimage_built\fR,
\fBimage_pushed\fR); every rollout records the \fBimage\fR it ran. When the docker
config has credentials for the registry, the pods pull with an image pull
Secret made from them (\fB\-\-k8s\-image\-pull\-secret\fR). Without \fB\-\-registry\fR
such tasks are refused on k8s before any pod is made.)~"},
      {.names = "--registry-ca", .value = "FILE", .bind = cli::Bind(a.docker.registry_ca),
       .help = "PEM CA that signs --registry's TLS certificate, beside the system's (default: /etc/docker/certs.d/HOST/ca.crt)",
       .doc = R"~(PEM file of the CA that signs the \fB\-\-registry\fR's TLS certificate, trusted
beside the system's CAs when forge\-launch asks the registry for a tag
(\fBHEAD /v2/\fIname\fB/manifests/\fItag\fR). Default: the engine's
\fB/etc/docker/certs.d/\fIHOST\fR[\fB:\fIPORT\fR]\fB/ca.crt\fR when there is one. A registry on
127.0.0.0/8 or localhost, which the engine treats as insecure, is asked over
HTTPS verified only when such a CA is given, else unverified, else over HTTP
when it does not speak TLS; any other over HTTPS, verified. A certificate the
CAs do not sign is an error naming the registry (exit 78, not retried). The
push goes through the engine, which trusts what its own certs.d says.)~"},
      {.names = "--legacy-builder", .bind = cli::Bind(a.docker.legacy_builder),
       .help = "Build task images with the engine's legacy builder instead of BuildKit",
       .doc = R"~(Build task images (environment/Dockerfile, compose services' builds) with
the engine's legacy builder instead of BuildKit (\fBPOST /build?version=2\fR,
the default, which takes \fBCOPY a b .\fR, \fBRUN \-\-mount\fR and
\fBFROM \-\-platform\fR). The build's current step shows on the progress
line; a failing step's last output is in the error.)~"},
      {.names = "--network", .value = "none|loopback|host|proxy-only", .bind = cli::Bind(o.network),
       .more = [](CLI::Option& f) { f.check(CLI::IsMember(forge::launch::NetworkNames())); },
       .help = forge::launch::kNetworkHelp,
       .doc = R"~(\fBnone\fR: no network; \fBloopback\fR: the sandbox's own loopback only
(for Docker the same as none); \fBhost\fR: the host's network, so the harness
reaches a proxy on 127.0.0.1 and everything else the host reaches;
\fBproxy\-only\fR: the sandbox's own loopback plus the
\fB\-\-proxy\fR URL and nothing else. Default: host with \-\-proxy, else none.
On \fB\-\-backend k8s\fR a pod never gets its node's network: it is labelled
forge.network=VALUE, \fBhost\fR is the pod network, \fB\-\-proxy\fR must be
the proxy's Service (http://NAME.NAMESPACE.svc:PORT), and the restricted values
are enforced by NetworkPolicies (\fB\-\-k8s\-network\-policies\fR,
\fB\-\-k8s\-apply\-network\-policies\fR).
.IP
Under \fBproxy\-only\fR the container's NetworkMode is none and the harness
keeps its base URL: \fBforge\-relay\fR, bind\-mounted read\-only at
/forge/bin/forge\-relay, listens on the proxy URL's address inside the
sandbox before the harness starts and relays to /forge/run/proxy.sock, a
host directory bind\-mounted read\-only, where forge\-launch (one thread for the
run) relays on to the proxy. \fB\-\-proxy\fR must be http:// or https:// on
an IPv4 loopback address (127.0.0.0/8, not a host name). Only the agent phase
is relayed: a held sandbox's relay has no host side once forge\-launch exits.
A relay that cannot start in the sandbox makes the rollout an
\fBinfra_error\fR naming it, not retried. On the local backend the harness
runs in a network namespace of its own with only lo up (root, or
unprivileged user namespaces) and forge\-relay runs from the host; its file
system is still the host's.
.IP
A compose pod on docker never shares the host's network, whose ports two
pods of one task would fight over: where \fBhost\fR would apply (the
default with \-\-proxy), the pod gets a namespace of its own, the engine's
bridge (egress) where it has one, else NetworkMode none, and reaches
\-\-proxy through forge\-relay as under proxy\-only. On an engine without a
bridge (dockerd \-\-bridge=none) its egress is forge\-relay as the pod's first
sidecar, on 127.0.0.1:3128 in the pod, towards an HTTP forward proxy
forge\-launch serves (CONNECT and plain http); main and the services get
HTTPS_PROXY and NO_PROXY (loopback and the service names), not HTTP_PROXY,
which clients that ignore NO_PROXY would use for the pod's own services.)~"},
      {.names = "--relay-binary", .value = "PATH", .bind = cli::Bind(o.relay_binary),
       .help = "forge-relay for --network proxy-only (default: next to forge-launch)",
       .doc = R"~(The \fBforge\-relay\fR binary for \fB\-\-network proxy\-only\fR (default: next
to the forge\-launch executable). A static binary (libc only, no shared
libraries), so it runs in any image; forge\-launch's helper, not a stage.)~"},
      {.names = "--agent-timeout", .value = "DURATION", .bind = cli::Bind(a.agent_timeout), .show_default = true,
       .help = "Harness deadline unless the task sets one (90s, 10m)",
       .doc = "Harness deadline unless the task sets one (seconds, or units s, m, h, d)."},
      {.names = "--cpus", .value = "N", .bind = cli::Bind(o.cpus), .show_default = true,
       .help = "CPUs per sandbox unless the task sets them",
       .doc = "CPUs per sandbox unless the task sets them, capped at the engine's host CPU count."},
      {.names = "--memory", .value = "SIZE", .bind = cli::Bind(a.memory), .show_default = true,
       .help = "Memory per sandbox, no swap",
       .doc = "Memory per sandbox unless the task sets it, with no swap beyond it."},
      {.names = "--pids", .value = "N", .bind = cli::Bind(o.pids), .show_default = true,
       .help = "Process limit per sandbox",
       .doc = "Process limit per sandbox unless the task sets one."},
      {.names = "--infra-retries", .value = "N", .bind = cli::Bind(o.infra_retries), .show_default = true,
       .help = "Retries of an infrastructure failure"},
      {.names = "--retry-backoff", .value = "SECONDS", .bind = cli::Bind(o.backoff_seconds), .show_default = true,
       .help = "First infra retry delay in seconds; doubles, capped at 30",
       .doc = "The first delay before an infrastructure retry, doubling, capped at 30 s, with jitter."},
      {.names = "--log-bytes", .value = "SIZE", .bind = cli::Bind(a.log_bytes), .show_default = true,
       .help = "Harness output kept per stream",
       .doc = "Harness output kept per stream in the record."},
      {.names = "--hold-ttl", .value = "DURATION", .bind = cli::Bind(a.hold_ttl), .show_default = true,
       .help = "Server-side lifetime of a held sandbox after its harness"},
      {.names = "--workdir", .value = "DIR", .bind = cli::Bind(o.workdir),
       .help = "Working directory in the sandbox (default: the task's environment.workdir, else the image's "
               "WORKDIR, else /work)",
       .doc = R"~(Working directory of the harness. Default: the task's \fBenvironment.workdir\fR,
else the image's WORKDIR, else /work.)~"},
      {.names = "--cap-drop-all", .bind = cli::Bind(o.drop_all_capabilities),
       .help = "Drop every capability (default: Docker's default set, as docker run and Harbor give)",
       .doc = R"~(Drop every capability in docker and k8s sandboxes. The default is Docker's
default capability set with no\-new\-privileges, as \fBdocker run\fR and Harbor
give: root may chown and apt\-get works, which verifiers that install their
tools need.)~"},
      {.names = "--user", .value = "USER", .bind = cli::Bind(o.user),
       .help = "User the harness runs as (default: the image's)",
       .doc = R"~(User the harness runs as. Default: the task's \fBagent.user\fR, else the image's USER.)~"},
      {.names = "--skills", .value = "DIR", .bind = cli::Bind(o.skills_dir),
       .help = "Directory of skill folders (each with a SKILL.md) copied to the harness's skills_dir",
       .doc = R"~(Skill folders copied into the harness profile's \fBskills_dir\fR for every
rollout: \fIdir\fR itself if it holds a SKILL.md, else each subdirectory
that does (others are ignored; none at all is a usage error). A task's
\fBskills\fR field adds its own. Profiles without skills_dir get none.)~"},
      {.names = "--display", .value = "WxH[xD]", .bind = cli::Bind(a.display),
       .help = "Start an Xvfb display WxH[xD] (1280x800x24) before each harness; DISPLAY is exported. "
               "Xvfb must be in the image (on the host for --backend local)",
       .doc = R"~(A virtual X display for GUI tasks, for every task that does not set its own
\fBdisplay\fR: before the harness, the sandbox starts
\fBXvfb \-displayfd 3 \-screen 0\fR \fIW\fRx\fIH\fRx\fID\fR \fB\-nolisten tcp\fR,
waits until it accepts clients, exports DISPLAY=:\fIN\fR to the harness and
stops Xvfb when the harness ends. Depth 8, 15, 16, 24 or 30 (default 24).
Xvfb picks the first free display number itself, so rollouts that share /tmp
or a network namespace (the local backend; docker with host networking) never
clash. Xvfb is not installed at rollout time: it must be in the image (Debian's
\fBxvfb\fR package; \fBscripts/make\-node\-image.sh \-\-x11\fR builds
forge\-node:bookworm\-x11 with it), or on the host's PATH for \fB\-\-backend local\fR.
Without it the rollout ends at once as \fBinfra_error\fR with
\fB"error_kind": "no_xvfb"\fR and an error naming the image (or the host) and
Xvfb; it is not retried (the same image would fail again) and not counted as
an attempt (a rerun after the image is fixed runs it). An Xvfb that fails to
start is \fBerror_kind\fR \fBdisplay_failed\fR, retried like other
infrastructure failures. Needs /bin/sh, mkfifo and tail in the sandbox.)~"},
  };
}

std::vector<cli::Flag> GcFlags(Args& a) {
  return {
      {.names = "--run-id", .value = "ID", .bind = cli::Bind(a.gc_run),
       .help = "Only this run's sandboxes"},
      {.names = "--older-than", .value = "DURATION", .bind = cli::Bind(a.gc_older),
       .help = "Only sandboxes older than this (30m, 6h)"},
      {.names = "--all", .bind = cli::Bind(a.gc_all),
       .help = "Every forge sandbox of the backend"},
      {.names = "--images", .bind = cli::Bind(a.gc_images),
       .help = "Also remove the images the run built and those pulled for it (needs --run-id and --store)"},
  };
}

std::vector<cli::Flag> CheckFlags(Args& a) {
  return {
      {.names = "tasks", .value = "TASKS", .bind = cli::Bind(a.check_inputs),
       .help = "Task JSONL files, Harbor task dirs or datasets; '-' or none reads stdin"},
  };
}

}  // namespace

cli::FlagTable DefineFlags(CLI::App& app, Args& a, const Env& env) {
  a.store_path = env.VarOr("FORGE_STORE", "forge.db");
  cli::FlagTable table;
  table.Add(app, "options", RunFlags(a));
  std::vector<cli::Flag> k8s = K8sFlags(a.k8s);
  for (cli::Flag& flag : K8sLaunchFlags(a.k8s)) k8s.push_back(std::move(flag));
  table.Add(app, kK8sSection, std::move(k8s), kK8sGroup);
  a.gc = app.add_subcommand("gc", "Remove sandboxes left by a run (or by all runs), and killed runs' relay socket dirs");
  table.Add(*a.gc, "gc", GcFlags(a));
  a.check = app.add_subcommand(
      "check", "Read the tasks as a run would, build and start nothing: one forge.check/1 record per task "
               "(ok, warned or refused) and a summary; exit 65 if any is refused");
  table.Add(*a.check, "check", CheckFlags(a));
  return table;
}

}  // namespace forge::tools::launch
