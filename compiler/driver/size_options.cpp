// driver/size_options.cpp — parsing --mesh and --set (driver/size_options.h).
#include "driver/size_options.h"

#include <cctype>

namespace spmd::driver {
namespace {

/// A cursor over option text: identifiers, integers and punctuation with blanks between.
struct Cursor {
  const std::string &text;
  size_t at = 0;

  void blanks() {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  }
  bool eat(char c) {
    blanks();
    if (at < text.size() && text[at] == c) return ++at, true;
    return false;
  }
  std::string ident() {
    blanks();
    size_t start = at;
    if (at < text.size() && (std::isalpha(static_cast<unsigned char>(text[at])) || text[at] == '_'))
      while (at < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[at])) || text[at] == '_'))
        ++at;
    return text.substr(start, at - start);
  }
  /// A decimal integer in [lo, hi], else nullopt.
  std::optional<int64_t> integer(int64_t lo, int64_t hi) {
    blanks();
    size_t start = at;
    int64_t v = 0;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
      v = v * 10 + (text[at++] - '0');
      if (v > hi) return std::nullopt;
    }
    if (at == start || v < lo) return std::nullopt;
    return v;
  }
  bool done() {
    blanks();
    return at == text.size();
  }
};

constexpr int64_t kMaxAxisSize = 4096;               // as in the source (docs/language.md)
constexpr int64_t kMaxDimension = int64_t{1} << 40;  // as a dimension literal

}  // namespace

std::optional<MeshOverride> parse_mesh_override(const std::string &text, std::string &error) {
  MeshOverride o;
  o.text = text;
  Cursor c{text};
  const size_t paren = text.find('(');
  if (paren != std::string::npos && text.find('=') < paren) {
    o.mesh = c.ident();
    if (o.mesh.empty() || !c.eat('=')) {
      error = "expected MESH=(axis: SIZE, ...)";
      return std::nullopt;
    }
  }
  const std::string expected = "expected [MESH=](axis: SIZE, ...), e.g. --mesh \"(batch: 4)\"";
  if (!c.eat('(')) {
    error = expected;
    return std::nullopt;
  }
  while (!c.eat(')')) {
    std::string axis = c.ident();
    if (axis.empty() || !c.eat(':')) {
      error = expected;
      return std::nullopt;
    }
    auto size = c.integer(1, kMaxAxisSize);
    if (!size) {
      error = "the size of axis `" + axis + "` must be an integer from 1 to 4096";
      return std::nullopt;
    }
    for (const auto &[seen, _] : o.axes)
      if (seen == axis) {
        error = "axis `" + axis + "` is given twice";
        return std::nullopt;
      }
    o.axes.emplace_back(axis, *size);
    if (!c.eat(',') && !(c.blanks(), c.at < text.size() && text[c.at] == ')')) {
      error = expected;
      return std::nullopt;
    }
  }
  if (!c.done() || o.axes.empty()) {
    error = o.axes.empty() ? "give at least one axis: (axis: SIZE, ...)" : expected;
    return std::nullopt;
  }
  return o;
}

std::optional<std::pair<std::string, int64_t>> parse_size_setting(const std::string &text,
                                                                  std::string &error) {
  Cursor c{text};
  std::string name = c.ident();
  if (name.empty() || !c.eat('=')) {
    error = "expected NAME=SIZE, e.g. --set n=128";
    return std::nullopt;
  }
  auto size = c.integer(0, kMaxDimension);
  if (!size || !c.done()) {
    error = "the size of `" + name + "` must be an integer from 0 to 2^40";
    return std::nullopt;
  }
  return std::make_pair(name, *size);
}

}  // namespace spmd::driver
