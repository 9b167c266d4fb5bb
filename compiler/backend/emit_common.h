// backend/emit_common.h — what the CPU and CUDA emitters share.
//
// Both emitters print a flat function (after inline_calls + simplify) as C++:
// value names become identifiers (Names), dtypes become C++ storage and compute
// types, constants become exact literals (hex floats), every statement gets a
// comment quoting the .spmd line it comes from, and the body of a fused group
// becomes one straight-line per-element computation (element_statements) over
// the runtime's scalar ops (spmdrt/scalar_ops.h). Loop nests over a group's
// iteration space are described by a LoopNest: the dimensions after merging
// the ones every operand walks contiguously, with each operand's strides known
// at compile time (0 where it is broadcast).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/fusion.h"
#include "backend/backend.h"
#include "ir/ir.h"
#include "support/source.h"
#include "support/unique_names.h"

namespace spmd::backend {

// The elementwise fusion plan (analysis/fusion.h), shared with the interpreter.
using fusion::FusedGroup;
using fusion::FusionPlan;
using fusion::plan_fusion;
using fusion::Step;

/// Unique, readable C++ identifiers for the values of one function.
class Names {
 public:
  explicit Names(const ir::Function &f);
  const std::string &operator[](ir::ValueId v) const { return names_.at(static_cast<size_t>(v)); }
  /// A fresh identifier starting with `hint` (for temporaries).
  std::string fresh(const std::string &hint);
  /// Gives `v` the identifier of `as` (a loop's carried value is one variable).
  void alias(ir::ValueId v, ir::ValueId as) { names_.at(static_cast<size_t>(v)) = (*this)[as]; }

 private:
  std::vector<std::string> names_;
  UniqueNames used_{2};  // the second `x` is `x_2`
};

/// Makes `text` a valid identifier fragment (letters, digits, '_').
std::string sanitize(const std::string &text);

const char *storage_type(DType dtype);  // float, double, uint16_t (bf16), int32_t, bool
const char *compute_type(DType dtype);  // float for bf16, else the storage type
std::string dtype_enum(DType dtype);    // "rt::DType::F32"
/// An exact literal of `value` converted to dtype, in its compute type.
std::string compute_literal(DType dtype, double value);
/// An exact double literal (hex float, with the decimal value in a comment).
std::string double_literal(double value);
std::string shape_init(const Shape &shape);              // "{8, 4}"
std::string int_list(const std::vector<int64_t> &list);  // "{1, 2}"
std::string int_list(const std::vector<int> &list);
std::string pair_list(const std::vector<std::pair<int64_t, int64_t>> &pairs);  // "{{0, 1}, {1, 0}}"

/// `text` as one line of C++ comment, "// text\n" after `indent`: control
/// characters (newlines included) become '?', and a line that would end in a
/// backslash, which would splice the next line into the comment, gets " //"
/// appended. Every comment of the emitted code that quotes user text (source
/// lines, file names) goes through here.
std::string cpp_comment(std::string_view text, std::string_view indent = "");
/// `text` as a C++ string literal: quotes and backslashes escaped, control and
/// non-ASCII bytes as three-digit octal escapes. Every string literal of the
/// emitted code goes through here.
std::string cpp_string_literal(std::string_view text);

/// "line 17: local_loss = mean(...)" for an instruction's span, or "" when unknown.
std::string source_line(const SourceManager *sources, SourceSpan span);

/// Loads an operand element in its compute type: `expr` indexes the storage.
std::string load_expr(DType dtype, const std::string &element);
/// Converts a compute value to storage for a store.
std::string store_expr(DType dtype, const std::string &value);

/// The per-element statements of a group of `plan`: `const C name = ...;` for
/// every member, reading external inputs through `input_expr` (already in
/// compute type).
std::vector<std::string> element_statements(const ir::Function &f, const FusionPlan &plan,
                                            const FusedGroup &group, const Names &names,
                                            const std::map<ir::ValueId, std::string> &input_expr,
                                            const std::string &elem_suffix);

/// A compile-time loop nest over a group's iteration space.
struct LoopNest {
  std::vector<int64_t> extent;                // merged dimensions, outermost first
  std::vector<std::vector<int64_t>> strides;  // per operand (output first), per dimension
  int64_t numel = 1;
};
/// Operand 0 is the (contiguous) output; then each input with its shape.
LoopNest make_loop_nest(const Shape &shape, const std::vector<Shape> &input_shapes);
/// Element offset of operand k given index variables idx[d]: "i0 * 4 + i1".
std::string offset_expr(const LoopNest &nest, size_t operand, const std::vector<std::string> &idx);

/// The call of a communicating collective, the same on both targets:
/// `ctx.all_reduce(x, Axes{..}, rt::ReduceOp::Sum)` for psum/pmax/pmin,
/// `ctx.all_gather(x, Axes{..}, dim, tiled)` for all_gather(_invariant),
/// `ctx.reduce_scatter(x, Axes{..}, dim, tiled)` for psum_scatter. A combined
/// one, psum((a, b), axes) or all_gather((a, b), ...), is one call on a vector
/// of tensors: `pre` receives its declaration and results 1.., and the
/// returned expression is result 0.
std::string collective_expr(const ir::Function &f, const ir::Instr &in, Names &names, bool movable,
                            std::string &pre);

/// A short name for a fused group: "sub_pow_sum" from its members' ops.
std::string group_title(const FusionPlan &plan, const FusedGroup &group);

/// How a backend writes a `for` loop (the same C++ on both targets; only the
/// tensor type and the way the i32 index becomes a tensor differ). The
/// carried values are mutable variables named after the loop's results (the
/// region's parameters are aliased to them); the body runs in a C++ block,
/// so its values die at the end of each iteration, and its next values are
/// assigned with ir/parallel_copy.h.
struct LoopCode {
  std::string before;  // the carried variables and the `for (...) {` header
  std::string index;   // the index as a tensor, inside the body (empty if unused)
  std::string next;    // the parallel copy at the end of the body
  std::string after;   // `}`
};
/// `index_tensor` turns the int64 loop counter into the index tensor, e.g.
/// "Tensor::scalar(rt::DType::I32, static_cast<double>(%s))" with %s the counter.
/// `checkpoint_site` (a variable holding an rt::CheckpointSite, or empty):
/// the loop starts after the iterations its begin() says are done (resuming)
/// and gives it the carried values after each iteration (spmdrt/checkpoint.h).
LoopCode loop_code(const ir::Function &f, const ir::Instr &loop, Names &names,
                   const std::string &index_tensor, const std::string &indent,
                   const std::string &checkpoint_site = "");

/// Prefixes every line of `text` with `indent`.
std::string indent_lines(const std::string &text, const std::string &indent);

/// The end of the executable's main(): `return rt::program_main(...)` over
/// functions() and `bodies`, with the threads and MPI executor factories named.
std::string program_main_call(const EmitOptions &options, const std::string &target,
                              const std::string &threads_executor, const std::string &mpi_executor);

/// The rt::ProgramFunction table entry of a shmap (C++ initializer); with
/// `checkpoints`, the loops --checkpoint-dir can save (CPU target).
std::string program_function_init(const ir::Module &module, const ir::Function &f,
                                  const std::string &source_path, const SourceManager *sources,
                                  bool checkpoints = false);

}  // namespace spmd::backend
