// support/flat_hash_map.h — a hash map from 64-bit keys, stored in one array.
//
// std::unordered_map allocates a node per entry and reaches it through a
// bucket array: two dependent cache misses per lookup once the map outgrows
// the cache, which is what made simplify's common-subexpression table the
// slowest part of a 100k-op derivative. FlatHashMap keeps its entries in one
// power-of-two array with linear probing (at most half full), and erases by
// shifting the following entries back (no tombstones), so a lookup is
// usually one cache line and memory is one allocation.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace spmd {

template <typename V>
class FlatHashMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Room for `n` entries without growing.
  void reserve(size_t n) {
    if (2 * n > slots_.size()) rehash(std::bit_ceil(std::max<size_t>(16, 2 * n)));
  }

  /// The value for `key`, or nullptr.
  V *find(uint64_t key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(key);; i = next(i)) {
      Slot &s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  const V *find(uint64_t key) const { return const_cast<FlatHashMap *>(this)->find(key); }

  /// Inserts `key -> value` unless `key` is present; the entry and whether it is new.
  std::pair<V *, bool> try_emplace(uint64_t key, V value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(std::max<size_t>(16, 2 * slots_.size()));
    for (size_t i = home(key);; i = next(i)) {
      Slot &s = slots_[i];
      if (!s.used) {
        s = Slot{key, std::move(value), true};
        ++size_;
        return {&s.value, true};
      }
      if (s.key == key) return {&s.value, false};
    }
  }

  /// Removes `key` if present.
  void erase(uint64_t key) {
    if (slots_.empty()) return;
    size_t hole = home(key);
    for (;; hole = next(hole)) {
      if (!slots_[hole].used) return;
      if (slots_[hole].key == key) break;
    }
    // Backward shift: an entry after the hole moves into it unless its home
    // lies cyclically in (hole, j], where it is still reachable without it.
    for (size_t j = next(hole); slots_[j].used; j = next(j)) {
      const size_t h = home(slots_[j].key);
      const bool reachable = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (reachable) continue;
      slots_[hole] = std::move(slots_[j]);
      hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    V value{};
    bool used = false;
  };

  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);  // Fibonacci hashing
  }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (Slot &s : old)
      if (s.used) try_emplace(s.key, std::move(s.value));
  }

  std::vector<Slot> slots_;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace spmd
