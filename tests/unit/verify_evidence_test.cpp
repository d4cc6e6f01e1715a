// The rules of runtime tamper evidence (verify/evidence.h), one access at a
// time, and the host-side views they rest on: path lookups inside a root
// (verify/inside.h) and an image's layers (verify/image_layers.h), on
// directories made here.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "support/temp_dir.h"
#include "verify/evidence.h"
#include "verify/image_layers.h"
#include "verify/inside.h"

namespace verify_evidence_test {
using namespace forge::verify::evidence;
namespace inside = forge::verify::inside;

namespace {

// An image with pytest, numpy and the usual commands; files by content.
Image FakeImage(std::map<std::string, std::string> files = {}) {
  Image image;
  image.has_module = [](const std::string& m) {
    return m == "pytest" || m == "_pytest" || m == "numpy" || m == "os" || m == "json" || m == "pluggy";
  };
  image.has_command = [](const std::string& c) { return c == "python3" || c == "sh" || c == "pytest" || c == "test"; };
  image.content = [files](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  return image;
}

Access Read(std::string path, Origin origin = Origin::kAgent) {
  Access a;
  a.path = std::move(path);
  a.origin = origin;
  return a;
}

Access Exec(std::string path, Origin origin = Origin::kAgent) {
  Access a = Read(std::move(path), origin);
  a.exec = true;
  return a;
}

const ProcessView kShell{Role::kMachinery, false, false, true};
const ProcessView kUtility{Role::kMachinery, false, false, false};
const ProcessView kPythonStarting{Role::kMachinery, true, false};
const ProcessView kPythonStarted{Role::kMachinery, true, true};

constexpr const char* kArea = "/app";

std::string Why(const ProcessView& p, const Access& a, const Image& image = FakeImage()) {
  return Judge(p, a, kArea, image).tampered;
}

const std::string kUvEnv =
    "#!/bin/sh\n# add binaries to PATH if they aren't added yet\n"
    "# affix colons on either side of $PATH to simplify matching\ncase \":${PATH}:\" in\n"
    "    *:\"$HOME/.local/bin\":*)\n        ;;\n    *)\n"
    "        # Prepending path in case a system-installed binary needs to be overridden\n"
    "        export PATH=\"$HOME/.local/bin:$PATH\"\n        ;;\nesac\n";

}  // namespace

TEST_CASE("evidence: the working area is the workdir, unless it is /, a home or a system directory") {
  CHECK(WorkingArea("/app") == "/app");
  CHECK(WorkingArea("/app/") == "/app");
  CHECK(WorkingArea("/usr/src/app") == "/usr/src/app");
  CHECK(WorkingArea("/home/user/project") == "/home/user/project");
  for (const char* none : {"", "/", "/root", "/home/user", "/home", "/usr", "/usr/local", "/usr/lib/x", "/etc",
                           "/tests", "/logs/verifier", "relative"}) {
    CAPTURE(none);
    CHECK(WorkingArea(none).empty());
  }
  CHECK(InWorkingArea("/app/x.py", "/app"));
  CHECK_FALSE(InWorkingArea("/apple/x.py", "/app"));
  CHECK_FALSE(InWorkingArea("/app/x.py", ""));
}

TEST_CASE("evidence: files of the image, of forge or of the verifier are never the agent's hand") {
  for (Origin o : {Origin::kPristine, Origin::kTrusted}) {
    CHECK(Why(kShell, Exec("/usr/bin/python3.11", o)).empty());
    CHECK(Why(kPythonStarting, Read("/usr/lib/python3/dist-packages/_pytest/python.py", o)).empty());
  }
  // Only the verifier's processes are judged: the environment's and the
  // agent's program run by the tests are not.
  for (Role r : {Role::kOther, Role::kAgentProgram}) {
    CHECK(Judge({r, true, false}, Read("/usr/lib/python3/dist-packages/x.pth"), kArea, FakeImage()).tampered.empty());
  }
}

TEST_CASE("evidence: executing what the agent wrote") {
  // A replaced interpreter, a shadowing command, a binary outside the working area.
  CHECK(Why(kShell, Exec("/usr/bin/python3.11")).find("outside the working area") != std::string::npos);
  CHECK(Why(kShell, Exec("/usr/local/bin/pytest")).find("in place of the image's command pytest") != std::string::npos);
  CHECK_FALSE(Why(kShell, Exec("/root/.local/bin/uvx")).empty());
  // The agent's program, in the working area: the process becomes the agent's.
  Decision d = Judge(kShell, Exec("/app/solution.sh"), kArea, FakeImage());
  CHECK(d.tampered.empty());
  CHECK(d.becomes_agent);
  // ...unless it is named like one of the image's commands.
  CHECK_FALSE(Why(kShell, Exec("/app/bin/python3")).empty());
  // Reached through a symlink the agent made, the image's own file is not the verifier's.
  Access retargeted = Exec("/bin/true", Origin::kPristine);
  retargeted.agent_link = "/usr/bin/python3";
  CHECK(Why(kShell, retargeted).find("through /usr/bin/python3, a symlink the agent made") != std::string::npos);
}

TEST_CASE("evidence: Python start-up hooks and the test runner's extension points") {
  for (const char* hook : {"/usr/local/lib/python3.11/dist-packages/zz.pth",
                           "/usr/lib/python3/dist-packages/distutils-precedence.pth",
                           "/root/.local/lib/python3.11/site-packages/usercustomize/__init__.py",
                           "/usr/local/lib/python3.11/dist-packages/sitecustomize.py",
                           "/usr/local/lib/python3.11/dist-packages/pytest_evil/__init__.py", "/conftest.py",
                           "/tox.ini", "/setup.cfg", "/root/.config/pytest.ini"}) {
    CAPTURE(hook);
    CHECK_FALSE(Why(kPythonStarting, Read(hook)).empty());
  }
  // The image's own modules, shadowed or patched, at any time.
  for (const ProcessView& p : {kPythonStarting, kPythonStarted}) {
    CHECK(Why(p, Read("/usr/lib/python3/dist-packages/_pytest/python.py")).find("module _pytest") != std::string::npos);
    CHECK_FALSE(Why(p, Read("/usr/local/lib/python3.11/dist-packages/numpy/__init__.py")).empty());
    CHECK_FALSE(Why(p, Read("/usr/local/lib/python3.11/dist-packages/__pycache__/pytest.cpython-311.pyc")).empty());
    CHECK_FALSE(Why(p, Read("/app/pytest.py")).empty());  // `python3 -m pytest` puts the cwd first
    CHECK_FALSE(Why(p, Read("/app/json/__init__.py")).empty());
  }
  // Past its start-up, a package the image does not have: one the tests import.
  CHECK(Why(kPythonStarted, Read("/usr/local/lib/python3.11/dist-packages/requests/__init__.py")).empty());
  CHECK(Why(kPythonStarted, Read("/etc/nginx/nginx.conf")).empty());  // data the tests read
  CHECK(Why(kPythonStarted, Read("/app/solution.py")).empty());
  // At its start-up, neither.
  CHECK_FALSE(Why(kPythonStarting, Read("/usr/local/lib/python3.11/dist-packages/requests/__init__.py")).empty());
  CHECK_FALSE(Why(kPythonStarting, Read("/app/pygments.py")).empty());  // an optional import from the cwd
}

TEST_CASE("evidence: a Python process's start-up ends at its input") {
  CHECK(Judge(kPythonStarting, Read("/tests/test_outputs.py", Origin::kTrusted), kArea, FakeImage()).ends_startup);
  Access named = Read("/app/out.json");
  named.named_in_argv = true;
  Decision d = Judge(kPythonStarting, named, kArea, FakeImage());
  CHECK(d.tampered.empty());
  CHECK(d.ends_startup);
  // Its script is no input: `pytest` is python3 running /usr/bin/pytest.
  Access script = Read("/usr/bin/pytest", Origin::kPristine);
  script.named_in_argv = script.first_file_arg = true;
  CHECK_FALSE(Judge(kPythonStarting, script, kArea, FakeImage()).ends_startup);
  // The agent's script in the working area: the agent's program.
  Access own = Read("/app/main.py");
  own.named_in_argv = own.first_file_arg = true;
  CHECK(Judge(kPythonStarting, own, kArea, FakeImage()).becomes_agent);
  Access elsewhere = Read("/usr/local/bin/tool.py");
  elsewhere.named_in_argv = elsewhere.first_file_arg = true;
  CHECK(Why(kPythonStarting, elsewhere).find("script the agent wrote outside the working area") != std::string::npos);
  // A file under /tests that neither forge nor the verifier wrote.
  CHECK_FALSE(Why(kShell, Read("/tests/test.sh")).empty());
}

TEST_CASE("evidence: shells and other programs read the agent's files only in the working area or as input") {
  CHECK(Why(kShell, Read("/root/.bashrc")).find("outside the working area") != std::string::npos);
  CHECK_FALSE(Why(kShell, Read("/etc/profile.d/zz.sh")).empty());
  CHECK(Why(kShell, Read("/app/answer.txt")).empty());
  Access named = Read("/etc/nginx/sites-enabled/default");
  named.named_in_argv = true;  // grep -q listen /etc/nginx/... (not its first file)
  CHECK(Why(kUtility, named).empty());
  // A utility's first file is what it works on, an interpreter's its script.
  Access first = Read("/root/.profile");
  first.named_in_argv = first.first_file_arg = true;  // grep -qF LINE ~/.profile
  Decision d = Judge(kUtility, first, kArea, FakeImage());
  CHECK(d.tampered.empty());
  CHECK_FALSE(d.becomes_agent);
  CHECK(Why(kShell, first).find("a script the agent wrote outside the working area") != std::string::npos);
  CHECK(IsShellProgram("/usr/bin/dash"));
  CHECK_FALSE(IsShellProgram("/usr/bin/grep"));
}

TEST_CASE("evidence: the allowlist — data that only names what is checked in its turn") {
  const Image image = FakeImage({{"/usr/local/lib/python3.11/dist-packages/pandas-2.0.dist-info/entry_points.txt",
                                  "[console_scripts]\nx = pytest:main\n\n[pandas_plotting_backends]\n"
                                  "matplotlib = pandas:plotting._matplotlib\n"},
                                 {"/usr/local/lib/python3.11/dist-packages/evil-1.0.dist-info/entry_points.txt",
                                  "[pytest11]\nevil = _pytest.skipping\n"},
                                 {"/root/.local/bin/env", kUvEnv},
                                 {"/root/.cargo/bin/env", kUvEnv + "echo pwned\n"}});
  for (const char* path : {"/etc/ld.so.cache", "/etc/passwd", "/etc/group", "/var/lib/dpkg/status",
                           "/var/lib/dpkg/info/python3-foo.list", "/var/lib/apt/extended_states",
                           "/usr/local/lib/python3.11/dist-packages/pandas-2.0.dist-info/METADATA",
                           "/usr/local/lib/python3.11/dist-packages/pandas-2.0.dist-info/RECORD",
                           "/usr/local/lib/python3.11/dist-packages/pandas-2.0.dist-info/entry_points.txt",
                           "/root/.local/bin/env"}) {
    CAPTURE(path);
    CHECK(AllowlistCheck(path, image) == std::optional<std::string>(""));
    CHECK(Why(kPythonStarting, Read(path), image).empty());
  }
  // An entry point naming the image's code: the agent would choose what the verifier loads.
  CHECK(AllowlistCheck("/usr/local/lib/python3.11/dist-packages/evil-1.0.dist-info/entry_points.txt", image)
            ->find("names the image's module _pytest.skipping") != std::string::npos);
  CHECK_FALSE(Why(kPythonStarting, Read("/usr/local/lib/python3.11/dist-packages/evil-1.0.dist-info/entry_points.txt"),
                  image).empty());
  // An `env` that does more than put a directory on PATH; maintainer scripts run.
  CHECK(AllowlistCheck("/root/.cargo/bin/env", image) == std::nullopt);
  CHECK_FALSE(Why(kShell, Read("/root/.cargo/bin/env"), image).empty());
  CHECK(AllowlistCheck("/var/lib/dpkg/info/python3-foo.postinst", image) == std::nullopt);
  CHECK(AllowlistCheck("/etc/ld.so.preload", image) == std::nullopt);
  CHECK(AllowlistCheck("/etc/hosts", image) == std::nullopt);
}

TEST_CASE("evidence: the names a file may be imported as") {
  using V = std::vector<std::string>;
  CHECK(ModuleNames("/usr/lib/python3/dist-packages/_pytest/python.py", "/app") == V{"_pytest"});
  CHECK(ModuleNames("/usr/lib/python3.11/json/__init__.py", "/app") == V{"json"});
  CHECK(ModuleNames("/usr/lib/python3.11/os.py", "") == V{"os"});
  CHECK(ModuleNames("/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so", "") == V{"_ssl"});
  CHECK(ModuleNames("/usr/local/lib/python3.11/dist-packages/__pycache__/six.cpython-311.pyc", "") == V{"six"});
  CHECK(ModuleNames("/app/src/utils.py", "/app") == V{"src", "utils"});
  CHECK(ModuleNames("/app/pkg/__init__.py", "/app") == V{"pkg"});
  CHECK(ModuleNames("/app/data.json", "/app").empty());
  CHECK(IsPythonProgram("/usr/bin/python3.11"));
  CHECK(IsPythonProgram("python3"));
  CHECK_FALSE(IsPythonProgram("/usr/bin/python3-config"));
  CHECK_FALSE(IsPythonProgram("/bin/bash"));
}

TEST_CASE("inside: a lookup from a root follows symlinks within it and says which it went through") {
  forge::testing::TempDir dir;
  const auto root_path = dir.path() / "root";
  std::filesystem::create_directories(root_path / "usr/bin");
  std::filesystem::create_directories(root_path / "app");
  std::ofstream(root_path / "usr/bin/python3.11") << "#!/bin/true\n";
  std::ofstream(root_path / "usr/bin/true") << "\x7f" "ELF";
  std::filesystem::create_symlink("python3.11", root_path / "usr/bin/python3");
  std::filesystem::create_symlink("/usr/bin/python3", root_path / "app/py");  // absolute: within the root
  std::filesystem::create_symlink("../../../../../../etc/passwd", root_path / "app/escape");
  inside::Fd root(open(root_path.c_str(), O_PATH | O_DIRECTORY));
  inside::Fd app(open((root_path / "app").c_str(), O_PATH | O_DIRECTORY));
  REQUIRE(root.ok());

  inside::Walked w = inside::Walk(root.get(), app.get(), "/app", "py");
  REQUIRE(w.fd.ok());
  REQUIRE(w.links.size() == 2);
  CHECK(w.links[0].first == "/app/py");
  CHECK(w.links[1].first == "/usr/bin/python3");
  struct stat target{};
  REQUIRE(stat((root_path / "usr/bin/python3.11").c_str(), &target) == 0);
  CHECK(inside::SameFile(w.st, target));
  // ".." never leaves the root.
  inside::Walked up = inside::Walk(root.get(), app.get(), "/app", "escape");
  CHECK_FALSE(up.fd.ok());
  inside::Walked dotdot = inside::Walk(root.get(), root.get(), "/", "/../../usr/bin/true");
  REQUIRE(dotdot.fd.ok());
  CHECK(dotdot.links.empty());
  CHECK(inside::Walk(root.get(), root.get(), "/", "/proc/self/fd/3").via_proc);

  inside::Fd script(open((root_path / "usr/bin/python3.11").c_str(), O_RDONLY));
  CHECK(inside::InterpreterOf(script.get()) == "/bin/true");
  inside::Fd elf(open("/bin/true", O_RDONLY));  // the host's own, an ELF with a loader
  CHECK(inside::InterpreterOf(elf.get()).find("ld-") != std::string::npos);
}

TEST_CASE("image layers: the topmost layer that has a path decides; a whiteout deletes") {
  forge::testing::TempDir dir;
  const auto top = dir.path() / "top", base = dir.path() / "base";
  for (const auto& d : {top / "usr/bin", base / "usr/bin", base / "usr/lib/python3/dist-packages/numpy",
                        base / "usr/lib/python3.11", top / "usr/lib/python3/dist-packages"}) {
    std::filesystem::create_directories(d);
  }
  std::ofstream(base / "usr/bin/pytest") << "x";
  std::ofstream(base / "usr/bin/gone") << "x";
  std::ofstream(base / "usr/lib/python3.11/os.py") << "x";
  std::ofstream(base / "usr/lib/python3/dist-packages/six.py") << "x";
  std::filesystem::create_symlink("usr/bin", base / "bin");  // merged /usr
  const bool whiteouts = mknod((top / "usr/bin/gone").c_str(), S_IFCHR | 0600, makedev(0, 0)) == 0 &&
                         mknod((top / "usr/lib/python3/dist-packages/six.py").c_str(), S_IFCHR | 0600, makedev(0, 0)) == 0;
  forge::verify::ImageLayers layers({top.string(), base.string()});
  CHECK(layers.Has("/usr/bin/pytest"));
  CHECK(layers.Has("/bin/pytest"));
  CHECK(layers.HasCommand("pytest"));
  CHECK_FALSE(layers.HasCommand("uvx"));
  CHECK(layers.HasModule("numpy"));
  CHECK(layers.HasModule("os"));
  CHECK_FALSE(layers.HasModule("requests"));
  CHECK_FALSE(layers.HasModule("o"));
  if (whiteouts) {
    CHECK_FALSE(layers.Has("/usr/bin/gone"));
    CHECK_FALSE(layers.HasModule("six"));
  }
}

}  // namespace verify_evidence_test
