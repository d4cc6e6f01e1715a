#include "pack/bin_packing.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace forge::pack {

std::vector<Bin> BestFitDecreasing(const std::vector<int64_t>& lengths, int64_t budget) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<Bin> bins;
  std::multimap<int64_t, size_t> room;  // remaining capacity → bin
  for (size_t item : order) {
    const int64_t length = lengths[item];
    auto fit = room.lower_bound(length);  // the tightest bin that still fits
    size_t bin;
    if (fit == room.end()) {
      bin = bins.size();
      bins.emplace_back();
    } else {
      bin = fit->second;
      room.erase(fit);
    }
    bins[bin].items.push_back(item);
    bins[bin].used += length;
    if (budget - bins[bin].used > 0) room.emplace(budget - bins[bin].used, bin);
  }
  return bins;
}

PackingFigures Figures(const std::vector<Bin>& bins, int64_t budget) {
  PackingFigures f;
  f.bins = static_cast<int64_t>(bins.size());
  for (const Bin& b : bins) f.tokens += b.used;
  f.capacity = f.bins * budget;
  f.padding_waste = f.capacity - f.tokens;
  f.utilisation = f.capacity ? static_cast<double>(f.tokens) / static_cast<double>(f.capacity) : 0;
  f.ideal_bins = budget ? (f.tokens + budget - 1) / budget : 0;
  f.vs_ideal = f.bins ? static_cast<double>(f.ideal_bins) / static_cast<double>(f.bins) : 0;
  return f;
}

}  // namespace forge::pack
