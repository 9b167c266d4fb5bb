// Tests of lsp/positions.h and lsp/transport.h: byte offsets to LSP positions
// (0-based lines, UTF-16 columns) and back; Content-Length framing.
#include <catch2/catch.hpp>
#include <sstream>

#include "lsp/positions.h"
#include "lsp/transport.h"
#include "lsp/uri.h"

using spmd::lsp::offset_of;
using spmd::lsp::Position;
using spmd::lsp::position_of;

TEST_CASE("positions count lines from 0 and columns in UTF-16 units", "[lsp]") {
  // "é" is 2 bytes of UTF-8 and 1 UTF-16 unit; "😀" (U+1F600) 4 bytes and 2 units.
  const std::string text = "ab\nxé😀y\n";
  // Bytes: a0 b1 \n2 | x3 é4-5 😀6-9 y10 \n11
  CHECK(position_of(text, 0) == Position{0, 0});
  CHECK(position_of(text, 2) == Position{0, 2});
  CHECK(position_of(text, 3) == Position{1, 0});
  CHECK(position_of(text, 4) == Position{1, 1});
  CHECK(position_of(text, 6) == Position{1, 2});
  CHECK(position_of(text, 10) == Position{1, 4});  // y: x + é + two units
  CHECK(position_of(text, 12) == Position{2, 0});
  CHECK(position_of(text, 999) == Position{2, 0});  // clamped to the end
  // Inside a sequence: its start.
  CHECK(position_of(text, 7) == Position{1, 2});

  CHECK(offset_of(text, {0, 0}) == 0);
  CHECK(offset_of(text, {1, 1}) == 4);
  CHECK(offset_of(text, {1, 2}) == 6);
  CHECK(offset_of(text, {1, 3}) == 6);    // between the surrogates: the emoji's start
  CHECK(offset_of(text, {1, 4}) == 10);   // y
  CHECK(offset_of(text, {1, 99}) == 11);  // past the line: its end
  CHECK(offset_of(text, {9, 0}) == 12);   // past the text: its end
  for (uint32_t offset : {0u, 2u, 3u, 4u, 6u, 10u, 11u, 12u})
    CHECK(offset_of(text, position_of(text, offset)) == offset);
}

TEST_CASE("a stray byte is one unit, CRLF is a character then a newline", "[lsp]") {
  const std::string text =
      "a\xff"
      "b\r\nc";
  CHECK(position_of(text, 2) == Position{0, 2});
  CHECK(position_of(text, 3) == Position{0, 3});  // the '\r'
  CHECK(position_of(text, 5) == Position{1, 0});
  CHECK(offset_of(text, {1, 1}) == 6);
}

TEST_CASE("Content-Length framing", "[lsp]") {
  std::string error;
  std::istringstream two(
      "Content-Length: 2\r\n\r\n{}content-length:3\r\nContent-Type: x\r\n\r\n[1]");
  CHECK(spmd::lsp::read_message(two, error) == "{}");
  CHECK(spmd::lsp::read_message(two, error) == "[1]");
  CHECK(!spmd::lsp::read_message(two, error));
  CHECK(error.empty());  // a clean end

  std::istringstream no_length("Content-Type: x\r\n\r\n{}");
  CHECK(!spmd::lsp::read_message(no_length, error));
  CHECK(error.find("Content-Length") != std::string::npos);
  std::istringstream short_body("Content-Length: 10\r\n\r\n{}");
  CHECK(!spmd::lsp::read_message(short_body, error));
  CHECK(error.find("inside a message body") != std::string::npos);
  std::istringstream bad("Content-Length: 1x\r\n\r\n{}");
  CHECK(!spmd::lsp::read_message(bad, error));

  std::ostringstream out;
  spmd::lsp::write_message(out, "{\"a\":1}");
  CHECK(out.str() == "Content-Length: 7\r\n\r\n{\"a\":1}");
}

TEST_CASE("file URIs and paths", "[lsp]") {
  CHECK(spmd::lsp::path_from_uri("file:///tmp/a%20b.spmd") == "/tmp/a b.spmd");
  CHECK(spmd::lsp::path_from_uri("file://localhost/tmp/x.spmd") == "/tmp/x.spmd");
  CHECK(spmd::lsp::path_from_uri("untitled:Untitled-1") == "untitled:Untitled-1");
  CHECK(spmd::lsp::uri_from_path("/tmp/a b#.spmd") == "file:///tmp/a%20b%23.spmd");
  CHECK(spmd::lsp::path_from_uri(spmd::lsp::uri_from_path("/tmp/é.spmd")) == "/tmp/é.spmd");
}
