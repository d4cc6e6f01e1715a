// Building a task's image through the Engine API (POST /build), as Harbor's
// compose builds it: with BuildKit (`version=2`), which takes what the legacy
// builder rejects (`COPY a b .` with several sources and no trailing slash,
// `RUN --mount`, heredocs, `FROM --platform`), or with the legacy builder
// when the user asks for it. The context goes as the request's tar body (the
// engine hands it to BuildKit; no client session is needed for it), and the
// answer streams as progress.
//
// Tags: a build is tagged by what it made, not by its inputs:
// forge-task:<the image id's first 16 hex digits>. Identical builds (two
// tasks sharing a Dockerfile, however their contexts differ elsewhere) give
// one image with one tag; the image carries the run's label (forge.run), so
// each run has its own image and `gc --images` removes a run's by that tag.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/line_splitter.h"
#include "base/status.h"
#include "sandbox/docker/engine.h"

namespace forge::sandbox::docker {

enum class Builder { kBuildKit, kLegacy };

// Reads the engine's build answer (JSON lines, in any pieces). BuildKit's
// progress comes as "moby.buildkit.trace" lines whose aux is a base64
// protobuf moby.buildkit.v1.StatusResponse (vertexes: the steps, with their
// names, start, end and error; logs: what RUN steps print); the legacy
// builder's as "stream" text. Keeps the step in progress, how many steps
// are done, the last lines of output, the image id and the first error.
class BuildProgress {
 public:
  void Feed(std::string_view bytes);
  // "[2/4] RUN make" (BuildKit's step name, or the legacy "Step 2/4 : RUN make").
  const std::string& step() const { return step_; }
  int steps_done() const { return steps_done_; }
  int steps_known() const { return static_cast<int>(vertexes_.size()); }
  // The last lines a step printed (at most 2 KiB), for a failure's message.
  const std::string& output() const { return output_; }
  const std::string& image_id() const { return image_id_; }  // "sha256:..."
  const std::string& error() const { return error_; }

 private:
  void Line(std::string_view text);
  void Trace(const std::string& status_response);
  void Output(std::string_view text);
  struct Vertex {
    std::string name;
    bool started = false, completed = false;
  };
  std::map<std::string, Vertex> vertexes_;  // by digest
  LineSplitter lines_;
  std::string step_, output_, image_id_, error_;
  int steps_done_ = 0;
};

struct BuildRequest {
  std::string context_dir;  // holds the Dockerfile; named in errors
  std::string context;      // BuildContext(context_dir)
  std::map<std::string, std::string> labels;
  double timeout_seconds = 3600;
  Builder builder = Builder::kBuildKit;
  std::string registry_config;  // X-Registry-Config, "" for none
  // The network of RUN steps: "" for the engine's default (its bridge),
  // "host" on an engine without one (BuildKit fails "network bridge not
  // found" there).
  std::string network_mode;
};

// The images a Dockerfile's stages start FROM (not `scratch`, not an
// earlier stage's name; ${ARG} from the ARGs before the first FROM), in
// order, once each. A BuildKit build without a client session has no
// credentials: an image a registry serves only with them is pulled first
// (DockerBackend::BuildImage), and BuildKit takes it from the engine.
std::vector<std::string> DockerfileBaseImages(const std::string& dockerfile);

// The context directory as the tar the engine reads.
Result<std::string> BuildContext(const std::string& context_dir);

// Builds request.context and tags the image forge-task:<id prefix>;
// returns the tag. A failing
// step is InvalidData naming the context, with the step's last output; a
// base image a registry did not serve this time, or a build past its time,
// is transient (Unavailable). on_progress sees the answer as it arrives.
Result<std::string> BuildImage(Engine& engine, const BuildRequest& request,
                               const std::function<void(const BuildProgress&)>& on_progress = {});

// The tag BuildImage gives an image id ("sha256:abc..." -> "forge-task:abc...").
std::string BuiltImageTag(const std::string& image_id);

}  // namespace forge::sandbox::docker
