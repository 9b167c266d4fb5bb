// driver/kept_until_exit.h — the program-writing commands' big objects, freed by exiting.
//
// A command's Compilation (source, syntax trees, the checked IR) and a derived
// module are millions of small blocks on a 100k-op program; destroying them
// one by one when the command returns took ~8% of `spmdc check`, only for the
// process to exit right after, which returns all its memory at once. The
// commands that compile and write (check, print, the derivatives, build) so
// create them with keep_until_exit(): they live until the process exits and
// their destructors never run. Their output is written (and flushed by
// exit) as before; nothing in them owns a file or another resource.
//
// Built with AddressSanitizer (scripts/sanitize.sh) they are destroyed at exit
// as usual, so leak checking and bugs in destructors still show. Either way
// they stay reachable from a static table, so LeakSanitizer and valgrind count
// them as still reachable, not as leaks.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace spmd::driver {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kDestroyKeptObjects = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kDestroyKeptObjects = true;
#else
inline constexpr bool kDestroyKeptObjects = false;
#endif
#else
inline constexpr bool kDestroyKeptObjects = false;
#endif

namespace detail {

using KeptObjects = std::vector<std::shared_ptr<void>>;

/// A static whose destructor does not run (unless kDestroyKeptObjects).
union KeptTable {
  KeptObjects objects;
  KeptTable() : objects() {}
  ~KeptTable() {
    if constexpr (kDestroyKeptObjects) objects.~KeptObjects();
  }
};

inline KeptObjects &kept_objects() {
  static KeptTable table;
  return table.objects;
}

}  // namespace detail

/// A T made from `args` that lives until the process exits (see the file comment).
template <typename T, typename... Args>
T &keep_until_exit(Args &&...args) {
  auto object = std::make_shared<T>(std::forward<Args>(args)...);
  T &ref = *object;
  detail::kept_objects().push_back(std::move(object));
  return ref;
}

}  // namespace spmd::driver
