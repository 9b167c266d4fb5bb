// tests/fuzz/diff_driver.h — what lexer_diff and parser_diff share.
//
// Both compare a hand-written front-end piece with the ANTLR reference over
// the same inputs: every .spmd file of the source tree (the corpus), then
// generated inputs. This header holds the pieces they have in common: the
// command line (`--count N --seed S --file PATH`), reading the corpus, and
// printing an input as an escaped C string so a mismatch can be replayed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::fuzz {

/// The options of a differential fuzzer.
struct DiffArgs {
  size_t count = 0;  ///< generated inputs
  uint64_t seed = 17;
  std::string file;  ///< replay one file instead of the corpus and generated inputs
};

/// Parses `--count N --seed S --file PATH`. Returns the exit code when the
/// program should stop (usage error: 2, --help: 0), nothing otherwise.
inline std::optional<int> parse_diff_args(int argc, char **argv, std::string_view program,
                                          DiffArgs &args) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--count" || a == "--seed" || a == "--file") && i + 1 < argc) {
      std::string v = argv[++i];
      try {
        if (a == "--count")
          args.count = std::stoull(v);
        else if (a == "--seed")
          args.seed = std::stoull(v);
        else
          args.file = v;
        continue;
      } catch (const std::exception &) {
        std::cerr << program << ": " << a << " wants a number, got `" << v << "`\n";
        return 2;
      }
    }
    std::cerr << "usage: " << program << " [--count N] [--seed S] [--file PATH]\n";
    return a == "-h" || a == "--help" ? 0 : 2;
  }
  return std::nullopt;
}

/// The whole file, bytes as they are.
inline std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every .spmd file under samples/, stdlib/, tests/ and exercises/ of the
/// source tree, sorted so runs are reproducible.
inline std::vector<std::string> corpus_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const char *dir : {"samples", "stdlib", "tests", "exercises"}) {
    fs::path root = fs::path(SPMDC_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto &entry : fs::recursive_directory_iterator(root))
      if (entry.is_regular_file() && entry.path().extension() == ".spmd")
        files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// True when the corpus is large enough to mean the source tree was found (a
/// wrong SPMDC_SOURCE_DIR must fail the test, not pass it with nothing read).
inline bool corpus_found(std::string_view program, size_t files) {
  if (files >= 100) return true;
  std::cerr << program << ": only " << files << " .spmd files found under " << SPMDC_SOURCE_DIR
            << "\n";
  return false;
}

/// `bytes` as a C string literal: quotes and backslashes escaped, newlines as
/// \n, anything outside printable ASCII as \xNN (followed by "" so the next
/// character cannot extend the hex escape).
inline std::string escaped(std::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X\"\"", u);
      out += buf;
    }
  }
  return out + "\"";
}

}  // namespace spmd::fuzz
