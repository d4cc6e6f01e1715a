#include "sandbox/k8s/image_pull_failure.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace forge::sandbox::k8s {
namespace {

std::string PullTextLower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool PullTextSays(const std::string& lowered, std::initializer_list<const char*> texts) {
  return std::any_of(texts.begin(), texts.end(), [&](const char* t) { return lowered.find(t) != std::string::npos; });
}

}  // namespace

PullFailure ClassifyPullFailure(const std::string& reason, const std::string& message) {
  if (reason == "InvalidImageName") return PullFailure::kInvalid;
  if (reason == "ErrImageNeverPull") return PullFailure::kMissing;
  if (reason == "SignatureValidationFailed") return PullFailure::kRefused;
  if (reason == "RegistryUnavailable") return PullFailure::kTransient;
  if (reason != "ErrImagePull" && reason != "ImagePullBackOff") return PullFailure::kNone;
  const std::string said = PullTextLower(message);
  if (PullTextSays(said, {"code = notfound", ": not found", "manifest unknown", "name unknown",
                  "not known to registry", "repository does not exist"})) {
    return PullFailure::kMissing;
  }
  if (PullTextSays(said, {"unauthorized", "no basic auth credentials", "authentication required", "denied", "forbidden"})) {
    return PullFailure::kRefused;
  }
  return PullFailure::kTransient;
}

std::string PullFailureHint(PullFailure failure, const std::string& image) {
  const std::string named = image.empty() ? "the pod's image" : "image " + image;
  switch (failure) {
    case PullFailure::kMissing:
      return named + " is not in its registry (no such tag, digest or repository), or not on the node with "
                     "imagePullPolicy Never: push it or name one that is there";
    case PullFailure::kRefused:
      return "the registry refused the credentials of the pod's imagePullSecrets for " + named + ", or it has none";
    case PullFailure::kInvalid:
      return named + " is not a valid image reference";
    case PullFailure::kNone:
    case PullFailure::kTransient:
      break;
  }
  return "";
}

}  // namespace forge::sandbox::k8s
