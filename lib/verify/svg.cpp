#include "verify/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace forge::verify::svg {

namespace {

constexpr int kWidth = 720;
constexpr int kLabelWidth = 170;  // left column of bar charts
constexpr const char* kInk = "#1f2933";
constexpr const char* kMuted = "#616e7c";
constexpr const char* kGrid = "#e4e7eb";

std::string Open(const std::string& id, int height) {
  return fmt::format(R"(<svg id="{}" class="chart" viewBox="0 0 {} {}" )"
                     R"(width="{}" height="{}" role="img">)",
                     Escape(id), kWidth, height, kWidth, height);
}

std::string Text(double x, double y, const std::string& text, const std::string& extra = "") {
  return fmt::format(R"(<text x="{:.1f}" y="{:.1f}"{}>{}</text>)", x, y, extra.empty() ? "" : " " + extra,
                     Escape(text));
}

// A label cut to fit its column, the whole text in a tooltip.
std::string Label(double x, double y, const std::string& text, size_t max_chars, const std::string& extra) {
  if (text.size() <= max_chars) return Text(x, y, text, extra);
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return fmt::format(R"(<g><title>{}</title>{}</g>)", Escape(text), Text(x, y, text.substr(0, cut) + "…", extra));
}

// Legend entries laid out left to right from (x, y), wrapping at `right`,
// at most kLegendCap of them and then "+N more"; returns the markup and moves
// y below the last line.
std::string Legend(const std::vector<LegendEntry>& items, double x, double* y, bool lines, double right = kWidth - 10) {
  std::string out = R"(<g class="legend">)";
  double cx = x;
  const size_t shown = std::min(items.size(), kLegendCap);
  for (size_t i = 0; i < shown; ++i) {
    const double w = 40 + 7.5 * static_cast<double>(std::min<size_t>(items[i].name.size(), 30));
    if (cx + w > right && cx > x) {
      cx = x;
      *y += 20;
    }
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="{}"{}/>)",
                       cx, *y - 4, cx + 18, *y - 4, items[i].color, lines ? 2.5 : 8,
                       items[i].dashed ? R"( stroke-dasharray="5 3")" : "");
    out += Label(cx + 24, *y, items[i].name, 30, fmt::format(R"(fill="{}")", kInk));
    cx += w;
  }
  if (shown < items.size()) {
    const std::string more = fmt::format("+{} more (see the tables)", items.size() - shown);
    if (cx + 7.0 * static_cast<double>(more.size()) > right && cx > x) {
      cx = x;
      *y += 20;
    }
    out += Text(cx, *y, more, fmt::format(R"(fill="{}")", kMuted));
  }
  *y += 22;
  return out + "</g>";
}

std::string Number(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

}  // namespace

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string LineChart(const std::string& id, const std::string& x_label, const std::string& y_label,
                      const std::vector<Series>& series, const std::vector<LegendEntry>& legend_entries) {
  double x_max = 2;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) x_max = std::max(x_max, x);
  }
  double y = 22;
  std::string legend = Legend(legend_entries, 60, &y, true);
  const double top = y + 4, bottom = top + 240, left = 60, right = kWidth - 24;
  auto px = [&](double x) { return left + (x - 1) / (x_max - 1) * (right - left); };
  auto py = [&](double v) { return bottom - v * (bottom - top); };
  std::string out = Open(id, static_cast<int>(bottom + 48)) + legend;
  for (double v : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    out += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="{}"/>)", left, py(v), right, py(v), kGrid);
    out += Text(left - 8, py(v) + 4, Number(v), fmt::format(R"(text-anchor="end" fill="{}")", kMuted));
  }
  const int step = std::max(1, static_cast<int>(std::ceil(x_max / 10)));
  for (int k = 1; k <= static_cast<int>(x_max); k += step) {
    out += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)", px(k), bottom,
                       bottom + 5, kMuted);
    out += Text(px(k), bottom + 19, std::to_string(k), fmt::format(R"(text-anchor="middle" fill="{}")", kMuted));
  }
  out += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="{3}"/>)", left, bottom, right, kMuted);
  out += Text((left + right) / 2, bottom + 40, x_label, R"(text-anchor="middle" class="axis-label")");
  out += Text(16, (top + bottom) / 2, y_label,
              fmt::format(R"x(text-anchor="middle" class="axis-label" transform="rotate(-90 16 {:.1f})")x", (top + bottom) / 2));
  for (const auto& s : series) {
    std::string points;
    for (const auto& [x, v] : s.points) points += fmt::format("{:.1f},{:.1f} ", px(x), py(v));
    out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2.5" stroke-linejoin="round" points="{}"{}/>)",
                       s.color, points, s.dashed ? R"( stroke-dasharray="7 4")" : "");
    if (s.points.size() > 24) continue;  // a dense curve: the line alone
    for (const auto& [x, v] : s.points) {
      out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}" stroke="{}" stroke-width="2">)"
                         R"(<title>{} k={}: {:.4f}</title></circle>)",
                         px(x), py(v), s.dashed ? "#fff" : s.color, s.color, Escape(s.name), Number(x), v);
    }
  }
  return out + "</svg>";
}

namespace {

// One trend panel in the box (x0, y0, w, h), its axes inside the box.
std::string TrendBox(const TrendPanel& panel, const std::string& x_label, double x0, double y0, double w, double h) {
  std::string out;
  double top = y0 + 8;
  if (!panel.title.empty()) {
    out += Text(x0 + 56, y0 + 14, panel.title, R"(class="panel-title")");
    top = y0 + 28;
  }
  const double left = x0 + 56, right = x0 + w - 16, bottom = y0 + h - 42;
  double x_min = 0, x_max = 0, y_max = panel.y_max;
  bool first = true;
  std::vector<double> xs;
  for (const auto& s : panel.series) {
    for (const auto& p : s.points) {
      x_min = first ? p.x : std::min(x_min, p.x);
      x_max = first ? p.x : std::max(x_max, p.x);
      first = false;
      if (std::find(xs.begin(), xs.end(), p.x) == xs.end()) xs.push_back(p.x);
      if (panel.y_max <= 0) y_max = std::max({y_max, p.y, p.high.value_or(0)});
    }
  }
  if (y_max <= 0) y_max = 1;
  if (panel.y_max <= 0) {  // a round top: 1, 2 or 5 times a power of ten
    const double scale = std::pow(10, std::floor(std::log10(y_max * 1.05)));
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (m * scale >= y_max * 1.05) {
        y_max = m * scale;
        break;
      }
    }
  }
  std::sort(xs.begin(), xs.end());
  auto px = [&](double x) { return x_max > x_min ? left + (x - x_min) / (x_max - x_min) * (right - left) : (left + right) / 2; };
  auto py = [&](double v) { return bottom - v / y_max * (bottom - top); };
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4;
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}"/>)", left, py(v), right, py(v), kGrid);
    out += Text(left - 8, py(v) + 4, panel.percent ? fmt::format("{:.0f}%", v * 100) : Number(v),
                fmt::format(R"(text-anchor="end" fill="{}")", kMuted));
  }
  const size_t step = std::max<size_t>(1, (xs.size() + 11) / 12);
  for (size_t i = 0; i < xs.size(); i += step) {
    out += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)", px(xs[i]), bottom,
                       bottom + 5, kMuted);
    out += Text(px(xs[i]), bottom + 19, Number(xs[i]), fmt::format(R"(text-anchor="middle" fill="{}")", kMuted));
  }
  out += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="{3}"/>)", left, bottom, right, kMuted);
  out += Text((left + right) / 2, bottom + 37, x_label, R"(text-anchor="middle" class="axis-label")");
  if (!panel.y_label.empty()) {
    const double cy = (top + bottom) / 2;
    out += Text(x0 + 14, cy, panel.y_label,
                fmt::format(R"x(text-anchor="middle" class="axis-label" transform="rotate(-90 {:.1f} {:.1f})")x", x0 + 14, cy));
  }
  if (xs.empty() && !panel.empty_note.empty()) {
    out += Text((left + right) / 2, (top + bottom) / 2, panel.empty_note,
                fmt::format(R"(text-anchor="middle" fill="{}" font-style="italic")", kMuted));
  }
  for (const auto& s : panel.series) {
    std::string points;
    for (const auto& p : s.points) points += fmt::format("{:.1f},{:.1f} ", px(p.x), py(p.y));
    out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2.5" stroke-linejoin="round" points="{}"{}/>)",
                       s.color, points, s.dashed ? R"( stroke-dasharray="7 4")" : "");
    for (const auto& p : s.points) {
      if (p.low && p.high) {
        const double x = px(p.x);
        out += fmt::format(R"(<path d="M{0:.1f} {1:.1f}V{2:.1f}M{3:.1f} {1:.1f}H{4:.1f}M{3:.1f} {2:.1f}H{4:.1f}" )"
                           R"(stroke="{5}" stroke-width="1.5" fill="none" opacity="0.7"/>)",
                           x, py(*p.low), py(*p.high), x - 4, x + 4, s.color);
      }
      out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}" stroke="{}" stroke-width="2"><title>{}</title></circle>)",
                         px(p.x), py(p.y), s.dashed ? "#fff" : s.color, s.color, Escape(p.tip));
    }
  }
  return out;
}

}  // namespace

std::string TrendChart(const std::string& id, const std::string& x_label, const TrendPanel& panel) {
  std::vector<LegendEntry> entries;
  for (const auto& s : panel.series) entries.push_back({s.name, s.color, s.dashed});
  double y = 22;
  std::string legend = Legend(entries, 60, &y, true);
  const double h = 300;
  return Open(id, static_cast<int>(y + h)) + legend + TrendBox(panel, x_label, 0, y - 10, kWidth, h) + "</svg>";
}

std::string TrendPanels(const std::string& id, const std::string& x_label, const std::vector<TrendPanel>& panels) {
  constexpr double kPanelHeight = 230;
  const double w = kWidth / 2.0;
  const size_t rows = (panels.size() + 1) / 2;
  std::string out = Open(id, static_cast<int>(rows * kPanelHeight + 8));
  for (size_t i = 0; i < panels.size(); ++i) {
    out += TrendBox(panels[i], x_label, (i % 2) * w, (i / 2) * kPanelHeight, w, kPanelHeight);
  }
  return out + "</svg>";
}

std::string Histogram(const std::string& id, const std::string& x_label, const std::vector<Bin>& bins) {
  const double left = 56, right = kWidth - 16, top = 16, bottom = 190;
  int64_t most = 1;
  for (const auto& b : bins) most = std::max(most, b.count);
  std::string out = Open(id, static_cast<int>(bottom + 44));
  if (bins.empty()) return out + "</svg>";
  const double lo = bins.front().lo, hi = bins.back().hi;
  auto px = [&](double x) { return left + (x - lo) / (hi - lo) * (right - left); };
  auto py = [&](double v) { return bottom - v / static_cast<double>(most) * (bottom - top - 14); };
  out += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="{3}"/>)", left, bottom, right, kMuted);
  for (const auto& b : bins) {
    const double x = px(b.lo) + 1, w = std::max(1.0, px(b.hi) - px(b.lo) - 2);
    out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} to {}: {}</title></rect>)",
                       x, py(static_cast<double>(b.count)), w, bottom - py(static_cast<double>(b.count)), b.color,
                       Number(b.lo), Number(b.hi), b.count);
    if (b.count > 0) {
      out += Text(x + w / 2, py(static_cast<double>(b.count)) - 4, std::to_string(b.count),
                  fmt::format(R"(text-anchor="middle" fill="{}" class="in-bar")", kInk));
    }
  }
  const size_t step = std::max<size_t>(1, (bins.size() + 10) / 11);
  for (size_t i = 0; i <= bins.size(); i += step) {
    const double x = i < bins.size() ? bins[i].lo : bins.back().hi;
    out += Text(px(x), bottom + 18, Number(x), fmt::format(R"(text-anchor="middle" fill="{}")", kMuted));
  }
  out += Text((left + right) / 2, bottom + 38, x_label, R"(text-anchor="middle" class="axis-label")");
  return out + "</svg>";
}

std::string StackedBars(const std::string& id, const std::vector<StackRow>& rows) {
  std::vector<LegendEntry> items;
  for (const auto& row : rows) {
    for (const auto& seg : row.segments) {
      if (std::none_of(items.begin(), items.end(), [&](const auto& i) { return i.name == seg.name; })) {
        items.push_back({seg.name, seg.color, false});
      }
    }
  }
  double y = 22;
  std::string legend = Legend(items, kLabelWidth + 10, &y, false);
  const double left = kLabelWidth + 10, right = kWidth - 90;
  std::string out = Open(id, static_cast<int>(y + 30 * rows.size() + 8)) + legend;
  for (const auto& row : rows) {
    double total = 0;
    for (const auto& seg : row.segments) total += seg.value;
    out += Label(kLabelWidth, y + 13, row.label, 24, R"(text-anchor="end")");
    double x = left;
    for (const auto& seg : row.segments) {
      if (seg.value <= 0 || total <= 0) continue;
      const double w = seg.value / total * (right - left);
      out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="20" fill="{}"><title>{}: {} ({:.1f}%)</title></rect>)",
                         x, y, w, seg.color, Escape(seg.name), Number(seg.value), seg.value / total * 100);
      if (w >= 36) {
        out += Text(x + w / 2, y + 14.5, fmt::format("{:.0f}%", seg.value / total * 100),
                    R"(text-anchor="middle" fill="#fff" class="in-bar")");
      }
      x += w;
    }
    if (total <= 0) out += Text(left, y + 14, "no data", fmt::format(R"(fill="{}")", kMuted));
    out += Text(right + 8, y + 14, row.note, fmt::format(R"(fill="{}")", kMuted));
    y += 30;
  }
  return out + "</svg>";
}

std::string BarPanels(const std::string& id, const std::vector<BarPanel>& panels, bool two_columns) {
  const size_t columns = two_columns ? 2 : 1;
  const double width = static_cast<double>(kWidth) / static_cast<double>(columns);
  const double label = two_columns ? 100 : kLabelWidth, text = two_columns ? 112 : 170;
  const size_t label_chars = two_columns ? 13 : 24;
  auto height = [](const BarPanel& p) { return 34.0 + 26.0 * static_cast<double>(p.bars.size()); };
  double total = 8;
  for (size_t i = 0; i < panels.size(); i += columns) {
    total += std::max(height(panels[i]), i + 1 < panels.size() && two_columns ? height(panels[i + 1]) : 0.0);
  }
  std::string out = Open(id, static_cast<int>(total));
  double top = 22;
  for (size_t i = 0; i < panels.size(); ++i) {
    const BarPanel& panel = panels[i];
    const double x0 = static_cast<double>(i % columns) * width, left = x0 + label + 10, right = x0 + width - text;
    double y = top;
    out += Text(left, y, panel.title, R"(class="panel-title")");
    y += 12;
    for (const auto& bar : panel.bars) {
      out += Label(x0 + label, y + 13, bar.label, label_chars, R"(text-anchor="end")");
      out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="18" fill="{}"/>)", left, y, right - left, "#f5f7fa");
      if (bar.value) {
        const double w = std::clamp(*bar.value / (panel.max > 0 ? panel.max : 1), 0.0, 1.0) * (right - left);
        out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="18" fill="{}"/>)", left, y, w, bar.color);
      }
      out += Text(right + 8, y + 13.5, bar.value ? bar.text : "n/a — " + bar.text, fmt::format(R"(fill="{}")", bar.value ? kInk : kMuted));
      y += 26;
    }
    if (i % columns == columns - 1 || i + 1 == panels.size()) {
      double row = height(panel);
      if (two_columns && i % 2 == 1) row = std::max(row, height(panels[i - 1]));
      top += row;
    }
  }
  return out + "</svg>";
}

std::string ForestPlot(const std::string& id, const std::string& x_label, const std::vector<Estimate>& rows,
                       const Estimate& overall) {
  double lo = -0.1, hi = 0.1;
  lo = std::min(lo, overall.low);
  hi = std::max(hi, overall.high);
  for (const auto& r : rows) {
    if (r.gap) continue;
    lo = std::min(lo, r.low);
    hi = std::max(hi, r.high);
  }
  const double step = hi - lo > 1 ? 0.5 : hi - lo > 0.4 ? 0.25 : 0.1;
  lo = std::max(-1.0, std::floor(lo / step) * step);
  hi = std::min(1.0, std::ceil(hi / step) * step);
  const double left = kLabelWidth + 10, right = kWidth - 200;
  auto px = [&](double v) { return left + (v - lo) / (hi - lo) * (right - left); };
  constexpr double kRow = 20;
  const double top = 12, bottom = top + kRow * static_cast<double>(rows.size() + 1) + 14;
  std::string out = Open(id, static_cast<int>(bottom + 44));
  for (double v = lo; v <= hi + 1e-9; v += step) {
    out += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)", px(v), top, bottom, kGrid);
    out += Text(px(v), bottom + 18, fmt::format("{}{}", v > 1e-9 ? "+" : "", Number(v)),
                fmt::format(R"(text-anchor="middle" fill="{}")", kMuted));
  }
  out += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}" stroke-dasharray="4 3"/>)",
                     px(0), top, bottom, kMuted);
  auto color = [](const Estimate& e) { return e.color.empty() ? std::string("#7b8794") : e.color; };
  double y = top + 14;
  for (const auto& r : rows) {
    if (r.gap) {
      out += fmt::format(R"(<rect x="10" y="{:.1f}" width="{}" height="{}" fill="#f5f7fa"/>)", y - kRow / 2, kWidth - 20, kRow);
      out += Text((left + right) / 2, y + 4, r.label, fmt::format(R"(text-anchor="middle" fill="{}" font-style="italic")", kMuted));
      y += kRow;
      continue;
    }
    out += Label(kLabelWidth, y + 4, r.label, 24, R"(text-anchor="end")");
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"/>)",
                       px(r.low), y, px(r.high), y, color(r));
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}"/>)", px(r.estimate), y, color(r));
    out += Text(right + 12, y + 4, r.text, R"(class="mono")");
    y += kRow;
  }
  out += fmt::format(R"(<line x1="10" y1="{0:.1f}" x2="{1}" y2="{0:.1f}" stroke="{2}"/>)", y - 10, kWidth - 10, kMuted);
  y += 2;
  out += Label(kLabelWidth, y + 4, overall.label, 24, R"(text-anchor="end" font-weight="600")");
  out += fmt::format(R"(<polygon points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}" fill="{}"/>)",
                     px(overall.low), y, px(overall.estimate), y - 8, px(overall.high), y, px(overall.estimate), y + 8,
                     color(overall));
  out += Text(right + 12, y + 4, overall.text, R"(class="mono" font-weight="600")");
  out += Text((left + right) / 2, bottom + 38, x_label, R"(text-anchor="middle" class="axis-label")");
  return out + "</svg>";
}

}  // namespace forge::verify::svg
