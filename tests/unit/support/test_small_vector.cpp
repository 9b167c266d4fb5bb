// test_small_vector.cpp — SmallVector behaves as std::vector under random
// operations, inline and spilled to the heap, for a trivial element type and
// for one that owns memory (std::string: a wrong move or a missed destructor
// shows as a wrong value, or as a leak or use after free under ASan); copies
// and moves are independent of their source.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "support/small_vector.h"

namespace spmd {
namespace {

template <typename T, size_t N>
void require_same(const SmallVector<T, N> &v, const std::vector<T> &reference) {
  REQUIRE(v.size() == reference.size());
  REQUIRE(v.empty() == reference.empty());
  REQUIRE(std::vector<T>(v.begin(), v.end()) == reference);
  REQUIRE(v.is_inline() == (v.capacity() == N));
  REQUIRE(v.capacity() >= v.size());
}

std::string text(int k) { return "value number " + std::to_string(k) + " (longer than SSO)"; }
int make(int k, int) { return k; }
std::string make(int k, std::string) { return text(k); }

/// Random push_back/pop_back/insert/erase/resize/clear/copy/move on a
/// SmallVector<T, 3> and a std::vector<T> side by side.
template <typename T>
void random_operations(uint64_t seed) {
  std::mt19937_64 rng(seed);
  SmallVector<T, 3> v;
  std::vector<T> reference;
  for (int step = 0; step < 4000; ++step) {
    const int k = static_cast<int>(rng() % 1000);
    const T value = make(k, T{});
    switch (rng() % 10) {
      case 0:
      case 1:
        v.push_back(value);
        reference.push_back(value);
        break;
      case 2:
        if (!reference.empty()) {
          v.pop_back();
          reference.pop_back();
        }
        break;
      case 3: {
        const size_t at = rng() % (reference.size() + 1);
        v.insert(v.begin() + at, value);
        reference.insert(reference.begin() + static_cast<std::ptrdiff_t>(at), value);
        break;
      }
      case 4: {
        const size_t at = rng() % (reference.size() + 1);
        const std::vector<T> more = {value, make(k + 1, T{}), make(k + 2, T{})};
        v.insert(v.begin() + at, more.begin(), more.end());
        reference.insert(reference.begin() + static_cast<std::ptrdiff_t>(at), more.begin(),
                         more.end());
        break;
      }
      case 5:
        if (!reference.empty()) {
          const size_t from = rng() % reference.size();
          const size_t to = from + rng() % (reference.size() - from + 1);
          v.erase(v.begin() + from, v.begin() + to);
          reference.erase(reference.begin() + static_cast<std::ptrdiff_t>(from),
                          reference.begin() + static_cast<std::ptrdiff_t>(to));
        }
        break;
      case 6: {
        const size_t n = rng() % 8;
        v.resize(n);
        reference.resize(n);
        break;
      }
      case 7: {  // copy, then change the copy: the original must not change
        SmallVector<T, 3> copy = v;
        require_same(copy, reference);
        copy.push_back(value);
        require_same(v, reference);
        v = copy;
        reference.push_back(value);
        break;
      }
      case 8: {  // move out and back
        SmallVector<T, 3> moved = std::move(v);
        require_same(moved, reference);
        v = std::move(moved);
        break;
      }
      case 9:
        if (rng() % 8 == 0) {
          v.clear();
          reference.clear();
        } else if (!reference.empty()) {  // an element of the vector itself, appended
          v.push_back(v[0]);
          reference.push_back(reference[0]);
        }
        break;
    }
    require_same(v, reference);
  }
}

TEST_CASE("SmallVector matches std::vector under random operations", "[support]") {
  for (uint64_t seed : {1u, 2u, 3u}) {
    random_operations<int>(seed);
    random_operations<std::string>(seed);
  }
}

TEST_CASE("SmallVector keeps N elements inline and spills beyond", "[support]") {
  SmallVector<int32_t, 4> v = {1, 2, 3, 4};
  REQUIRE(v.is_inline());
  REQUIRE(sizeof(v) == sizeof(std::vector<int32_t>));  // the buffer shares the pointer's space
  v.push_back(5);
  REQUIRE_FALSE(v.is_inline());
  REQUIRE(v == std::vector<int32_t>{1, 2, 3, 4, 5});
  // A spilled vector moved from hands over its buffer and is left empty.
  const int32_t *buffer = v.data();
  SmallVector<int32_t, 4> w = std::move(v);
  REQUIRE(w.data() == buffer);
  REQUIRE(v.empty());  // NOLINT(bugprone-use-after-move): documented state
  // Conversions to and from std::vector, comparisons.
  const std::vector<int32_t> as_vector = w;
  REQUIRE(as_vector == std::vector<int32_t>{1, 2, 3, 4, 5});
  SmallVector<int32_t, 4> from_vector = as_vector;
  REQUIRE(from_vector == w);
  REQUIRE(SmallVector<int32_t, 4>{1, 2} < SmallVector<int32_t, 4>{1, 3});
  REQUIRE_FALSE(SmallVector<int32_t, 4>{1, 2} == SmallVector<int32_t, 4>{1, 2, 0});
  // Inserting a range taken from the vector itself.
  SmallVector<int32_t, 4> self = {7, 8, 9};
  self.insert(self.begin() + 1, self.begin(), self.end());
  REQUIRE(self == std::vector<int32_t>{7, 7, 8, 9, 8, 9});
}

}  // namespace
}  // namespace spmd
