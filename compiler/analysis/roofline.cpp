// analysis/roofline.cpp — see roofline.h.
//
// 1. Choose the axes' ranges: whole decades around the ridge and every
//    point's intensity (one decade of margin), and from the lowest point (or
//    the roof at the left edge) up to the decade above the peak.
// 2. Map x and y through log10 onto the plot's box.
// 3. Write the frame, the decade grid, the roof (three vertices: left edge,
//    ridge, right edge), the points with their labels, and a legend.
#include "analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "analysis/picture.h"

namespace spmd {
namespace {

constexpr double kLeft = 90, kTop = 56, kWidth = 560, kHeight = 340;

std::string num(double v, const char *format = "%.2f") {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

/// `989 TFLOP/s`, `370 GB/s`-style: a value with an SI prefix and a unit.
std::string si(double v, const std::string &unit) {
  const char *prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int k = 0;
  while (std::abs(v) >= 1000 && k < 6) {
    v /= 1000;
    ++k;
  }
  return num(v, "%.3g") + " " + prefixes[k] + unit;
}

/// `1e3` for a decade.
std::string decade(int exponent) { return "1e" + std::to_string(exponent); }

struct Axes {
  int x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;  // decades
  double px(double x) const { return kLeft + (std::log10(x) - x_lo) / (x_hi - x_lo) * kWidth; }
  double py(double y) const {
    return kTop + kHeight - (std::log10(y) - y_lo) / (y_hi - y_lo) * kHeight;
  }
};

struct Point {
  std::string label;
  double intensity;  // +inf without communication
  double rate;       // flop/s attained under the estimate
};

}  // namespace

std::string roofline_svg(const std::vector<std::pair<std::string, CostReport>> &programs,
                         const HardwareProfile &profile) {
  const double peak = profile.flops_per_s, bw = profile.bw_bytes_per_s;
  const double ridge = peak / bw;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Point> points;
  std::vector<std::string> not_drawn;
  for (const auto &[title, r] : programs) {
    if (r.flops() <= 0 || r.total_s() <= 0) {
      not_drawn.push_back(title + ": no flops, not drawn");
      continue;
    }
    points.push_back({title, r.intensity().value_or(inf), r.flops() / r.total_s()});
  }

  // 1. Ranges.
  double x_min = ridge, x_max = ridge, y_min = peak;
  for (const Point &p : points) {
    if (std::isfinite(p.intensity)) {
      x_min = std::min(x_min, p.intensity);
      x_max = std::max(x_max, p.intensity);
    }
    y_min = std::min(y_min, p.rate);
  }
  Axes a;
  a.x_lo = static_cast<int>(std::floor(std::log10(x_min))) - 1;
  a.x_hi = static_cast<int>(std::ceil(std::log10(x_max))) + 1;
  const double x_left = std::pow(10.0, a.x_lo), x_right = std::pow(10.0, a.x_hi);
  y_min = std::min(y_min, std::min(peak, x_left * bw));
  a.y_lo = static_cast<int>(std::floor(std::log10(y_min)));
  a.y_hi = static_cast<int>(std::floor(std::log10(peak))) + 1;

  std::ostringstream svg;
  const double width = kLeft + kWidth + 24;
  double height =
      kTop + kHeight + 64 + 18.0 * static_cast<double>(points.size() + not_drawn.size());
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\">\n"
      << " <style>text { font-family: monospace; font-size: 12px; fill: #222 }"
         " .title { font-size: 14px; font-weight: bold } .tick, .note { fill: #555 }"
         " .grid { stroke: #ddd; stroke-width: 1 } .frame { fill: none; stroke: #888 }"
         " .roof { fill: none; stroke: #e15759; stroke-width: 2.5 }"
         " .point { fill: #4e79a7; stroke: #fff; stroke-width: 1.5 }</style>\n"
      << " <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  auto text = [&](double x, double y, const std::string &t, const std::string &cls,
                  const char *anchor = "start") {
    svg << " <text x=\"" << num(x) << "\" y=\"" << num(y) << "\" class=\"" << cls
        << "\" text-anchor=\"" << anchor << "\">" << xml_escape(t) << "</text>\n";
  };
  text(16, 24,
       "roofline on " + profile.name + ": peak " + si(peak, "FLOP/s") + ", collective bandwidth " +
           si(bw, "B/s") + ", alpha " + format_seconds(profile.latency_s),
       "title");
  // The box, with what a reader (or a test) needs to map pixels back to values.
  svg << " <g class=\"plot\" data-left=\"" << kLeft << "\" data-top=\"" << kTop
      << "\" data-width=\"" << kWidth << "\" data-height=\"" << kHeight << "\" data-x-min=\""
      << decade(a.x_lo) << "\" data-x-max=\"" << decade(a.x_hi) << "\" data-y-min=\""
      << decade(a.y_lo) << "\" data-y-max=\"" << decade(a.y_hi) << "\" data-peak=\""
      << num(peak, "%.17g") << "\" data-bandwidth=\"" << num(bw, "%.17g") << "\">\n";
  // 3. Grid and ticks, one per decade.
  for (int e = a.x_lo; e <= a.x_hi; ++e) {
    double x = a.px(std::pow(10.0, e));
    svg << "  <line class=\"grid\" x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\"" << num(x)
        << "\" y2=\"" << kTop + kHeight << "\"/>\n";
    text(x, kTop + kHeight + 16, decade(e), "tick", "middle");
  }
  for (int e = a.y_lo; e <= a.y_hi; ++e) {
    double y = a.py(std::pow(10.0, e));
    svg << "  <line class=\"grid\" x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\""
        << kLeft + kWidth << "\" y2=\"" << num(y) << "\"/>\n";
    text(kLeft - 6, y + 4, decade(e), "tick", "end");
  }
  svg << "  <rect class=\"frame\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kWidth
      << "\" height=\"" << kHeight << "\"/>\n";
  text(kLeft + kWidth / 2, kTop + kHeight + 36, "arithmetic intensity (flop per byte communicated)",
       "axis", "middle");
  svg << "  <text class=\"axis\" text-anchor=\"middle\" transform=\"translate(22 "
      << kTop + kHeight / 2 << ") rotate(-90)\">attainable flop/s per device</text>\n";
  // The roof: bandwidth-bound left of the ridge, compute-bound right of it.
  const double roof_left = std::min(peak, x_left * bw);
  svg << "  <polyline class=\"roof\" points=\"" << num(a.px(x_left)) << "," << num(a.py(roof_left))
      << " " << num(a.px(ridge)) << "," << num(a.py(peak)) << " " << num(a.px(x_right)) << ","
      << num(a.py(peak)) << "\"/>\n";
  text(a.px(ridge) + 6, a.py(peak) - 8, "ridge " + num(ridge, "%.4g") + " flop/B", "note");
  // The points, numbered; their labels in the legend below the plot.
  double legend_y = kTop + kHeight + 60;
  for (size_t k = 0; k < points.size(); ++k) {
    const Point &p = points[k];
    const bool finite = std::isfinite(p.intensity);
    const double cx = finite ? a.px(p.intensity) : kLeft + kWidth;
    const double cy = a.py(p.rate);
    const std::string n = std::to_string(k + 1);
    const std::string intensity =
        finite ? num(p.intensity, "%.4g") + " flop/B" : "no communication";
    svg << "  <circle class=\"point\" cx=\"" << num(cx) << "\" cy=\"" << num(cy)
        << "\" r=\"5\" data-label=\"" << xml_escape(p.label) << "\" data-intensity=\""
        << (finite ? num(p.intensity, "%.17g") : "inf") << "\" data-flops-per-s=\""
        << num(p.rate, "%.17g") << "\"><title>"
        << xml_escape(p.label + ": " + intensity + ", " + si(p.rate, "FLOP/s"))
        << "</title></circle>\n";
    text(cx + (finite ? 8 : -8), cy - 6, n, "note", finite ? "start" : "end");
    text(16, legend_y,
         n + "  " + p.label + ": " + intensity + ", " + si(p.rate, "FLOP/s") + " (" +
             num(100 * p.rate / peak, "%.3g") + "% of peak)",
         "legend");
    legend_y += 18;
  }
  for (const std::string &line : not_drawn) {
    text(16, legend_y, line, "note");
    legend_y += 18;
  }
  svg << " </g>\n</svg>\n";
  return svg.str();
}

}  // namespace spmd
