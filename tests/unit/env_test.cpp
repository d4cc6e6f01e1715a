// forge::Env's parts: the stop token every stage waits on, the variables
// read once, and the fake the tests hand to stages in its place.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/stop_token.h"
#include "support/fake_env.h"

namespace env_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_CASE("a stop request wakes every waiter at once; the first reason wins") {
  forge::StopToken stop;
  CHECK_FALSE(stop.requested());
  CHECK(stop.reason() == 0);
  std::vector<std::thread> waiters;
  std::atomic<int> woken{0};
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (stop.WaitFor(30s)) woken.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(20ms);
  stop.Request(SIGTERM);
  stop.Request(SIGINT);  // a second request changes nothing
  for (auto& t : waiters) t.join();
  CHECK(woken.load() == 3);
  CHECK(Clock::now() - start < 10s);
  CHECK(stop.requested());
  CHECK(stop.reason() == SIGTERM);
  CHECK(stop.WaitFor(30s));  // stays requested: a later wait returns at once
}

TEST_CASE("a wait with no stop ends at its timeout, and says so") {
  forge::StopToken stop;
  const auto start = Clock::now();
  CHECK_FALSE(stop.WaitFor(40ms));
  CHECK(Clock::now() - start >= 40ms);
  CHECK_FALSE(stop.WaitFor(0s));
}

TEST_CASE("a token with a parent stops with it; the parent does not stop with the child") {
  forge::StopToken process;
  forge::StopToken stage(&process);
  stage.Request();
  CHECK(stage.requested());
  CHECK(stage.reason() == forge::StopToken::kByCaller);
  CHECK_FALSE(process.requested());

  forge::StopToken other(&process);
  std::thread signaller([&] {
    std::this_thread::sleep_for(20ms);
    process.Request(SIGINT);
  });
  CHECK(other.WaitFor(30s));  // woken by the parent's request
  signaller.join();
  CHECK(other.reason() == SIGINT);
}

TEST_CASE("the variables are those the Env was given: unset and empty differ, VarOr treats both as absent") {
  forge::testing::FakeEnv env({{"FORGE_STORE", "runs.db"}, {"EMPTY", ""}});
  CHECK(env.Var("FORGE_STORE") == "runs.db");
  CHECK(env.Var("EMPTY") == "");
  CHECK_FALSE(env.Var("UNSET").has_value());
  CHECK(env.VarOr("EMPTY", "fallback") == "fallback");
  CHECK(env.VarOr("UNSET", "fallback") == "fallback");
  env.SetVar("UNSET", "now set");
  CHECK(env.VarOr("UNSET", "fallback") == "now set");
  env.UnsetVar("FORGE_STORE");
  CHECK_FALSE(env.Var("FORGE_STORE").has_value());
}

TEST_CASE("the fake Env records what was reported, by level and in order, and keeps the clock it is given") {
  forge::testing::FakeEnv env;
  forge::Env& as_env = env;
  as_env.Warn("store: busy");
  as_env.Error("in.jsonl:3: malformed JSON (line skipped)");
  as_env.Note("run id r-1");
  CHECK(env.Texts("warning") == std::vector<std::string>{"store: busy"});
  CHECK(env.Reported("error", "in.jsonl:3"));
  CHECK_FALSE(env.Reported("warning", "in.jsonl:3"));
  CHECK(env.messages().size() == 3);
  CHECK(env.messages()[2].level == "note");
  auto progress = as_env.StartProgress("work", 10);
  progress->Advance(4);
  CHECK_FALSE(progress->shown());
  CHECK(env.progress_advanced() == 4);
  CHECK(env.Now() > 1.7e9);  // the real clock until one is set
  env.SetNow(1000.5);
  CHECK(env.Now() == 1000.5);
}

}  // namespace env_test
