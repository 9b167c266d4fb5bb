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
// Hostile programs (huge dimensions, nested loops with extreme bounds, long
// def chains, odd import paths, clashing result names) are generated on top.
//
// Usage: fuzz_parser [--count MUTANTS] [--hostile PROGRAMS] [--seed S]
//                    [--too-slow SECONDS] [--file PATH]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/memory_estimate.h"
#include "backend/backend.h"
#include "frontend/format.h"
#include "frontend/parser.h"
#include "ir/printer.h"
#include "pipeline/compile.h"
#include "pipeline/derive.h"
#include "sharding/shard.h"
#include "support/diagnostics.h"
#include "support/source.h"

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
    // The memory estimate, and the emitted C++, whose comments and string
    // literals quote the source lines and an awkward path, never break.
    (void)estimate_memory(*c.module, fn, &c.sources);
    backend::EmitOptions eo;
    eo.target = backend::Target::Cpu;
    eo.entry = fn.name;
    eo.source_path = "odd\npath \\ \"quoted\"\\";
    const std::string cpp = backend::emit_program(*c.module, &c.sources, eo);
    std::istringstream lines(cpp);
    for (std::string line; std::getline(lines, line);) {
      const size_t last = line.find_last_not_of(" \t");
      if (line.find("//") != std::string::npos && last != std::string::npos && line[last] == '\\')
        return {"an emitted comment ends in a backslash:\n" + line};
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
    // Shmaps calling shmaps and derivatives named in the language.
    R"(mesh M = (i: 2)
shmap loss(w: f32[4] @ P(), x: f32[8] @ P(i)) -> (l: f32[] @ P()) on M {
  s = x
  [[remat]] for k in range(3) { s = tanh(s * w) }
  return psum(sum(s * s), i)
}
def scale[T](v: T[..., m]) -> T[..., m] { return 2.0 * v }
shmap step(w: f32[4] @ P(), x: f32[8] @ P(i)) -> (l: f32[] @ P(), w2: f32[4] @ P()) on M {
  l0 = loss(w, x)
  l, g = grad(loss, wrt=w)(w, x)
  y, dy = jvp(loss, wrt=(w,))(w, x, g)
  s, w_bar, x_bar = vjp(loss)(w, x, 1.0)
  t = transpose(scale)(g)
  c, gg, c_dot, hv = jvp(grad(loss, wrt=w), wrt=w)(w, x, g)
  return l + l0 + y, w - 0.1 * (g + t + hv)
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
                               "...",
                               "[T]",
                               "T[..., m]",
                               "grad(",
                               "vjp(",
                               "jvp(",
                               "transpose(",
                               "wrt=",
                               "of=",
                               "grad(loss, wrt=w)(w, x)",
                               "import \"grads/loss_grad.spmd\"",
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

// ------------------------------------------------------- hostile programs

// Inputs of the shapes issue 18 found bugs with: dimensions whose products
// overflow, loops whose trip counts overflow or multiply, long def chains,
// odd import paths. Each must be rejected with a diagnostic or checked
// correctly, never crash, hang or exhaust memory.
const char *kHugeNumbers[] = {"0",
                              "1",
                              "4096",
                              "2147483647",
                              "2147483648",
                              "3037000500",
                              "4294967296",
                              "1099511627776",
                              "1099511627777",
                              "4611686018427387904",
                              "9223372036854775807",
                              "9223372036854775808"};
const char *kLoopBounds[] = {"0",
                             "1",
                             "3",
                             "4096",
                             "4097",
                             "-9223372036854775807",
                             "9223372036854775807",
                             "2147483647",
                             "-2147483648",
                             "2147483640"};

std::string huge(Rng &rng) { return kHugeNumbers[rng.below(std::size(kHugeNumbers))]; }

std::string hostile_program(Rng &rng) {
  const std::string head = "mesh M = (i: " + std::string(rng.below(2) ? "2" : "4") + ")\n";
  switch (rng.below(7)) {
    case 0:  // a parameter or result of a huge shape
      return head + "shmap f(x: f32[" + huge(rng) + ", " + huge(rng) + "] @ P(" +
             (rng.below(2) ? "i" : "") + ")) -> f32[" + huge(rng) + "] @ P() on M {\n  return " +
             (rng.below(2) ? "sum(x, axis=0)" : "x[0]") + "\n}\n";
    case 1: {  // a creation or layout op of a huge shape
      static const char *kOps[] = {"zeros((%, %, %))",
                                   "ones((%, %))",
                                   "iota((%, %), dtype=f32)",
                                   "iota((%,), dtype=i32)",
                                   "broadcast_to(x, (%, 4))",
                                   "reshape(x, (%, %, 0))",
                                   "all_gather(x, i, axis=0, tiled=true)",
                                   "concat([x, x, x], axis=0)",
                                   "pad(x, (%,), (%,), (%,))"};
      std::string op = kOps[rng.below(std::size(kOps))], filled;
      for (char c : op) filled += c == '%' ? huge(rng) : std::string(1, c);
      return head + "shmap f(x: f32[4] @ P()) -> f32[] @ P() on M {\n  y = " + filled +
             "\n  return sum(x)\n}\n";
    }
    case 2:  // a slice with huge bounds and steps
      return head + "shmap f(x: f32[8] @ P()) -> f32[] @ P() on M {\n  return sum(x[" +
             (rng.below(2) ? "-" : "") + huge(rng) + ":" + huge(rng) + ":" + huge(rng) + "])\n}\n";
    case 3: {  // nested loops with extreme bounds
      std::string body = "x = x + 1.0", indent = "  ";
      const size_t depth = 1 + rng.below(4);
      std::string open, close;
      for (size_t d = 0; d < depth; ++d) {
        open += indent + "for k" + std::to_string(d) + " in range(" +
                kLoopBounds[rng.below(std::size(kLoopBounds))] + ", " +
                kLoopBounds[rng.below(std::size(kLoopBounds))] + ") {\n";
        close = indent + "}\n" + close;
        indent += "  ";
      }
      return head + "shmap f(x: f32[4] @ P()) -> f32[4] @ P() on M {\n" + open + indent + body +
             "\n" + close + "  return x\n}\n";
    }
    case 4: {  // a long chain of defs, each calling the next once or twice
      static const size_t kLengths[] = {2, 20, 99, 100, 101, 300, 3000};
      const size_t n = kLengths[rng.below(std::size(kLengths))];
      const bool twice = rng.below(3) == 0;
      std::string out =
          head + "def f" + std::to_string(n) + "(x: f32[4]) -> f32[4] {\n  return x + 1.0\n}\n";
      for (size_t k = n; k-- > 0;) {
        const std::string next = "f" + std::to_string(k + 1) + "(x)";
        out += "def f" + std::to_string(k) + "(x: f32[4]) -> f32[4] {\n  return " + next +
               (twice ? " * " + next : "") + "\n}\n";
      }
      return out + "shmap g(x: f32[4] @ P()) -> f32[4] @ P() on M {\n  return f0(x)\n}\n";
    }
    case 5: {  // odd import paths
      static const char *kImports[] = {"../../etc/passwd", "/etc/passwd", "std",      "std.",
                                       "std..nn",          "a.b.c.d",     ".x",       "std.nn.",
                                       "tests.golden",     "\"x\"",       "std.nn as"};
      return std::string("import ") + kImports[rng.below(std::size(kImports))] + "\n" + head +
             "shmap f(x: f32[4] @ P()) -> f32[4] @ P() on M {\n  return x\n}\n";
    }
    default: {  // results sharing a name, or the label of an unnamed one
      static const char *kResults[] = {"(a: f32[] @ P(), a: f32[] @ P())",
                                       "(f32[] @ P(), out0: f32[] @ P())",
                                       "(out1: f32[] @ P(), f32[] @ P())"};
      return head + "shmap f(x: f32[4] @ P()) -> " + kResults[rng.below(std::size(kResults))] +
             " on M {\n  return sum(x), sum(x)\n}\n";
    }
  }
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
  size_t hostile = 400;  // hostile programs (hostile_program), mutated half of the time
  uint64_t seed = 0x5EED5EEDull;
  // CPU seconds per input (raise it for sanitizer builds); CPU time, not wall
  // time, so that a loaded machine does not make a fast input look slow.
  double too_slow = 2.0;
  std::string replay;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--count")
      count = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--hostile")
      hostile = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 0);
    else if (flag == "--too-slow")
      too_slow = std::strtod(argv[i + 1], nullptr);
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
  for (size_t k = 0; k < hostile; ++k) {
    std::string s = hostile_program(rng);
    if (rng.below(2) == 0) s = mutate_once(std::move(s), rng);
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
    const std::clock_t t0 = std::clock();
    PipelineResult result;
    try {
      result = run_pipeline_on(inputs[i]);
    } catch (const std::exception &e) {
      result.failure = std::string("exception: ") + e.what();
    }
    const double seconds = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
    slowest = std::max(slowest, seconds);
    if (!result.failure && seconds > too_slow)
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
            << " s total, slowest " << slowest << " CPU s\n";
  return failures == 0 ? 0 : 1;
}
