#include "tasks/task.h"

#include <cmath>
#include <filesystem>
#include <system_error>

#include "tasks/env_template.h"

namespace forge::tasks {
namespace {

namespace fs = std::filesystem;

Status FieldError(const std::string& field, const std::string& reason) {
  return Status::InvalidData(field + ": " + reason);
}

std::string Join(const std::string& prefix, const char* key) {
  return prefix.empty() ? std::string(key) : prefix + "." + key;
}

std::string Got(const Json& value) { return std::string("got ") + value.type_name(); }

// A member that is absent or null counts as not given.
const Json* Find(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

Status GetString(const Json& object, const char* key, const std::string& prefix, std::string* out,
                 bool required) {
  const std::string field = Join(prefix, key);
  const Json* v = Find(object, key);
  if (v == nullptr) return required ? FieldError(field, "missing") : Status::Ok();
  if (!v->is_string()) return FieldError(field, "expected a string, " + Got(*v));
  *out = v->get<std::string>();
  if (out->empty()) return FieldError(field, "empty");
  return Status::Ok();
}

// Timeouts and cpus: a number greater than zero.
Status GetPositive(const Json& object, const char* key, const std::string& prefix, double* out) {
  const std::string field = Join(prefix, key);
  const Json* v = Find(object, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return FieldError(field, "expected a number, " + Got(*v));
  double d = v->get<double>();
  if (!std::isfinite(d) || d <= 0) return FieldError(field, "must be greater than 0");
  *out = d;
  return Status::Ok();
}

Status GetInteger(const Json& object, const char* key, const std::string& prefix, int64_t min,
                  int64_t* out) {
  const std::string field = Join(prefix, key);
  const Json* v = Find(object, key);
  if (v == nullptr) return Status::Ok();
  int64_t n = 0;
  if (v->is_number_integer()) {
    n = v->get<int64_t>();
  } else if (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
             std::abs(v->get<double>()) < 9e15) {
    n = static_cast<int64_t>(v->get<double>());
  } else {
    return FieldError(field, "expected an integer, " + Got(*v));
  }
  if (n < min) return FieldError(field, "must be at least " + std::to_string(min));
  *out = n;
  return Status::Ok();
}

Status GetBool(const Json& object, const char* key, const std::string& prefix, bool* out) {
  const Json* v = Find(object, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return FieldError(Join(prefix, key), "expected true or false, " + Got(*v));
  *out = v->get<bool>();
  return Status::Ok();
}

Status GetObject(const Json& object, const char* key, const std::string& prefix,
                 const Json** out) {
  *out = Find(object, key);
  if (*out != nullptr && !(*out)->is_object()) {
    return FieldError(Join(prefix, key), "expected an object, " + Got(**out));
  }
  return Status::Ok();
}

Status GetEnv(const Json& object, const std::string& prefix,
              std::map<std::string, std::string>* out) {
  const Json* env = nullptr;
  FORGE_RETURN_IF_ERROR(GetObject(object, "env", prefix, &env));
  if (env == nullptr) return Status::Ok();
  for (const auto& [name, value] : env->items()) {
    if (!value.is_string()) {
      return FieldError(Join(prefix, "env") + "." + name, "expected a string, " + Got(value));
    }
    (*out)[name] = value.get<std::string>();
  }
  return Status::Ok();
}

// Resolves a host directory named by a task against base_dir and checks that
// it holds the file the task needs from it, so a typo is caught at load time
// rather than in the middle of a run.
Status GetDir(const Json& object, const char* key, const std::string& prefix,
              const std::string& base_dir, const char* must_hold, std::string* out,
              bool required) {
  std::string value;
  FORGE_RETURN_IF_ERROR(GetString(object, key, prefix, &value, required));
  if (value.empty()) return Status::Ok();
  fs::path p(value);
  if (p.is_relative()) p = fs::path(base_dir) / p;
  std::error_code ec;
  p = fs::absolute(p, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "dir/" names the same directory as "dir"
  const std::string field = Join(prefix, key);
  if (!fs::is_directory(p, ec)) return FieldError(field, p.string() + ": not a directory");
  if (must_hold != nullptr && !fs::exists(p / must_hold, ec)) {
    return FieldError(field, (p / must_hold).string() + ": missing");
  }
  *out = p.string();
  return Status::Ok();
}

Status ReadHealthcheck(const Json& e, std::optional<Healthcheck>* out) {
  const Json* h = nullptr;
  const std::string p = "environment.healthcheck";
  FORGE_RETURN_IF_ERROR(GetObject(e, "healthcheck", "environment", &h));
  if (h == nullptr) return Status::Ok();
  Healthcheck check;
  FORGE_RETURN_IF_ERROR(GetString(*h, "command", p, &check.command, true));
  FORGE_RETURN_IF_ERROR(GetPositive(*h, "interval_sec", p, &check.interval_sec));
  FORGE_RETURN_IF_ERROR(GetPositive(*h, "timeout_sec", p, &check.timeout_sec));
  FORGE_RETURN_IF_ERROR(GetPositive(*h, "start_interval_sec", p, &check.start_interval_sec));
  if (const Json* start = Find(*h, "start_period_sec"); start != nullptr) {
    if (!start->is_number() || start->get<double>() < 0) {
      return FieldError(p + ".start_period_sec", "expected a number of seconds, at least 0");
    }
    check.start_period_sec = start->get<double>();
  }
  FORGE_RETURN_IF_ERROR(GetInteger(*h, "retries", p, 1, &check.retries));
  *out = std::move(check);
  return Status::Ok();
}

Status ReadEnvironment(const Json& object, const std::string& base_dir, Environment* env) {
  const Json* e = nullptr;
  FORGE_RETURN_IF_ERROR(GetObject(object, "environment", "", &e));
  if (e == nullptr) return Status::Ok();
  const std::string p = "environment";
  FORGE_RETURN_IF_ERROR(GetString(*e, "image", p, &env->image, false));
  FORGE_RETURN_IF_ERROR(GetString(*e, "compose", p, &env->compose, false));
  FORGE_RETURN_IF_ERROR(GetEnv(*e, p, &env->env));
  FORGE_RETURN_IF_ERROR(CheckEnvTemplates(env->env, "environment.env"));
  FORGE_RETURN_IF_ERROR(GetString(*e, "workdir", p, &env->workdir, false));
  if (!env->workdir.empty() && env->workdir[0] != '/') {
    return FieldError("environment.workdir", "must be an absolute path");
  }
  FORGE_RETURN_IF_ERROR(ReadHealthcheck(*e, &env->healthcheck));
  FORGE_RETURN_IF_ERROR(
      GetDir(*e, "build_context", p, base_dir, "Dockerfile", &env->build_context, false));
  FORGE_RETURN_IF_ERROR(GetPositive(*e, "cpus", p, &env->cpus));
  FORGE_RETURN_IF_ERROR(GetInteger(*e, "memory_mb", p, 1, &env->memory_mb));
  FORGE_RETURN_IF_ERROR(GetInteger(*e, "storage_mb", p, 1, &env->storage_mb));
  FORGE_RETURN_IF_ERROR(GetInteger(*e, "gpus", p, 0, &env->gpus));
  FORGE_RETURN_IF_ERROR(GetBool(*e, "allow_internet", p, &env->allow_internet));
  return GetPositive(*e, "build_timeout_sec", p, &env->build_timeout_sec);
}

Status ReadAgent(const Json& object, AgentSettings* agent) {
  const Json* a = nullptr;
  FORGE_RETURN_IF_ERROR(GetObject(object, "agent", "", &a));
  if (a == nullptr) return Status::Ok();
  FORGE_RETURN_IF_ERROR(GetPositive(*a, "timeout_sec", "agent", &agent->timeout_sec));
  return GetString(*a, "user", "agent", &agent->user, false);
}

Status ReadExpectations(const Json& v, std::vector<FileExpectation>* out) {
  const Json* list = Find(v, "expect");
  if (list == nullptr) return FieldError("verifier.expect", "missing (kind \"files\" needs it)");
  if (!list->is_array()) return FieldError("verifier.expect", "expected an array, " + Got(*list));
  if (list->empty()) return FieldError("verifier.expect", "empty");
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = "verifier.expect[" + std::to_string(i) + "]";
    const Json& item = (*list)[i];
    if (!item.is_object()) return FieldError(p, "expected an object, " + Got(item));
    FileExpectation x;
    FORGE_RETURN_IF_ERROR(GetString(item, "path", p, &x.path, true));
    if (x.path.front() != '/') return FieldError(p + ".path", "must be an absolute path");
    for (const char* key : {"equals", "contains"}) {
      const Json* text = Find(item, key);
      if (text == nullptr) continue;
      if (!text->is_string()) return FieldError(Join(p, key), "expected a string, " + Got(*text));
      (key[0] == 'e' ? x.equals : x.contains) = text->get<std::string>();
    }
    if (x.equals && x.contains) return FieldError(p, "give \"equals\" or \"contains\", not both");
    out->push_back(std::move(x));
  }
  return Status::Ok();
}

Status ReadJudgeFiles(const Json& v, std::vector<std::string>* out) {
  const Json* list = Find(v, "files");
  if (list == nullptr) return Status::Ok();
  if (!list->is_array()) return FieldError("verifier.files", "expected an array, " + Got(*list));
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& path = (*list)[i];
    const std::string p = "verifier.files[" + std::to_string(i) + "]";
    if (!path.is_string()) return FieldError(p, "expected a string, " + Got(path));
    if (path.get<std::string>().empty() || path.get<std::string>()[0] != '/') {
      return FieldError(p, "must be an absolute path");
    }
    out->push_back(path.get<std::string>());
  }
  return Status::Ok();
}

Status ReadVerifier(const Json& object, const std::string& base_dir, Verifier* verifier) {
  const Json* v = nullptr;
  FORGE_RETURN_IF_ERROR(GetObject(object, "verifier", "", &v));
  if (v == nullptr) return Status::Ok();
  const std::string p = "verifier";
  std::string kind;
  FORGE_RETURN_IF_ERROR(GetString(*v, "kind", p, &kind, true));
  FORGE_RETURN_IF_ERROR(GetPositive(*v, "timeout_sec", p, &verifier->timeout_sec));
  FORGE_RETURN_IF_ERROR(GetEnv(*v, p, &verifier->env));
  FORGE_RETURN_IF_ERROR(CheckEnvTemplates(verifier->env, "verifier.env"));
  FORGE_RETURN_IF_ERROR(GetString(*v, "user", p, &verifier->user, false));
  FORGE_RETURN_IF_ERROR(GetBool(*v, "keep_processes", p, &verifier->keep_processes));
  if (kind == "harbor") {
    verifier->kind = VerifierKind::kHarbor;
    return GetDir(*v, "tests_dir", p, base_dir, "test.sh", &verifier->tests_dir, true);
  }
  if (kind == "command") {
    verifier->kind = VerifierKind::kCommand;
    return GetString(*v, "command", p, &verifier->command, true);
  }
  if (kind == "files") {
    verifier->kind = VerifierKind::kFiles;
    return ReadExpectations(*v, &verifier->expect);
  }
  if (kind == "judge") {
    verifier->kind = VerifierKind::kJudge;
    FORGE_RETURN_IF_ERROR(GetString(*v, "rubric", p, &verifier->rubric, true));
    FORGE_RETURN_IF_ERROR(GetString(*v, "model", p, &verifier->model, false));
    return ReadJudgeFiles(*v, &verifier->files);
  }
  return FieldError("verifier.kind", "unknown kind \"" + kind +
                                         "\" (expected harbor, command, files or judge)");
}

Status ReadSolution(const Json& object, const std::string& base_dir,
                    std::optional<Solution>* solution) {
  const Json* s = nullptr;
  FORGE_RETURN_IF_ERROR(GetObject(object, "solution", "", &s));
  if (s == nullptr) return Status::Ok();
  Solution out;
  FORGE_RETURN_IF_ERROR(GetDir(*s, "dir", "solution", base_dir, "solve.sh", &out.dir, false));
  FORGE_RETURN_IF_ERROR(GetString(*s, "script", "solution", &out.script, false));
  if (out.dir.empty() == out.script.empty()) {
    return FieldError("solution", "give exactly one of \"dir\" or \"script\"");
  }
  FORGE_RETURN_IF_ERROR(GetEnv(*s, "solution", &out.env));
  FORGE_RETURN_IF_ERROR(CheckEnvTemplates(out.env, "solution.env"));
  *solution = std::move(out);
  return Status::Ok();
}

// The member `key` of `extra` when it is an object, else an empty object:
// the base onto which known fields are written, keeping unknown ones.
Json Base(const Json& extra, const char* key) {
  auto it = extra.find(key);
  return it != extra.end() && it->is_object() ? *it : Json::object();
}

Json EnvJson(const std::map<std::string, std::string>& env) {
  Json j = Json::object();
  for (const auto& [k, v] : env) j[k] = v;
  return j;
}

}  // namespace

std::string_view VerifierKindName(VerifierKind kind) {
  switch (kind) {
    case VerifierKind::kNone: return "none";
    case VerifierKind::kHarbor: return "harbor";
    case VerifierKind::kCommand: return "command";
    case VerifierKind::kFiles: return "files";
    case VerifierKind::kJudge: return "judge";
  }
  return "none";
}

Result<Verifier> VerifierFromJson(const Json& object, const std::string& base_dir) {
  if (!object.is_object()) return Status::InvalidData("task: expected an object, " + Got(object));
  Verifier verifier;
  FORGE_RETURN_IF_ERROR(ReadVerifier(object, base_dir, &verifier));
  return verifier;
}

Result<Task> TaskFromJson(const Json& object, const std::string& base_dir,
                          const std::string& source) {
  if (!object.is_object()) return Status::InvalidData("expected a JSON object, " + Got(object));
  Task task;
  task.extra = object;

  std::string schema;
  FORGE_RETURN_IF_ERROR(GetString(object, "schema", "", &schema, false));
  if (!schema.empty() && schema != kTaskSchema) {
    return FieldError("schema", "unsupported \"" + schema + "\" (this forge reads " +
                                    std::string(kTaskSchema) + ")");
  }
  FORGE_RETURN_IF_ERROR(GetString(object, "id", "", &task.id, true));
  for (char c : task.id) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return FieldError("id", "contains a control character");
    }
  }
  FORGE_RETURN_IF_ERROR(GetString(object, "instruction", "", &task.instruction, true));
  FORGE_RETURN_IF_ERROR(ReadEnvironment(object, base_dir, &task.environment));
  FORGE_RETURN_IF_ERROR(ReadAgent(object, &task.agent));
  FORGE_RETURN_IF_ERROR(ReadVerifier(object, base_dir, &task.verifier));
  FORGE_RETURN_IF_ERROR(ReadSolution(object, base_dir, &task.solution));
  FORGE_RETURN_IF_ERROR(GetString(object, "harness", "", &task.harness, false));
  const Json* metadata = nullptr;
  FORGE_RETURN_IF_ERROR(GetObject(object, "metadata", "", &metadata));
  if (metadata != nullptr) task.metadata = *metadata;
  task.source = source;
  FORGE_RETURN_IF_ERROR(GetString(object, "source", "", &task.source, false));
  return task;
}

Json Task::ToJson() const {
  Json j = extra.is_object() ? extra : Json::object();
  j["schema"] = kTaskSchema;
  j["id"] = id;
  j["instruction"] = instruction;

  Json env = Base(extra, "environment");
  if (!environment.image.empty()) env["image"] = environment.image;
  if (!environment.build_context.empty()) env["build_context"] = environment.build_context;
  if (!environment.compose.empty()) env["compose"] = environment.compose;
  if (!environment.env.empty()) env["env"] = EnvJson(environment.env);
  if (!environment.workdir.empty()) env["workdir"] = environment.workdir;
  if (const auto& h = environment.healthcheck) {
    env["healthcheck"] = {{"command", h->command},           {"interval_sec", h->interval_sec},
                          {"timeout_sec", h->timeout_sec},   {"start_period_sec", h->start_period_sec},
                          {"start_interval_sec", h->start_interval_sec}, {"retries", h->retries}};
  }
  env["cpus"] = environment.cpus;
  env["memory_mb"] = environment.memory_mb;
  env["storage_mb"] = environment.storage_mb;
  env["gpus"] = environment.gpus;
  env["allow_internet"] = environment.allow_internet;
  env["build_timeout_sec"] = environment.build_timeout_sec;
  j["environment"] = std::move(env);

  Json a = Base(extra, "agent");
  a["timeout_sec"] = agent.timeout_sec;
  if (!agent.user.empty()) a["user"] = agent.user;
  j["agent"] = std::move(a);

  if (verifier.kind != VerifierKind::kNone) {
    Json v = Base(extra, "verifier");
    v["kind"] = VerifierKindName(verifier.kind);
    v["timeout_sec"] = verifier.timeout_sec;
    v["env"] = EnvJson(verifier.env);
    if (!verifier.user.empty()) v["user"] = verifier.user;
    if (verifier.keep_processes) v["keep_processes"] = true;
    switch (verifier.kind) {
      case VerifierKind::kHarbor: v["tests_dir"] = verifier.tests_dir; break;
      case VerifierKind::kCommand: v["command"] = verifier.command; break;
      case VerifierKind::kFiles: {
        // Items keep their unknown fields too, when the list read had them.
        const Json read = v.contains("expect") ? v["expect"] : Json();
        Json list = Json::array();
        for (size_t i = 0; i < verifier.expect.size(); ++i) {
          const FileExpectation& x = verifier.expect[i];
          Json item = read.is_array() && i < read.size() && read[i].is_object() ? read[i]
                                                                               : Json::object();
          item["path"] = x.path;
          if (x.equals) item["equals"] = *x.equals;
          if (x.contains) item["contains"] = *x.contains;
          list.push_back(std::move(item));
        }
        v["expect"] = std::move(list);
        break;
      }
      case VerifierKind::kJudge:
        v["rubric"] = verifier.rubric;
        if (!verifier.model.empty()) v["model"] = verifier.model;
        if (!verifier.files.empty()) v["files"] = verifier.files;
        break;
      case VerifierKind::kNone: break;
    }
    j["verifier"] = std::move(v);
  }

  if (solution) {
    Json s = Base(extra, "solution");
    if (!solution->dir.empty()) s["dir"] = solution->dir;
    if (!solution->script.empty()) s["script"] = solution->script;
    s["env"] = EnvJson(solution->env);
    j["solution"] = std::move(s);
  }
  if (!harness.empty()) j["harness"] = harness;
  j["metadata"] = metadata;
  j["source"] = source;
  return j;
}

}  // namespace forge::tasks
