// Inline SVG charts for forge-verify's HTML pages: plain markup that a
// browser draws without scripts or outside files. Every chart scales to its
// container (viewBox) and carries its own legend and axis labels; texts are
// escaped here, so callers pass plain strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace forge::verify::svg {

// Text for HTML and SVG: & < > " ' escaped.
std::string Escape(const std::string& text);

// A legend shows at most this many entries, then "+N more".
inline constexpr size_t kLegendCap = 14;

struct LegendEntry {
  std::string name;
  std::string color;
  bool dashed = false;
};

struct Series {
  std::string name;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // x, y (y in [0, 1])
};

// Lines over x = 1..x_max with y from 0 to 1, under the legend given.
std::string LineChart(const std::string& id, const std::string& x_label, const std::string& y_label,
                      const std::vector<Series>& series, const std::vector<LegendEntry>& legend);

struct TrendPoint {
  double x = 0, y = 0;
  std::optional<double> low, high;  // an interval bar when both are given
  std::string tip;                  // the point's tooltip
};

struct TrendSeries {
  std::string name;
  std::string color;
  bool dashed = false;
  std::vector<TrendPoint> points;  // in x order
};

struct TrendPanel {
  std::string title;
  std::string y_label;
  double y_max = 1;  // 0: from the data
  bool percent = false;  // y ticks as percentages
  std::vector<TrendSeries> series;
  std::string empty_note;  // drawn in the panel when no series has a point
};

// y against a numeric x (policy versions): lines through the points with
// their interval bars; one panel with its legend, or several panels two to
// a row, each with its title.
std::string TrendChart(const std::string& id, const std::string& x_label, const TrendPanel& panel);
std::string TrendPanels(const std::string& id, const std::string& x_label, const std::vector<TrendPanel>& panels);

struct Bin {
  double lo = 0, hi = 0;
  int64_t count = 0;
  std::string color;
};

// Vertical bars, one per bin, its count above it; x ticks at the bins' edges.
std::string Histogram(const std::string& id, const std::string& x_label, const std::vector<Bin>& bins);

struct Segment {
  std::string name;  // legend entry
  std::string color;
  double value = 0;  // drawn as its share of the row's total
};

struct StackRow {
  std::string label;
  std::vector<Segment> segments;
  std::string note;  // right of the bar (e.g. "n = 8")
};

// One 100 % bar per row, split by segment; percentages inside wide segments.
std::string StackedBars(const std::string& id, const std::vector<StackRow>& rows);

struct Bar {
  std::string label;
  std::string color;
  std::optional<double> value;  // none: "n/a" drawn instead of a bar
  std::string text;             // right of the bar
};

struct BarPanel {
  std::string title;
  double max = 1;  // the value that fills the width
  std::vector<Bar> bars;
};

// Horizontal bars in titled panels, one under the other, or two to a row.
std::string BarPanels(const std::string& id, const std::vector<BarPanel>& panels, bool two_columns = false);

struct Estimate {
  std::string label;
  double estimate = 0, low = 0, high = 0;
  std::string text;   // right of the plot
  std::string color;  // empty: neutral grey
  bool gap = false;   // a row of text only (what is left out here)
};

// A forest plot: each row a point and its interval on a shared axis with a
// line at zero, in the row's colour; `overall` drawn last, as a diamond,
// under a rule.
std::string ForestPlot(const std::string& id, const std::string& x_label, const std::vector<Estimate>& rows,
                       const Estimate& overall);

}  // namespace forge::verify::svg
