// The build answer reader (sandbox/docker/image_build.h): BuildKit's trace
// lines (base64 protobuf StatusResponse) and the legacy builder's stream
// lines, fed in pieces cut at every byte; the tag an image id gives.
#include <doctest/doctest.h>

#include <string>

#include "base/base64.h"
#include "sandbox/docker/image_build.h"

// A namespace of its own: names local to this file stay apart in a unity build.
namespace image_build_test {
namespace {

using forge::sandbox::docker::BuildProgress;

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// A length-delimited field.
std::string Field(uint64_t number, const std::string& bytes) {
  return Varint(number << 3 | 2) + Varint(bytes.size()) + bytes;
}

std::string Vertex(const std::string& digest, const std::string& name, bool started, bool completed) {
  std::string v = Field(1, digest) + Field(2, "sha256:input") + Field(3, name);
  v += Varint(4 << 3) + Varint(1);  // cached = true: a varint field, skipped
  if (started) v += Field(5, Varint(1 << 3) + Varint(1700000000));  // a Timestamp
  if (completed) v += Field(6, "");
  return Field(1, v);
}

std::string Log(const std::string& digest, const std::string& msg) {
  return Field(3, Field(1, digest) + Varint(3 << 3) + Varint(1) + Field(4, msg));
}

std::string TraceLine(const std::string& status_response) {
  return R"({"id":"moby.buildkit.trace","aux":")" + forge::Base64Encode(status_response) + "\"}\n";
}

}  // namespace

TEST_CASE("a BuildKit answer: the step under way, steps done, a step's output, the image id, in any pieces") {
  const std::string answer =
      TraceLine(Vertex("sha256:a", "[1/2] FROM docker.io/library/forge-busybox:latest", true, false)) +
      TraceLine(Vertex("sha256:a", "", true, true) + Vertex("sha256:b", "[2/2] COPY a b .", true, false)) +
      TraceLine(Log("sha256:b", "copied\n")) +
      R"({"id":"moby.image.id","aux":{"ID":"sha256:0123456789abcdef0123"}})" "\n";
  for (size_t cut = 0; cut <= answer.size(); ++cut) {
    CAPTURE(cut);
    BuildProgress progress;
    progress.Feed(answer.substr(0, cut));
    progress.Feed(answer.substr(cut));
    CHECK(progress.step() == "[2/2] COPY a b .");
    CHECK(progress.steps_done() == 1);
    CHECK(progress.steps_known() == 2);
    CHECK(progress.output() == "copied\n");
    CHECK(progress.image_id() == "sha256:0123456789abcdef0123");
    CHECK(progress.error().empty());
  }
}

TEST_CASE("a failed build keeps its first error and the failing step's last output; junk is skipped") {
  BuildProgress progress;
  progress.Feed(TraceLine(Vertex("sha256:c", "[2/3] RUN make", true, false)));
  progress.Feed(TraceLine(Log("sha256:c", "cc: error: no input files\n")));
  progress.Feed("not json\n");
  progress.Feed(R"({"id":"moby.buildkit.trace","aux":"%%%not base64"})" "\n");
  progress.Feed(TraceLine("\xff\xff\xff"));  // a malformed protobuf: ignored
  progress.Feed(R"({"errorDetail":{"message":"exit code: 1"},"error":"executor failed running [/bin/sh -c make]: exit code: 1"})" "\n");
  progress.Feed(R"({"error":"a second error"})" "\n");
  CHECK(progress.error() == "executor failed running [/bin/sh -c make]: exit code: 1");
  CHECK(progress.output() == "cc: error: no input files\n");
  CHECK(progress.step() == "[2/3] RUN make");
  CHECK(progress.image_id().empty());
  // Output is bounded: the last 2 KiB.
  progress.Feed(TraceLine(Log("sha256:c", std::string(5000, 'x') + "tail")));
  CHECK(progress.output().size() == 2048);
  CHECK(progress.output().ends_with("tail"));
}

TEST_CASE("the legacy builder's answer: Step lines, output, the image id") {
  BuildProgress progress;
  progress.Feed(R"({"stream":"Step 1/2 : FROM forge-busybox:latest\n"})" "\n"
                R"({"stream":"\n"})" "\n"
                R"({"stream":"Step 2/2 : RUN echo hi\n"})" "\n"
                R"({"stream":"hi\n"})" "\n"
                R"({"aux":{"ID":"sha256:feedfacefeedface00"}})" "\n"
                R"({"stream":"Successfully built feedfacefeed\n"})" "\n");
  CHECK(progress.step() == "Step 2/2 : RUN echo hi");
  CHECK(progress.steps_done() == 2);
  CHECK(progress.image_id() == "sha256:feedfacefeedface00");
  CHECK(progress.output() == "hi\nSuccessfully built feedfacefeed\n");
}

TEST_CASE("a Dockerfile's base images: flags, stages, ARGs before FROM, continuations, comments, scratch") {
  const std::string dockerfile =
      "# syntax=docker/dockerfile:1\n"
      "ARG BASE=127.0.0.1:5000/private:1\n"
      "FROM --platform=$BUILDPLATFORM ${BASE} AS build\n"
      "RUN make \\\n"
      "  FROM-not-an-instruction\n"
      "from build as test\n"
      "FROM scratch\n"
      "FROM \\\n  debian:bookworm\n"
      "FROM $UNKNOWN\n"
      "FROM debian:bookworm\n";
  CHECK(forge::sandbox::docker::DockerfileBaseImages(dockerfile) ==
        std::vector<std::string>{"127.0.0.1:5000/private:1", "debian:bookworm"});
}

TEST_CASE("a built image's tag is its id's first 16 hex digits") {
  CHECK(forge::sandbox::docker::BuiltImageTag("sha256:0123456789abcdef0123") == "forge-task:0123456789abcdef");
}

}  // namespace image_build_test
