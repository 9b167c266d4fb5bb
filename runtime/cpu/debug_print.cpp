// runtime/cpu/debug_print.cpp — see spmdrt/debug_print.h.
#include "spmdrt/debug_print.h"

#include <unistd.h>

#include <cmath>
#include <cstring>

#include "spmdrt/program.h"

namespace spmd::rt {
namespace {

/// Row `p` of `stacked` (its leading dimension removed).
Tensor row(const Tensor &stacked, int64_t p) {
  Shape shape(stacked.shape().begin() + 1, stacked.shape().end());
  Tensor out = Tensor::empty(stacked.dtype(), shape);
  const size_t bytes = out.nbytes();
  if (bytes > 0) std::memcpy(out.raw(), stacked.raw() + static_cast<size_t>(p) * bytes, bytes);
  return out;
}

/// Whether a progress line is on the terminal now (only device 0's thread draws).
bool g_progress_shown = false;

void write_line(std::FILE *out, const std::string &line) {
  if (out == stdout) clear_progress_line();
  std::fwrite(line.data(), 1, line.size(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

}  // namespace

std::string format_print_value(const Tensor &value) {
  std::string text = format_tensor(value, kPrintThreshold);
  if (value.numel() > kPrintThreshold)
    text += std::string(" (") + dtype_name(value.dtype()) + shape_str(value.shape()) + ")";
  return text;
}

std::string format_print(std::string_view format, std::span<const Tensor> values) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out += c;  // `{{` or `}}`
      ++i;
    } else if (c == '{' && i + 1 < format.size() && format[i + 1] == '}') {
      out += next < values.size() ? format_print_value(values[next]) : std::string("{}");
      ++next;
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

void debug_print(DeviceContext &ctx, std::string_view format, std::span<const Tensor> values,
                 const std::vector<int> &label_axes, std::FILE *out) {
  if (label_axes.empty()) {
    if (ctx.device() == 0) write_line(out, format_print(format, values));
    return;
  }
  // Every device takes part in the gathers; device 0 (position 0 along every
  // axis, so in the group that holds each position along label_axes) prints.
  std::vector<Tensor> stacked;
  stacked.reserve(values.size());
  for (const Tensor &v : values) stacked.push_back(ctx.all_gather(v, label_axes, 0, false));
  if (ctx.device() == 0) print_gathered(ctx.mesh(), format, stacked, label_axes, out);
}

void print_gathered(const Mesh &mesh, std::string_view format, std::span<const Tensor> stacked,
                    const std::vector<int> &label_axes, std::FILE *out) {
  const int64_t n = mesh.group_size(label_axes);
  std::vector<Tensor> at(stacked.size());
  for (int64_t p = 0; p < n; ++p) {
    // The position of rank p along label_axes, the first axis major.
    std::vector<int64_t> coord(label_axes.size());
    int64_t rest = p;
    for (size_t k = label_axes.size(); k-- > 0;) {
      const int64_t size = mesh.axis_size(label_axes[k]);
      coord[k] = rest % size;
      rest /= size;
    }
    std::string line = "[";
    for (size_t k = 0; k < label_axes.size(); ++k)
      line += (k ? ", " : "") + mesh.axes()[static_cast<size_t>(label_axes[k])].name + "=" +
              std::to_string(coord[k]);
    line += "] ";
    for (size_t k = 0; k < stacked.size(); ++k) at[k] = row(stacked[k], p);
    write_line(out, line + format_print(format, at));
  }
}

void debug_print(std::string_view format, std::span<const Tensor> values, std::FILE *out) {
  write_line(out, format_print(format, values));
}

std::string first_non_finite(const Tensor &value) {
  if (!is_float(value.dtype())) return "";
  for (int64_t i = 0; i < value.numel(); ++i) {
    const double x = value.get(i);
    if (std::isfinite(x)) continue;
    std::string what = std::isnan(x) ? "NaN" : (x > 0 ? "inf" : "-inf");
    if (value.rank() == 0) return what;
    std::string index;
    int64_t rest = i;
    for (size_t d = value.shape().size(); d-- > 0;) {
      index = std::to_string(rest % value.shape()[d]) + (index.empty() ? "" : ", ") + index;
      rest /= value.shape()[d];
    }
    return what + " (at [" + index + "] of " + dtype_name(value.dtype()) +
           shape_str(value.shape()) + ")";
  }
  return "";
}

void check_finite(const Tensor &value, std::string_view op, std::string_view where,
                  const Mesh &mesh, int64_t device) {
  const std::string what = first_non_finite(value);
  if (what.empty()) return;
  std::string on;
  if (device >= 0 && mesh.num_devices() > 1) {
    on = " on device " + std::to_string(device) + " (";
    const std::vector<int64_t> coords = mesh.coords(device);
    for (size_t a = 0; a < coords.size(); ++a)
      on += (a ? ", " : "") + mesh.axes()[a].name + ": " + std::to_string(coords[a]);
    on += ")";
  }
  throw NonFiniteError(std::string(where) + (where.empty() ? "" : ": ") + "`" + std::string(op) +
                       "` made " + what + on + " (--check-nan)");
}

void check_finite(const DeviceContext &ctx, const Tensor &value, std::string_view op,
                  std::string_view where, bool invariant) {
  if (invariant && ctx.device() != 0) return;
  check_finite(value, op, where, ctx.mesh(), invariant ? -1 : ctx.device());
}

Progress::Progress(int64_t device, int64_t total, const char *where)
    : active_(device == 0 && total > 1 && isatty(STDOUT_FILENO) == 1 && !launched_by_mpi()),
      total_(total),
      where_(where) {
  if (!active_) return;
  start_ = std::chrono::steady_clock::now();
  last_ = start_ - std::chrono::seconds(1);
}

void Progress::draw(int64_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = elapsed / static_cast<double>(done) * static_cast<double>(total_ - done);
  char line[160];
  std::snprintf(line, sizeof line, "\r\033[Kstep %lld/%lld  elapsed %.1fs  eta %.1fs  (%s)",
                static_cast<long long>(done), static_cast<long long>(total_), elapsed, eta,
                where_);
  std::fputs(line, stdout);
  std::fflush(stdout);
  g_progress_shown = true;
}

void Progress::finish() {
  if (!active_) return;
  active_ = false;
  clear_progress_line();
}

void clear_progress_line() {
  if (!g_progress_shown) return;
  std::fputs("\r\033[K", stdout);
  std::fflush(stdout);
  g_progress_shown = false;
}

}  // namespace spmd::rt
