// lsp/positions.cpp — byte offsets to LSP positions (UTF-16 columns) and back.
#include "lsp/positions.h"

#include <algorithm>

namespace spmd::lsp {
namespace {

/// Bytes and UTF-16 units of the character starting at text[i]: a valid
/// multi-byte UTF-8 sequence counts as one character (two units when it has
/// four bytes); any other byte, a stray one included, as one unit.
std::pair<size_t, uint32_t> character_at(std::string_view text, size_t i) {
  size_t n = utf8_sequence_length(text, i);
  if (n == 0) return {1, 1};
  return {n, n == 4 ? 2u : 1u};
}

}  // namespace

Position position_of(std::string_view text, uint32_t offset) {
  size_t end = std::min<size_t>(offset, text.size());
  Position p;
  size_t line_start = 0;
  for (size_t i = 0; i < end; ++i)
    if (text[i] == '\n') {
      ++p.line;
      line_start = i + 1;
    }
  for (size_t i = line_start; i < end;) {
    auto [bytes, units] = character_at(text, i);
    if (i + bytes > end) break;  // `offset` inside a sequence: its start
    p.character += units;
    i += bytes;
  }
  return p;
}

uint32_t offset_of(std::string_view text, Position position) {
  size_t i = 0;
  for (uint32_t line = 0; line < position.line; ++line) {
    size_t newline = text.find('\n', i);
    if (newline == std::string_view::npos) return static_cast<uint32_t>(text.size());
    i = newline + 1;
  }
  uint32_t units = 0;
  while (i < text.size() && text[i] != '\n') {
    auto [bytes, width] = character_at(text, i);
    if (units + width > position.character) break;
    units += width;
    i += bytes;
  }
  return static_cast<uint32_t>(i);
}

Json position_json(Position p) { return Json{{"line", p.line}, {"character", p.character}}; }

std::optional<Position> position_from_json(const Json &j) {
  auto field = [&](const char *name) -> std::optional<uint32_t> {
    if (!j.is_object() || !j.contains(name) || !j[name].is_number_integer()) return std::nullopt;
    if (j[name].is_number_unsigned())
      return static_cast<uint32_t>(std::min<uint64_t>(j[name].get<uint64_t>(), UINT32_MAX));
    if (j[name].get<int64_t>() < 0) return std::nullopt;
    return static_cast<uint32_t>(std::min<int64_t>(j[name].get<int64_t>(), UINT32_MAX));
  };
  std::optional<uint32_t> line = field("line"), character = field("character");
  if (!line || !character) return std::nullopt;
  return Position{*line, *character};
}

Json range_json(std::string_view text, uint32_t begin, uint32_t end) {
  return Json{{"start", position_json(position_of(text, begin))},
              {"end", position_json(position_of(text, std::max(begin, end)))}};
}

}  // namespace spmd::lsp
