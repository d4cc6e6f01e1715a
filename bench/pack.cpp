// forge-pack's whole RL path against a plain Python implementation of the
// same steps (bench/pack_baseline.py), on the same SQLite store of synthetic
// recorded calls, in one run.
//
// Both sides: read the verdict JSONL, read each rollout's calls from the
// store (token columns), decode the delta-encoded prompt ids, prefix-merge
// (classifying each boundary clean/realign/fork), validate, GRPO advantages
// per task, best-fit-decreasing packing, one safetensors file per
// micro-batch (temporary + rename) and the JSONL index. forge runs RunPack,
// exactly what `forge-pack --format rl` runs. The benchmark then checks that
// both sides wrote byte-identical safetensors files and the same index.
//
//   bench-pack [CALLS=100000] [BUDGET=8192]
//   FORGE_BENCH_DIR=DIR: where the files go (default /dev/shm); FORGE_BENCH_KEEP=1 keeps them
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/terminal_env.h"
#include "pack/pack.h"
#include "records/jsonl.h"
#include "store/store.h"
#include "forge_paths.h"

using Clock = std::chrono::steady_clock;
using forge::store::CallRecord;
using nlohmann::json;

namespace {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Process CPU time (user + system, all threads): the machine may be shared,
// and waiting for a core is not the work being compared. The baseline
// measures the same way (time.process_time).
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Rollouts of 5 calls; a task's system prompt is shared by its 8 rollouts;
// each turn adds an observation (4-32 tokens) and a completion (8-64 tokens)
// ending in the stop token; one boundary in ten is a fork (the history was
// summarised). Calls go into a real store through CallsTable::AppendCalls, so
// prompt ids are delta-encoded as the proxy records them, with a small
// request and response each (the tool's RL path does not need them).
forge::Status Generate(size_t n_calls, const std::string& store_path, const std::string& verdicts_path) {
  auto opened = forge::store::Store::Open(store_path);
  if (!opened.ok()) return opened.status();
  auto& store = **opened;
  std::mt19937 rng(42);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int kStop = 2, kCallsPerRollout = 5, kRolloutsPerTask = 8;
  std::ofstream verdicts(verdicts_path);
  std::vector<CallRecord> pending;
  size_t written = 0;
  for (int rollout = 0; written < n_calls; ++rollout) {
    int task = rollout / kRolloutsPerTask;
    std::string rollout_id = "r" + std::to_string(rollout), task_id = "t" + std::to_string(task);
    std::mt19937 task_rng(task);
    std::vector<int32_t> system(16 + task_rng() % 33);
    for (auto& t : system) t = 100 + static_cast<int32_t>(task_rng() % 32000);
    double reward = uniform(0, 99) < 40 ? 1.0 : 0.0;
    verdicts << json{{"rollout_id", rollout_id}, {"task_id", task_id},
                     {"verdict", {{"reward", reward}, {"passed", reward > 0}}}}.dump()
             << "\n";
    std::vector<int32_t> context = system;
    for (int seq = 0; seq < kCallsPerRollout && written < n_calls; ++seq, ++written) {
      if (seq > 0) {
        if (uniform(0, 9) == 0) context = system;  // fork
        int obs = uniform(4, 32);
        for (int i = 0; i < obs; ++i) context.push_back(uniform(100, 32000));
      }
      CallRecord c;
      c.rollout_id = rollout_id;
      c.seq = seq;
      c.prompt_ids = context;
      c.completion_ids.resize(static_cast<size_t>(uniform(8, 64)));
      for (auto& t : c.completion_ids) t = uniform(100, 32000);
      c.completion_ids.back() = kStop;
      c.logprobs.resize(c.completion_ids.size());
      for (auto& l : c.logprobs) l = -static_cast<float>(uniform(1, 4000)) / 1000.0f;
      c.finish_reason = seq + 1 == kCallsPerRollout ? "stop" : "tool_calls";
      c.http_status = 200;
      c.client_format = "openai-chat";
      c.model = "policy";
      c.request = {{"model", "policy"},
                   {"messages", {{{"role", "user"}, {"content", "task " + task_id + " turn " + std::to_string(seq)}}}}};
      c.response = {{"choices", {{{"message", {{"role", "assistant"}, {"content", "answer " + std::to_string(seq)}}}}}}};
      context.insert(context.end(), c.completion_ids.begin(), c.completion_ids.end());
      pending.push_back(std::move(c));
    }
    if (pending.size() >= 1000 || written >= n_calls) {
      FORGE_RETURN_IF_ERROR(store.calls().AppendCalls(pending));
      pending.clear();
    }
  }
  return forge::Status::Ok();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<json> ReadIndex(const std::string& path) {
  std::vector<json> entries;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) entries.push_back(json::parse(line));
  return entries;
}

// Same batches, byte-identical files, same index apart from the file paths.
std::string CompareOutputs(const std::vector<json>& forge_index, const std::vector<json>& python_index) {
  if (forge_index.size() != python_index.size()) {
    return fmt::format("index lines differ: forge {} python {}", forge_index.size(), python_index.size());
  }
  for (size_t i = 0; i < forge_index.size(); ++i) {
    json a = forge_index[i], b = python_index[i];
    std::string fa = a["file"], fb = b["file"];
    a.erase("file");
    b.erase("file");
    if (a != b) return fmt::format("index line {} differs: {} vs {}", i + 1, a.dump(), b.dump());
    if (ReadAll(fa) != ReadAll(fb)) return fmt::format("{} and {} differ", fa, fb);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  size_t n_calls = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  int64_t budget = argc > 2 ? std::strtoll(argv[2], nullptr, 10) : 8192;
  // Files go to tmpfs when there is one: on a disk, ext4 skips inodes freed in
  // the last minutes when it creates files, so 1,452 file creations cost
  // from 0.1 s to over 1 s depending on what was deleted before the run — a
  // figure of the disk's recent past, not of either packer. FORGE_BENCH_DIR
  // picks another place (a disk, to see that cost).
  const char* bench_dir = std::getenv("FORGE_BENCH_DIR");
  std::filesystem::path parent = bench_dir && *bench_dir           ? std::filesystem::path(bench_dir)
                                 : std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                             : std::filesystem::temp_directory_path();
  auto dir = parent / ("forge-bench-pack-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string store_path = (dir / "forge.db").string(), verdicts = (dir / "verdicts.jsonl").string();
  if (auto s = Generate(n_calls, store_path, verdicts); !s.ok()) {
    std::fprintf(stderr, "bench-pack: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("bench-pack: %zu synthetic recorded calls in a %.0f MB store, token budget %lld, files in %s\n",
              n_calls, static_cast<double>(std::filesystem::file_size(store_path)) / 1e6,
              static_cast<long long>(budget), parent.c_str());

  // forge: what `forge-pack --store forge.db --format rl --token-budget B
  // --out-dir forge verdicts.jsonl > forge/index.jsonl` runs.
  forge::pack::PackOptions o;
  o.inputs = {verdicts};
  o.stores = {store_path};
  o.format = forge::pack::Format::kRl;
  o.token_budget = budget;
  o.out_dir = (dir / "forge").string();
  o.stats_path = (dir / "forge-stats.json").string();
  o.quiet = true;
  std::filesystem::create_directories(o.out_dir);
  std::string forge_index = (dir / "forge" / "index.jsonl").string();
  double cpu0 = CpuSeconds();
  auto wall0 = Clock::now();
  {
    auto writer = forge::records::JsonlWriter::Create(forge_index);
    if (!writer.ok()) return 1;
    forge::cli::TerminalEnv env("bench-pack");
    o.env = &env;
    if (auto s = forge::pack::RunPack(o, **writer); !s.ok()) {
      std::fprintf(stderr, "bench-pack: forge: %s\n", s.message().c_str());
      return 1;
    }
  }
  double forge_cpu = CpuSeconds() - cpu0, forge_wall = Seconds(wall0, Clock::now());
  json stats = json::parse(ReadAll(o.stats_path));

  std::string script = std::string(FORGE_SOURCE_DIR) + "/bench/pack_baseline.py";
  std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string python_dir = (dir / "python").string();
  std::string command = fmt::format("{} {} {} {} {} {} {}", python, script, verdicts, store_path, python_dir, budget,
                                    FORGE_VERSION);
  json py;
  auto tp0 = Clock::now();
  if (std::FILE* p = popen(command.c_str(), "r")) {
    std::string text;
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, p)) text.append(buffer, n);
    int rc = pclose(p);
    py = json::parse(text, nullptr, false);
    if (rc != 0 || !py.is_object()) {
      std::fprintf(stderr, "bench-pack: baseline failed (%d): %s\n", rc, text.c_str());
      return 1;
    }
  }
  double python_process_wall = Seconds(tp0, Clock::now());

  double py_cpu = py["cpu_s"].get<double>(), py_wall = py["wall_s"].get<double>();
  std::printf("whole RL path (verdicts + store -> safetensors files + index), same input, same outputs\n");
  std::printf("%-40s %12s %12s %8s\n", "", "forge (C++)", "python", "ratio");
  std::printf("%-40s %11.3fs %11.3fs %7.1fx\n", "process CPU time (user+sys, all threads)", forge_cpu, py_cpu,
              py_cpu / forge_cpu);
  std::printf("%-40s %11.3fs %11.3fs %7.1fx\n", "wall time", forge_wall, py_wall, py_wall / forge_wall);
  for (auto [forge_key, python_key, title] : {std::tuple{"cpu_seconds", "stages_cpu", "stages, process CPU seconds:"},
                                               std::tuple{"seconds", "stages", "stages, wall seconds:"}}) {
    if (!stats.contains(forge_key)) continue;  // a forge-pack older than its per-stage timings
    std::printf("%s\n", title);
    for (const char* stage : {"read", "assemble", "plan", "write"}) {
      double f = stats[forge_key].value(stage, 0.0), p = py[python_key].value(stage, 0.0);
      std::printf("  %-38s %11.3fs %11.3fs %7.1fx\n", stage, f, p, f > 0 ? p / f : 0.0);
    }
  }
  std::printf("  (read: verdict JSONL + calls from the store + prompt delta decode; assemble: merge + "
              "boundary classes + validation; plan: advantages + BFD; write: safetensors + index)\n");
  std::printf("python process wall time (incl. interpreter start): %.3fs\n", python_process_wall);
  const json& rl = stats["rl"];
  std::printf("samples: %lld from %lld calls (merge ratio %.2f, boundaries clean %lld realign %lld fork %lld)\n",
              stats["samples"].get<long long>(), stats["calls"].get<long long>(), stats["merge_ratio"].get<double>(),
              stats["boundaries"]["clean"].get<long long>(), stats["boundaries"]["realign"].get<long long>(),
              stats["boundaries"]["fork"].get<long long>());
  std::printf("forge:  %lld rows, %lld tokens in %lld batches; utilisation %.4f%%; ideal %lld batches; "
              "%.4f%% of ideal; padding waste %lld tokens\n",
              rl["rows"].get<long long>(), rl["tokens"].get<long long>(), rl["batches"].get<long long>(),
              100 * rl["utilisation"].get<double>(), rl["ideal_batches"].get<long long>(),
              100 * rl["utilisation_vs_ideal"].get<double>(), rl["padding_waste"].get<long long>());
  std::printf("python: %lld rows, %lld tokens in %lld batches; boundaries clean %lld realign %lld fork %lld\n",
              py["rows"].get<long long>(), py["tokens"].get<long long>(), py["bins"].get<long long>(),
              py["clean"].get<long long>(), py["realign"].get<long long>(), py["fork"].get<long long>());
  std::string diff = CompareOutputs(ReadIndex(forge_index), ReadIndex(python_dir + "/index.jsonl"));
  std::printf("byte-identical safetensors files and same index on both sides: %s\n",
              diff.empty() ? "yes" : ("NO: " + diff).c_str());
  // FORGE_BENCH_KEEP=1 keeps the store and verdicts, to profile forge-pack on them alone.
  if (const char* keep = std::getenv("FORGE_BENCH_KEEP"); keep != nullptr && *keep == '1')
    std::printf("kept: %s\n", dir.c_str());
  else
    std::filesystem::remove_all(dir);
  return diff.empty() ? 0 : 1;
}
