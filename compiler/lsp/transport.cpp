// lsp/transport.cpp — Content-Length framing over a byte stream.
#include "lsp/transport.h"

#include <cctype>
#include <charconv>
#include <istream>
#include <ostream>

#include "support/limits.h"

namespace spmd::lsp {
namespace {

/// Header names are case-insensitive.
bool header_is(std::string_view line, std::string_view name) {
  if (line.size() < name.size() + 1 || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) !=
        std::tolower(static_cast<unsigned char>(name[i])))
      return false;
  return true;
}

/// A header line is at most this long (LSP sends two short headers), so a
/// stream without line ends cannot grow the server's memory.
constexpr size_t kMaxHeaderLine = 1024;

/// The next line without its '\n'; false at the end of the stream (with
/// nothing read) or when the line is longer than kMaxHeaderLine (`too_long`).
bool read_header_line(std::istream &in, std::string &line, bool &too_long) {
  line.clear();
  too_long = false;
  std::istream::int_type c;
  while ((c = in.get()) != std::istream::traits_type::eof()) {
    if (c == '\n') return true;
    if (line.size() == kMaxHeaderLine) {
      too_long = true;
      return false;
    }
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

}  // namespace

std::optional<std::string> read_message(std::istream &in, std::string &error) {
  error.clear();
  std::optional<size_t> length;
  std::string line;
  bool any_header = false, too_long = false;
  for (;;) {
    if (!read_header_line(in, line, too_long)) {
      if (too_long) {
        error = "a header line longer than " + std::to_string(kMaxHeaderLine) + " bytes";
        return std::nullopt;
      }
      if (any_header) {
        error = "the stream ended inside a message header";
        return std::nullopt;
      }
      break;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (!any_header) continue;  // stray blank lines between messages
      break;
    }
    any_header = true;
    if (header_is(line, "Content-Length")) {
      std::string_view value = std::string_view(line).substr(15);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size()) {
        error = "bad Content-Length header: " + line;
        return std::nullopt;
      }
      length = n;
    }
  }
  if (!any_header) return std::nullopt;  // end of the stream between messages
  if (!length) {
    error = "a message without a Content-Length header";
    return std::nullopt;
  }
  // A document is at most kMaxSourceBytes; allow room for JSON escapes.
  if (*length > 8 * kMaxSourceBytes) {
    error = "a message of " + std::to_string(*length) + " bytes is over the limit";
    return std::nullopt;
  }
  std::string body(*length, '\0');
  in.read(body.data(), static_cast<std::streamsize>(*length));
  if (static_cast<size_t>(in.gcount()) != *length) {
    error = "the stream ended inside a message body";
    return std::nullopt;
  }
  return body;
}

void write_message(std::ostream &out, const std::string &body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

}  // namespace spmd::lsp
