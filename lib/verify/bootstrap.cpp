#include "verify/bootstrap.h"

#include <algorithm>
#include <cmath>


namespace forge::verify {

uint64_t SeedFor(uint64_t seed, std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return seed ^ h;
}

Interval PercentileInterval(std::vector<double>& samples, double estimate, double confidence) {
  Interval out{estimate, estimate, estimate};
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  const double alpha = 1 - confidence;
  const double r = static_cast<double>(samples.size());
  // The tolerance keeps 100 x (1 - 0.9) / 2 at 5, not 4.999...
  auto low = static_cast<size_t>(std::floor(r * alpha / 2 + 1e-9));
  auto high = static_cast<size_t>(std::ceil(r * (1 - alpha / 2) - 1e-9));
  high = std::clamp<size_t>(high, 1, samples.size()) - 1;
  low = std::min(low, high);
  out.low = samples[low];
  out.high = samples[high];
  return out;
}

std::vector<Interval> BootstrapMeans(const std::vector<std::vector<double>>& values, int64_t resamples,
                                     uint64_t seed, double confidence) {
  const size_t stats = values.size();
  const size_t units = stats > 0 ? values[0].size() : 0;
  std::vector<Interval> out(stats);
  if (units == 0) return out;
  std::vector<std::vector<double>> samples(stats, std::vector<double>(static_cast<size_t>(resamples)));
  std::vector<size_t> drawn(units);
  SplitMix64 gen(seed);
  for (int64_t r = 0; r < resamples; ++r) {
    for (size_t u = 0; u < units; ++u) drawn[u] = static_cast<size_t>(gen.Below(units));
    for (size_t m = 0; m < stats; ++m) {
      double sum = 0;
      for (size_t u : drawn) sum += values[m][u];
      samples[m][static_cast<size_t>(r)] = sum / static_cast<double>(units);
    }
  }
  for (size_t m = 0; m < stats; ++m) {
    double sum = 0;
    for (double v : values[m]) sum += v;
    out[m] = PercentileInterval(samples[m], sum / static_cast<double>(units), confidence);
  }
  return out;
}

}  // namespace forge::verify
