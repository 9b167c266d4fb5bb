// analysis/picture.cpp — see picture.h.
#include "analysis/picture.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

namespace spmd {
namespace {

/// The two dimensions to draw: the split ones first (at most two), then, for
/// a 1-D or 2-D array, the others so that its whole shape shows.
void choose_dims(ShownArray &a, const rt::PartitionSpec &spec) {
  std::vector<int> split;
  for (size_t d = 0; d < spec.size(); ++d)
    if (!spec[d].empty()) split.push_back(static_cast<int>(d));
  const int rank = static_cast<int>(a.layout.global.size());
  a.folded = split.size() > 2;
  if (rank == 1) {
    a.col_dim = 0;
  } else if (rank == 2) {
    a.row_dim = 0;
    a.col_dim = 1;
  } else if (split.size() == 1) {
    a.col_dim = split[0];
  } else if (split.size() >= 2) {
    a.row_dim = split[0];
    a.col_dim = split[1];
  }
}

std::string range_str(int64_t start, int64_t size) {
  return "[" + std::to_string(start) + ":" + std::to_string(start + size) + "]";
}

std::string bytes_str(double bytes) {
  char buf[64];
  if (bytes >= 1 << 30)
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1 << 30));
  else if (bytes >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1 << 20));
  else if (bytes >= 1 << 10)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  return buf;
}

/// A collective inside loops runs several times per call of the shmap.
double moved_per_call(const CollectiveEvent &e) {
  return static_cast<double>(e.times) * e.moved_bytes;
}
std::string repeat_str(const CollectiveEvent &e) {
  return e.times == 1 ? "" : " x " + std::to_string(e.times) + " runs";
}

std::string heading(const ShownArray &a) {
  return a.role + " " + a.name + ": " + shape_type_str(a.dtype, a.layout.global) + " @ " + a.spec;
}

std::string summary(const ShownArray &a, int64_t devices) {
  std::string s = "local " + shape_type_str(a.dtype, a.layout.local) + " on each of " +
                  std::to_string(devices) + " devices; " + std::to_string(a.layout.blocks.size()) +
                  (a.layout.blocks.size() == 1 ? " block" : " blocks");
  int64_t r = a.layout.replicas();
  s += r == 1 ? ", one device each" : ", each held by " + std::to_string(r) + " devices";
  if (a.folded) s += " (more than two dimensions split: a cell merges the blocks behind it)";
  return s;
}

std::string mesh_str(const ShownShmap &s) {
  std::string out = s.mesh_name + " (";
  for (size_t k = 0; k < s.mesh.axes().size(); ++k)
    out += (k ? ", " : "") + s.mesh.axes()[k].name + ": " + std::to_string(s.mesh.axes()[k].size);
  return out + ")";
}

/// `device 3 = (i 1, j 1)` for every device of a mesh with more than one axis.
std::vector<std::string> device_coords(const rt::Mesh &mesh) {
  std::vector<std::string> out;
  if (mesh.axes().size() < 2) return out;
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    std::vector<int64_t> c = mesh.coords(d);
    std::string s = std::to_string(d) + " = (";
    for (size_t k = 0; k < c.size(); ++k)
      s += (k ? ", " : "") + mesh.axes()[k].name + " " + std::to_string(c[k]);
    out.push_back(s + ")");
  }
  return out;
}

/// A source path as a reader of the picture wants it: relative to the current directory when the
/// file lies inside it (so a picture made in one checkout is the same in every other), else as
/// given.
std::string shown_path(std::string_view path) {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return std::string(path);
  const std::filesystem::path rel = std::filesystem::path(path).lexically_proximate(cwd);
  if (rel.empty() || rel.is_absolute() || *rel.begin() == "..") return std::string(path);
  return rel.string();
}

/// A qualitative palette (Tableau 20): neighbouring blocks get distinct colours.
const char *const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                "#a0cbe8", "#ffbe7d", "#ff9d9a", "#86bcb6", "#8cd17d",
                                "#f1ce63", "#d4a6c8", "#fabfd2", "#d7b5a6", "#79706e"};

}  // namespace

std::string device_list(const std::vector<int64_t> &devices) {
  std::string out;
  for (size_t k = 0; k < devices.size();) {
    size_t end = k;
    while (end + 1 < devices.size() && devices[end + 1] == devices[end] + 1) ++end;
    out += (out.empty() ? "" : " ") + std::to_string(devices[k]);
    if (end >= k + 2)
      out += "-" + std::to_string(devices[end]);
    else if (end == k + 1)
      out += " " + std::to_string(devices[end]);
    k = end + 1;
  }
  return out;
}

ShownShmap describe_shmap(const ir::Module &module, const ir::Function &f,
                          const SourceManager &sources) {
  ShownShmap s;
  s.name = f.name;
  s.mesh = module.mesh_of(f);
  s.mesh_name = module.meshes.at(static_cast<size_t>(f.mesh)).name;
  auto add = [&](std::string role, std::string name, DType dtype, const rt::Shape &global,
                 const rt::PartitionSpec &spec) {
    ShownArray a;
    a.role = std::move(role);
    a.name = std::move(name);
    a.dtype = dtype;
    a.spec = spec_str(spec, s.mesh);
    a.layout = array_layout(s.mesh, global, spec);
    choose_dims(a, spec);
    s.arrays.push_back(std::move(a));
  };
  for (size_t k = 0; k < f.params.size(); ++k)
    add("parameter", ir::param_name(f, k), f.type(f.params[k].value).dtype,
        f.params[k].global_shape, f.params[k].spec);
  for (size_t k = 0; k < f.results.size(); ++k)
    add("result", result_name(f, k), f.type(f.returns.at(k)).dtype, f.results[k].global_shape,
        f.results[k].spec);
  for (CollectiveEvent &e : collective_events(module, f)) {
    std::string where;
    if (e.span.valid()) {
      SourceLocation loc = sources.location(e.span);
      where = shown_path(loc.path) + ":" + std::to_string(loc.line);
    }
    s.collectives.push_back({std::move(e), where});
  }
  return s;
}

PictureGrid picture_grid(const ShownArray &a) {
  PictureGrid g;
  auto extent = [&](int dim, int64_t start, int64_t &pos, int64_t &size) {
    if (dim < 0) return;
    size = a.layout.local[static_cast<size_t>(dim)];
    pos = start / size;
  };
  if (a.row_dim >= 0) g.rows = a.layout.global[a.row_dim] / a.layout.local[a.row_dim];
  if (a.col_dim >= 0) g.cols = a.layout.global[a.col_dim] / a.layout.local[a.col_dim];
  std::map<std::pair<int64_t, int64_t>, PictureCell> cells;
  for (const LayoutBlock &b : a.layout.blocks) {
    PictureCell c;
    extent(a.row_dim, a.row_dim >= 0 ? b.start[a.row_dim] : 0, c.row, c.row_size);
    extent(a.col_dim, a.col_dim >= 0 ? b.start[a.col_dim] : 0, c.col, c.col_size);
    c.row_start = c.row * c.row_size;
    c.col_start = c.col * c.col_size;
    c.devices = b.devices;
    auto [it, inserted] = cells.try_emplace({c.row, c.col}, c);
    if (!inserted) {  // folded: another block behind the same cell
      std::vector<int64_t> &d = it->second.devices;
      d.insert(d.end(), b.devices.begin(), b.devices.end());
      std::sort(d.begin(), d.end());
    }
  }
  for (auto &[pos, cell] : cells) g.cells.push_back(cell);
  return g;
}

// ---- text ------------------------------------------------------------------

std::string picture_text(const std::vector<ShownShmap> &shmaps) {
  std::ostringstream out;
  for (size_t si = 0; si < shmaps.size(); ++si) {
    const ShownShmap &s = shmaps[si];
    out << (si ? "\n" : "") << "shmap " << s.name << " on mesh " << mesh_str(s) << ", "
        << s.mesh.num_devices() << " devices\n";
    std::vector<std::string> coords = device_coords(s.mesh);
    if (!coords.empty()) {
      out << "  devices:";
      for (const std::string &c : coords) out << "  " << c;
      out << "\n";
    }
    for (const ShownArray &a : s.arrays) {
      out << "\n" << heading(a) << "\n  " << summary(a, s.mesh.num_devices()) << "\n";
      PictureGrid g = picture_grid(a);
      std::vector<std::string> row_labels(static_cast<size_t>(g.rows)),
          col_labels(static_cast<size_t>(g.cols));
      std::vector<std::string> labels(g.cells.size());
      std::vector<size_t> width(static_cast<size_t>(g.cols), 0);
      for (size_t k = 0; k < g.cells.size(); ++k) {
        const PictureCell &c = g.cells[k];
        labels[k] = "dev " + device_list(c.devices);
        if (a.row_dim >= 0) row_labels[c.row] = range_str(c.row_start, c.row_size);
        if (a.col_dim >= 0) col_labels[c.col] = range_str(c.col_start, c.col_size);
        width[c.col] = std::max({width[c.col], labels[k].size(), col_labels[c.col].size()});
      }
      size_t margin = 0;
      for (const std::string &r : row_labels) margin = std::max(margin, r.size());
      auto rule = [&] {
        out << "  " << std::string(margin, ' ') << (margin ? " " : "") << "+";
        for (size_t w : width) out << std::string(w + 2, '-') << "+";
        out << "\n";
      };
      std::string dims = a.row_dim >= 0 ? "rows: dim " + std::to_string(a.row_dim) : "";
      if (a.col_dim >= 0)
        dims +=
            (dims.empty() ? "" : ", ") + std::string("columns: dim ") + std::to_string(a.col_dim);
      if (!dims.empty()) out << "  (" << dims << ")\n";
      if (a.col_dim >= 0) {
        std::string header = "  " + std::string(margin, ' ') + (margin ? " " : "") + " ";
        for (size_t c = 0; c < width.size(); ++c)
          header +=
              " " + col_labels[c] + std::string(width[c] - col_labels[c].size() + 1, ' ') + " ";
        out << header.substr(0, header.find_last_not_of(' ') + 1) << "\n";
      }
      rule();
      for (int64_t r = 0; r < g.rows; ++r) {
        std::string rl = row_labels[static_cast<size_t>(r)];
        out << "  " << rl << std::string(margin - rl.size(), ' ') << (margin ? " " : "") << "|";
        for (int64_t c = 0; c < g.cols; ++c) {
          const std::string &l = labels[static_cast<size_t>(r * g.cols + c)];
          out << " " << l << std::string(width[static_cast<size_t>(c)] - l.size(), ' ') << " |";
        }
        out << "\n";
        rule();
      }
    }
    out << "\ncommunication of " << s.name << " (per device, in program order)\n";
    if (s.collectives.empty()) out << "  (no collectives)\n";
    double total = 0;
    int where_width = 0;
    for (const ShownCollective &c : s.collectives)
      where_width = std::max(where_width, static_cast<int>(c.where.size()));
    for (const ShownCollective &c : s.collectives) {
      char line[512];
      std::snprintf(line, sizeof line, "  %-*s  %-20s over %-8s %-28s moves %s%s\n", where_width,
                    c.where.c_str(), c.event.op.c_str(), c.event.axes.c_str(),
                    c.event.operand_types.c_str(), bytes_str(c.event.moved_bytes).c_str(),
                    repeat_str(c.event).c_str());
      out << line;
      total += moved_per_call(c.event);
    }
    if (!s.collectives.empty()) out << "  total moved per device: " << bytes_str(total) << "\n";
  }
  return out.str();
}

// ---- SVG -------------------------------------------------------------------

std::string xml_escape(const std::string &text) {
  std::string out;
  for (char ch : text) {
    if (ch == '&')
      out += "&amp;";
    else if (ch == '<')
      out += "&lt;";
    else if (ch == '>')
      out += "&gt;";
    else if (ch == '"')
      out += "&quot;";
    else
      out += ch;
  }
  return out;
}

std::string picture_svg(const std::vector<ShownShmap> &shmaps) {
  constexpr int kMargin = 16, kLine = 18, kCellH = 34, kCharW = 7, kMaxW = 720;
  std::ostringstream body;
  int y = kMargin, width = 480;
  auto text = [&](int x, int ty, const std::string &t, const std::string &cls) {
    body << "  <text x=\"" << x << "\" y=\"" << ty << "\" class=\"" << cls << "\">" << xml_escape(t)
         << "</text>\n";
    width = std::max(width, x + kCharW * static_cast<int>(t.size()) + kMargin);
  };
  for (const ShownShmap &s : shmaps) {
    y += kLine;
    body << " <g class=\"shmap\" data-name=\"" << xml_escape(s.name) << "\">\n";
    text(kMargin, y,
         "shmap " + s.name + " on mesh " + mesh_str(s) + ", " +
             std::to_string(s.mesh.num_devices()) + " devices",
         "title");
    std::vector<std::string> coords = device_coords(s.mesh);
    for (size_t k = 0; k < coords.size(); k += 8) {
      std::string line = k ? "" : "devices: ";
      for (size_t j = k; j < std::min(coords.size(), k + 8); ++j) line += coords[j] + "   ";
      y += kLine;
      text(kMargin, y, line, "note");
    }
    for (const ShownArray &a : s.arrays) {
      y += kLine + 8;
      body << "  <g class=\"array\" data-role=\"" << a.role << "\" data-name=\""
           << xml_escape(a.name) << "\" data-spec=\"" << xml_escape(a.spec) << "\" data-global=\""
           << xml_escape(shape_type_str(a.dtype, a.layout.global)) << "\" data-local=\""
           << xml_escape(shape_type_str(a.dtype, a.layout.local)) << "\" data-row-dim=\""
           << a.row_dim << "\" data-col-dim=\"" << a.col_dim << "\">\n";
      text(kMargin, y, heading(a), "heading");
      y += kLine;
      text(kMargin, y, summary(a, s.mesh.num_devices()), "note");
      y += 6;
      PictureGrid g = picture_grid(a);
      int label_w = 0;
      for (const PictureCell &c : g.cells)
        label_w = std::max(label_w, kCharW * static_cast<int>(device_list(c.devices).size() + 4));
      const int left = kMargin + (a.row_dim >= 0 ? 64 : 0);
      const int cell_w =
          std::max({56, label_w + 12, std::min(kMaxW / static_cast<int>(g.cols), 160)});
      if (a.col_dim >= 0) {
        y += kLine;
        for (const PictureCell &c : g.cells)
          if (c.row == 0)
            text(left + static_cast<int>(c.col) * cell_w + 4, y - 4,
                 range_str(c.col_start, c.col_size), "range");
      }
      const int top = y;
      for (size_t k = 0; k < g.cells.size(); ++k) {
        const PictureCell &c = g.cells[k];
        const int x = left + static_cast<int>(c.col) * cell_w;
        const int cy = top + static_cast<int>(c.row) * kCellH;
        std::string rows = a.row_dim >= 0 ? range_str(c.row_start, c.row_size) : "";
        std::string cols = a.col_dim >= 0 ? range_str(c.col_start, c.col_size) : "";
        body << "   <rect class=\"block\" x=\"" << x << "\" y=\"" << cy << "\" width=\"" << cell_w
             << "\" height=\"" << kCellH << "\" fill=\"" << kPalette[k % 20]
             << "\" data-devices=\"";
        for (size_t d = 0; d < c.devices.size(); ++d) body << (d ? " " : "") << c.devices[d];
        body << "\" data-rows=\"" << rows << "\" data-cols=\"" << cols << "\"><title>"
             << xml_escape("devices " + device_list(c.devices) +
                           (rows.empty() ? "" : ", rows " + rows) +
                           (cols.empty() ? "" : ", columns " + cols))
             << "</title></rect>\n";
        text(x + 6, cy + kCellH / 2 + 5, "dev " + device_list(c.devices), "cell");
        if (c.col == 0 && a.row_dim >= 0) text(kMargin, cy + kCellH / 2 + 5, rows, "range");
        width = std::max(width, x + cell_w + kMargin);
      }
      y = top + static_cast<int>(g.rows) * kCellH;
      body << "  </g>\n";
    }
    // Communication: one row per collective, a bar proportional to the bytes it moves.
    y += kLine + 12;
    text(kMargin, y, "communication of " + s.name + " (per device, in program order)", "heading");
    double most = 0, total = 0;
    for (const ShownCollective &c : s.collectives) {
      most = std::max(most, moved_per_call(c.event));
      total += moved_per_call(c.event);
    }
    if (s.collectives.empty()) {
      y += kLine;
      text(kMargin, y, "(no collectives)", "note");
    }
    for (const ShownCollective &c : s.collectives) {
      y += kLine + 4;
      const int bar = most > 0 ? static_cast<int>(240.0 * moved_per_call(c.event) / most) : 0;
      body << "  <g class=\"collective\" data-op=\"" << c.event.op << "\" data-axes=\""
           << xml_escape(c.event.axes) << "\" data-moved-bytes=\"" << c.event.moved_bytes
           << "\" data-times=\"" << c.event.times << "\">\n";
      body << "   <rect class=\"bar\" x=\"" << kMargin << "\" y=\"" << y - 12 << "\" width=\""
           << std::max(bar, 1) << "\" height=\"14\" fill=\""
           << (c.event.moved_bytes > 0 ? "#4e79a7" : "#bab0ac") << "\"/>\n";
      text(kMargin + 250, y,
           c.where + "  " + c.event.op + " over " + c.event.axes + "  " + c.event.operand_types +
               "  moves " + bytes_str(c.event.moved_bytes) + repeat_str(c.event),
           "row");
      body << "  </g>\n";
    }
    if (!s.collectives.empty()) {
      y += kLine + 4;
      text(kMargin, y, "total moved per device: " + bytes_str(total), "note");
    }
    body << " </g>\n";
    y += kLine;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << y + kMargin << "\" viewBox=\"0 0 " << width << " " << y + kMargin << "\">\n"
      << " <style>text { font-family: monospace; font-size: 12px; fill: #222 }"
         " .title { font-size: 14px; font-weight: bold } .heading { font-weight: bold }"
         " .note, .range { fill: #555 } .cell { fill: #000 }"
         " rect.block { stroke: #fff; stroke-width: 2 }</style>\n"
      << " <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      << body.str() << "</svg>\n";
  return out.str();
}

}  // namespace spmd
