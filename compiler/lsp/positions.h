// lsp/positions.h — LSP positions and ranges from and to byte offsets.
//
// The compiler locates everything by byte offset (support/source.h). LSP
// counts lines from 0 and characters within a line in UTF-16 code units (its
// default position encoding, the only one spmdc announces): an ASCII
// character is one unit, any other character of the Basic Multilingual Plane
// one, a character outside it (a 4-byte UTF-8 sequence) two. Lines end at
// '\n' (a '\r' before it counts as a character of the line, as in LSP). This
// file is the one place the two conventions meet.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "support/source.h"

namespace spmd::lsp {

using Json = nlohmann::json;

struct Position {
  uint32_t line = 0;       // 0-based
  uint32_t character = 0;  // 0-based, UTF-16 code units
  bool operator==(const Position &) const = default;
};

/// The LSP position of byte `offset` of `text` (clamped to the text).
Position position_of(std::string_view text, uint32_t offset);
/// The byte offset of an LSP position in `text`: a line past the end is the
/// end of the text, a character past the end of its line the line's end, and
/// a character inside a surrogate pair the start of its UTF-8 sequence.
uint32_t offset_of(std::string_view text, Position position);

/// `{"line": l, "character": c}` and back: nullopt unless both fields are
/// non-negative integers (a line or column past the end is clamped by offset_of).
Json position_json(Position p);
std::optional<Position> position_from_json(const Json &j);
/// `{"start": ..., "end": ...}` for the byte range [begin, end) of `text`.
Json range_json(std::string_view text, uint32_t begin, uint32_t end);

}  // namespace spmd::lsp
