#include "sandbox/docker/image_build.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "sandbox/docker/image_pull.h"
#include "sandbox/tar.h"

namespace forge::sandbox::docker {
namespace {

using Json = nlohmann::json;

constexpr size_t kOutputKept = 2048;

// The protobuf wire format, as far as reading BuildKit's status needs:
// varints and length-delimited fields; fixed-width ones are skipped.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view data) : data_(data) {}
  // The next field; false at the end or on malformed input.
  bool Next(uint64_t& field, std::string_view& bytes) {
    uint64_t key = 0, value = 0;
    if (!Varint(key)) return false;
    field = key >> 3;
    bytes = {};
    switch (key & 7) {
      case 0: return Varint(value);
      case 1: return Skip(8);
      case 5: return Skip(4);
      case 2:
        if (!Varint(value) || value > data_.size() - pos_) return false;
        bytes = data_.substr(pos_, value);
        pos_ += value;
        return true;
      default: return false;
    }
  }

 private:
  bool Varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      out |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > data_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

// StatusResponse fields (moby/buildkit api/services/control/control.proto).
constexpr uint64_t kVertexes = 1, kLogs = 3;
constexpr uint64_t kVertexDigest = 1, kVertexName = 3, kVertexStarted = 5, kVertexCompleted = 6;
constexpr uint64_t kLogMsg = 4;

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

void BuildProgress::Feed(std::string_view bytes) {
  lines_.Feed(bytes, [this](std::string_view line) { Line(line); });
}

void BuildProgress::Line(std::string_view text) {
  auto line = Json::parse(text, nullptr, false);
  if (!line.is_object()) return;
  if (line.contains("error") && error_.empty()) {
    const Json& error = line["error"];
    error_ = error.is_string() ? error.get<std::string>() : error.dump();
  }
  const std::string id = line.value("id", std::string());
  const Json aux = line.value("aux", Json());
  if (id == "moby.buildkit.trace" && aux.is_string()) {
    auto decoded = Base64Decode(aux.get<std::string>());
    if (decoded.ok()) Trace(*decoded);
  } else if (aux.is_object() && aux.value("ID", Json()).is_string()) {
    // BuildKit's "moby.image.id", and the legacy builder's last aux.
    image_id_ = aux["ID"].get<std::string>();
  }
  if (line.value("stream", Json()).is_string()) {
    const std::string stream = Trimmed(line["stream"].get<std::string>());
    if (stream.rfind("Step ", 0) == 0) {
      step_ = stream;
      ++steps_done_;
    } else if (!stream.empty()) {
      Output(stream + "\n");
    }
  }
}

void BuildProgress::Trace(const std::string& status_response) {
  ProtoReader status(status_response);
  uint64_t field = 0;
  std::string_view bytes;
  while (status.Next(field, bytes)) {
    if (field == kLogs) {
      ProtoReader log(bytes);
      uint64_t f = 0;
      std::string_view b;
      while (log.Next(f, b)) {
        if (f == kLogMsg) Output(b);
      }
      continue;
    }
    if (field != kVertexes) continue;
    ProtoReader vertex(bytes);
    std::string digest, name;
    bool started = false, completed = false;
    uint64_t f = 0;
    std::string_view b;
    while (vertex.Next(f, b)) {
      if (f == kVertexDigest) digest = b;
      else if (f == kVertexName) name = b;
      else if (f == kVertexStarted) started = true;
      else if (f == kVertexCompleted) completed = true;
    }
    if (digest.empty()) continue;
    Vertex& v = vertexes_[digest];
    if (!name.empty()) v.name = name;
    if (completed && !v.completed) ++steps_done_;
    v.started = v.started || started;
    v.completed = v.completed || completed;
    if (v.started && !v.completed && !v.name.empty()) step_ = v.name;
  }
}

void BuildProgress::Output(std::string_view text) {
  output_.append(text);
  if (output_.size() > kOutputKept) output_.erase(0, output_.size() - kOutputKept);
}

std::vector<std::string> DockerfileBaseImages(const std::string& dockerfile) {
  // Instructions, continuation lines joined, comments dropped.
  std::vector<std::string> lines;
  std::string joined;
  std::istringstream in(dockerfile);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || (line[first] == '#' && joined.empty())) continue;
    if (!line.empty() && line.back() == '\\') {
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    lines.push_back(joined + line);
    joined.clear();
  }
  std::map<std::string, std::string> args;  // before the first FROM
  std::set<std::string> stages;
  std::vector<std::string> images;
  bool seen_from = false;
  auto substitute = [&](std::string word) {
    for (const auto& [name, value] : args) {
      for (const std::string& ref : {"${" + name + "}", "$" + name}) {
        for (size_t at; (at = word.find(ref)) != std::string::npos;) word.replace(at, ref.size(), value);
      }
    }
    return word;
  };
  for (const std::string& line : lines) {
    std::istringstream words(line);
    std::string keyword;
    words >> keyword;
    for (char& c : keyword) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (keyword == "ARG" && !seen_from) {
      std::string arg;
      words >> arg;
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) args[arg.substr(0, eq)] = arg.substr(eq + 1);
      continue;
    }
    if (keyword != "FROM") continue;
    seen_from = true;
    std::string image, as, name;
    while (words >> image && image.rfind("--", 0) == 0) {}
    words >> as >> name;
    image = substitute(image);
    std::string lower_as = as;
    for (char& c : lower_as) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!image.empty() && image != "scratch" && image.find('$') == std::string::npos && !stages.count(image) &&
        std::find(images.begin(), images.end(), image) == images.end()) {
      images.push_back(image);
    }
    if (lower_as == "as" && !name.empty()) stages.insert(name);
  }
  return images;
}

Result<std::string> BuildContext(const std::string& context_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(context_dir + "/Dockerfile", ec)) {
    return Status::InvalidData(context_dir + ": no Dockerfile to build");
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(context_dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  if (ec) return Status::NotFound(context_dir + ": " + ec.message());
  std::sort(names.begin(), names.end());
  TarWriter tar;
  for (const auto& name : names) FORGE_RETURN_IF_ERROR(tar.AddHostPath(context_dir + "/" + name, name));
  return tar.Finish();
}

std::string BuiltImageTag(const std::string& image_id) {
  const size_t colon = image_id.find(':');
  return "forge-task:" + image_id.substr(colon == std::string::npos ? 0 : colon + 1, 16);
}

Result<std::string> BuildImage(Engine& engine, const BuildRequest& request,
                               const std::function<void(const BuildProgress&)>& on_progress) {
  const bool buildkit = request.builder == Builder::kBuildKit;
  std::string path = "/build?rm=1&forcerm=1&labels=" + Engine::Escape(Json(request.labels).dump());
  if (buildkit) path += "&version=2";
  if (!request.network_mode.empty()) path += "&networkmode=" + Engine::Escape(request.network_mode);
  std::vector<std::string> headers = {"Content-Type: application/x-tar"};
  if (!request.registry_config.empty()) headers.push_back("X-Registry-Config: " + request.registry_config);
  const std::string what = "build " + request.context_dir;
  const double timeout = std::max(1.0, request.timeout_seconds);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  BuildProgress progress;
  std::string body_head;  // a non-200 answer's body, for its message
  auto status = engine.Stream(
      "POST", path, request.context,
      [&](std::string_view bytes) {
        if (body_head.size() < 65536) body_head.append(bytes.substr(0, 65536 - body_head.size()));
        progress.Feed(bytes);
        if (on_progress) on_progress(progress);
      },
      [&] { return std::chrono::steady_clock::now() < deadline; }, headers);
  if (!status.ok() && status.status().kind() == Kind::kCancelled) {
    return Status::Unavailable(fmt::format("Docker engine: {}: not done after {:g} s (build_timeout_sec)", what,
                                           timeout));
  }
  if (!status.ok()) return status.status().Prefixed(what);
  if (*status != 200) {
    Status failed = StatusForHttp(what, HttpResponse{*status, body_head, "application/json"});
    return buildkit ? failed.Prefixed("BuildKit (forge-launch --legacy-builder uses the engine's legacy builder)")
                    : failed;
  }
  if (!progress.error().empty()) {
    const std::string output = Trimmed(progress.output());
    const std::string message = "Docker engine: " + what + ": " + progress.error() +
                                (output.empty() ? "" : "; its last output:\n" + output);
    // A base image that a registry did not serve this time is worth a
    // retry; a Dockerfile step that failed is not.
    return RegistryErrorIsTransient(progress.error()) ? Status::Unavailable(message) : Status::InvalidData(message);
  }
  if (progress.image_id().empty()) return Status::Protocol("Docker engine: " + what + ": no image id in the answer");
  const std::string tag = BuiltImageTag(progress.image_id());
  const std::string repo = tag.substr(0, tag.find(':'));
  auto tagged = engine.Call("POST", "/images/" + Engine::Escape(progress.image_id()) + "/tag?repo=" + repo +
                                        "&tag=" + tag.substr(tag.find(':') + 1));
  if (!tagged.ok()) return tagged.status();
  if (tagged->status != 201 && tagged->status != 200) return StatusForHttp("tag " + tag, *tagged);
  return tag;
}

}  // namespace forge::sandbox::docker
