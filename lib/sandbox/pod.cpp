#include "sandbox/pod.h"

namespace forge::sandbox {

const char* ConditionName(ServiceCondition condition) {
  switch (condition) {
    case ServiceCondition::kStarted: return "service_started";
    case ServiceCondition::kHealthy: return "service_healthy";
    case ServiceCondition::kCompletedSuccessfully: return "service_completed_successfully";
  }
  return "service_started";
}

}  // namespace forge::sandbox
