#include "analysis/profile_file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace spmd {

namespace {

using Json = nlohmann::json;

/// Reads profiles; the first problem found is kept in `error`.
class ProfileReader {
 public:
  ProfileReader(std::string where, std::string &error) : where_(std::move(where)), error_(error) {}

  std::optional<HardwareProfile> read(const Json &j) {
    if (!j.is_object()) return fail("", "a profile is a JSON object");
    if (!only_keys(j, "",
                   {"name", "description", "flops_per_s", "memory_bw_bytes_per_s", "matmul_rates",
                    "matmul_layout_rates", "matmul_op_s", "matmul_gemm_s", "memory_rates",
                    "transcendental_rate", "intra_node", "devices_per_node",
                    "inter_node", "axes"}))
      return std::nullopt;
    HardwareProfile p;
    if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
      return fail("name", "needs a non-empty string");
    p.name = j["name"].get<std::string>();
    if (j.contains("description")) {
      if (!j["description"].is_string()) return fail("description", "must be a string");
      p.description = j["description"].get<std::string>();
    }
    auto flops = number(j, "flops_per_s", true);
    if (!flops) return std::nullopt;
    if (*flops <= 0) return fail("flops_per_s", "must be positive");
    p.flops_per_s = *flops;
    auto mem = number(j, "memory_bw_bytes_per_s", false);
    if (!mem) return std::nullopt;
    p.mem_bw_bytes_per_s = *mem;
    if (j.contains("matmul_rates")) {
      auto rates = rate_list(j["matmul_rates"], "matmul_rates", "smallest_dim", 1, "flops_per_s");
      if (!rates) return std::nullopt;
      for (const auto &[dim, rate] : *rates) p.matmul_rates.push_back({dim, rate});
    }
    if (j.contains("matmul_layout_rates")) {
      const Json &by = j["matmul_layout_rates"];
      if (!by.is_object())
        return fail("matmul_layout_rates",
                    "must be an object of lists, keyed \"nn/m\", \"tn/k\", ... (layout/thin)");
      for (auto it = by.begin(); it != by.end(); ++it) {
        const std::string &key = it.key();
        const bool valid = key.size() == 4 && (key[0] == 'n' || key[0] == 't') &&
                           (key[1] == 'n' || key[1] == 't') && key[2] == '/' &&
                           (key[3] == 'm' || key[3] == 'n' || key[3] == 'k');
        if (!valid)
          return fail("matmul_layout_rates." + key,
                      "is not a layout key: nn, tn, nt or tt, a slash, and m, n or k");
        auto rates = rate_list(it.value(), "matmul_layout_rates." + key, "smallest_dim", 1,
                               "flops_per_s");
        if (!rates) return std::nullopt;
        for (const auto &[dim, rate] : *rates) p.matmul_layout_rates[key].push_back({dim, rate});
      }
    }
    if (j.contains("memory_rates")) {
      auto rates = rate_list(j["memory_rates"], "memory_rates", "bytes", 1, "bw_bytes_per_s");
      if (!rates) return std::nullopt;
      for (const auto &[bytes, rate] : *rates) p.memory_rates.push_back({bytes, rate});
    }
    for (const auto &[key, field] : {std::pair{"matmul_op_s", &HardwareProfile::matmul_op_s},
                                     std::pair{"matmul_gemm_s", &HardwareProfile::matmul_gemm_s}}) {
      auto seconds = number(j, key, false);
      if (!seconds) return std::nullopt;
      p.*field = *seconds;
    }
    auto transcendental = number(j, "transcendental_rate", false);
    if (!transcendental) return std::nullopt;
    p.transcendental_rate = *transcendental;
    if (!j.contains("intra_node")) return fail("intra_node", "is required");
    auto intra = link(j["intra_node"], "intra_node");
    if (!intra) return std::nullopt;
    p.latency_s = intra->latency_s;
    p.bw_bytes_per_s = intra->bw_bytes_per_s;
    p.intra_by_collective = intra->by_collective;
    if (j.contains("devices_per_node")) {
      const Json &d = j["devices_per_node"];
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return fail("devices_per_node", "must be a whole number, 0 or more");
      p.devices_per_node = d.get<int64_t>();
    }
    if (j.contains("inter_node")) {
      auto inter = link(j["inter_node"], "inter_node");
      if (!inter) return std::nullopt;
      p.inter_node = *inter;
    }
    if (p.devices_per_node > 0 && !p.inter_node)
      return fail("inter_node", "is required when devices_per_node is given");
    if (j.contains("axes")) {
      const Json &axes = j["axes"];
      if (!axes.is_object()) return fail("axes", "must map mesh axis names to links");
      for (auto it = axes.begin(); it != axes.end(); ++it) {
        auto l = link(it.value(), "axes." + it.key());
        if (!l) return std::nullopt;
        p.axes[it.key()] = *l;
      }
    }
    return p;
  }

 private:
  /// `[{"<size>": 8, "<rate>": 2e10}, ...]` (matmul_rates, memory_rates):
  /// (size, rate) pairs, sizes at least `min_size` and increasing, rates positive.
  std::optional<std::vector<std::pair<double, double>>> rate_list(const Json &j,
                                                                  const std::string &key,
                                                                  const std::string &size_key,
                                                                  double min_size,
                                                                  const std::string &rate_key) {
    const std::string shape = "{\"" + size_key + "\": ..., \"" + rate_key + "\": ...}";
    if (!j.is_array() || j.empty()) return fail(key, "must be a non-empty list of " + shape);
    std::vector<std::pair<double, double>> out;
    for (size_t k = 0; k < j.size(); ++k) {
      const std::string at = key + "[" + std::to_string(k) + "]";
      if (!j[k].is_object()) return fail(at, "must be an object " + shape);
      if (!only_keys(j[k], at, {size_key, rate_key})) return std::nullopt;
      auto size = number(j[k], size_key, true, at);
      auto rate = number(j[k], rate_key, true, at);
      if (!size || !rate) return std::nullopt;
      if (*size < min_size) return fail(at + "." + size_key, "must be 1 or more");
      if (*rate <= 0) return fail(at + "." + rate_key, "must be positive");
      if (!out.empty() && *size <= out.back().first)
        return fail(at + "." + size_key,
                    "must be larger than the one before (the list is in increasing order)");
      out.emplace_back(*size, *rate);
    }
    return out;
  }

  std::nullopt_t fail(const std::string &key, const std::string &what) {
    if (error_.empty()) error_ = where_ + ": " + (key.empty() ? what : "`" + key + "` " + what);
    return std::nullopt;
  }

  bool only_keys(const Json &j, const std::string &at, std::set<std::string> known) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!known.count(it.key())) {
        std::string list;
        for (const std::string &k : known) list += (list.empty() ? "" : ", ") + k;
        fail(at.empty() ? it.key() : at + "." + it.key(),
             "is not a profile key (known: " + list + ")");
        return false;
      }
    return true;
  }

  std::optional<double> number(const Json &j, const std::string &key, bool required,
                               const std::string &at = "") {
    const std::string path = at.empty() ? key : at + "." + key;
    if (!j.contains(key)) {
      if (required) fail(path, "is required");
      return required ? std::nullopt : std::optional<double>(0.0);
    }
    if (!j[key].is_number()) return fail(path, "must be a number");
    const double v = j[key].get<double>();
    if (!std::isfinite(v) || v < 0) return fail(path, "must be a finite number, 0 or more");
    return v;
  }

  std::optional<LinkFigures> figures(const Json &j, const std::string &at, bool kinds) {
    if (!j.is_object())
      return fail(at, "must be an object {\"latency_s\": ..., \"bw_bytes_per_s\": ...}");
    if (!only_keys(j, at,
                   kinds ? std::set<std::string>{"latency_s", "bw_bytes_per_s", "collectives"}
                         : std::set<std::string>{"latency_s", "bw_bytes_per_s"}))
      return std::nullopt;
    auto latency = number(j, "latency_s", true, at);
    auto bw = number(j, "bw_bytes_per_s", true, at);
    if (!latency || !bw) return std::nullopt;
    if (*bw <= 0) return fail(at + ".bw_bytes_per_s", "must be positive");
    return LinkFigures{*latency, *bw};
  }

  /// A link: alpha and beta, and optionally `collectives`, the figures of some
  /// kinds of collective on it.
  std::optional<LinkCost> link(const Json &j, const std::string &at) {
    auto f = figures(j, at, true);
    if (!f) return std::nullopt;
    LinkCost l{f->latency_s, f->bw_bytes_per_s};
    if (!j.contains("collectives")) return l;
    const Json &by = j["collectives"];
    const std::string here = at + ".collectives";
    if (!by.is_object()) return fail(here, "must map kinds of collective to their figures");
    const std::set<std::string> known(collective_kinds().begin(), collective_kinds().end());
    if (!only_keys(by, here, known)) return std::nullopt;
    for (auto it = by.begin(); it != by.end(); ++it) {
      auto k = figures(it.value(), here + "." + it.key(), false);
      if (!k) return std::nullopt;
      l.by_collective[it.key()] = *k;
    }
    return l;
  }

  std::string where_;
  std::string &error_;
};

std::string num(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

std::string figures_json(double latency_s, double bw_bytes_per_s) {
  return "\"latency_s\": " + num(latency_s) + ", \"bw_bytes_per_s\": " + num(bw_bytes_per_s);
}

/// A link on one line, its kinds of collective (if any) one per line below.
std::string link_json(const LinkCost &l, const std::string &indent) {
  std::string o = "{" + figures_json(l.latency_s, l.bw_bytes_per_s);
  if (l.by_collective.empty()) return o + "}";
  o += ", \"collectives\": {";
  bool first = true;
  for (const std::string &kind : collective_kinds()) {
    auto it = l.by_collective.find(kind);
    if (it == l.by_collective.end()) continue;
    o += std::string(first ? "\n" : ",\n") + indent + "    " + Json(kind).dump() + ": {" +
         figures_json(it->second.latency_s, it->second.bw_bytes_per_s) + "}";
    first = false;
  }
  return o + "\n" + indent + "  }}";
}

}  // namespace

std::optional<HardwareProfile> parse_profile(const std::string &json, const std::string &where,
                                             std::string &error) {
  error.clear();
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded()) {
    error = where + ": not valid JSON";
    return std::nullopt;
  }
  return ProfileReader(where, error).read(j);
}

std::optional<HardwareProfile> resolve_profile(const std::string &name_or_path,
                                               std::string &error) {
  error.clear();
  if (auto p = find_profile(name_or_path)) return p;
  std::error_code ec;
  const bool is_file = std::filesystem::is_regular_file(name_or_path, ec);
  if (!is_file && !name_or_path.ends_with(".json")) {
    error = "unknown profile `" + name_or_path + "`; known:";
    for (const HardwareProfile &q : builtin_profiles()) error += " " + q.name;
    error += ", or a profile file (.json)";
    return std::nullopt;
  }
  std::ifstream in(name_or_path, std::ios::binary);
  if (!is_file || !in) {
    error = "cannot read profile file `" + name_or_path + "`";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1 << 20)) {
    error = name_or_path + ": a profile file is at most 1 MiB";
    return std::nullopt;
  }
  return parse_profile(text.str(), name_or_path, error);
}

std::string profile_json(const HardwareProfile &p) {
  std::string o = "{\n";
  o += "  \"name\": " + Json(p.name).dump() + ",\n";
  if (!p.description.empty()) o += "  \"description\": " + Json(p.description).dump() + ",\n";
  o += "  \"flops_per_s\": " + num(p.flops_per_s) + ",\n";
  if (p.mem_bw_bytes_per_s > 0)
    o += "  \"memory_bw_bytes_per_s\": " + num(p.mem_bw_bytes_per_s) + ",\n";
  if (!p.matmul_rates.empty()) {
    o += "  \"matmul_rates\": [";
    for (size_t k = 0; k < p.matmul_rates.size(); ++k)
      o += std::string(k ? ",\n    " : "\n    ") +
           "{\"smallest_dim\": " + num(p.matmul_rates[k].smallest_dim) +
           ", \"flops_per_s\": " + num(p.matmul_rates[k].flops_per_s) + "}";
    o += "\n  ],\n";
  }
  if (!p.matmul_layout_rates.empty()) {
    o += "  \"matmul_layout_rates\": {";
    bool first = true;
    for (const auto &[key, rates] : p.matmul_layout_rates) {
      o += std::string(first ? "\n    " : ",\n    ") + Json(key).dump() + ": [";
      first = false;
      for (size_t k = 0; k < rates.size(); ++k)
        o += std::string(k ? ", " : "") + "{\"smallest_dim\": " + num(rates[k].smallest_dim) +
             ", \"flops_per_s\": " + num(rates[k].flops_per_s) + "}";
      o += "]";
    }
    o += "\n  },\n";
  }
  if (!p.memory_rates.empty()) {
    o += "  \"memory_rates\": [";
    for (size_t k = 0; k < p.memory_rates.size(); ++k)
      o += std::string(k ? ",\n    " : "\n    ") + "{\"bytes\": " + num(p.memory_rates[k].bytes) +
           ", \"bw_bytes_per_s\": " + num(p.memory_rates[k].bw_bytes_per_s) + "}";
    o += "\n  ],\n";
  }
  if (p.matmul_op_s > 0) o += "  \"matmul_op_s\": " + num(p.matmul_op_s) + ",\n";
  if (p.matmul_gemm_s > 0) o += "  \"matmul_gemm_s\": " + num(p.matmul_gemm_s) + ",\n";
  if (p.transcendental_rate > 0)
    o += "  \"transcendental_rate\": " + num(p.transcendental_rate) + ",\n";
  o += "  \"intra_node\": " + link_json(p.intra_node(), "");
  if (p.devices_per_node > 0)
    o += ",\n  \"devices_per_node\": " + std::to_string(p.devices_per_node);
  if (p.inter_node) o += ",\n  \"inter_node\": " + link_json(*p.inter_node, "");
  if (!p.axes.empty()) {
    o += ",\n  \"axes\": {";
    bool first = true;
    for (const auto &[name, l] : p.axes) {
      o += std::string(first ? "\n" : ",\n") + "    " + Json(name).dump() + ": " +
           link_json(l, "  ");
      first = false;
    }
    o += "\n  }";
  }
  return o + "\n}\n";
}

}  // namespace spmd
