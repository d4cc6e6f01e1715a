// What a container waiting on its image says about the next try, read from
// the waiting state the kubelet writes (reason, message). The kubelet's
// message is the runtime's error as the CRI returned it
// (pkg/kubelet/images/image_manager.go: ErrImagePull with err.Error(); from
// 1.31 ImagePullBackOff's "Back-off pulling image "X"" carries it too, after
// ": ErrImagePull: "):
//
//   missing   containerd: rpc error: code = NotFound desc = failed to pull and
//             unpack image "R": failed to resolve reference "R": R: not found
//             (every host answered 404: the tag, the digest or the repository
//             is not there); CRI-O (containers/image): reading manifest T in
//             R: manifest unknown / name unknown: repository name not known to
//             registry; Docker Hub: repository does not exist; and
//             ErrImageNeverPull (not on the node, imagePullPolicy Never)
//   refused   the registry refused the pod's credentials: 401/403,
//             unauthorized, denied, no basic auth credentials;
//             SignatureValidationFailed
//   invalid   InvalidImageName: the reference does not parse
//   transient anything else: the registry unreachable (connection refused,
//             i/o timeout, TLS), a 5xx (containerd reports the first non-404
//             answer, so one host down is not a 404), RegistryUnavailable,
//             a back-off message that does not say why
#pragma once

#include <string>

namespace forge::sandbox::k8s {

enum class PullFailure : unsigned char { kNone, kTransient, kMissing, kRefused, kInvalid };

// kNone when reason is not about pulling the image.
PullFailure ClassifyPullFailure(const std::string& reason, const std::string& message);

// Whether a rollout may pass when its pod is made again.
inline bool PullMayPass(PullFailure failure) {
  return failure == PullFailure::kNone || failure == PullFailure::kTransient;
}

// What forge-launch's error adds after the kubelet's words, for a failure
// that is not retried ("" for the others).
std::string PullFailureHint(PullFailure failure, const std::string& image);

}  // namespace forge::sandbox::k8s
