// forge-pack's RL path against a plain Python implementation of the same
// packing (bench/pack_baseline.py), on the same synthetic recorded calls:
// prefix-merge, validation, GRPO advantages, best-fit-decreasing packing and
// safetensors micro-batches. Prints times side by side, the ratio, and
// utilisation against the ideal (ceil(tokens / budget) batches).
//
//   bench-pack [CALLS=100000] [BUDGET=8192]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pack/assemble.h"
#include "pack/rl_batches.h"
#include "pack/validate.h"
#include "store/store.h"

using Clock = std::chrono::steady_clock;
using forge::store::CallRecord;
using nlohmann::json;

namespace {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Process CPU time: the machine may be shared, and waiting for a core is not
// the work being compared. The baseline measures the same way.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Rollouts of 5 calls; a task's system prompt is shared by its rollouts;
// each turn adds an observation and a completion ending in the stop token;
// one boundary in ten is a fork (the history was summarised).
void Generate(size_t n_calls, const std::string& path) {
  std::mt19937 rng(42);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int kStop = 2, kCallsPerRollout = 5, kRolloutsPerTask = 8;
  std::ofstream out(path);
  size_t written = 0;
  for (int rollout = 0; written < n_calls; ++rollout) {
    int task = rollout / kRolloutsPerTask;
    std::mt19937 task_rng(task);
    std::vector<int32_t> system(16 + task_rng() % 33);
    for (auto& t : system) t = 100 + static_cast<int32_t>(task_rng() % 32000);
    double reward = uniform(0, 99) < 40 ? 1.0 : 0.0;
    std::vector<int32_t> context = system;
    for (int seq = 0; seq < kCallsPerRollout && written < n_calls; ++seq, ++written) {
      if (seq > 0) {
        if (uniform(0, 9) == 0) context = system;  // fork
        int obs = uniform(4, 32);
        for (int i = 0; i < obs; ++i) context.push_back(uniform(100, 32000));
      }
      std::vector<int32_t> completion(uniform(8, 64));
      for (auto& t : completion) t = uniform(100, 32000);
      completion.back() = kStop;
      std::vector<float> logprobs(completion.size());
      for (auto& l : logprobs) l = -static_cast<float>(uniform(1, 4000)) / 1000.0f;
      json line = {{"rollout_id", "r" + std::to_string(rollout)}, {"task_id", "t" + std::to_string(task)},
                   {"seq", seq}, {"prompt_ids", context}, {"completion_ids", completion},
                   {"logprobs", logprobs}, {"finish_reason", seq + 1 == kCallsPerRollout ? "stop" : "tool_calls"},
                   {"reward", reward}};
      out << line.dump() << "\n";
      context.insert(context.end(), completion.begin(), completion.end());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t n_calls = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  int64_t budget = argc > 2 ? std::strtoll(argv[2], nullptr, 10) : 8192;
  auto dir = std::filesystem::temp_directory_path() / ("forge-bench-pack-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string input = (dir / "calls.jsonl").string();
  Generate(n_calls, input);
  std::printf("bench-pack: %zu synthetic recorded calls (%.0f MB JSONL), token budget %lld\n", n_calls,
              static_cast<double>(std::filesystem::file_size(input)) / 1e6, static_cast<long long>(budget));

  // forge: parse the same JSONL into call records (the tool reads SQLite; this
  // is only so both sides start from the same bytes), then the RL path.
  double t0 = CpuSeconds();
  std::map<std::string, std::vector<CallRecord>> by_rollout;
  std::map<std::string, std::pair<std::string, double>> meta;
  std::vector<std::string> order;
  {
    std::ifstream in(input);
    std::string line;
    while (std::getline(in, line)) {
      json j = json::parse(line);
      CallRecord c;
      c.rollout_id = j["rollout_id"].get<std::string>();
      c.seq = j["seq"].get<int64_t>();
      c.prompt_ids = j["prompt_ids"].get<std::vector<int32_t>>();
      c.completion_ids = j["completion_ids"].get<std::vector<int32_t>>();
      c.logprobs = j["logprobs"].get<std::vector<float>>();
      c.finish_reason = j["finish_reason"].get<std::string>();
      c.http_status = 200;
      if (!meta.count(c.rollout_id)) {
        meta[c.rollout_id] = {j["task_id"].get<std::string>(), j["reward"].get<double>()};
        order.push_back(c.rollout_id);
      }
      by_rollout[c.rollout_id].push_back(std::move(c));
    }
  }
  double t1 = CpuSeconds();
  std::vector<forge::pack::RlRollout> rollouts;
  forge::pack::AssemblyCounts counts;
  forge::pack::ValidationOptions validation;
  for (const std::string& id : order) {
    auto& [task, reward] = meta[id];
    auto samples = forge::pack::Assemble(std::move(by_rollout[id]), forge::pack::AssemblyMode::kMerge, task, &counts);
    std::vector<forge::pack::Sample> good;
    for (auto& s : samples) {
      if (forge::pack::InvalidReason(s, validation).empty()) good.push_back(std::move(s));
    }
    rollouts.push_back({id, task, reward, std::move(good)});
  }
  double t_assembled = CpuSeconds();
  forge::pack::RlOptions options;
  options.token_budget = budget;
  options.out_dir = (dir / "forge").string();
  std::filesystem::create_directories(options.out_dir);
  forge::pack::RlFigures figures;
  auto batches = forge::pack::PlanRlBatches(rollouts, options, &figures);
  double t_planned = CpuSeconds();
  for (size_t i = 0; i < batches.size(); ++i) {
    auto entry = forge::pack::WriteRlBatch(batches[i], i, options);
    if (!entry.ok()) {
      std::fprintf(stderr, "bench-pack: %s\n", entry.status().message().c_str());
      return 1;
    }
  }
  double t2 = CpuSeconds();
  double forge_parse = t1 - t0, forge_pack = t2 - t1;

  std::string script = std::string(FORGE_SOURCE_DIR) + "/bench/pack_baseline.py";
  std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string command = python + " " + script + " " + input + " " + (dir / "python").string() + " " +
                        std::to_string(budget);
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
  double python_wall = Seconds(tp0, Clock::now());
  double py_parse = py["parse_s"].get<double>(), py_pack = py["pack_s"].get<double>();

  const auto& p = figures.packing;
  std::printf("process CPU seconds (single-threaded on both sides)\n");
  std::printf("%-34s %12s %12s %8s\n", "", "forge (C++)", "python", "ratio");
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "merge+validate+GRPO+BFD+write", forge_pack, py_pack, py_pack / forge_pack);
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "JSONL parse (same input)", forge_parse, py_parse, py_parse / forge_parse);
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "total", forge_parse + forge_pack, py_parse + py_pack,
              (py_parse + py_pack) / (forge_parse + forge_pack));
  double f_assemble = t_assembled - t1, f_plan = t_planned - t_assembled, f_write = t2 - t_planned;
  double p_assemble = py["assemble_s"].get<double>(), p_plan = py["plan_s"].get<double>(),
         p_write = py["write_s"].get<double>();
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "  merge+validate (+GRPO in python)", f_assemble, p_assemble,
              p_assemble / f_assemble);
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "  GRPO+BFD plan (BFD in python)", f_plan, p_plan, p_plan / f_plan);
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "  build+write safetensors", f_write, p_write, p_write / f_write);
  std::printf("%-34s %11.3fs %11.3fs %7.1fx\n", "compute only (all but the writes)", f_assemble + f_plan,
              p_assemble + p_plan, (p_assemble + p_plan) / (f_assemble + f_plan));
  std::printf("python process wall time (incl. interpreter start): %.3fs\n", python_wall);
  std::printf("samples: %lld from %lld calls (merge ratio %.2f, boundaries clean %lld realign %lld fork %lld)\n",
              static_cast<long long>(counts.samples), static_cast<long long>(counts.calls),
              static_cast<double>(counts.calls) / static_cast<double>(counts.samples),
              static_cast<long long>(counts.clean), static_cast<long long>(counts.realign),
              static_cast<long long>(counts.fork));
  std::printf("forge:  %lld rows, %lld tokens in %lld batches; utilisation %.4f%%; ideal %lld batches; "
              "%.4f%% of ideal; padding waste %lld tokens\n",
              static_cast<long long>(figures.rows), static_cast<long long>(p.tokens), static_cast<long long>(p.bins),
              100 * p.utilisation, static_cast<long long>(p.ideal_bins), 100 * p.vs_ideal,
              static_cast<long long>(p.padding_waste));
  std::printf("python: %lld rows, %lld tokens in %lld batches\n", py["rows"].get<long long>(),
              py["tokens"].get<long long>(), py["bins"].get<long long>());
  bool same = py["rows"].get<int64_t>() == figures.rows && py["tokens"].get<int64_t>() == p.tokens &&
              py["bins"].get<int64_t>() == p.bins;
  std::printf("same rows/tokens/batches on both sides: %s\n", same ? "yes" : "NO");
  std::filesystem::remove_all(dir);
  return same ? 0 : 1;
}
