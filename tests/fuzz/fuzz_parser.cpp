// tests/fuzz/fuzz_parser.cpp — deterministic mutation fuzzer for the front end.
//
// Seeds are every .spmd file under samples/, stdlib/ and tests/golden/ of the
// source tree (found at run time) plus a few built-in programs. From a fixed
// random seed it derives thousands of mutated inputs — byte flips, inserted
// tokens, deletions, truncations, duplicated spans, deep-nesting injections,
// garbage bytes — and runs each through run_pipeline_on(), which is the one
// place to add later pipeline stages. Every input must finish quickly without
// crashing, and when it parses cleanly its formatting must be idempotent. A
// failing input is printed as an escaped C string (a crash prints it from the
// signal handler) so it can be replayed with `fuzz_parser --file PATH`.
//
// Usage: fuzz_parser [--count MUTANTS] [--seed S] [--file PATH]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/format.h"
#include "frontend/parser.h"
#include "ir/printer.h"
#include "pipeline/compile.h"
#include "sharding/shard.h"
#include "support/diagnostics.h"
#include "support/source.h"
#include "transforms/derive.h"

namespace {

namespace fs = std::filesystem;

// ----------------------------------------------------------------- pipeline

struct PipelineResult {
  std::optional<std::string> failure;  // set when the compiler misbehaved
  bool rejected = false;               // the input was rejected with diagnostics (fine)
};

/// Runs one input through every stage under test. Rejecting an input with
/// diagnostics is correct handling; a crash, an internal error or a broken
/// invariant is a failure. Add later pipeline stages here.
PipelineResult run_pipeline_on(const std::string &text) {
  using namespace spmd;
  SourceManager sources;
  FileId file = sources.add("fuzz.spmd", text);
  DiagnosticEngine diags;
  ast::Module module = parse(sources, file, diags);
  (void)render_diagnostics(diags, sources);
  (void)dump_ast(module, sources);
  std::string once = format_module(module);
  if (diags.has_internal_errors())
    return {"internal compiler error:\n" + render_diagnostics(diags, sources)};
  if (diags.has_errors()) return {std::nullopt, true};

  // A clean parse must format to text that parses cleanly to the same text.
  SourceManager sources2;
  FileId file2 = sources2.add("formatted.spmd", once);
  DiagnosticEngine diags2;
  ast::Module module2 = parse(sources2, file2, diags2);
  if (diags2.has_errors())
    return {"formatted output does not parse:\n" + once + "\n" +
            render_diagnostics(diags2, sources2)};
  std::string twice = format_module(module2);
  if (twice != once)
    return {"formatting is not idempotent:\n--- once\n" + once + "--- twice\n" + twice};

  // The whole middle end: lowering, variance inference, loop unrolling and
  // the IR verifier must never report an internal error, and a program that
  // checks must print as source that checks again and prints the same.
  Compilation c;
  compile_source(c, "fuzz.spmd", text, CompileOptions{});
  if (c.diags.has_internal_errors())
    return {"internal compiler error:\n" + render_diagnostics(c.diags, c.sources)};
  if (!c.ok() || !c.module) return {};
  std::string printed = ir::print_module(c.printable());
  Compilation again;
  compile_source(again, "printed.spmd", printed, CompileOptions{});
  if (!again.ok())
    return {"printed program does not check:\n" + printed + "\n" +
            render_diagnostics(again.diags, again.sources)};
  if (ir::print_module(again.printable()) != printed)
    return {"printing is not idempotent:\n" + printed};
  // Differentiating may refuse (not differentiable), but never break.
  for (const auto &fn : c.module->functions) {
    if (fn.kind != ir::FunctionKind::Shmap) continue;
    DeriveRequest r;
    r.kind = DeriveKind::Vjp;
    r.function = fn.name;
    try {
      (void)derive(*c.module, r);
    } catch (const TransformError &) {
    } catch (const std::exception &e) {
      return {std::string("vjp failed: ") + e.what() + "\n" + printed};
    }
  }
  // Sharding a sharded function may refuse (diagnostics), but what it emits
  // must check with automatic pbroadcast insertion off.
  for (const auto &fn : c.module->functions) {
    if (fn.kind != ir::FunctionKind::Sharded) continue;
    for (bool automatic : {false, true}) {
      sharding::ShardOptions o;
      o.function = fn.name;
      o.automatic = automatic;
      o.search.time_limit_s = 1;
      o.profile = builtin_profiles().front();
      DiagnosticEngine diags;
      std::optional<sharding::ShardResult> r;
      try {
        r = sharding::shard(*c.module, o, diags);
      } catch (const std::exception &e) {
        return {std::string("shard failed: ") + e.what() + "\n" + printed};
      }
      if (!r) continue;
      std::string emitted = ir::print_module(r->module);
      Compilation strict;
      CompileOptions off;
      off.auto_pbroadcast = false;
      compile_source(strict, "sharded.spmd", emitted, off);
      if (!strict.ok())
        return {"emitted shmap does not check:\n" + emitted + "\n" +
                render_diagnostics(strict.diags, strict.sources)};
    }
  }
  return {};
}

// -------------------------------------------------------------------- seeds

const char *kBuiltinSeeds[] = {
    R"(# comment to end of line
import std.nn                       # dotted module path

mesh M = (i: 8)
mesh M2 = (data: 2, model: 4)

def g(x: f32[n, 3]) -> f32[] {      # dims: integer literals or symbol names
  return sum(2.0 * x)
}

[[no_auto_pbroadcast]]              # optional attributes
shmap f1(x: f32[32, 3] @ P(i), y: f32[8, 4] @ P((data, model), None), z: f32[] @ P())
    -> (f32[] @ P(), f32[32, 3] @ P(i)) on M {
  w: f32[]{i} = g(x)                # optional annotation
  a, b = h(x)                       # several targets
  v = x[0:4, :, ::2, 3] @ y
  for k in range(4) { acc = acc + k }
  for k in range(1, 4) { }
  if c > 0.0 { r = a } else { r = b }
  return psum(w, i), x              # several return values
}
)",
    R"(mesh M = (i: 4)
def loss(p: f32[4, 4], x: f32[4]) -> f32[] { y = nn.relu(p @ x) ** 2; return mean(-y, axis=0) }
shmap step(p: f32[4, 4] @ P(), x: f32[16] @ P(i)) -> f32[] @ P() on M {
  l: f32[]{i} = loss(p, x[0:4])
  if not (l < 1e-3 or l >= 2.5E+4) and true { l = l * .5 } else if false { l = 2. } else { }
  t = einsum("ij,jk->ik", [(0, 1), (1, 2)], (p,), ())
  return pmean(l, i)
}
)",
    "def f(x: f32[]) -> f32[] { return -x**2 + (x - -x) / x != x }\n",
    R"(mesh M = (data: 2, model: 2)
import std.nn
# a global-view function: global shapes, `auto` specs, sharding constraints
sharded mlp(x: f32[8, 4] @ P(data), w1: f32[4, 8] @ auto, w2: f32[8, 4] @ P(model, None))
    -> (y: f32[8, 4] @ auto, s: f32[] @ P()) on M {
  h = constrain(relu(x @ w1), P(data, model))
  y = constrain(h @ w2, P((data, model), None))
  return y, mean(y)
}
)",
    // Loops: attributes, steps, rows picked by the loop index, permuting carries.
    R"(mesh M = (i: 2)
shmap f(xs: f32[8, 4] @ P(None, i), a: f32[4] @ P(i), b: f32[4] @ P(i)) -> f32[4] @ P(i) on M {
  [[remat]]
  for k in range(7, -1, -2) { a = a * xs[k] + b; b = a - b }
  [[unroll]] for k in range(0, 4, 3) { t = a; a = b; b = t }
  for k in range(3) { for j in range(k, 4) { a = a + xs[j] * cast(k, f32) } }
  return a + b
}
)",
    R"(mesh M = (i: 2)
shmap h(x: f32[4, 6] @ P(i), k: i32[4, 6] @ P(i)) -> (f32[6, 4] @ P(None, i), i32[4] @ P(i)) on M {
  a = x % 1.5 + x // -0.7 + erf(x) + log1p(x * x) + stop_gradient(clip(x, -1.0, max=1.0))
  b = flip(x, axes=1)[::-1, 4:1:-2] @ x[:, None][:, 0, 0:3].T + var(x, axes=1, ddof=1)[:, None]
  c = stack((x, a), axis=-1)[:, :, 0] + squeeze(expand_dims(x, (0, 2))) + zeros_like(x)
  d = (a + c).T + x.astype(f64).astype(f32).T + ones_like(x, dtype=f32).T * b[0, 0]
  return d, argmax(x, axes=1) + argmin(k % 3 + k // -2, axes=-1)
}
)",
};

std::vector<std::string> load_seeds() {
  std::vector<std::string> seeds(std::begin(kBuiltinSeeds), std::end(kBuiltinSeeds));
  for (const char *dir : {"samples", "stdlib", "tests/golden"}) {
    fs::path root = fs::path(SPMDC_SOURCE_DIR) / dir;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file(ec) && it->path().extension() == ".spmd") files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());  // deterministic order
    for (const fs::path &p : files) {
      std::ifstream in(p, std::ios::binary);
      std::stringstream buffer;
      buffer << in.rdbuf();
      seeds.push_back(buffer.str());
    }
  }
  return seeds;
}

// ---------------------------------------------------------------- mutations

/// splitmix64: small, fast, and identical on every platform.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

const std::string kTokens[] = {"(",
                               ")",
                               "[",
                               "]",
                               "{",
                               "}",
                               ",",
                               ":",
                               "@",
                               "=",
                               "->",
                               "+",
                               "*",
                               "**",
                               "-",
                               "/",
                               "<",
                               "==",
                               "psum",
                               "P",
                               "P(",
                               "None",
                               "1e999",
                               "99999999999999999999",
                               "\"",
                               "\"\\",
                               "#",
                               "\n",
                               ";",
                               ".",
                               "..",
                               "not",
                               "and",
                               "def",
                               "shmap",
                               "mesh",
                               "import",
                               "on",
                               "return",
                               "for",
                               "in",
                               "range",
                               "if",
                               "else",
                               "true",
                               "0",
                               "1.",
                               ".5",
                               "[[",
                               "]]",
                               "x",
                               "f32[]",
                               "@ P(i)",
                               "\\",
                               "sharded",
                               "auto",
                               "constrain(",
                               "@ auto",
                               "P(None, (i, j))",
                               "None,",
                               "[[unroll]]",
                               "[[remat]]",
                               "range(0, 8, 2)",
                               "xs[k]",
                               "for k in range(3) {",
                               "x[k]",
                               "$",
                               "\t",
                               "\r",
                               "\xff",
                               "\xc3\xa9",
                               "%",
                               "//",
                               ".T",
                               "::-1",
                               "[:, None]",
                               ".astype(f32)",
                               "stack(",
                               "argmax(",
                               "flip(",
                               "var(",
                               "squeeze(",
                               std::string(1, '\0')};

std::string nesting(Rng &rng) {
  static const size_t kDepths[] = {10, 150, 199, 200, 201, 250, 499, 501, 600, 5000};
  static const char *kOpeners[] = {"(",  "[",  "{",     "-",    "not ",
                                   "f(", "x[", "a ** ", "a + ", "if a {"};
  // Now and then 100k levels (slow to lex, so not too often).
  size_t depth = rng.below(40) == 0 ? 100000 : kDepths[rng.below(std::size(kDepths))];
  std::string opener = kOpeners[rng.below(std::size(kOpeners))];
  std::string out;
  for (size_t i = 0; i < depth; ++i) out += opener;
  if (rng.below(2) == 0) {
    out += "x";
    static const char *kClosers[] = {")", "]", "}"};
    std::string closer = kClosers[rng.below(3)];
    for (size_t i = 0; i < depth; ++i) out += closer;
  }
  return out;
}

std::string mutate_once(std::string s, Rng &rng) {
  size_t n = s.size();
  switch (rng.below(9)) {
    case 0:  // flip a bit
      if (n > 0) s[rng.below(n)] ^= static_cast<char>(1u << rng.below(8));
      break;
    case 1:  // insert a token
    case 2: {
      std::string token = kTokens[rng.below(std::size(kTokens))];
      if (rng.below(2) == 0) token = " " + token + " ";
      s.insert(rng.below(n + 1), token);
      break;
    }
    case 3: {  // delete a span
      size_t at = rng.below(n + 1);
      s.erase(at, 1 + rng.below(16));
      break;
    }
    case 4:  // truncate
      s.resize(rng.below(n + 1));
      break;
    case 5: {  // duplicate a span
      size_t at = rng.below(n + 1), len = rng.below(64);
      std::string span = s.substr(at, len);
      s.insert(rng.below(n + 1), span);
      break;
    }
    case 6:  // deep nesting
      s.insert(rng.below(n + 1), nesting(rng));
      break;
    case 7: {  // garbage bytes
      std::string garbage;
      for (size_t i = 0, k = 1 + rng.below(8); i < k; ++i)
        garbage += static_cast<char>(rng.below(256));
      s.insert(rng.below(n + 1), garbage);
      break;
    }
    case 8: {  // replace a byte by a newline or a space (statement boundaries)
      if (n > 0) s[rng.below(n)] = rng.below(2) ? '\n' : ' ';
      break;
    }
  }
  return s;
}

// --------------------------------------------------------------- reporting

std::string escape(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X\"\"", c);
      out += buf;
    }
  }
  return out + "\"";
}

// The input being processed, escaped, for the crash handler.
std::string g_current;
int g_current_index = -1;

void on_crash(int sig) {
  const char head[] = "\nfuzz_parser: CRASH (signal) on input:\n";
  ssize_t ignored = write(2, head, sizeof head - 1);
  ignored = write(2, g_current.data(), g_current.size());
  ignored = write(2, "\n", 1);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_handler() {
  // An alternate stack, so a stack overflow can still be reported.
  static std::vector<char> alt_stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int main(int argc, char **argv) {
  size_t count = 12000;  // random mutants, on top of the seeds and their truncations
  uint64_t seed = 0x5EED5EEDull;
  std::string replay;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--count")
      count = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 0);
    else if (flag == "--file")
      replay = argv[i + 1];
  }
  install_crash_handler();

  if (!replay.empty()) {
    std::ifstream in(replay, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    g_current = escape(buffer.str());
    PipelineResult result = run_pipeline_on(buffer.str());
    std::cout << (result.failure ? "FAIL: " + *result.failure
                                 : std::string(result.rejected ? "ok (rejected)" : "ok"))
              << "\n";
    return result.failure ? 1 : 0;
  }

  std::vector<std::string> seeds = load_seeds();
  std::vector<std::string> inputs;
  // Every seed as is, and truncated at every Nth byte.
  for (const std::string &s : seeds) {
    inputs.push_back(s);
    size_t step = std::max<size_t>(1, s.size() / 60);
    for (size_t at = 0; at < s.size(); at += step) inputs.push_back(s.substr(0, at));
  }
  Rng rng{seed};
  for (size_t target = inputs.size() + count; inputs.size() < target;) {
    std::string s = seeds[rng.below(seeds.size())];
    for (size_t k = 0, m = 1 + rng.below(4); k < m; ++k) s = mutate_once(std::move(s), rng);
    inputs.push_back(std::move(s));
  }

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  int failures = 0;
  size_t rejected = 0;
  double slowest = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    g_current = escape(inputs[i]);
    g_current_index = static_cast<int>(i);
    auto t0 = Clock::now();
    PipelineResult result;
    try {
      result = run_pipeline_on(inputs[i]);
    } catch (const std::exception &e) {
      result.failure = std::string("exception: ") + e.what();
    }
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    slowest = std::max(slowest, seconds);
    if (!result.failure && seconds > 2.0)
      result.failure = "too slow: " + std::to_string(seconds) + " s";
    rejected += result.rejected;
    if (result.failure && ++failures <= 10) {
      std::cerr << "fuzz_parser: input #" << i << " FAILED: " << *result.failure
                << "\ninput: " << g_current << "\n\n";
    }
  }
  double total = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << "fuzz_parser: " << inputs.size() << " inputs from " << seeds.size() << " seeds, "
            << failures << " failures, " << rejected << " rejected with diagnostics, " << total
            << " s total, slowest " << slowest << " s\n";
  return failures == 0 ? 0 : 1;
}
