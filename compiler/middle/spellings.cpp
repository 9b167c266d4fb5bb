// middle/spellings.cpp — NumPy/JAX/Python spellings and their spmdc
// equivalents (see spellings.h).
#include "middle/spellings.h"

#include <array>
#include <utility>

#include "support/suggest.h"

namespace spmd {
namespace {

struct Entry {
  std::string_view from;
  std::string_view replacement;  // empty: no mechanical rewrite
  std::string_view help;
};

/// Functions whose spmdc spelling differs (looked up after the prefix is stripped).
constexpr std::array kFunctions = {
    Entry{"concatenate", "concat", "spmdc calls it `concat((a, b), axis=0)`"},
    Entry{"hstack", "concat", "write `concat((a, b), axis=-1)`"},
    Entry{"vstack", "concat", "write `concat((a, b), axis=0)`"},
    Entry{"dot", "matmul", "write `a @ b` (or `matmul(a, b)`)"},
    Entry{"amax", "max", "spmdc calls it `max(x, axes=...)`"},
    Entry{"amin", "min", "spmdc calls it `min(x, axes=...)`"},
    Entry{"reduce_sum", "sum", "spmdc calls it `sum(x, axes=...)`"},
    Entry{"reduce_mean", "mean", "spmdc calls it `mean(x, axes=...)`"},
    Entry{"reduce_max", "max", "spmdc calls it `max(x, axes=...)`"},
    Entry{"average", "mean", "spmdc calls it `mean(x, axes=...)`"},
    Entry{"arange", "iota", "write `iota((n,))` for 0, 1, ..., n-1"},
    Entry{"power", "pow", "write `a ** b` (or `pow(a, b)`)"},
    Entry{"float_power", "pow", "write `a ** b` (or `pow(a, b)`)"},
    Entry{"absolute", "abs", "spmdc calls it `abs`"},
    Entry{"clamp", "clip", "spmdc calls it `clip(x, min, max)`"},
    Entry{"swapaxes", "transpose", "write `transpose(x, perm)` with the permuted dimensions"},
    Entry{"moveaxis", "transpose", "write `transpose(x, perm)` with the permuted dimensions"},
    Entry{"permute_dims", "transpose", "spmdc calls it `transpose(x, perm)`"},
    Entry{"tensordot", "einsum", "write the contraction with `einsum(\"ij,jk->ik\", a, b)`"},
    Entry{"select", "where", "spmdc calls it `where(cond, a, b)`"},
    Entry{"add", "", "write `a + b`"},
    Entry{"subtract", "", "write `a - b`"},
    Entry{"multiply", "", "write `a * b`"},
    Entry{"divide", "", "write `a / b`"},
    Entry{"true_divide", "", "write `a / b`"},
    Entry{"floor_divide", "", "write `a // b`"},
    Entry{"mod", "", "write `a % b` (NumPy's remainder: the sign of `b`)"},
    Entry{"remainder", "", "write `a % b` (NumPy's remainder: the sign of `b`)"},
    Entry{"negative", "", "write `-x`"},
    Entry{"square", "", "write `x * x` (or `x ** 2`)"},
    Entry{"logical_and", "", "write `a and b` (elementwise on bool arrays)"},
    Entry{"logical_or", "", "write `a or b` (elementwise on bool arrays)"},
    Entry{"len", "", "shapes are static: write the size, or `axis_size(i)` for a mesh axis"},
    Entry{"print", "", "spmdc programs have no side effects; return the value and use `spmdc run`"},
};

constexpr std::array kValues = {
    Entry{"True", "true", "spmdc spells it `true`"},
    Entry{"False", "false", "spmdc spells it `false`"},
    Entry{"pi", "3.141592653589793", "spmdc has no named constants; write the literal"},
    Entry{"e", "2.718281828459045", "spmdc has no named constants; write the literal"},
};

/// Keyword arguments: (foreign, spmdc); applies when the spmdc name is a parameter.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kKeywords = {{
    {"axis", "axes"},
    {"dim", "axis"},
    {"dim", "axes"},
    {"axis", "dim"},
    {"axes", "perm"},
    {"keepdim", "keepdims"},
    {"axis_name", "axes"},
    {"axis_name", "axis"},
    {"a_min", "min"},
    {"a_max", "max"},
    {"correction", "ddof"},
    {"unbiased", "ddof"},
}};

struct DTypeEntry {
  std::string_view from;
  std::string_view to;  // empty: spmdc has no such dtype
  std::string_view help;
};

constexpr std::array kDTypes = {
    DTypeEntry{"float32", "f32", ""},
    DTypeEntry{"float", "f32", "(spmdc's default float is 32-bit; Python's float is f64)"},
    DTypeEntry{"single", "f32", ""},
    DTypeEntry{"float64", "f64", ""},
    DTypeEntry{"double", "f64", ""},
    DTypeEntry{"bfloat16", "bf16", ""},
    DTypeEntry{"int32", "i32", ""},
    DTypeEntry{"int", "i32", "(spmdc's integers are 32-bit)"},
    DTypeEntry{"bool_", "bool", ""},
    DTypeEntry{"float16", "", "spmdc has no 16-bit IEEE float; use bf16 or f32"},
    DTypeEntry{"half", "", "spmdc has no 16-bit IEEE float; use bf16 or f32"},
    DTypeEntry{"int64", "", "spmdc has no 64-bit integers; use i32"},
    DTypeEntry{"f16", "", "spmdc has no 16-bit IEEE float; use bf16 or f32"},
    DTypeEntry{"i64", "", "spmdc has no 64-bit integers; use i32"},
    DTypeEntry{"long", "", "spmdc has no 64-bit integers; use i32"},
};

constexpr std::array<std::string_view, 10> kPrefixes = {
    "jax.numpy.", "jax.lax.", "jax.nn.", "jax.", "numpy.", "jnp.", "np.", "lax.", "math.", "torch.",
};

}  // namespace

std::string_view strip_foreign_prefix(std::string_view name) {
  for (std::string_view p : kPrefixes)
    if (name.size() > p.size() && name.substr(0, p.size()) == p) return name.substr(p.size());
  return name;
}

namespace {

/// `x.T` -> {"x", "T"}; nullopt for a name without a dot or with a NumPy/JAX module prefix.
std::optional<std::pair<std::string, std::string>> member_of(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || strip_foreign_prefix(name) != name)
    return std::nullopt;
  return std::pair{std::string(name.substr(0, dot)), std::string(name.substr(dot + 1))};
}

}  // namespace

std::optional<ForeignSpelling> foreign_value(std::string_view name) {
  std::string_view bare = strip_foreign_prefix(name);
  for (const Entry &e : kValues) {
    // `e` and `pi` only with a module prefix: plain `e` is too likely a typo.
    if (e.from.size() <= 2 && bare == name) continue;
    if (bare == e.from) return ForeignSpelling{std::string(e.replacement), std::string(e.help)};
  }
  if (auto m = member_of(name); m && m->second == "T")  // NumPy's x.T
    return ForeignSpelling{
        "transpose(" + m->first + ")",
        "spmdc writes NumPy's `.T` as `transpose(" + m->first + ")` (all dimensions reversed)"};
  return std::nullopt;
}

std::optional<ForeignSpelling> foreign_function(std::string_view name,
                                                bool (*is_builtin)(const std::string &)) {
  std::string_view bare = strip_foreign_prefix(name);
  for (const Entry &e : kFunctions)
    if (bare == e.from) return ForeignSpelling{std::string(e.replacement), std::string(e.help)};
  if (bare != name && is_builtin(std::string(bare)))
    return ForeignSpelling{std::string(bare), "spmdc's builtins have no module prefix"};
  if (auto m = member_of(name)) {  // NumPy's methods: x.astype(f32), x.sum(...)
    if (m->second == "astype")
      return ForeignSpelling{
          "", "spmdc has functions, not methods: write `cast(" + m->first + ", dtype)`"};
    if (is_builtin(m->second))
      return ForeignSpelling{
          "", "spmdc has functions, not methods: write `" + m->second + "(" + m->first + ", ...)`"};
  }
  return std::nullopt;
}

std::optional<ForeignSpelling> foreign_keyword(std::string_view keyword,
                                               const std::vector<std::string> &params) {
  for (const auto &[from, to] : kKeywords) {
    if (keyword != from) continue;
    for (const std::string &p : params)
      if (p == to) return ForeignSpelling{std::string(to), "spmdc calls this argument `" + p + "`"};
  }
  return std::nullopt;
}

std::optional<ForeignSpelling> foreign_dtype(std::string_view name) {
  std::string_view bare = strip_foreign_prefix(name);
  for (const DTypeEntry &e : kDTypes) {
    if (bare != e.from) continue;
    if (e.to.empty()) return ForeignSpelling{"", std::string(e.help)};
    std::string help = "spmdc spells it `" + std::string(e.to) + "`";
    if (!e.help.empty()) help += " " + std::string(e.help);
    return ForeignSpelling{std::string(e.to), help};
  }
  return std::nullopt;
}

bool suggest(Diagnostic &d, SourceSpan span, std::string_view written,
             const std::optional<ForeignSpelling> &foreign,
             const std::vector<std::string> &candidates) {
  if (foreign) {
    d.help(foreign->replacement.empty() ||
                   foreign->help.find('`' + foreign->replacement + '`') != std::string::npos
               ? foreign->help
               : "did you mean `" + foreign->replacement + "`? " + foreign->help);
    if (!foreign->replacement.empty()) d.fixit(span, foreign->replacement);
    return true;
  }
  if (auto best = closest_match(written, candidates)) {
    d.help("did you mean `" + *best + "`?").fixit(span, *best);
    return true;
  }
  return false;
}

}  // namespace spmd
