// A sandbox with services: the main container (where the harness and the
// verifier run) plus companion containers that share its network namespace,
// as a Kubernetes pod's containers do. Every service name resolves to
// 127.0.0.1 in the pod, so a task reaches http://api-server:5000 without a
// bridge network. Harbor tasks get one from environment/docker-compose.yaml
// (tasks/compose.h); launch/services.h turns the task record's "pod" into
// this.
//
// Docker: the main container is created first and holds the network
// namespace (its /etc/hosts carries the service names, which the services
// share); each service is a container with NetworkMode container:<main>,
// started in dependency order, each waited on for the condition its
// dependents name; named volumes are Docker volumes. All of them carry the
// run's labels plus forge.pod=<rollout id>, and go with the sandbox (and
// with gc). Kubernetes: one Pod whose services are native sidecars (init
// containers with restartPolicy Always, started in order, each gated by a
// startup probe made from its healthcheck), hostAliases for the names, and
// emptyDir volumes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace forge::sandbox {

enum class ServiceCondition {
  kStarted,                // compose's service_started
  kHealthy,                // service_healthy: its healthcheck passed
  kCompletedSuccessfully,  // service_completed_successfully: it exited 0
};

struct PodMount {
  std::string volume;     // a pod volume's name, or
  std::string host_path;  // an absolute host path (Docker only)
  std::string target;     // absolute, in the container
  bool read_only = false;
};

struct Healthcheck {
  // Docker's form: {"CMD", argv...} or {"CMD-SHELL", "command"}.
  std::vector<std::string> test;
  double interval_seconds = 30;
  double timeout_seconds = 30;
  double start_period_seconds = 0;
  int retries = 3;
};

struct PodService {
  std::string name;
  std::string image;          // or
  std::string build_context;  // a directory with a Dockerfile
  std::optional<std::vector<std::string>> entrypoint;  // unset: the image's
  std::optional<std::vector<std::string>> command;     // unset: the image's
  std::map<std::string, std::string> env;
  std::string workdir;  // empty: the image's
  std::string user;     // empty: the image's
  std::map<std::string, ServiceCondition> depends_on;
  std::optional<Healthcheck> healthcheck;
  std::vector<PodMount> mounts;
};

struct Pod {
  std::vector<PodService> services;  // in an order that starts dependencies first
  std::map<std::string, ServiceCondition> main_depends_on;
  std::optional<Healthcheck> main_healthcheck;  // compose's main.healthcheck: waited on before the harness
  std::vector<PodMount> main_mounts;
  std::vector<std::string> volumes;  // named, empty at start, shared
};

// The compose spelling of a condition.
const char* ConditionName(ServiceCondition condition);

}  // namespace forge::sandbox
