// lsp/transport.h — JSON-RPC messages framed by `Content-Length` headers.
//
// A message is a header block (`Content-Length: N`, optionally
// `Content-Type: ...`, each line ended by CRLF), an empty line, then N bytes
// of JSON. read_message returns the N bytes; the caller parses them, so that
// malformed JSON is answered with a JSON-RPC parse error instead of ending
// the session. Only a broken frame (no Content-Length, a length over the
// limit, the stream ending mid-message) ends it.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

namespace spmd::lsp {

/// The body of the next message; nullopt at the end of the stream or on a
/// broken frame (`error` then says what was wrong; empty at a clean end).
std::optional<std::string> read_message(std::istream &in, std::string &error);
/// Writes `body` with its header and flushes.
void write_message(std::ostream &out, const std::string &body);

}  // namespace spmd::lsp
