#include <doctest/doctest.h>
#include <signal.h>

#include "cli/flags.h"
#include "cli/tool.h"
#include "support/fake_env.h"

using forge::Status;

namespace cli_test {

int RunTool(std::vector<std::string> args, const std::function<Status()>& body) {
  forge::cli::Tool tool("forge-test", "A tool for tests.");
  std::string input;
  tool.app().add_option("--input", input, "an input");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return tool.Run(static_cast<int>(argv.size()), argv.data(), body);
}

int ExitCodeFor(const Status& status) {
  forge::testing::FakeEnv env;
  return forge::cli::ExitCodeFor(status, env);
}

TEST_CASE("each kind of failure maps to its documented exit code") {
  CHECK(ExitCodeFor(Status::Ok()) == 0);
  CHECK(ExitCodeFor(Status::Negative("task failed")) == 1);
  CHECK(ExitCodeFor(Status::InvalidArgument("u")) == 64);
  CHECK(ExitCodeFor(Status::InvalidData("d")) == 65);
  CHECK(ExitCodeFor(Status::NotFound("n")) == 66);
  CHECK(ExitCodeFor(Status::Unavailable("u")) == 69);
  CHECK(ExitCodeFor(Status::Internal("i")) == 70);
  CHECK(ExitCodeFor(Status::CannotCreate("c")) == 73);
  CHECK(ExitCodeFor(Status::IoError("i")) == 74);
  CHECK(ExitCodeFor(Status::Busy("t")) == 75);
  CHECK(ExitCodeFor(Status::Protocol("p")) == 76);
  CHECK(ExitCodeFor(Status::BadConfig("c")) == 78);
  CHECK(ExitCodeFor(Status::OutputClosed()) == 0);
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
  CHECK(ExitCodeFor(registry_404) == 75);
}

TEST_CASE("a stop signal decides the exit code: 130 for SIGINT, 143 for SIGTERM; the error is still reported") {
  forge::testing::FakeEnv interrupted;
  interrupted.stop().Request(SIGINT);
  CHECK(forge::cli::ExitCodeFor(Status::Cancelled("stopped"), interrupted) == 130);
  CHECK(interrupted.messages().empty());  // a cancel is what the signal asked for
  forge::testing::FakeEnv terminated;
  terminated.stop().Request(SIGTERM);
  CHECK(forge::cli::ExitCodeFor(Status::Ok(), terminated) == 143);
  CHECK(forge::cli::ExitCodeFor(Status::IoError("disk full"), terminated) == 143);
  CHECK(terminated.Texts("error") == std::vector<std::string>{"disk full"});
  // A stage that stopped itself (its reader went away) keeps its own code.
  forge::testing::FakeEnv by_caller;
  by_caller.stop().Request();
  CHECK(forge::cli::ExitCodeFor(Status::InvalidData("bad line"), by_caller) == 65);
  CHECK(by_caller.Reported("error", "bad line"));
}

TEST_CASE("command-line errors are usage errors (64); --help and --version are not") {
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
  CHECK(RunTool({"forge-test"}, []() -> Status { throw std::runtime_error("bug"); }) == 70);
}

}  // namespace cli_test

namespace cli_flags_test {

TEST_CASE("a flag table builds the parser, --help and the man page entries from one row per flag") {
  CLI::App app("test", "forge-test");
  int jobs = 4;
  bool hold = false;
  std::vector<std::string> inputs;
  forge::cli::FlagTable table;
  table.Add(app, "options", {
      {.names = "inputs", .value = "FILE", .bind = forge::cli::Bind(inputs), .help = "files"},
      {.names = "-j,--jobs", .value = "N", .bind = forge::cli::Bind(jobs), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 8)); },
       .help = "Rollouts at once"},
      {.names = "--hold", .bind = forge::cli::Bind(hold), .help = "Keep the sandbox",
       .doc = "Keep each sandbox; the record's \\fBsandbox\\fR names it.\n.IP\nThen verify it."},
  });
  // The man page: positional arguments left to the SYNOPSIS, the default shown.
  auto roff = table.Roff("options");
  REQUIRE(roff.ok());
  CHECK(*roff ==
        ".TP\n\\fB\\-j\\fR, \\fB\\-\\-jobs\\fR \\fIN\\fR\nRollouts at once.\nDefault: \\fB4\\fR.\n"
        ".TP\n\\fB\\-\\-hold\\fR\nKeep each sandbox; the record's \\fBsandbox\\fR names it.\n.IP\nThen verify it.\n");
  auto markdown = table.Markdown("options");
  REQUIRE(markdown.ok());
  CHECK(*markdown == "- `-j, --jobs N`: Rollouts at once. Default: `4`.\n"
                     "- `--hold`: Keep each sandbox; the record's `sandbox` names it. Then verify it.\n");
  CHECK_FALSE(table.Roff("gc").ok());
  // The parser: the same rows, their checks and defaults.
  CHECK(app.get_option("--jobs")->get_default_str() == "4");
  const char* argv[] = {"forge-test", "-j", "6", "--hold", "a.jsonl"};
  app.parse(5, argv);
  CHECK(jobs == 6);
  CHECK(hold);
  CHECK(inputs == std::vector<std::string>{"a.jsonl"});
  const char* bad[] = {"forge-test", "-j", "9"};
  CHECK_THROWS_AS(app.parse(3, bad), CLI::ValidationError);
}

TEST_CASE("roff escapes: dashes, backslashes, and a line that would be a request") {
  CHECK(forge::cli::RoffEscape("--k8s-qps") == "\\-\\-k8s\\-qps");
  CHECK(forge::cli::RoffEscape("a\\b") == "a\\eb");
  CHECK(forge::cli::RoffEscape(".hidden") == "\\&.hidden");
  CHECK(forge::cli::RoffEscape("x.y") == "x.y");
}

}  // namespace cli_flags_test
