// support/small_vector.h — a vector that keeps its first N elements inline.
//
// Most instructions have one or two operands and one result, and most ops'
// shape and variance rules return one result; as std::vectors each of those
// lists is a heap allocation, and a derivative of a 100k-op program builds,
// copies and frees millions of them (malloc/free was ~28% of a `vjp`).
// SmallVector<T, N> stores up to N elements in the object itself and moves
// them to the heap only beyond that. Its inline buffer shares space with the
// heap pointer, so SmallVector<int32_t, 4> is as large as a std::vector.
//
// The interface is the part of std::vector the compiler uses (iterators are
// pointers); it converts implicitly from and to std::vector<T>, so code that
// builds a list as a std::vector still works (at the cost of a copy).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace spmd {

template <typename T, size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs room for at least one inline element");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T &;
  using const_reference = const T &;
  using pointer = T *;
  using const_pointer = const T *;
  using iterator = T *;
  using const_iterator = const T *;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() noexcept {}
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(size_t n, const T &value) { assign(n, value); }
  SmallVector(std::initializer_list<T> list) { append(list.begin(), list.end()); }
  template <std::input_iterator It>
  SmallVector(It first, It last) {
    append(first, last);
  }
  SmallVector(const std::vector<T> &v) { append(v.begin(), v.end()); }  // NOLINT: implicit
  SmallVector(std::span<const T> s) { append(s.begin(), s.end()); }     // NOLINT: implicit
  SmallVector(const SmallVector &o) { append(o.begin(), o.end()); }
  SmallVector(SmallVector &&o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    take(std::move(o));
  }
  ~SmallVector() { release(); }

  SmallVector &operator=(const SmallVector &o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector &operator=(SmallVector &&o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      release();
      take(std::move(o));
    }
    return *this;
  }
  SmallVector &operator=(std::initializer_list<T> list) {
    assign(list.begin(), list.end());
    return *this;
  }
  SmallVector &operator=(const std::vector<T> &v) {
    assign(v.begin(), v.end());
    return *this;
  }

  /// A std::vector with the same elements (a copy).
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT
  operator std::span<const T>() const { return {data(), size_}; }             // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  /// Whether the elements are in the inline buffer (not on the heap).
  bool is_inline() const { return capacity_ == N; }

  T *data() { return is_inline() ? inline_data() : heap_; }
  const T *data() const { return is_inline() ? inline_data() : heap_; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  T &operator[](size_t i) { return data()[i]; }
  const T &operator[](size_t i) const { return data()[i]; }
  T &at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  const T &at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  T &front() { return data()[0]; }
  const T &front() const { return data()[0]; }
  T &back() { return data()[size_ - 1]; }
  const T &back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow_to(n);
  }
  void clear() {
    std::destroy_n(data(), size_);
    size_ = 0;
  }

  template <typename... Args>
  T &emplace_back(Args &&...args) {
    if (size_ == capacity_) {
      // Construct first: the arguments may refer to an element of this vector.
      T value(std::forward<Args>(args)...);
      grow_to(next_capacity(size_ + 1));
      return *std::construct_at(data() + size_++, std::move(value));
    }
    return *std::construct_at(data() + size_++, std::forward<Args>(args)...);
  }
  void push_back(const T &value) { emplace_back(value); }
  void push_back(T &&value) { emplace_back(std::move(value)); }
  void pop_back() { std::destroy_at(data() + --size_); }

  void resize(size_t n) {
    if (n < size_) {
      std::destroy(data() + n, end());
    } else {
      reserve(n);
      std::uninitialized_value_construct(end(), data() + n);
    }
    size_ = static_cast<uint32_t>(n);
  }
  void resize(size_t n, const T &value) {
    if (n < size_) {
      std::destroy(data() + n, end());
      size_ = static_cast<uint32_t>(n);
    } else {
      while (size_ < n) emplace_back(value);
    }
  }

  template <std::input_iterator It>
  void assign(It first, It last) {
    clear();
    append(first, last);
  }
  void assign(std::initializer_list<T> list) { assign(list.begin(), list.end()); }
  void assign(size_t n, const T &value) {
    clear();
    resize(n, value);
  }

  /// Inserts copies of [first, last) before `pos`; returns where they start.
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - begin()), old = size_;
    if constexpr (std::contiguous_iterator<It>) {
      // (Copied through a temporary when the range may lie in this vector.)
      if (size_ > 0 && std::to_address(first) >= begin() && std::to_address(first) < end()) {
        SmallVector copy(first, last);
        return insert(begin() + at, copy.begin(), copy.end());
      }
    }
    append(first, last);
    std::rotate(begin() + at, begin() + old, end());
    return begin() + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> list) {
    return insert(pos, list.begin(), list.end());
  }
  iterator insert(const_iterator pos, const T &value) {
    const size_t at = static_cast<size_t>(pos - begin());
    emplace_back(value);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  iterator insert(const_iterator pos, T &&value) {
    const size_t at = static_cast<size_t>(pos - begin());
    emplace_back(std::move(value));
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  iterator erase(const_iterator first, const_iterator last) {
    T *f = begin() + (first - begin()), *l = begin() + (last - begin());
    if (f == l) return f;  // (moving the tail onto itself would empty moved strings)
    T *new_end = std::move(l, end(), f);
    std::destroy(new_end, end());
    size_ -= static_cast<uint32_t>(l - f);
    return f;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }

  void swap(SmallVector &o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    SmallVector tmp(std::move(o));
    o = std::move(*this);
    *this = std::move(tmp);
  }

  friend bool operator==(const SmallVector &a, const SmallVector &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SmallVector &a, const std::vector<T> &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend auto operator<=>(const SmallVector &a, const SmallVector &b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T *inline_data() { return std::launder(reinterpret_cast<T *>(inline_)); }
  const T *inline_data() const { return std::launder(reinterpret_cast<const T *>(inline_)); }

  size_t next_capacity(size_t need) const { return std::max<size_t>(need, 2 * size_t{capacity_}); }

  template <typename It>
  void append(It first, It last) {
    if constexpr (std::forward_iterator<It>)
      reserve(size_ + static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }

  /// Moves the elements to a heap buffer of `capacity` (> N) elements.
  void grow_to(size_t capacity) {
    if (capacity > UINT32_MAX) throw std::length_error("SmallVector: too many elements");
    T *fresh = std::allocator<T>().allocate(capacity);
    T *old = data();
    std::uninitialized_move_n(old, size_, fresh);
    std::destroy_n(old, size_);
    if (!is_inline()) std::allocator<T>().deallocate(heap_, capacity_);
    heap_ = fresh;
    capacity_ = static_cast<uint32_t>(capacity);
  }

  /// Destroys the elements and frees the heap buffer; leaves an empty inline vector.
  void release() {
    clear();
    if (!is_inline()) std::allocator<T>().deallocate(heap_, capacity_);
    capacity_ = N;
  }

  /// Takes the elements of `o` (this is empty and inline); leaves `o` empty.
  void take(SmallVector &&o) {
    if (o.is_inline()) {
      std::uninitialized_move_n(o.inline_data(), o.size_, inline_data());
      size_ = o.size_;
      o.clear();
    } else {
      heap_ = o.heap_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.size_ = 0;
      o.capacity_ = N;
    }
  }

  union {
    T *heap_;
    alignas(T) unsigned char inline_[N * sizeof(T)];
  };
  uint32_t size_ = 0;
  uint32_t capacity_ = N;  // N exactly when the elements are inline
};

}  // namespace spmd
