// Inline SVG charts for forge-verify's HTML pages: plain markup that a
// browser draws without scripts or outside files. Every chart scales to its
// container (viewBox) and carries its own legend and axis labels; texts are
// escaped here, so callers pass plain strings.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace forge::verify::svg {

// Text for HTML and SVG: & < > " ' escaped.
std::string Escape(const std::string& text);

struct Series {
  std::string name;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // x, y (y in [0, 1])
};

// Lines over x = 1..x_max with y from 0 to 1, and a legend of the series.
std::string LineChart(const std::string& id, const std::string& x_label, const std::string& y_label,
                      const std::vector<Series>& series);

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

// Horizontal bars in titled panels, one under the other.
std::string BarPanels(const std::string& id, const std::vector<BarPanel>& panels);

struct Estimate {
  std::string label;
  double estimate = 0, low = 0, high = 0;
  std::string text;  // right of the plot
};

// A forest plot: each row a point and its interval on a shared axis with a
// line at zero; `overall` drawn last, as a diamond, under a rule.
std::string ForestPlot(const std::string& id, const std::string& x_label, const std::vector<Estimate>& rows,
                       const Estimate& overall);

}  // namespace forge::verify::svg
