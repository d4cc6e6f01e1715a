// forge::Env for tests: records every message it is given instead of
// printing it, draws no progress, and has the variables and the clock the
// test sets (the real wall clock until SetNow), so a test asserts what a
// stage reported, with what environment, as what it did.
#pragma once

#include <unistd.h>  // environ

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/env.h"

namespace forge::testing {

class FakeEnv : public Env {
 public:
  struct Message {
    std::string level;  // "error", "warning", "note" or "text"
    std::string text;
  };

  FakeEnv() = default;
  explicit FakeEnv(std::map<std::string, std::string, std::less<>> vars) : Env(std::move(vars)) {}

  void Error(std::string_view message) override { Add("error", message); }
  void Warn(std::string_view message) override { Add("warning", message); }
  void Note(std::string_view message) override { Add("note", message); }
  void Text(std::string_view text) override { Add("text", text); }

  std::unique_ptr<Progress> StartProgress(std::string, size_t) override {
    return std::make_unique<CountingProgress>(this);
  }

  double Now() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (now_ >= 0) return now_;
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  void SetNow(double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    now_ = seconds;
  }

  using Env::SetVar;
  using Env::UnsetVar;

  std::vector<Message> messages() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }
  // The texts reported at one level, in order.
  std::vector<std::string> Texts(std::string_view level) const {
    std::vector<std::string> out;
    for (const Message& m : messages()) {
      if (m.level == level) out.push_back(m.text);
    }
    return out;
  }
  // Whether a message at this level contains part.
  bool Reported(std::string_view level, std::string_view part) const {
    for (const Message& m : messages()) {
      if (m.level == level && m.text.find(part) != std::string::npos) return true;
    }
    return false;
  }
  // Every message, one a line as "level: text", for a failing check to show.
  std::string All() const {
    std::string out;
    for (const Message& m : messages()) out += m.level + ": " + m.text + "\n";
    return out;
  }
  // How far every progress display advanced, together.
  size_t progress_advanced() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return advanced_;
  }

 private:
  class CountingProgress : public Progress {
   public:
    explicit CountingProgress(FakeEnv* env) : env_(env) {}
    void Advance(size_t n) override {
      std::lock_guard<std::mutex> lock(env_->mutex_);
      env_->advanced_ += n;
    }
    void SetTotal(size_t) override {}
    void SetDetail(std::string) override {}
    void SetLines(std::vector<std::string>) override {}
    void Finish() override {}
    bool shown() const override { return false; }

   private:
    FakeEnv* env_;
  };

  void Add(const char* level, std::string_view text) {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.push_back({level, std::string(text)});
  }

  mutable std::mutex mutex_;
  std::vector<Message> messages_;
  size_t advanced_ = 0;
  double now_ = -1;
};

// The process's own variables (PATH, HOME, DOCKER_HOST, ...).
inline std::map<std::string, std::string, std::less<>> ProcessVariables() {
  std::map<std::string, std::string, std::less<>> vars;
  for (char** entry = ::environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    const size_t eq = text.find('=');
    if (eq != std::string_view::npos) vars.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return vars;
}

// A FakeEnv with the process's variables, for the tests whose sandboxes run
// real commands (PATH) or talk to the real engine ($DOCKER_HOST), and that
// look at nothing it records.
inline FakeEnv& HostEnv() {
  static FakeEnv env(ProcessVariables());
  return env;
}

}  // namespace forge::testing
