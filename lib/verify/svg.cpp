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

// Legend entries laid out left to right from (x, y), wrapping at the width;
// returns the markup and moves y below the last line.
std::string Legend(const std::vector<std::pair<std::string, std::string>>& items, double x, double* y,
                   const std::vector<bool>& dashed = {}, bool lines = false) {
  std::string out = R"(<g class="legend">)";
  double cx = x;
  for (size_t i = 0; i < items.size(); ++i) {
    const double w = 30 + 7.0 * static_cast<double>(std::min<size_t>(items[i].first.size(), 30));
    if (cx + w > kWidth - 10 && cx > x) {
      cx = x;
      *y += 20;
    }
    const bool dash = i < dashed.size() && dashed[i];
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="{}"{}/>)",
                       cx, *y - 4, cx + 18, *y - 4, items[i].second, lines ? 2.5 : 8,
                       dash ? R"( stroke-dasharray="5 3")" : "");
    out += Label(cx + 24, *y, items[i].first, 30, fmt::format(R"(fill="{}")", kInk));
    cx += w;
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
                      const std::vector<Series>& series) {
  std::vector<std::pair<std::string, std::string>> items;
  std::vector<bool> dashed;
  double x_max = 2;
  for (const auto& s : series) {
    items.emplace_back(s.name, s.color);
    dashed.push_back(s.dashed);
    for (const auto& [x, y] : s.points) x_max = std::max(x_max, x);
  }
  double y = 22;
  std::string legend = Legend(items, 60, &y, dashed, true);
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
    for (const auto& [x, v] : s.points) {
      out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}" stroke="{}" stroke-width="2">)"
                         R"(<title>{} k={}: {:.4f}</title></circle>)",
                         px(x), py(v), s.dashed ? "#fff" : s.color, s.color, Escape(s.name), Number(x), v);
    }
  }
  return out + "</svg>";
}

std::string StackedBars(const std::string& id, const std::vector<StackRow>& rows) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& row : rows) {
    for (const auto& seg : row.segments) {
      if (std::none_of(items.begin(), items.end(), [&](const auto& i) { return i.first == seg.name; })) {
        items.emplace_back(seg.name, seg.color);
      }
    }
  }
  double y = 22;
  std::string legend = Legend(items, kLabelWidth + 10, &y);
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

std::string BarPanels(const std::string& id, const std::vector<BarPanel>& panels) {
  size_t rows = 0;
  for (const auto& p : panels) rows += p.bars.size();
  const double left = kLabelWidth + 10, right = kWidth - 170;
  std::string out = Open(id, static_cast<int>(panels.size() * 34 + rows * 26 + 8));
  double y = 22;
  for (const auto& panel : panels) {
    out += Text(left, y, panel.title, R"(class="panel-title")");
    y += 12;
    for (const auto& bar : panel.bars) {
      out += Label(kLabelWidth, y + 13, bar.label, 24, R"(text-anchor="end")");
      out += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.1f}" height="18" fill="{}"/>)", left, y, right - left, "#f5f7fa");
      if (bar.value) {
        const double w = std::clamp(*bar.value / (panel.max > 0 ? panel.max : 1), 0.0, 1.0) * (right - left);
        out += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.1f}" height="18" fill="{}"/>)", left, y, w, bar.color);
      }
      out += Text(right + 8, y + 13.5, bar.value ? bar.text : "n/a — " + bar.text, fmt::format(R"(fill="{}")", bar.value ? kInk : kMuted));
      y += 26;
    }
    y += 22;
  }
  return out + "</svg>";
}

std::string ForestPlot(const std::string& id, const std::string& x_label, const std::vector<Estimate>& rows,
                       const Estimate& overall) {
  double lo = -0.1, hi = 0.1;
  lo = std::min(lo, overall.low);
  hi = std::max(hi, overall.high);
  for (const auto& r : rows) {
    lo = std::min(lo, r.low);
    hi = std::max(hi, r.high);
  }
  const double step = hi - lo > 1 ? 0.5 : hi - lo > 0.4 ? 0.25 : 0.1;
  lo = std::max(-1.0, std::floor(lo / step) * step);
  hi = std::min(1.0, std::ceil(hi / step) * step);
  const double left = kLabelWidth + 10, right = kWidth - 200;
  auto px = [&](double v) { return left + (v - lo) / (hi - lo) * (right - left); };
  const double top = 12, bottom = top + 26 * (rows.size() + 1) + 14;
  std::string out = Open(id, static_cast<int>(bottom + 44));
  for (double v = lo; v <= hi + 1e-9; v += step) {
    out += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)", px(v), top, bottom, kGrid);
    out += Text(px(v), bottom + 18, fmt::format("{}{}", v > 1e-9 ? "+" : "", Number(v)),
                fmt::format(R"(text-anchor="middle" fill="{}")", kMuted));
  }
  out += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}" stroke-dasharray="4 3"/>)",
                     px(0), top, bottom, kMuted);
  auto color = [](const Estimate& e) { return e.low > 0 ? "#2f9e6b" : e.high < 0 ? "#d6604d" : "#52606d"; };
  double y = top + 14;
  for (const auto& r : rows) {
    out += Label(kLabelWidth, y + 4, r.label, 24, R"(text-anchor="end")");
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"/>)",
                       px(r.low), y, px(r.high), y, color(r));
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}"/>)", px(r.estimate), y, color(r));
    out += Text(right + 12, y + 4, r.text, R"(class="mono")");
    y += 26;
  }
  out += fmt::format(R"(<line x1="10" y1="{0:.1f}" x2="{1}" y2="{0:.1f}" stroke="{2}"/>)", y - 12, kWidth - 10, kMuted);
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
