// runtime/cpu/kernels_reduce.cpp — Sum / Max / Min reductions over a set of axes,
// and argmax / argmin.
//
// Every output element reduces its input elements x_0, x_1, ..., x_{n-1}, taken in
// increasing flat (C-order) index, in a fixed order, so results are deterministic
// and the same whichever way the loops below walk memory:
// - Floating-point sums (f32, f64, bf16) are accurate and defined once, in
//   spmdrt/kernels.h (kSumLanes): 256 lanes accumulated in f64 and folded in a
//   fixed tree, the order the CUDA runtime's one-block-per-row kernel uses too.
//   (A sequential f32 sum of 10^6 elements loses about 4 digits; this keeps the
//   rounding error of one f32 store. The lanes also let the loop run many
//   independent additions at a time.)
// - i32 sums wrap (their order does not matter); max/min run
//   (((identity op x_0) op x_1) op ...) with identity -inf/+inf (INT_MIN/INT_MAX,
//   false/true) and propagate NaN. Bool supports max (any) and min (all).
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "internal.h"
#include "spmdrt/kernels.h"
#include "spmdrt/parallel.h"

namespace spmd::rt {

using detail::BF16;
using detail::fail;

namespace {

template <typename S>
using Accumulator = std::conditional_t<std::is_same_v<S, BF16>, float, S>;

template <ReduceOp kOp, typename A>
inline A combine(A acc, A x) {
  if constexpr (kOp == ReduceOp::Sum) {
    if constexpr (std::is_same_v<A, int32_t>) {
      return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(x));
    } else {
      return acc + x;
    }
  } else if constexpr (kOp == ReduceOp::Max) {
    return (acc > x || acc != acc) ? acc : x;
  } else {
    return (acc < x || acc != acc) ? acc : x;
  }
}

template <ReduceOp kOp, typename A>
constexpr A identity() {
  if constexpr (kOp == ReduceOp::Sum) {
    return A(0);
  } else if constexpr (std::is_same_v<A, bool>) {
    return kOp == ReduceOp::Min;
  } else if constexpr (std::is_floating_point_v<A>) {
    return kOp == ReduceOp::Max ? -std::numeric_limits<A>::infinity()
                                : std::numeric_limits<A>::infinity();
  } else {
    return kOp == ReduceOp::Max ? std::numeric_limits<A>::min() : std::numeric_limits<A>::max();
  }
}

template <ReduceOp kOp, typename S>
Tensor reduce_typed(const Tensor &x, const std::vector<bool> &reduced, const Shape &out_shape) {
  using A = Accumulator<S>;
  const int64_t out_numel = num_elements(out_shape);
  // bool accumulates in uint8_t storage (std::vector<bool> has no data()).
  using Stored = std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>;
  std::vector<Stored> storage(static_cast<size_t>(out_numel), identity<kOp, A>());
  A *pacc = reinterpret_cast<A *>(storage.data());
  // Accumulator strides in input coordinates: 0 along reduced dimensions.
  const std::vector<int64_t> out_strides = detail::row_major_strides(out_shape);
  std::vector<int64_t> acc_strides(x.shape().size(), 0);
  for (size_t d = 0, o = 0; d < x.shape().size(); ++d) {
    if (!reduced[d]) acc_strides[d] = out_strides[o++];
  }
  const S *in = x.data<S>();
  std::array<std::vector<int64_t>, 2> strides = {detail::row_major_strides(x.shape()), acc_strides};
  detail::for_each_broadcast_row<2>(
      x.shape(), strides, [&](const auto &off, int64_t count, const auto &inner) {
        const S *row = in + off[0];
        A *target = pacc + off[1];
        if (inner[1] == 0) {
          A value = *target;
          for (int64_t i = 0; i < count; ++i) {
            value = combine<kOp>(value, A(detail::Compute<S>::load(row[i])));
          }
          *target = value;
        } else {
          for (int64_t i = 0; i < count; ++i) {
            target[i * inner[1]] =
                combine<kOp>(target[i * inner[1]], A(detail::Compute<S>::load(row[i])));
          }
        }
      });
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  S *o = out.data<S>();
  for (int64_t i = 0; i < out_numel; ++i) o[i] = detail::Compute<S>::store(pacc[i]);
  return out;
}

// ---- accurate floating-point sums ---------------------------------------------

constexpr int64_t kLanes = kSumLanes;

template <typename S>
S round_sum(double v) {
  return detail::Compute<S>::store(static_cast<typename detail::Compute<S>::type>(v));
}

/// acc[t] += x[t] in f64, t < n: the one loop every sum below runs, compiled
/// for each vector width (one addition per element whatever the width).
template <typename S>
[[gnu::always_inline]] inline void add_in_f64(double *__restrict acc, const S *__restrict x,
                                              int64_t n) {
  for (int64_t t = 0; t < n; ++t) acc[t] += double(detail::Compute<S>::load(x[t]));
}
SPMDRT_CLONES void add_to_f64(double *acc, const float *x, int64_t n) { add_in_f64(acc, x, n); }
SPMDRT_CLONES void add_to_f64(double *acc, const double *x, int64_t n) { add_in_f64(acc, x, n); }
SPMDRT_CLONES void add_to_f64(double *acc, const BF16 *x, int64_t n) { add_in_f64(acc, x, n); }

/// Lanes per chunk of a long row's sum on the pool (kLanes / kLaneGroup chunks).
constexpr int64_t kLaneGroup = 64;
/// Elements from which one row's sum is split by lanes.
constexpr int64_t kSplitRow = int64_t{1} << 18;

// ---- the fold of kernels.h's definition, in registers ----

// Vector values pass only between helpers inlined into one cloned function, never across
// a call, so GCC's note that their calling convention depends on -mavx is moot.
#pragma GCC diagnostic ignored "-Wpsabi"

typedef double F64x4 __attribute__((vector_size(32)));

typedef float F32x4 __attribute__((vector_size(16)));

/// x[0 .. 4) in f64.
template <typename S>
[[gnu::always_inline]] inline F64x4 load4(const S *x) {
  if constexpr (std::is_same_v<S, float>) {
    F32x4 v;
    std::memcpy(&v, x, sizeof v);
    return __builtin_convertvector(v, F64x4);
  } else if constexpr (std::is_same_v<S, double>) {
    F64x4 v;
    std::memcpy(&v, x, sizeof v);
    return v;
  } else {
    return F64x4{double(detail::Compute<S>::load(x[0])), double(detail::Compute<S>::load(x[1])),
                 double(detail::Compute<S>::load(x[2])), double(detail::Compute<S>::load(x[3]))};
  }
}

/// x[i .. i + 4) in f64, +0 at n and past it.
template <typename S>
[[gnu::always_inline]] inline F64x4 load4_upto(const S *x, int64_t i, int64_t n) {
  if (i + 4 <= n) return load4(x + i);
  F64x4 v{};
  for (int64_t q = 0; i + q < n; ++q) v[q] = double(detail::Compute<S>::load(x[i + q]));
  return v;
}

/// Lanes [4 j, 4 j + 4) of a row of n <= 2 kLanes elements before the fold: 0 + x_t
/// (the lane's first addition: +0 + -0 is +0), plus x_{t + kLanes} where the row has it
/// (the lanes of kernels.h's definition); +0 past the row's end.
template <typename S>
[[gnu::always_inline]] inline F64x4 row_lanes(const S *row, int64_t n, int64_t j) {
  const F64x4 first = F64x4{} + load4_upto(row, 4 * j, n);
  if (n <= kLanes + 4 * j) return first;
  return first + load4_upto(row, kLanes + 4 * j, n);
}

/// row_lanes of one row, as fold_in_registers takes its lanes (a functor, not a lambda:
/// every function here must inline into the clone that calls it, whose vector width
/// it shares).
template <typename S>
struct RowLanes {
  const S *row;
  int64_t n;
  [[gnu::always_inline]] F64x4 operator()(int64_t j) const { return row_lanes(row, n, j); }
};

/// Lanes kept in memory (rows of more than 2 kLanes elements: they accumulate there).
struct StoredLanes {
  const double *l;
  [[gnu::always_inline]] F64x4 operator()(int64_t j) const {
    F64x4 v;
    std::memcpy(&v, l + 4 * j, sizeof v);
    return v;
  }
};

/// Lanes [4 j, 4 j + 4) after the fold's level S (l[t] += l[t + S] for t < S), the
/// lanes before it given by `lane`, P of them (a power of two, the rest +0):
/// evaluated depth first, so that the whole fold stays in registers.
template <int64_t S, int64_t P, typename Lanes>
[[gnu::always_inline]] inline F64x4 fold_level(const Lanes &lane, int64_t j) {
  if constexpr (2 * S >= P) {
    return lane(j) + lane(j + S / 4);
  } else {
    return fold_level<2 * S, P>(lane, j) + fold_level<2 * S, P>(lane, j + S / 4);
  }
}

/// kernels.h's fold (for s = P/2, ..., 2, 1: l[t] += l[t + s], t < s) over P >= 8 lanes
/// (a power of two; lanes past the used ones +0, whose additions change nothing: a lane
/// is never -0, it starts at +0), with no lane stored to memory. Written as a loop over
/// the lanes in memory, each level waited on the stores of the one before: the fold was
/// as much work as a 128-element row (issue 32).
template <int64_t P, typename Lanes>
[[gnu::always_inline]] inline double fold_in_registers(const Lanes &lane) {
  const F64x4 v = fold_level<4, P>(lane, 0);
  return (v[0] + v[2]) + (v[1] + v[3]);
}

/// The sum of a row of 0 < n <= 2 kLanes elements, folded in registers.
template <typename S>
[[gnu::always_inline]] inline double short_row_sum(const S *row, int64_t n) {
  const RowLanes<S> lane{row, n};
  const int64_t used = std::min(n, kLanes);
  if (used <= 8) return fold_in_registers<8>(lane);
  if (used <= 16) return fold_in_registers<16>(lane);
  if (used <= 32) return fold_in_registers<32>(lane);
  if (used <= 64) return fold_in_registers<64>(lane);
  if (used <= 128) return fold_in_registers<128>(lane);
  return fold_in_registers<256>(lane);
}
static_assert(kLanes == 256, "short_row_sum's fold is written for 256 lanes");

/// Sums one contiguous run x_0 .. x_{n-1} of n >= kSplitRow elements, split over the pool
/// by lanes (chunk g holds lanes [g G, (g + 1) G) of every block): each lane sums the same
/// elements in the same order as one thread would, so the bits do not change.
template <typename S>
double lane_sum_row(const S *row, int64_t n) {
  alignas(64) double l[kLanes] = {};
  // One chunk of lanes per thread: a chunk reads its lanes of every block, so more
  // chunks than threads would stream the row once per chunk (4x slower on one thread).
  const int64_t groups = kLanes / kLaneGroup;
  parallel_for(groups, (groups + threads() - 1) / threads(), [&](int64_t g0, int64_t g1) {
    const int64_t first = g0 * kLaneGroup, width = (g1 - g0) * kLaneGroup;
    for (int64_t i = 0; i + first < n; i += kLanes)
      add_to_f64(l + first, row + i + first, std::min(width, n - i - first));
  });
  return fold_in_registers<kLanes>(StoredLanes{l});
}

/// o[r] = the sum of row r, lo <= r < hi, of rows of n < kSplitRow elements: lane_sum_row's
/// arithmetic in one function compiled for each vector width, lanes and fold included.
/// Rows of up to 2 kLanes elements (layer norm's and softmax's rows) never store their
/// lanes; longer ones accumulate them in memory.
template <typename S>
[[gnu::always_inline]] inline void short_row_sums(const S *in, int64_t lo, int64_t hi, int64_t n,
                                                  S *o) {
  if (n == 0) {
    for (int64_t r = lo; r < hi; ++r) o[r] = round_sum<S>(0.0);  // an empty row sums to +0
    return;
  }
  if (n <= 2 * kLanes) {
    for (int64_t r = lo; r < hi; ++r) o[r] = round_sum<S>(short_row_sum(in + r * n, n));
    return;
  }
  alignas(64) double l[kLanes];
  for (int64_t r = lo; r < hi; ++r) {
    const S *row = in + r * n;
    // The first block sets each lane to 0 + x_j (the addition kept: +0 + -0 is +0).
    for (int64_t t = 0; t < kLanes; ++t) l[t] = 0.0 + double(detail::Compute<S>::load(row[t]));
    for (int64_t i = kLanes; i < n; i += kLanes) add_in_f64(l, row + i, std::min(kLanes, n - i));
    o[r] = round_sum<S>(fold_in_registers<kLanes>(StoredLanes{l}));
  }
}
SPMDRT_CLONES void row_sums(const float *in, int64_t lo, int64_t hi, int64_t n, float *o) {
  short_row_sums(in, lo, hi, n, o);
}
SPMDRT_CLONES void row_sums(const double *in, int64_t lo, int64_t hi, int64_t n, double *o) {
  short_row_sums(in, lo, hi, n, o);
}
SPMDRT_CLONES void row_sums(const BF16 *in, int64_t lo, int64_t hi, int64_t n, BF16 *o) {
  short_row_sums(in, lo, hi, n, o);
}

/// o[r] = the sum of row r of `rows` rows of n elements, rows split over the pool.
template <typename S>
void lane_sum_rows(const S *in, int64_t rows, int64_t n, S *o) {
  parallel_for(rows, elementwise_grain(rows, n), [&](int64_t lo, int64_t hi) {
    if (n < kSplitRow) return row_sums(in, lo, hi, n, o);
    for (int64_t r = lo; r < hi; ++r) o[r] = round_sum<S>(lane_sum_row(in + r * n, n));
  });
}

/// Column sums: out[t] = the lane sum over r of x[r * stride + t], t < width.
///
/// The fold is a binary tree: its root adds the lanes with an even index to those
/// with an odd one, the next level splits on bit 1 of the index, and so on (the
/// subtree at depth d with prefix p holds the lanes whose low d bits are p), so
/// evaluating it depth first needs one partial per level instead of all kSumLanes
/// lanes of every column. The kGroup subtrees at depth kLow (kGroup = 2^kLow) each
/// hold one of every kGroup consecutive lanes, so they are walked together: a leaf of
/// the walk is kGroup consecutive lanes, which read kGroup consecutive rows of each
/// block of kSumLanes rows (one contiguous run when a tile is the whole row; one lane
/// at a time read 2 KB runs 1 MB apart and ran at a third of memory speed), and every
/// level keeps kGroup partials. The kGroup subtrees are then folded as the tree's last
/// kLow levels. A subtree whose first lane is past the last row holds only +0 lanes and
/// is skipped, as in fold_in_registers (adding +0 changes nothing: a lane is never -0). Columns
/// go a tile at a time so the partials stay in cache. Each column's bits are the same
/// whatever the tiles.
template <typename S>
class ColumnSums {
 public:
  static constexpr int64_t kMaxTile = 1024;

  ColumnSums(const S *x, int64_t rows, int64_t stride, int64_t width)
      : x_(x),
        rows_(rows),
        stride_(stride),
        tile_(std::min(kMaxTile, width)),
        partials_(std::make_unique_for_overwrite<double[]>(
            static_cast<size_t>((kDepth - kLow + 1) * kGroup * tile_))) {}

  void run(int64_t width, S *out) {
    for (int64_t t0 = 0; t0 < width; t0 += tile_) {
      tw_ = std::min(tile_, width - t0);
      t0_ = t0;
      node(kLow, 0);
      double *p = partial(kLow);  // subtree q at depth kLow: p + q * tw_
      for (int64_t s = kGroup / 2; s >= 1; s /= 2) {
        for (int64_t q = 0; q < s; ++q) add_to_f64(p + q * tw_, p + (q + s) * tw_, tw_);
      }
      for (int64_t t = 0; t < tw_; ++t) out[t0 + t] = round_sum<S>(p[t]);
    }
  }

 private:
  static constexpr int kDepth = std::countr_zero(static_cast<uint64_t>(kLanes));
  static constexpr int kLow = 3;
  static constexpr int64_t kGroup = int64_t{1} << kLow;

  double *partial(int level) { return partials_.get() + (level - kLow) * kGroup * tile_; }

  /// Writes into partial(level) the kGroup subtrees of the lanes whose bits kLow to
  /// level - 1 are those of `prefix` (its low kLow bits are 0): subtree q at q * tw_.
  void node(int level, int64_t prefix) {
    double *acc = partial(level);
    const int64_t n = kGroup * tw_;
    if (level == kDepth) {  // lanes prefix + q: rows prefix + q, prefix + q + L, ...
      std::fill(acc, acc + n, 0.0);
      for (int64_t r = prefix; r < rows_; r += kLanes) {
        const int64_t count = std::min(kGroup, rows_ - r);
        if (tw_ == stride_) {
          add_to_f64(acc, x_ + r * stride_, count * tw_);
        } else {
          for (int64_t q = 0; q < count; ++q)
            add_to_f64(acc + q * tw_, x_ + (r + q) * stride_ + t0_, tw_);
        }
      }
      return;
    }
    node(level + 1, prefix);  // bit `level` clear: the left operand
    std::copy(partial(level + 1), partial(level + 1) + n, acc);
    const int64_t right = prefix | (int64_t{1} << level);
    if (right >= rows_) return;  // only +0 lanes on the right
    node(level + 1, right);
    add_to_f64(acc, partial(level + 1), n);
  }

  const S *x_;
  int64_t rows_, stride_, tile_;
  int64_t t0_ = 0, tw_ = 0;
  std::unique_ptr<double[]> partials_;
};

template <typename S>
void lane_sum_columns(const S *x, int64_t rows, int64_t stride, int64_t width, S *out) {
  ColumnSums<S>(x, rows, stride, width).run(width, out);
}

/// Column sums of `before` blocks [rows, width], in chunks of whole column tiles over
/// the pool (each column is summed by one chunk, as one thread would; the tiles never
/// change a bit, so they may follow the thread count: as wide as ColumnSums takes,
/// narrower where that leaves threads idle).
template <typename S>
void lane_sum_column_blocks(const S *in, int64_t before, int64_t rows, int64_t width, S *o) {
  const int64_t per_thread = (width + threads() - 1) / threads();
  const int64_t columns =
      std::clamp<int64_t>((per_thread + 15) / 16 * 16, 16, ColumnSums<S>::kMaxTile);
  const int64_t per_block = (width + columns - 1) / columns;
  const int64_t items = before * per_block;
  parallel_for(items, elementwise_grain(items, rows * columns), [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t b = item / per_block, t0 = item % per_block * columns;
      lane_sum_columns(in + b * rows * width + t0, rows, width, std::min(columns, width - t0),
                       o + b * width + t0);
    }
  });
}

/// The sum over the reduced dimensions of `x` (floating point). After merging
/// adjacent dimensions of the same kind, one reduced group is a row sum
/// ([kept, reduced]) or a column sum ([kept, reduced, kept]); more than one is
/// first transposed to [kept, reduced], which leaves each output's sequence of
/// elements, and so its bits, unchanged.
template <typename S>
Tensor lane_sum(const Tensor &x, const std::vector<bool> &reduced, const Shape &out_shape) {
  struct Group {
    bool reduced;
    int64_t size;
  };
  std::vector<Group> groups;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    const int64_t size = x.shape()[d];
    if (size == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[d])
      groups.back().size *= size;
    else
      groups.push_back({reduced[d], size});
  }
  int reduced_groups = 0;
  for (const Group &g : groups) reduced_groups += g.reduced;
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  S *o = out.data<S>();
  const int64_t out_numel = num_elements(out_shape);
  if (out_numel == 0) return out;
  if (reduced_groups > 1) {
    std::vector<int64_t> perm;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t d = 0; d < reduced.size(); ++d)
        if (reduced[d] == (pass == 1)) perm.push_back(static_cast<int64_t>(d));
    const Tensor rows = transpose(x, perm);
    const int64_t n = num_elements(x.shape()) / out_numel;
    lane_sum_rows(rows.data<S>(), out_numel, n, o);
    return out;
  }
  int64_t before = 1, n = 1, after = 1;  // [before, n, after], n reduced
  bool seen = false;
  for (const Group &g : groups) {
    if (g.reduced) {
      n = g.size;
      seen = true;
    } else {
      (seen ? after : before) *= g.size;
    }
  }
  const S *in = x.data<S>();
  if (after == 1) {
    lane_sum_rows(in, before, n, o);
  } else {
    lane_sum_column_blocks(in, before, n, after, o);
  }
  return out;
}

// ---- max and min of rows ------------------------------------------------------

/// o[r] = max (kOp Max) or min of row r, lo <= r < hi, of rows of n elements, with
/// reduce_typed's bits: vector lanes of 64 bytes keep the extreme so far (and whether a
/// NaN was seen), then the lanes and the tail are combined. Where no NaN occurs and the
/// extreme is not zero, that is the one value reduce_typed's sequential combine ends
/// with (equal non-zero floats have equal bits, whatever the order); a row with a NaN
/// (the first one wins) or whose extreme is ±0 (the last zero wins) is redone in order.
/// The extreme of a and b for kOp, elementwise for vectors, a NaN in `a` taken and one in
/// `b` kept: once a NaN is seen it stays, and a row with one takes the in-order path.
template <ReduceOp kOp, typename T>
[[gnu::always_inline]] inline T pick_keeping_nan(T a, T b) {
  if constexpr (kOp == ReduceOp::Max) {
    return (a > b) | (a != a) ? a : b;
  } else {
    return (a < b) | (a != a) ? a : b;
  }
}

/// Folds the kBytes at p, elements of type S, into one with pick_keeping_nan: the halves
/// combined elementwise, then the halves of that, and so on, in registers.
template <ReduceOp kOp, typename S, int kBytes>
[[gnu::always_inline]] inline S fold_halves(const void *p) {
  if constexpr (kBytes == sizeof(S)) {
    S e;
    std::memcpy(&e, p, sizeof e);
    return e;
  } else {
    using H [[gnu::vector_size(kBytes / 2)]] = S;
    H a, b;
    std::memcpy(&a, p, sizeof a);
    std::memcpy(&b, static_cast<const char *>(p) + sizeof a, sizeof b);
    const H h = pick_keeping_nan<kOp>(b, a);
    return fold_halves<kOp, S, kBytes / 2>(&h);
  }
}

template <ReduceOp kOp, typename S>
[[gnu::always_inline]] inline void extreme_rows(const S *in, int64_t lo, int64_t hi, int64_t n,
                                                S *o) {
  // Two 32-byte accumulators: one 64-byte generic vector with a compare mask was
  // scalarised in the AVX2 clone (9% of a transformer block's forward pass on an AVX2
  // machine went to its row maxima); 32-byte vectors map onto every clone's registers.
  using V [[gnu::vector_size(32)]] = S;
  constexpr int64_t kW = 32 / sizeof(S);
  constexpr S kIdentity = identity<kOp, S>();
  for (int64_t r = lo; r < hi; ++r) {
    const S *row = in + r * n;
    V m0, m1;
    for (int64_t j = 0; j < kW; ++j) m0[j] = m1[j] = kIdentity;
    int64_t i = 0;
    for (; i + 2 * kW <= n; i += 2 * kW) {
      V x0, x1;
      std::memcpy(&x0, row + i, sizeof x0);
      std::memcpy(&x1, row + i + kW, sizeof x1);
      m0 = pick_keeping_nan<kOp>(x0, m0);
      m1 = pick_keeping_nan<kOp>(x1, m1);
    }
    m0 = pick_keeping_nan<kOp>(m1, m0);
    S v = fold_halves<kOp, S, sizeof(V)>(&m0);
    for (; i < n; ++i) v = pick_keeping_nan<kOp>(row[i], v);
    if (v != v || v == S(0)) {
      v = kIdentity;
      for (int64_t k = 0; k < n; ++k) v = combine<kOp>(v, row[k]);
    }
    o[r] = v;
  }
}
SPMDRT_CLONES void max_rows(const float *in, int64_t lo, int64_t hi, int64_t n, float *o) {
  extreme_rows<ReduceOp::Max>(in, lo, hi, n, o);
}
SPMDRT_CLONES void max_rows(const double *in, int64_t lo, int64_t hi, int64_t n, double *o) {
  extreme_rows<ReduceOp::Max>(in, lo, hi, n, o);
}
SPMDRT_CLONES void min_rows(const float *in, int64_t lo, int64_t hi, int64_t n, float *o) {
  extreme_rows<ReduceOp::Min>(in, lo, hi, n, o);
}
SPMDRT_CLONES void min_rows(const double *in, int64_t lo, int64_t hi, int64_t n, double *o) {
  extreme_rows<ReduceOp::Min>(in, lo, hi, n, o);
}

/// Whether the reduced dimensions of `shape` (those of size 1 aside) are its last ones,
/// so that each output element reduces one contiguous row.
bool reduces_rows(const Shape &shape, const std::vector<bool> &reduced) {
  bool seen = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (reduced[d])
      seen = true;
    else if (seen)
      return false;
  }
  return true;
}

/// Max/min of f32/f64 rows (reduces_rows) on the pool, rows split into chunks.
template <ReduceOp kOp, typename S>
Tensor extreme_of_rows(const Tensor &x, const Shape &out_shape) {
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const int64_t rows = num_elements(out_shape);
  if (rows == 0) return out;
  const int64_t n = x.numel() / rows;
  const S *in = x.data<S>();
  S *o = out.data<S>();
  parallel_for(rows, elementwise_grain(rows, n), [&](int64_t lo, int64_t hi) {
    if constexpr (kOp == ReduceOp::Max) {
      max_rows(in, lo, hi, n, o);
    } else {
      min_rows(in, lo, hi, n, o);
    }
  });
  return out;
}

template <ReduceOp kOp>
Tensor reduce_dispatch(const Tensor &x, const std::vector<bool> &reduced, const Shape &out_shape) {
  return detail::dispatch_dtype(x.dtype(), [&](auto tag) -> Tensor {
    using S = decltype(tag);
    if constexpr (std::is_same_v<S, bool> && kOp == ReduceOp::Sum) {
      fail("reduce sum does not accept bool operands (cast to i32 first)");
    } else if constexpr (kOp == ReduceOp::Sum && !std::is_same_v<S, int32_t>) {
      return lane_sum<S>(x, reduced, out_shape);
    } else if constexpr (std::is_floating_point_v<S>) {
      if (reduces_rows(x.shape(), reduced)) return extreme_of_rows<kOp, S>(x, out_shape);
      return reduce_typed<kOp, S>(x, reduced, out_shape);
    } else {
      return reduce_typed<kOp, S>(x, reduced, out_shape);
    }
  });
}

/// argmax/argmin of each row of `rows` (outer x inner, row-major): the first
/// index holding the extreme; a NaN is the extreme (the first NaN wins).
template <ReduceOp kOp, typename S>
Tensor arg_reduce_rows(const Tensor &rows, int64_t outer, int64_t inner, const Shape &out_shape) {
  Tensor out = Tensor::empty(DType::I32, out_shape);
  int32_t *o = out.data<int32_t>();
  const S *in = rows.data<S>();
  for (int64_t r = 0; r < outer; ++r) {
    const S *row = in + r * inner;
    auto best = detail::Compute<S>::load(row[0]);
    int64_t best_index = 0;
    for (int64_t i = 1; i < inner && best == best; ++i) {
      auto v = detail::Compute<S>::load(row[i]);
      bool better = kOp == ReduceOp::Max ? v > best : v < best;
      if (better || v != v) {
        best = v;
        best_index = i;
      }
    }
    o[r] = static_cast<int32_t>(best_index);
  }
  return out;
}

}  // namespace

Tensor arg_reduce(ReduceOp op, const Tensor &x, std::span<const int64_t> axes) {
  if (op == ReduceOp::Sum) fail("arg_reduce: only max and min have an index");
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  int64_t previous = -1;
  for (int64_t axis : axes) {
    int64_t a = detail::normalize_axis(axis, rank, "argmax");
    if (a <= previous) fail("argmax: axes must be sorted and distinct");
    previous = a;
    reduced[a] = true;
  }
  // Move the reduced dimensions last (in order), so each output element reads
  // one contiguous row whose flat index is the row-major index over them.
  std::vector<int64_t> perm;
  Shape out_shape;
  int64_t inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) {
      perm.push_back(d);
      out_shape.push_back(x.shape()[d]);
    }
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      perm.push_back(d);
      inner *= x.shape()[d];
    }
  if (inner == 0)
    fail(std::string(op == ReduceOp::Max ? "argmax" : "argmin") +
         " over an empty set of elements (shape " + shape_str(x.shape()) + ")");
  if (inner > std::numeric_limits<int32_t>::max())
    fail("argmax: too many elements for an i32 index");
  const Tensor rows = transpose(x, perm);
  const int64_t outer = num_elements(out_shape);
  return detail::dispatch_dtype(x.dtype(), [&](auto tag) -> Tensor {
    using S = decltype(tag);
    if constexpr (std::is_same_v<S, bool>) {
      fail("argmax/argmin do not accept bool operands (cast to i32 first)");
    } else if (op == ReduceOp::Max) {
      return arg_reduce_rows<ReduceOp::Max, S>(rows, outer, inner, out_shape);
    } else {
      return arg_reduce_rows<ReduceOp::Min, S>(rows, outer, inner, out_shape);
    }
  });
}

Tensor reduce(ReduceOp op, const Tensor &x, std::span<const int64_t> axes) {
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  int64_t previous = -1;
  int64_t reduced_count = 1;
  for (int64_t axis : axes) {
    int64_t a = detail::normalize_axis(axis, rank, "reduce");
    if (a <= previous) fail("reduce: axes must be sorted and distinct");
    previous = a;
    reduced[a] = true;
    reduced_count *= x.shape()[a];
  }
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) out_shape.push_back(x.shape()[d]);
  }
  if (reduced_count == 0 && op != ReduceOp::Sum) {
    fail(std::string("reduce ") + (op == ReduceOp::Max ? "max" : "min") +
         " over an empty set of elements (shape " + shape_str(x.shape()) + ")");
  }
  switch (op) {
    case ReduceOp::Sum:
      return reduce_dispatch<ReduceOp::Sum>(x, reduced, out_shape);
    case ReduceOp::Max:
      return reduce_dispatch<ReduceOp::Max>(x, reduced, out_shape);
    case ReduceOp::Min:
      return reduce_dispatch<ReduceOp::Min>(x, reduced, out_shape);
  }
  fail("unknown reduce op");
}

}  // namespace spmd::rt
