// spmdrt/debug_print.h — the in-language `print("step {} loss {}", k, loss)`.
//
// Every device of the mesh calls debug_print at the same point of the program
// (it is an op of the per-device body, like a collective). The values that
// vary along some mesh axes (`label_axes`, the union of the operands'
// variances) are gathered over those axes, and device 0 alone writes one line
// per position along them, in row-major order of the positions, labelled
// `[data=1, model=0] `; an invariant print is one unlabelled line. Lines go
// to stdout, flushed at once, so they appear during the run, in program order
// (the interpreter, CPU executables and MPI executables: rank 0 is device 0).
// Arrays of more than kPrintThreshold elements are abbreviated NumPy-style
// (the first and last three along each dimension) and followed by their type.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmdrt/collectives.h"
#include "spmdrt/tensor.h"

namespace spmd::rt {

/// Arrays with more elements than this print abbreviated (NumPy's threshold).
inline constexpr int64_t kPrintThreshold = 1000;

/// One value as a print shows it: NumPy's rendering, abbreviated above
/// kPrintThreshold elements and then followed by ` (f32[1000, 1000])`.
std::string format_print_value(const Tensor &value);

/// `format` with its `{}` holes filled by `values` (`{{` and `}}` are braces).
std::string format_print(std::string_view format, std::span<const Tensor> values);

/// The print op on device `ctx`: see the file comment. `label_axes` are mesh
/// axis indices in mesh order.
void debug_print(DeviceContext &ctx, std::string_view format, std::span<const Tensor> values,
                 const std::vector<int> &label_axes, std::FILE *out = stdout);

/// What device 0 writes for a varying print: `stacked[k]` is value k gathered
/// over `label_axes` (untiled: one leading row per position, the first axis
/// major). The CUDA runtime gathers on the GPUs and calls this on the host.
void print_gathered(const Mesh &mesh, std::string_view format, std::span<const Tensor> stacked,
                    const std::vector<int> &label_axes, std::FILE *out = stdout);

/// The same on a single device (a sharded function run unsharded, or no
/// mesh): one unlabelled line.
void debug_print(std::string_view format, std::span<const Tensor> values,
                 std::FILE *out = stdout);

/// `--check-nan`: the first element of `value` that is NaN or infinite, as
/// "NaN", "inf" or "-inf" (with its index in an array), or "" when every
/// element is finite (and always for integer and bool values).
std::string first_non_finite(const Tensor &value);

/// A NaN or Inf found by `--check-nan` (an executable's message names the
/// op, its .spmd location and the device; exit status 1).
class NonFiniteError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

/// Throws NonFiniteError when `value` (the result of op `op`, written at
/// `where`: "f.spmd:12:9") holds a NaN or an infinity. `device` is the mesh
/// position that computed it (-1: the same on every device).
void check_finite(const Tensor &value, std::string_view op, std::string_view where,
                  const Mesh &mesh, int64_t device);
/// The check an executable built with `spmdc build --check-nan` makes after
/// each op: an `invariant` value (the same bits everywhere) on device 0 only.
void check_finite(const DeviceContext &ctx, const Tensor &value, std::string_view op,
                  std::string_view where, bool invariant);

}  // namespace spmd::rt
