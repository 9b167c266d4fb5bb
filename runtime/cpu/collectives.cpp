// runtime/cpu/collectives.cpp — DeviceContext and the simulated fabric: one thread per device.
//
// DeviceContext checks every collective's arguments once, for every fabric,
// then calls its Fabric. The simulated fabric below:
//
// Every collective call is a rendezvous of its group, keyed by (group axes, the
// group's first device, the caller's collective sequence number). Each member
// publishes its input and waits for all; then each computes its own output
// reading the others' inputs in rank order. Members also check that they called
// the same collective with the same parameters, dtype and shape.
//
// Small collectives (kOnePhaseBytes of input a member, all_reduce's counted n
// times) are one phase: a member publishes a copy of its input (uncounted by
// the memory meters, as a transport's buffer would be), so nobody reads the
// caller's own buffer and it may leave as soon as it has its result;
// all_reduce reduces the whole tensor on every member. Larger ones publish the
// input itself and have a second phase: each waits until every member has
// finished reading, so no input is modified or freed early, and the last one
// drops the published inputs before anyone leaves (a device's input is freed
// at the same point of its program every run); all_reduce splits the work
// (each member reduces one slice into a shared buffer, uncounted like the
// one-phase copies, then all copy it), and so does a reduce_scatter whose
// blocks are strided (a later dimension: each member then copies its block
// out of the shared sum instead of reading every input row by row). Either way
// every element is combined in rank order: the same bits.
// A one-phase ppermute is pairwise: a member waits only until its sender has
// published (one that receives nothing does not wait), and the sender wakes
// its receiver if that one already waits. Every member still arrives at the
// rendezvous and is checked against it. A device that only sends could run
// ahead without end, so it waits once it is in kMaxInFlight incomplete
// ppermutes, until the oldest completes.
//
// One fabric mutex guards the bookkeeping, held only for a few updates. A
// waiting device sleeps on its own futex word (std::atomic::wait), which the
// member completing the phase bumps after releasing the mutex, so a woken
// device does not queue for the mutex again. When the mesh has no more devices
// than the machine has cores, a waiter first spins briefly (a wake-up costs
// more than the wait); with more devices than cores it sleeps at once, leaving
// the core to the device it waits for. When a device throws, the fabric is
// aborted: every waiter wakes and throws CollectiveAborted. A deadlock (every
// live device waits in a rendezvous that cannot complete) is detected and
// reported as an error instead of hanging.
#include "spmdrt/collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "internal.h"
#include "spmdrt/parallel.h"

namespace spmd::rt {

using detail::fail;

namespace {

enum class Kind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, Permute, Barrier };

const char *kind_name(Kind kind) {
  static const char *names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "ppermute",   "barrier"};
  return names[static_cast<int>(kind)];
}

/// What a member called; all members of a rendezvous must agree.
struct Signature {
  Kind kind;
  std::vector<int64_t> params;
};

/// Input bytes per member up to which a collective is one phase (its inputs
/// published as copies): a copy of 32 KiB takes a few microseconds, a second
/// phase a wake-up of every member (tens of microseconds when device threads
/// outnumber cores). A one-phase all_reduce reduces the whole tensor on every
/// member, n times the work of the split one, so it counts n times its input.
/// bench/collectives_bench, 4 and 8 devices on 2 cores: one phase was 1.5-5x
/// faster up to 16 KiB, even to 2x slower from 64 KiB (docs/runtime.md).
constexpr int64_t kOnePhaseBytes = int64_t{32} << 10;

struct Rendezvous {
  Signature signature;
  std::vector<int64_t> members;  // device ids in rank order
  std::vector<Tensor> inputs;    // by rank (one phase: copies)
  Tensor shared_result;          // two-phase all_reduce: each member fills its slice, all copy it
                                 // (uncounted by the memory meters, as a transport's buffer)
  bool one_phase = false;
  bool pairwise = false;           // a one-phase ppermute: receivers wait for their sender only
  std::vector<uint8_t> present;    // pairwise: by rank, published its input
  std::vector<uint8_t> receiving;  // pairwise: by rank, waits for its sender
  int64_t arrived = 0;
  int64_t finished = 0;
};

struct Key {
  std::vector<int> axes;
  int64_t leader;
  uint64_t sequence;
  auto operator<=>(const Key &) const = default;
};

/// Whether reduce_scatter's blocks along `dim` of `shape` are strided (a dimension
/// before `dim` has more than one index): then a two-phase one reduces through a
/// shared buffer (SimulatedFabric::reduce_scatter).
bool strided_scatter(const Shape &shape, int64_t dim) {
  for (int64_t d = 0; d < dim; ++d)
    if (shape[d] > 1) return true;
  return false;
}

std::string axes_str(const Mesh &mesh, const std::vector<int> &axes) {
  std::string out = "(";
  for (size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + mesh.axes()[axes[i]].name;
  return out + ")";
}

class SimulatedFabric final : public Fabric {
 public:
  explicit SimulatedFabric(const Mesh &mesh)
      : mesh_(mesh),
        spin_(mesh.num_devices() <= static_cast<int64_t>(std::thread::hardware_concurrency())),
        wakeups_(std::make_unique<Wakeup[]>(static_cast<size_t>(mesh.num_devices()))),
        sequence_(static_cast<size_t>(mesh.num_devices()), 0),
        in_flight_(static_cast<size_t>(mesh.num_devices()), 0),
        awaits_capacity_(static_cast<size_t>(mesh.num_devices()), 0),
        state_(static_cast<size_t>(mesh.num_devices())) {}

  const Mesh &mesh() const override { return mesh_; }
  Tensor all_reduce(int64_t device, const Tensor &x, const std::vector<int> &axes,
                    ReduceOp op) override;
  Tensor all_gather(int64_t device, const Tensor &x, const std::vector<int> &axes, int64_t dim,
                    bool tiled) override;
  Tensor reduce_scatter(int64_t device, const Tensor &x, const std::vector<int> &axes, int64_t dim,
                        bool tiled) override;
  Tensor all_to_all(int64_t device, const Tensor &x, const std::vector<int> &axes,
                    int64_t split_dim, int64_t concat_dim) override;
  Tensor ppermute(int64_t device, const Tensor &x, const std::vector<int> &axes,
                  const PermutePairs &perm) override;
  void barrier(int64_t device) override;

  /// Phase 1: publishes x (a copy when the collective is one phase) and waits
  /// for the whole group. Returns the rendezvous and the caller's rank. A
  /// one-phase ppermute (`permute` set: the ranks the caller receives from and
  /// sends to, -1 for none) is pairwise instead: the caller waits only until
  /// its sender has published, and wakes its receiver if that one waits.
  std::pair<std::shared_ptr<Rendezvous>, int64_t> arrive(
      int64_t device, const std::vector<int> &axes, Signature signature, const Tensor &x,
      std::optional<std::pair<int64_t, int64_t>> permute = std::nullopt) {
    std::vector<int64_t> members = mesh_.group_of(device, axes);
    const int64_t rank = mesh_.rank_in_group(device, axes);
    const auto size = static_cast<int64_t>(members.size());
    const int64_t work =
        static_cast<int64_t>(x.nbytes()) * (signature.kind == Kind::AllReduce ? size : 1);
    const bool one_phase = work <= kOnePhaseBytes;
    const bool pairwise = one_phase && permute.has_value();
    Tensor published = x;
    if (one_phase && x.defined()) {
      MeterScope uncounted(nullptr);  // the fabric's buffer, not the device's
      published = x.clone();
    }
    std::unique_lock lock(mutex_);
    throw_if_aborted();
    // A device that only sends never waits in a pairwise ppermute; this bounds
    // how far it runs ahead of the devices yet to arrive (and the copies held).
    while (pairwise && in_flight_[device] >= kMaxInFlight) {
      awaits_capacity_[device] = true;
      state_[device] = {DeviceState::Waiting, signature.kind, &axes, sequence_[device]};
      wait(lock, device);
      lock.lock();
      throw_if_aborted();
    }
    Key key{axes, members[0], sequence_[device]++};
    std::shared_ptr<Rendezvous> &slot = pending_[key];
    if (!slot) {
      slot = std::make_shared<Rendezvous>();
      slot->signature = std::move(signature);
      slot->members = std::move(members);
      slot->inputs.resize(static_cast<size_t>(size));
      slot->one_phase = one_phase;
      slot->pairwise = pairwise;
      if (pairwise) {
        slot->present.assign(static_cast<size_t>(size), 0);
        slot->receiving.assign(static_cast<size_t>(size), 0);
      }
      if (!one_phase && (slot->signature.kind == Kind::AllReduce ||
                         (slot->signature.kind == Kind::ReduceScatter &&
                          strided_scatter(x.shape(), slot->signature.params[0])))) {
        // The fabric's buffer, counted on no device: whichever member arrives
        // first makes it, and a device's count must not depend on that.
        MeterScope uncounted(nullptr);
        slot->shared_result = Tensor::empty(x.dtype(), x.shape());
      }
    } else {
      check_agrees(*slot, signature, x, device, axes);
    }
    std::shared_ptr<Rendezvous> rv = slot;
    rv->inputs[rank] = std::move(published);
    if (rv->pairwise) {
      arrive_pairwise(*rv, key, device, rank, *permute, lock);
      return {rv, rank};
    }
    if (++rv->arrived == size) {
      pending_.erase(key);
      release(*rv, device, lock);
    } else {
      state_[device] = {DeviceState::Waiting, rv->signature.kind, &axes, key.sequence};
      wait(lock, device);
    }
    return {rv, rank};
  }

  /// The rest of arrive() for a pairwise ppermute, with the lock held:
  /// publishes, wakes the receiver if it waits, completes the rendezvous (the
  /// last member: every member's in-flight count drops) or counts it in
  /// flight, then waits for the sender unless it has published already.
  void arrive_pairwise(Rendezvous &rv, const Key &key, int64_t device, int64_t rank,
                       std::pair<int64_t, int64_t> permute, std::unique_lock<std::mutex> &lock) {
    const auto [source, target] = permute;
    rv.present[rank] = 1;
    int64_t wake_receiver = -1;
    if (target >= 0 && rv.receiving[target]) {
      rv.receiving[target] = 0;
      wake_receiver = rv.members[target];
      --blocked_;
      state_[wake_receiver] = {};
    }
    std::vector<int64_t> wake_capacity;
    if (++rv.arrived == static_cast<int64_t>(rv.members.size())) {
      pending_.erase(key);
      for (int64_t member : rv.members) {
        if (member == device) continue;
        --in_flight_[member];
        if (awaits_capacity_[member]) {
          awaits_capacity_[member] = false;
          --blocked_;
          state_[member] = {};
          wake_capacity.push_back(member);
        }
      }
    } else {
      ++in_flight_[device];
    }
    const bool must_wait = source >= 0 && !rv.present[source];
    uint32_t seen = 0;
    if (must_wait) {
      rv.receiving[rank] = 1;
      state_[device] = {DeviceState::Waiting, rv.signature.kind, &key.axes, key.sequence};
      seen = begin_wait(device);
    }
    lock.unlock();
    if (wake_receiver >= 0) wake(wake_receiver);
    for (int64_t member : wake_capacity) wake(member);
    if (must_wait) sleep(device, seen);
  }

  /// Phase 2 (two-phase collectives only): waits until every member has
  /// computed its output.
  void depart(Rendezvous &rv, int64_t device) {
    if (rv.one_phase) return;
    std::unique_lock lock(mutex_);
    throw_if_aborted();
    const auto size = static_cast<int64_t>(rv.members.size());
    if (++rv.finished == size) {
      // Nobody reads the inputs any more: the last member drops the
      // rendezvous' references before any member leaves, so each device's
      // input is freed (and uncounted) at the same point of its program
      // every run, not whenever the last thread happens to return.
      rv.inputs.clear();
      release(rv, device, lock);
    } else {
      state_[device] = {DeviceState::Finishing, rv.signature.kind, nullptr, 0};
      wait(lock, device);
    }
  }

  void record_error(std::exception_ptr error, bool real) {
    std::lock_guard lock(mutex_);
    record_error_locked(std::move(error), real);
  }

  void device_exited(int64_t device) {
    std::lock_guard lock(mutex_);
    state_[device] = {DeviceState::Exited, {}, nullptr, 0};
    ++exited_;
    check_deadlock();
  }

  void rethrow_first_error() {
    if (first_real_error_) std::rethrow_exception(first_real_error_);
    if (first_error_) std::rethrow_exception(first_error_);
  }

 private:
  void throw_if_aborted() const {
    if (aborted_.load(std::memory_order_acquire))
      throw CollectiveAborted("collective aborted because another device failed");
  }

  void check_agrees(const Rendezvous &rv, const Signature &signature, const Tensor &x,
                    int64_t device, const std::vector<int> &axes) {
    const Tensor *reference = nullptr;
    for (const Tensor &t : rv.inputs) {
      if (t.defined()) reference = &t;
    }
    std::string problem;
    if (rv.signature.kind != signature.kind) {
      problem = std::string("called ") + kind_name(signature.kind) + " while device " +
                std::to_string(rv.members[0]) + "'s group called " + kind_name(rv.signature.kind);
    } else if (rv.signature.params != signature.params) {
      problem = std::string("called ") + kind_name(signature.kind) +
                " with parameters that differ from the rest of its group";
    } else if (reference && x.defined() &&
               (reference->dtype() != x.dtype() || reference->shape() != x.shape())) {
      problem = std::string("passed ") + dtype_name(x.dtype()) + shape_str(x.shape()) + " to " +
                kind_name(signature.kind) + " but another member passed " +
                dtype_name(reference->dtype()) + shape_str(reference->shape());
    }
    if (!problem.empty()) {
      fail("collective mismatch over mesh axes " + axes_str(mesh_, axes) + ": device " +
           std::to_string(device) + " " + problem);
    }
  }

  /// Called with the lock held by the member completing a phase: marks the
  /// other members running, releases the lock, then wakes them.
  void release(const Rendezvous &rv, int64_t completer, std::unique_lock<std::mutex> &lock) {
    for (int64_t member : rv.members) {
      if (member == completer) continue;
      --blocked_;
      state_[member] = {};
    }
    lock.unlock();
    for (int64_t member : rv.members)
      if (member != completer) wake(member);
  }

  void wake(int64_t device) {
    std::atomic<uint32_t> &word = wakeups_[device].word;
    word.fetch_add(1, std::memory_order_release);
    word.notify_one();
  }

  /// Called with the lock held by a member whose phase is incomplete; returns
  /// with the lock released once a release() or an abort bumped its word.
  void wait(std::unique_lock<std::mutex> &lock, int64_t device) {
    const uint32_t seen = begin_wait(device);
    lock.unlock();
    sleep(device, seen);
  }

  /// With the lock held: counts the caller blocked (reporting a deadlock when
  /// every device is) and returns its word's value to sleep on.
  uint32_t begin_wait(int64_t device) {
    ++blocked_;
    check_deadlock();
    throw_if_aborted();
    return wakeups_[device].word.load(std::memory_order_relaxed);
  }

  /// Without the lock: returns once the caller's word has moved from `seen`.
  void sleep(int64_t device, uint32_t seen) {
    std::atomic<uint32_t> &word = wakeups_[device].word;
    if (spin_) {
      // Spare cores: the member we wait for is running; poll for a few
      // microseconds before paying for a sleep and a wake-up.
      const auto until = std::chrono::steady_clock::now() + kSpin;
      do {
        for (int i = 0; i < 64; ++i) {
          if (word.load(std::memory_order_acquire) != seen) return throw_if_aborted();
          cpu_relax();
        }
      } while (std::chrono::steady_clock::now() < until);
    }
    while (word.load(std::memory_order_acquire) == seen) word.wait(seen, std::memory_order_acquire);
    throw_if_aborted();
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  /// What a device is doing, for a deadlock report. Kept as data and put in
  /// words only when a deadlock is reported: a collective of a few
  /// microseconds should not build strings on every wait.
  struct DeviceState {
    enum Phase { Running, Waiting, Finishing, Exited };
    Phase phase = Running;
    Kind kind{};
    const std::vector<int> *axes = nullptr;  // Waiting: the caller's, alive while it waits
    uint64_t sequence = 0;                   // Waiting: the device's collective number
  };

  std::string describe(const DeviceState &state) const {
    switch (state.phase) {
      case DeviceState::Running:
        return "";
      case DeviceState::Waiting:
        return std::string(kind_name(state.kind)) + " over " + axes_str(mesh_, *state.axes) +
               " (collective #" + std::to_string(state.sequence) + ")";
      case DeviceState::Finishing:
        return std::string("finishing ") + kind_name(state.kind);
      case DeviceState::Exited:
        return "finished";
    }
    return "";
  }

  void check_deadlock() {
    if (aborted_.load(std::memory_order_relaxed) || blocked_ == 0 ||
        blocked_ + exited_ < mesh_.num_devices())
      return;
    std::string message = "collective deadlock: every device is finished or waiting:";
    const int64_t shown = std::min<int64_t>(mesh_.num_devices(), 16);
    for (int64_t d = 0; d < shown; ++d)
      message += "\n  device " + std::to_string(d) + ": " + describe(state_[d]);
    if (shown < mesh_.num_devices()) message += "\n  ...";
    message += "\n(devices must call the same collectives in the same order)";
    record_error_locked(std::make_exception_ptr(RuntimeError(message)), true);
  }

  void record_error_locked(std::exception_ptr error, bool real) {
    if (real && !first_real_error_) first_real_error_ = error;
    if (!first_error_) first_error_ = error;
    aborted_.store(true, std::memory_order_release);
    for (int64_t d = 0; d < mesh_.num_devices(); ++d) wake(d);
  }

  /// A device's futex word, bumped to wake it; one cache line each.
  struct alignas(64) Wakeup {
    std::atomic<uint32_t> word{0};
  };
  static constexpr std::chrono::microseconds kSpin{20};

  const Mesh &mesh_;
  const bool spin_;  // no more devices than cores: spin briefly before sleeping
  std::mutex mutex_;
  std::unique_ptr<Wakeup[]> wakeups_;  // one per device
  std::map<Key, std::shared_ptr<Rendezvous>> pending_;
  std::vector<uint64_t> sequence_;        // per device: collectives called so far
  std::vector<int64_t> in_flight_;        // per device: incomplete pairwise ppermutes it is in
  std::vector<uint8_t> awaits_capacity_;  // per device: waits for in_flight_ to drop
  static constexpr int64_t kMaxInFlight = 16;
  std::vector<DeviceState> state_;  // per device, for deadlock reports
  int64_t blocked_ = 0;             // devices waiting in an incomplete phase
  int64_t exited_ = 0;
  std::atomic<bool> aborted_{false};
  std::exception_ptr first_real_error_;
  std::exception_ptr first_error_;
};

constexpr int64_t kChunk = 4096;  // elements per cache-sized reduction chunk

template <typename A, ReduceOp kOp>
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

/// Whether out[0, count) overlaps any of `inputs`' first `span` elements.
template <typename S>
bool overlaps(std::span<const std::byte *const> inputs, int64_t span, int64_t count, const S *out) {
  const auto *o = reinterpret_cast<const std::byte *>(out);
  const auto in_bytes = static_cast<int64_t>(sizeof(S)) * span;
  const auto out_bytes = static_cast<int64_t>(sizeof(S)) * count;
  for (const std::byte *in : inputs)
    if (in < o + out_bytes && o < in + in_bytes) return true;
  return false;
}

/// For each of `rows` rows of `run` elements, `stride` elements apart in every input:
/// out[row * run + i] = ((in_0[row * stride + i] op in_1[...]) op in_2[...]) ...;
/// bf16 accumulates in f32 and rounds once. Works a tile of about kChunk elements at
/// a time (whole short rows, or a piece of a long one), each input in turn over the
/// tile: the order per element is the rank order whatever the tiling.
template <typename S, ReduceOp kOp>
void reduce_rows(std::span<const std::byte *const> inputs, int64_t rows, int64_t run,
                 int64_t stride, S *out) {
  using C = detail::Compute<S>;
  using A = typename C::type;
  if (rows == 0 || run == 0) return;
  const int64_t piece = std::min(run, kChunk);  // elements of a row in a tile
  const int64_t tile_rows = std::max<int64_t>(1, kChunk / piece);
  auto in_row = [&](size_t r, int64_t row, int64_t begin) {
    return reinterpret_cast<const S *>(inputs[r]) + row * stride + begin;
  };
  // Accumulate in `out` itself (the same operations in the same order, without copying
  // the first input in and the result out of a buffer) unless it overlaps an input.
  bool in_place = false;
  if constexpr (std::is_same_v<A, S>)
    in_place = inputs.size() >= 2 && !overlaps(inputs, (rows - 1) * stride + run, rows * run, out);
  A acc[kChunk];
  for (int64_t row0 = 0; row0 < rows; row0 += tile_rows) {
    const int64_t nrows = std::min(tile_rows, rows - row0);
    for (int64_t begin = 0; begin < run; begin += piece) {
      const int64_t n = std::min(piece, run - begin);
      if constexpr (std::is_same_v<A, S>) {
        if (in_place) {
          for (int64_t row = row0; row < row0 + nrows; ++row) {
            S *__restrict dst = out + row * run + begin;
            const S *__restrict in0 = in_row(0, row, begin);
            const S *__restrict in1 = in_row(1, row, begin);
            for (int64_t i = 0; i < n; ++i) dst[i] = combine<A, kOp>(in0[i], in1[i]);
          }
          for (size_t r = 2; r < inputs.size(); ++r)
            for (int64_t row = row0; row < row0 + nrows; ++row) {
              S *__restrict dst = out + row * run + begin;
              const S *__restrict in = in_row(r, row, begin);
              for (int64_t i = 0; i < n; ++i) dst[i] = combine<A, kOp>(dst[i], in[i]);
            }
          continue;
        }
      }
      for (int64_t row = row0; row < row0 + nrows; ++row) {
        A *a = acc + (row - row0) * n;
        const S *first = in_row(0, row, begin);
        for (int64_t i = 0; i < n; ++i) a[i] = C::load(first[i]);
      }
      for (size_t r = 1; r < inputs.size(); ++r)
        for (int64_t row = row0; row < row0 + nrows; ++row) {
          A *a = acc + (row - row0) * n;
          const S *in = in_row(r, row, begin);
          for (int64_t i = 0; i < n; ++i) a[i] = combine<A, kOp>(a[i], C::load(in[i]));
        }
      for (int64_t row = row0; row < row0 + nrows; ++row) {
        const A *a = acc + (row - row0) * n;
        S *dst = out + row * run + begin;
        for (int64_t i = 0; i < n; ++i) dst[i] = C::store(a[i]);
      }
    }
  }
}

int64_t check_dim(int64_t dim, int64_t rank, const char *op) {
  return detail::normalize_axis(dim, rank, op);
}

/// Element pointers `offset` elements into each of `inputs`.
std::vector<const std::byte *> at_offset(const std::vector<Tensor> &inputs, int64_t offset) {
  std::vector<const std::byte *> out;
  for (const Tensor &t : inputs)
    out.push_back(t.raw() + offset * static_cast<int64_t>(dtype_size(t.dtype())));
  return out;
}

}  // namespace

void detail::reduce_in_rank_order(ReduceOp op, DType dtype,
                                  std::span<const std::byte *const> inputs, int64_t count,
                                  std::byte *out) {
  reduce_rows_in_rank_order(op, dtype, inputs, 1, count, count, out);
}

void detail::reduce_rows_in_rank_order(ReduceOp op, DType dtype,
                                       std::span<const std::byte *const> inputs, int64_t rows,
                                       int64_t run, int64_t stride, std::byte *out) {
  if (inputs.empty()) fail("reduction over an empty group");
  dispatch_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    S *dst = reinterpret_cast<S *>(out);
    if constexpr (std::is_same_v<S, bool>) {
      if (op == ReduceOp::Sum) fail("psum does not accept bool operands");
    }
    switch (op) {
      case ReduceOp::Sum:
        if constexpr (!std::is_same_v<S, bool>)
          reduce_rows<S, ReduceOp::Sum>(inputs, rows, run, stride, dst);
        break;
      case ReduceOp::Max:
        reduce_rows<S, ReduceOp::Max>(inputs, rows, run, stride, dst);
        break;
      case ReduceOp::Min:
        reduce_rows<S, ReduceOp::Min>(inputs, rows, run, stride, dst);
        break;
    }
  });
}

// ---- DeviceContext: argument checks, then the fabric ----------------------------------

DeviceContext::DeviceContext(Fabric &fabric, int64_t device) : fabric_(&fabric), device_(device) {}

const Mesh &DeviceContext::mesh() const { return fabric_->mesh(); }

int64_t DeviceContext::axis_index(const std::vector<int> &axes) const {
  return mesh().rank_in_group(device_, axes);
}

Tensor DeviceContext::all_reduce(const Tensor &x, const std::vector<int> &axes, ReduceOp op) {
  if (x.dtype() == DType::Bool && op == ReduceOp::Sum) fail("psum does not accept bool operands");
  return fabric_->all_reduce(device_, x, axes, op);
}

namespace {

/// The largest component a combined collective packs with others, in bytes
/// of the collective's buffer per device (an all_gather's: the gathered
/// one). Packing copies every component in and out; above this size the
/// copies cost more than the rendezvous they save, so a larger one runs as
/// its own collective. bench/collectives_bench --combined 8 (8 simulated
/// devices, packing every size for the measurement): 1.3-2.4x faster than
/// separate collectives at 128 KiB a tensor, 0.6-1.0x at 512 KiB, 0.2-0.6x
/// from 2 MiB (docs/runtime.md).
constexpr int64_t kMaxPackedBytes = int64_t{128} << 10;

/// Calls `fn` with the indices of the tensors of each dtype present in `xs`, in
/// order of first appearance (a combined collective packs each group into one
/// buffer: one collective per dtype); a tensor of more than kMaxPackedBytes
/// (`scale` times its own bytes) is a group of its own.
template <typename Fn>
void for_each_dtype_group(const std::vector<Tensor> &xs, int64_t scale, Fn &&fn) {
  auto alone = [&](size_t i) {
    return xs[i].numel() * static_cast<int64_t>(dtype_size(xs[i].dtype())) * scale >
           kMaxPackedBytes;
  };
  std::vector<bool> done(xs.size(), false);
  for (size_t i = 0; i < xs.size(); ++i) {
    if (done[i]) continue;
    std::vector<size_t> same{i};
    done[i] = true;
    for (size_t j = i + 1; j < xs.size() && !alone(i); ++j) {
      if (done[j] || alone(j) || xs[j].dtype() != xs[i].dtype()) continue;
      same.push_back(j);
      done[j] = true;
    }
    fn(same);
  }
}

/// Copies `count` elements of `esize` bytes (no-op for none).
void copy_elements(std::byte *dst, const std::byte *src, int64_t count, size_t esize) {
  if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * esize);
}

/// The product of shape[begin, end).
int64_t extent_product(const Shape &shape, size_t begin, size_t end) {
  return num_elements(Shape(shape.begin() + static_cast<std::ptrdiff_t>(begin),
                            shape.begin() + static_cast<std::ptrdiff_t>(end)));
}

/// Copies the n member blocks of one component between its own layout, where
/// it is [outer, n, run] and member r's block is [:, r, :], and a packed
/// buffer that holds member r's blocks of all components at r * member_stride
/// (this component's at `offset` in it). `into_packed` says which of dst and
/// src is the packed buffer: reduce_scatter packs its inputs, all_gather
/// unpacks its results. Offsets and strides are in elements.
void copy_member_blocks(std::byte *dst, const std::byte *src, bool into_packed, int64_t outer,
                        int64_t n, int64_t run, int64_t member_stride, int64_t offset,
                        size_t esize) {
  const auto bytes = static_cast<int64_t>(esize);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t own = (o * n + r) * run, packed = r * member_stride + offset + o * run;
      copy_elements(dst + (into_packed ? packed : own) * bytes,
                    src + (into_packed ? own : packed) * bytes, run, esize);
    }
  }
}

/// The members' tensors `xs[same]` back to back in one buffer of their dtype.
Tensor pack_contiguous(const std::vector<Tensor> &xs, const std::vector<size_t> &same) {
  const DType dtype = xs[same[0]].dtype();
  const size_t esize = dtype_size(dtype);
  int64_t total = 0;
  for (size_t j : same) total += xs[j].numel();
  Tensor packed = Tensor::empty(dtype, {total});
  int64_t offset = 0;
  for (size_t j : same) {
    copy_elements(packed.raw() + offset * esize, xs[j].raw(), xs[j].numel(), esize);
    offset += xs[j].numel();
  }
  return packed;
}

/// Checks that reduce_scatter over a group of n can split x along `dim` (tiled:
/// into n equal blocks; untiled: dim has extent n) and that x is not bool;
/// returns the normalised dimension.
int64_t check_scatter(const Tensor &x, int64_t dim, int64_t n, bool tiled) {
  const int64_t d = check_dim(dim, x.rank(), "reduce_scatter");
  const int64_t extent = x.shape()[d];
  if (tiled ? extent % n != 0 : extent != n) {
    fail("reduce_scatter: dimension " + std::to_string(d) + " of " + shape_str(x.shape()) +
         (tiled ? " is not divisible by" : " does not equal") + " the group size " +
         std::to_string(n));
  }
  if (x.dtype() == DType::Bool) fail("psum_scatter does not accept bool operands");
  return d;
}

}  // namespace

std::vector<Tensor> DeviceContext::all_reduce(const std::vector<Tensor> &xs,
                                              const std::vector<int> &axes, ReduceOp op) {
  for (const Tensor &x : xs)
    if (x.dtype() == DType::Bool && op == ReduceOp::Sum) fail("psum does not accept bool operands");
  std::vector<Tensor> out(xs.size());
  for_each_dtype_group(xs, 1, [&](const std::vector<size_t> &same) {
    if (same.size() == 1) {
      out[same[0]] = all_reduce(xs[same[0]], axes, op);
      return;
    }
    const DType dtype = xs[same[0]].dtype();
    const size_t esize = dtype_size(dtype);
    const Tensor reduced = all_reduce(pack_contiguous(xs, same), axes, op);
    int64_t offset = 0;
    for (size_t j : same) {
      out[j] = Tensor::empty(dtype, xs[j].shape());
      copy_elements(out[j].raw(), reduced.raw() + offset * esize, xs[j].numel(), esize);
      offset += xs[j].numel();
    }
  });
  return out;
}

std::vector<Tensor> DeviceContext::all_gather(const std::vector<Tensor> &xs,
                                              const std::vector<int> &axes, int64_t dim,
                                              bool tiled) {
  std::vector<Tensor> out(xs.size());
  const int64_t n = mesh().group_size(axes);
  for_each_dtype_group(xs, n, [&](const std::vector<size_t> &same) {
    if (same.size() == 1) {
      out[same[0]] = all_gather(xs[same[0]], axes, dim, tiled);
      return;
    }
    const DType dtype = xs[same[0]].dtype();
    const size_t esize = dtype_size(dtype);
    std::vector<int64_t> dims;
    for (size_t j : same)
      dims.push_back(check_dim(dim, tiled ? xs[j].rank() : xs[j].rank() + 1, "all_gather"));
    // Every member's components back to back; gathered, member r's lie at r * total.
    Tensor packed = pack_contiguous(xs, same);
    const int64_t total = packed.numel();
    const Tensor gathered = all_gather(packed, axes, 0, true);
    int64_t offset = 0;
    for (size_t k = 0; k < same.size(); ++k) {
      const Tensor &x = xs[same[k]];
      const auto d = static_cast<size_t>(dims[k]);
      // The result is [outer, n, run]: member r's x as [outer, run] at [:, r, :].
      Shape shape = x.shape();
      if (tiled) {
        shape[d] *= n;
      } else {
        shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), n);
      }
      Tensor &result = out[same[k]];
      result = Tensor::empty(dtype, shape);
      copy_member_blocks(result.raw(), gathered.raw(), /*into_packed=*/false,
                         extent_product(x.shape(), 0, d), n,
                         extent_product(x.shape(), d, x.shape().size()), total, offset, esize);
      offset += x.numel();
    }
  });
  return out;
}

std::vector<Tensor> DeviceContext::reduce_scatter(const std::vector<Tensor> &xs,
                                                  const std::vector<int> &axes, int64_t dim,
                                                  bool tiled) {
  std::vector<Tensor> out(xs.size());
  const int64_t n = mesh().group_size(axes);
  for_each_dtype_group(xs, 1, [&](const std::vector<size_t> &same) {
    if (same.size() == 1) {
      out[same[0]] = reduce_scatter(xs[same[0]], axes, dim, tiled);
      return;
    }
    const DType dtype = xs[same[0]].dtype();
    const size_t esize = dtype_size(dtype);
    std::vector<int64_t> dims;
    int64_t per_member = 0;  // elements of every component's block for one member
    for (size_t j : same) {
      dims.push_back(check_scatter(xs[j], dim, n, tiled));
      per_member += xs[j].numel() / n;
    }
    // Block r of the packed buffer holds block r of each component, back to
    // back; x as [outer, n, run] has its block r at [:, r, :].
    Tensor packed = Tensor::empty(dtype, {n * per_member});
    int64_t offset = 0;
    for (size_t k = 0; k < same.size(); ++k) {
      const Tensor &x = xs[same[k]];
      const int64_t outer = extent_product(x.shape(), 0, static_cast<size_t>(dims[k]));
      const int64_t run = outer == 0 ? 0 : x.numel() / (outer * n);
      copy_member_blocks(packed.raw(), x.raw(), /*into_packed=*/true, outer, n, run, per_member,
                         offset, esize);
      offset += x.numel() / n;
    }
    const Tensor reduced = reduce_scatter(packed, axes, 0, true);
    offset = 0;
    for (size_t k = 0; k < same.size(); ++k) {
      const Tensor &x = xs[same[k]];
      const auto d = static_cast<size_t>(dims[k]);
      Shape shape = x.shape();
      if (tiled) {
        shape[d] /= n;
      } else {
        shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
      }
      out[same[k]] = Tensor::empty(dtype, shape);
      copy_elements(out[same[k]].raw(), reduced.raw() + offset * esize, x.numel() / n, esize);
      offset += x.numel() / n;
    }
  });
  return out;
}

Tensor DeviceContext::all_gather(const Tensor &x, const std::vector<int> &axes, int64_t dim,
                                 bool tiled) {
  const int64_t d = check_dim(dim, tiled ? x.rank() : x.rank() + 1, "all_gather");
  return fabric_->all_gather(device_, x, axes, d, tiled);
}

Tensor DeviceContext::reduce_scatter(const Tensor &x, const std::vector<int> &axes, int64_t dim,
                                     bool tiled) {
  const int64_t d = check_scatter(x, dim, mesh().group_size(axes), tiled);
  return fabric_->reduce_scatter(device_, x, axes, d, tiled);
}

Tensor DeviceContext::all_to_all(const Tensor &x, const std::vector<int> &axes, int64_t split_dim,
                                 int64_t concat_dim) {
  const int64_t sd = check_dim(split_dim, x.rank(), "all_to_all");
  const int64_t cd = check_dim(concat_dim, x.rank(), "all_to_all");
  const int64_t n = mesh().group_size(axes);
  if (x.shape()[sd] % n != 0) {
    fail("all_to_all: split dimension " + std::to_string(sd) + " of " + shape_str(x.shape()) +
         " is not divisible by the group size " + std::to_string(n));
  }
  return fabric_->all_to_all(device_, x, axes, sd, cd);
}

Tensor DeviceContext::ppermute(const Tensor &x, const std::vector<int> &axes,
                               const PermutePairs &perm) {
  const int64_t n = mesh().group_size(axes);
  std::vector<bool> sends(static_cast<size_t>(n), false), receives(static_cast<size_t>(n), false);
  for (auto [src, dst] : perm) {
    if (src < 0 || src >= n || dst < 0 || dst >= n) {
      fail("ppermute: pair (" + std::to_string(src) + ", " + std::to_string(dst) +
           ") out of range for a group of " + std::to_string(n) + " over " +
           axes_str(mesh(), axes));
    }
    if (sends[src] || receives[dst]) {
      fail("ppermute: permutation is not one-to-one (rank " +
           std::to_string(sends[src] ? src : dst) + " appears twice)");
    }
    sends[src] = receives[dst] = true;
  }
  return fabric_->ppermute(device_, x, axes, perm);
}

void DeviceContext::barrier() { fabric_->barrier(device_); }

// ---- the simulated fabric's collectives -----------------------------------------------

Tensor SimulatedFabric::all_reduce(int64_t device, const Tensor &x, const std::vector<int> &axes,
                                   ReduceOp op) {
  auto [rv, rank] = arrive(device, axes, {Kind::AllReduce, {int64_t(op)}}, x);
  if (rv->one_phase) {  // every member reduces the whole (small) tensor
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    detail::reduce_in_rank_order(op, x.dtype(), at_offset(rv->inputs, 0), x.numel(), out.raw());
    return out;
  }
  // Reduce-scatter then all-gather through a shared buffer: member r reduces slice r
  // (every element still in rank order 0..n-1), waits for the others, then copies
  // the whole result. The buffer lives as long as any member holds the rendezvous.
  const auto n = static_cast<int64_t>(rv->members.size());
  const int64_t per_member = (x.numel() + n - 1) / n;
  const int64_t begin = std::min(x.numel(), rank * per_member);
  const int64_t end = std::min(x.numel(), begin + per_member);
  const auto esize = static_cast<int64_t>(dtype_size(x.dtype()));
  detail::reduce_in_rank_order(op, x.dtype(), at_offset(rv->inputs, begin), end - begin,
                               rv->shared_result.raw() + begin * esize);
  depart(*rv, device);
  return rv->shared_result.clone();
}

Tensor SimulatedFabric::all_gather(int64_t device, const Tensor &x, const std::vector<int> &axes,
                                   int64_t d, bool tiled) {
  auto [rv, rank] = arrive(device, axes, {Kind::AllGather, {d, tiled}}, x);
  Tensor out;
  if (tiled) {
    out = concat(rv->inputs, d);
  } else {
    std::vector<Tensor> expanded;
    for (const Tensor &t : rv->inputs) {
      Shape s = t.shape();
      s.insert(s.begin() + d, 1);
      expanded.push_back(t.reshaped(s));
    }
    out = concat(expanded, d);
  }
  depart(*rv, device);
  return out;
}

Tensor SimulatedFabric::reduce_scatter(int64_t device, const Tensor &x,
                                       const std::vector<int> &axes, int64_t d, bool tiled) {
  auto [rv, rank] = arrive(device, axes, {Kind::ReduceScatter, {d, tiled}}, x);
  const auto n = static_cast<int64_t>(rv->members.size());
  const int64_t extent = x.shape()[d];
  const int64_t block = extent / n;
  Shape out_shape = x.shape();
  if (tiled) {
    out_shape[d] = block;
  } else {
    out_shape.erase(out_shape.begin() + d);
  }
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const int64_t outer = num_elements(Shape(x.shape().begin(), x.shape().begin() + d));
  const int64_t inner = num_elements(Shape(x.shape().begin() + d + 1, x.shape().end()));
  const int64_t run = block * inner;  // contiguous elements of my block per outer index
  const auto esize = static_cast<int64_t>(dtype_size(x.dtype()));
  if (rv->shared_result.defined()) {
    // Two-phase over a later dimension: my block is `outer` rows strided through every
    // input, and reading n inputs row by row cost 2-4x the leading case. Instead, as
    // all_reduce: member r reduces the contiguous slice r of the whole sum into the
    // shared buffer (every element in rank order: the same bits), and once all have,
    // copies its block's rows out of it.
    const int64_t per_member = (x.numel() + n - 1) / n;
    const int64_t begin = std::min(x.numel(), rank * per_member);
    const int64_t end = std::min(x.numel(), begin + per_member);
    detail::reduce_in_rank_order(ReduceOp::Sum, x.dtype(), at_offset(rv->inputs, begin),
                                 end - begin, rv->shared_result.raw() + begin * esize);
    depart(*rv, device);
    const int64_t extent_rank[2] = {outer, run};
    const int64_t out_strides[2] = {run, 1};
    const int64_t in_strides[2] = {extent * inner, 1};
    detail::strided_copy(out.raw(), out_strides, rv->shared_result.raw() + rank * run * esize,
                         in_strides, extent_rank, static_cast<size_t>(esize));
    return out;
  }
  // Otherwise my block is `outer` rows of `run` elements, `extent * inner` apart (one row
  // for dimension 0): reduced a tile of rows at a time, no call or allocation per row.
  detail::reduce_rows_in_rank_order(ReduceOp::Sum, x.dtype(), at_offset(rv->inputs, rank * run),
                                    outer, run, extent * inner, out.raw());
  depart(*rv, device);
  return out;
}

Tensor SimulatedFabric::all_to_all(int64_t device, const Tensor &x, const std::vector<int> &axes,
                                   int64_t sd, int64_t cd) {
  auto [rv, rank] = arrive(device, axes, {Kind::AllToAll, {sd, cd}}, x);
  const auto n = static_cast<int64_t>(rv->members.size());
  Shape block = x.shape();
  block[sd] /= n;
  Shape out_shape = block;
  out_shape[cd] *= n;
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const auto in_strides = detail::row_major_strides(x.shape());
  const auto out_strides = detail::row_major_strides(out_shape);
  const auto esize = static_cast<int64_t>(dtype_size(x.dtype()));
  for (int64_t s = 0; s < n; ++s) {
    const std::byte *src = rv->inputs[s].raw() + rank * block[sd] * in_strides[sd] * esize;
    std::byte *dst = out.raw() + s * block[cd] * out_strides[cd] * esize;
    detail::strided_copy(dst, out_strides, src, in_strides, block, esize);
  }
  depart(*rv, device);
  return out;
}

Tensor SimulatedFabric::ppermute(int64_t device, const Tensor &x, const std::vector<int> &axes,
                                 const PermutePairs &perm) {
  std::vector<int64_t> params;
  int64_t src = -1;
  const int64_t me = mesh_.rank_in_group(device, axes);
  for (auto [s, d] : perm) {
    params.push_back(s);
    params.push_back(d);
    if (d == me) src = s;
  }
  int64_t dst = -1;
  for (auto [s, d] : perm)
    if (s == me) dst = d;
  auto [rv, rank] = arrive(device, axes, {Kind::Permute, params}, x, std::pair{src, dst});
  Tensor out = src < 0 ? Tensor::zeros(x.dtype(), x.shape()) : rv->inputs[src].clone();
  depart(*rv, device);
  return out;
}

void SimulatedFabric::barrier(int64_t device) {
  std::vector<int> axes;
  for (size_t a = 0; a < mesh_.axes().size(); ++a) axes.push_back(static_cast<int>(a));
  auto [rv, rank] = arrive(device, axes, {Kind::Barrier, {}}, Tensor());
  depart(*rv, device);
}

void run_on_mesh(const Mesh &mesh, const std::function<void(DeviceContext &)> &body) {
  if (mesh.num_devices() > kMaxSimulatedDevices)
    fail("a simulated mesh runs one thread per device and at most " +
         std::to_string(kMaxSimulatedDevices) + " devices; this one has " +
         std::to_string(mesh.num_devices()));
  SimulatedFabric fabric(mesh);
  auto run_device = [&](int64_t device) {
    const DeviceThreadScope alive;  // while devices fill the cores, ops do not split
    apply_float_mode();             // --flush-denormals (spmdrt/parallel.h)
    try {
      DeviceContext context(fabric, device);
      body(context);
    } catch (const CollectiveAborted &) {
      fabric.record_error(std::current_exception(), false);
    } catch (...) {
      fabric.record_error(std::current_exception(), true);
    }
    fabric.device_exited(device);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(mesh.num_devices()));
  try {
    for (int64_t d = 0; d < mesh.num_devices(); ++d) threads.emplace_back(run_device, d);
  } catch (const std::system_error &e) {
    fabric.record_error(std::make_exception_ptr(RuntimeError("could not start " +
                                                             std::to_string(mesh.num_devices()) +
                                                             " device threads: " + e.what())),
                        true);
  }
  for (std::thread &t : threads) t.join();
  fabric.rethrow_first_error();
}

}  // namespace spmd::rt
