#include <doctest/doctest.h>
#include <signal.h>

#include "cli/signals.h"
#include "cli/tool.h"

using forge::Status;

namespace {

int RunTool(std::vector<std::string> args, const std::function<Status()>& body) {
  forge::cli::Tool tool("forge-test", "A tool for tests.");
  std::string input;
  tool.app().add_option("--input", input, "an input");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return tool.Run(static_cast<int>(argv.size()), argv.data(), body);
}

}  // namespace

TEST_CASE("each kind of failure maps to its documented exit code") {
  forge::cli::ResetStopForTesting();
  CHECK(forge::cli::ExitCodeFor(Status::Ok()) == 0);
  CHECK(forge::cli::ExitCodeFor(Status::Negative("task failed")) == 1);
  CHECK(forge::cli::ExitCodeFor(Status::InvalidArgument("u")) == 64);
  CHECK(forge::cli::ExitCodeFor(Status::InvalidData("d")) == 65);
  CHECK(forge::cli::ExitCodeFor(Status::NotFound("n")) == 66);
  CHECK(forge::cli::ExitCodeFor(Status::Unavailable("u")) == 69);
  CHECK(forge::cli::ExitCodeFor(Status::Internal("i")) == 70);
  CHECK(forge::cli::ExitCodeFor(Status::CannotCreate("c")) == 73);
  CHECK(forge::cli::ExitCodeFor(Status::IoError("i")) == 74);
  CHECK(forge::cli::ExitCodeFor(Status::Busy("t")) == 75);
  CHECK(forge::cli::ExitCodeFor(Status::Protocol("p")) == 76);
  CHECK(forge::cli::ExitCodeFor(Status::BadConfig("c")) == 78);
  CHECK(forge::cli::ExitCodeFor(Status::OutputClosed()) == 0);
}

TEST_CASE("a Status says its kind and whether a retry may pass; the code that meets it can say otherwise") {
  CHECK(Status::Unavailable("engine down").transient());
  CHECK(Status::Busy("store locked").transient());
  CHECK(Status::IoError("read").transient());
  CHECK(Status::Protocol("peer").transient());
  CHECK_FALSE(Status::NotFound("no image").transient());
  CHECK_FALSE(Status::InvalidData("bad task").transient());
  CHECK_FALSE(Status::BadConfig("bad").transient());
  CHECK_FALSE(Status::Cancelled("stop").transient());
  Status registry_404 = Status::Busy("registry 404").Transient(false);
  CHECK(registry_404.Is(forge::Kind::kBusy));
  CHECK_FALSE(registry_404.transient());
  CHECK(Status::InvalidData("FROM failed").Transient(true).transient());
  CHECK_FALSE(Status::Ok().Transient(true).transient());  // only an error is transient
  // Prefixing keeps both.
  Status prefixed = registry_404.Prefixed("pull x");
  CHECK(prefixed.Is(forge::Kind::kBusy));
  CHECK_FALSE(prefixed.transient());
  CHECK(prefixed.message() == "pull x: registry 404");
  // The exit status follows the kind alone.
  CHECK(forge::cli::ExitCodeFor(registry_404) == 75);
}

TEST_CASE("a stop signal decides the exit code: 130 for SIGINT, 143 for SIGTERM") {
  forge::cli::RequestStop(SIGINT);
  CHECK(forge::cli::ExitCodeFor(Status::Cancelled("stopped")) == 130);
  forge::cli::RequestStop(SIGTERM);
  CHECK(forge::cli::ExitCodeFor(Status::Ok()) == 143);
  forge::cli::ResetStopForTesting();
}

TEST_CASE("command-line errors are usage errors (64); --help and --version are not") {
  forge::cli::ResetStopForTesting();
  bool ran = false;
  auto body = [&] {
    ran = true;
    return Status::Ok();
  };
  CHECK(RunTool({"forge-test", "--no-such-flag"}, body) == 64);
  CHECK(RunTool({"forge-test", "--input"}, body) == 64);
  CHECK_FALSE(ran);
  CHECK(RunTool({"forge-test", "--help"}, body) == 0);
  CHECK(RunTool({"forge-test", "--version"}, body) == 0);
  CHECK_FALSE(ran);
  CHECK(RunTool({"forge-test", "--input", "x"}, body) == 0);
  CHECK(ran);
}

TEST_CASE("a repeatable option takes one value per occurrence and leaves the inputs alone") {
  forge::cli::ResetStopForTesting();
  forge::cli::Tool tool("forge-test", "A tool for tests.");
  std::vector<std::string> fields, inputs;
  tool.app().add_option("--field", fields, "fields");
  tool.app().add_option("inputs", inputs, "inputs");
  std::vector<std::string> args = {"forge-test", "--field", "text", "in.jsonl", "--field", "id", "more.jsonl"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  CHECK(tool.Run(static_cast<int>(argv.size()), argv.data(), [] { return Status::Ok(); }) == 0);
  CHECK(fields == std::vector<std::string>{"text", "id"});
  CHECK(inputs == std::vector<std::string>{"in.jsonl", "more.jsonl"});
}

TEST_CASE("an exception escaping a tool's body is an internal error (70)") {
  forge::cli::ResetStopForTesting();
  CHECK(RunTool({"forge-test"}, []() -> Status { throw std::runtime_error("bug"); }) == 70);
  forge::cli::ResetStopForTesting();
}
