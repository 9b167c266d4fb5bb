// runtime/cpu/output_file.cpp — OutputFiles and the signal cleanup of temporaries.
//
// 1. add() classifies each target: standard output or another open
//    descriptor (`-`, /dev/stdout, /dev/fd/N), a regular file to replace
//    atomically (symbolic links followed first), or a device/FIFO written in
//    place; and refuses directories, unwritable files, missing directories,
//    two outputs naming one file and derived names that hit an input.
// 2. commit() writes every temporary (fsync'ed, mode and owner of the old
//    file), then the in-place outputs, then renames the temporaries over the
//    targets with the termination signals blocked, then fsyncs the directories.
// 3. Temporaries are registered in a fixed table that a signal handler
//    (installed on first use, only over the default action) walks to remove
//    them, after stopping the registered child process group; then the
//    signal is raised again with its default action.
#include "spmdrt/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace spmd::rt {
namespace {

// ----------------------------------------------------------- signal cleanup

constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kSlots = 1024;

/// One registered temporary. state: 0 free, 1 being filled, 2 registered.
struct Slot {
  std::atomic<int> state{0};
  bool directory = false;
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
std::atomic<int> g_slots_used{0};  // every registered slot is below this index
std::atomic<pid_t> g_child_group{0};

void sleep_ms(long ms) {
  struct timespec ts {};
  ts.tv_nsec = ms * 1000000L;
  ::nanosleep(&ts, nullptr);
}

/// Stops the child process group: SIGTERM, up to 2 s for it to go, then SIGKILL.
/// Only async-signal-safe calls.
void stop_child_group() {
  const pid_t group = g_child_group.load();
  if (group <= 0) return;
  ::kill(-group, SIGTERM);
  for (int i = 0; i < 200; ++i) {
    ::waitpid(group, nullptr, WNOHANG);  // reap the leader (our child)
    if (::kill(-group, 0) != 0 && errno == ESRCH) return;
    sleep_ms(10);
  }
  ::kill(-group, SIGKILL);
  ::waitpid(group, nullptr, 0);
}

/// Files first, then directories (a directory is removed once it is empty).
void remove_temporaries() {
  const int used = g_slots_used.load();
  for (int pass = 0; pass < 2; ++pass)
    for (int i = used - 1; i >= 0; --i) {
      Slot &s = g_slots[i];
      if (s.state.load() != 2 || s.directory != (pass == 1)) continue;
      if (s.directory)
        ::rmdir(s.path);
      else
        ::unlink(s.path);
    }
}

void on_termination_signal(int sig) {
  stop_child_group();
  remove_temporaries();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  ::sigemptyset(&set);
  ::sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);  // ends the process with the signal's default action
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kTerminationSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = on_termination_signal;
      ::sigemptyset(&sa.sa_mask);
      for (int other : kTerminationSignals) ::sigaddset(&sa.sa_mask, other);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

/// Blocks the termination signals in this thread while alive.
class SignalBlock {
 public:
  SignalBlock() {
    sigset_t set;
    ::sigemptyset(&set);
    for (int sig : kTerminationSignals) ::sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalBlock() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalBlock(const SignalBlock &) = delete;
  SignalBlock &operator=(const SignalBlock &) = delete;

 private:
  sigset_t old_;
};

// ----------------------------------------------------------- paths

[[noreturn]] void cannot_write(const std::string &path, const std::string &why) {
  throw OutputError(path, why);
}

std::string errno_text(int error) { return std::strerror(error); }

std::string dir_of(const std::string &path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string &path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The descriptor a path names directly (`-`, /dev/stdout, /dev/fd/N,
/// /proc/self/fd/N), or -1.
int named_descriptor(const std::string &path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char *prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string p = prefix;
    if (path.size() > p.size() && path.compare(0, p.size(), p) == 0) {
      const std::string digits = path.substr(p.size());
      if (digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
        continue;
      return std::atoi(digits.c_str());
    }
  }
  return -1;
}

/// Removes the temporaries `BASE.tmp-spmdc-PID-N` in `dir` that a process
/// killed by SIGKILL (or a crash) left: those of a PID that no longer runs,
/// owned by this user, regular files. The next write of the same output
/// cleans up after the one that was killed.
void remove_stale_temporaries(const std::string &dir, const std::string &base) {
  const std::string prefix = base + ".tmp-spmdc-";
  DIR *d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (const dirent *e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    // PID-N, both decimal.
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || dash + 1 == rest.size() || dash > 9 ||
        rest.find_first_not_of("0123456789-") != std::string::npos ||
        rest.find('-', dash + 1) != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::atol(rest.substr(0, dash).c_str()));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string &path : stale) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
      ::unlink(path.c_str());
  }
}

/// A unique temporary name beside `final_path` (the base name shortened so
/// the result stays under NAME_MAX); first removes the stale ones of that name.
std::string temporary_beside(const std::string &final_path) {
  static std::atomic<unsigned> counter{0};
  std::string base = base_of(final_path).substr(0, 200);
  const std::string dir = dir_of(final_path);
  remove_stale_temporaries(dir, base);
  return (dir == "." && final_path.find('/') == std::string::npos ? "" : dir + "/") + base +
         ".tmp-spmdc-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

void write_all(int fd, std::string_view bytes, const std::string &user_path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), std::min<size_t>(bytes.size(), size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      cannot_write(user_path, errno_text(errno));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

/// fsync, ignoring file systems and files that cannot be synced.
void sync_fd(int fd, const std::string &user_path) {
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
    cannot_write(user_path, errno_text(errno));
}

void sync_directory(const std::string &dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // best effort: the renames are done
  ::close(fd);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }
  /// Closes now, reporting the error a delayed write may surface.
  void close(const std::string &user_path) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && errno != EINTR) cannot_write(user_path, errno_text(errno));
  }

 private:
  int fd_;
};

}  // namespace

// ----------------------------------------------------------- OutputFiles

struct OutputFiles::Target {
  enum class Kind { Replace, InPlace, Descriptor };
  Kind kind = Kind::Replace;
  std::string user_path;   // as given, for messages
  std::string final_path;  // Replace: the file renamed over; InPlace: the file opened
  int descriptor = -1;     // Descriptor
  bool truncate = false;   // InPlace: a regular file whose directory cannot take a temporary
  bool exists = false;
  struct stat st {};
  std::string key;  // identity, to find two outputs naming one file
  std::vector<std::string_view> pieces;
  bool external = false;
  ExternalMode external_mode = ExternalMode::Keep;
  std::string temp;  // the temporary (Replace, or any external output)
  int temp_id = -1;  // its signal-cleanup registration
};

namespace {

using Target = OutputFiles::Target;

/// Follows symbolic links from `path` (at most 40), stopping at a named descriptor.
std::string follow_links(const std::string &user_path, std::string path) {
  for (int hops = 0; hops < 40; ++hops) {
    if (named_descriptor(path) >= 0) return path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
    if (n < 0) cannot_write(user_path, errno_text(errno));
    target.resize(static_cast<size_t>(n));
    path = target.empty() || target[0] == '/' ? target : dir_of(path) + "/" + target;
  }
  cannot_write(user_path, errno_text(ELOOP));
}

std::unique_ptr<Target> classify(const std::string &user_path) {
  auto t = std::make_unique<Target>();
  t->user_path = user_path;
  if (user_path.empty()) cannot_write(user_path, "the path is empty");
  const std::string path = follow_links(user_path, user_path);
  if (const int fd = named_descriptor(path); fd >= 0) {
    if (::fcntl(fd, F_GETFD) < 0) cannot_write(user_path, errno_text(EBADF));
    t->kind = Target::Kind::Descriptor;
    t->descriptor = fd;
    t->key = "fd:" + std::to_string(fd);
    return t;
  }
  t->final_path = path;
  if (::stat(path.c_str(), &t->st) != 0) {
    if (errno != ENOENT) cannot_write(user_path, errno_text(errno));
    const std::string dir = dir_of(path);
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
      cannot_write(user_path, "directory `" + dir + "` does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      cannot_write(user_path,
                   "cannot create files in directory `" + dir + "`: " + errno_text(errno));
    char real_dir[PATH_MAX];
    t->key = std::string(::realpath(dir.c_str(), real_dir) ? real_dir : dir.c_str()) + "/" +
             base_of(path);
    return t;
  }
  t->exists = true;
  t->key = "ino:" + std::to_string(t->st.st_dev) + ":" + std::to_string(t->st.st_ino);
  if (S_ISDIR(t->st.st_mode)) cannot_write(user_path, "it is a directory");
  if (!S_ISREG(t->st.st_mode)) {
    t->kind = Target::Kind::InPlace;  // a device, a FIFO, a socket: never replaced
    return t;
  }
  if (::access(path.c_str(), W_OK) != 0) cannot_write(user_path, errno_text(errno));
  if (::access(dir_of(path).c_str(), W_OK | X_OK) != 0) {
    // The file may be written but not replaced: overwrite it in place.
    t->kind = Target::Kind::InPlace;
    t->truncate = true;
  }
  return t;
}

/// Gives the temporary open as `fd` the mode and owner of the file it replaces.
void keep_mode_and_owner(const Target &t, int fd) {
  if (!t.exists) return;
  if (t.st.st_uid != ::geteuid() || t.st.st_gid != ::getegid())
    (void)::fchown(fd, t.st.st_uid, t.st.st_gid);  // kept where allowed
  if (::fchmod(fd, t.st.st_mode & 07777) != 0) cannot_write(t.user_path, errno_text(errno));
}

/// Writes a Replace target's temporary: created exclusively, filled, given
/// the old file's mode and owner, synced and closed.
void write_temporary(Target &t) {
  t.temp = temporary_beside(t.final_path);
  t.temp_id = register_temporary(t.temp);
  Fd fd(::open(t.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
               t.exists ? 0600 : 0666));  // a new file: 0666 less the umask
  if (fd.get() < 0)
    cannot_write(t.user_path, "cannot create a temporary file in `" + dir_of(t.final_path) +
                                  "`: " + errno_text(errno));
  for (std::string_view piece : t.pieces) write_all(fd.get(), piece, t.user_path);
  keep_mode_and_owner(t, fd.get());
  sync_fd(fd.get(), t.user_path);
  fd.close(t.user_path);
}

/// Copies an external output's temporary into an in-place target's descriptor.
void copy_file_to(const Target &t, int out) {
  Fd in(::open(t.temp.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) cannot_write(t.user_path, "cannot read `" + t.temp + "`: " + errno_text(errno));
  std::string buffer(size_t{1} << 16, '\0');
  while (true) {
    const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      cannot_write(t.user_path, "cannot read `" + t.temp + "`: " + errno_text(errno));
    }
    write_all(out, std::string_view(buffer.data(), static_cast<size_t>(n)), t.user_path);
  }
}

void write_in_place(const Target &t) {
  if (t.kind == Target::Kind::Descriptor) {
    std::cout.flush();  // keep order with what was printed before
    std::fflush(stdout);
    if (t.external) {
      copy_file_to(t, t.descriptor);
    } else {
      for (std::string_view piece : t.pieces) write_all(t.descriptor, piece, t.user_path);
    }
    return;
  }
  Fd fd(::open(t.final_path.c_str(), O_WRONLY | O_CLOEXEC | (t.truncate ? O_TRUNC : 0)));
  if (fd.get() < 0) cannot_write(t.user_path, errno_text(errno));
  if (t.external) {
    copy_file_to(t, fd.get());
  } else {
    for (std::string_view piece : t.pieces) write_all(fd.get(), piece, t.user_path);
  }
  if (t.truncate) sync_fd(fd.get(), t.user_path);
  fd.close(t.user_path);
}

}  // namespace

OutputFiles::OutputFiles() = default;

OutputFiles::~OutputFiles() {
  for (auto &t : targets_) {
    if (!t->temp.empty() && !committed_) ::unlink(t->temp.c_str());
    unregister_temporary(t->temp_id);
  }
}

void OutputFiles::protect_input(const std::string &path) {
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) == 0) inputs_.emplace_back(st.st_dev, st.st_ino);
}

void OutputFiles::add(const std::string &path, std::vector<std::string_view> pieces,
                      OutputNaming naming) {
  std::unique_ptr<Target> t = classify(path);
  if (naming == OutputNaming::Derived && t->exists)
    for (const auto &[dev, ino] : inputs_)
      if (t->st.st_dev == dev && t->st.st_ino == ino)
        cannot_write(path,
                     "it is an input file, and a name chosen by default never replaces an "
                     "input; name the output explicitly");
  for (const auto &other : targets_)
    if (other->key == t->key && t->kind != Target::Kind::Descriptor &&
        (t->kind == Target::Kind::Replace || t->truncate))
      cannot_write(path, "`" + other->user_path + "` is the same file, already an output");
  t->pieces = std::move(pieces);
  targets_.push_back(std::move(t));
}

std::string OutputFiles::add_external(const std::string &path, OutputNaming naming,
                                      ExternalMode mode) {
  add(path, {}, naming);
  Target &t = *targets_.back();
  t.external = true;
  t.external_mode = mode;
  if (t.kind == Target::Kind::Replace) {
    t.temp = temporary_beside(t.final_path);
  } else {
    const char *tmpdir = std::getenv("TMPDIR");
    t.temp = temporary_beside(std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/spmdc-out");
  }
  t.temp_id = register_temporary(t.temp);
  return t.temp;
}

void OutputFiles::commit() {
  if (committed_) throw std::logic_error("OutputFiles::commit called twice");
  // 1. Every temporary, complete and on disk; then the in-place outputs.
  for (auto &t : targets_) {
    if (t->kind != Target::Kind::Replace) continue;
    if (!t->external) {
      write_temporary(*t);
      continue;
    }
    Fd fd(::open(t->temp.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) cannot_write(t->user_path, "`" + t->temp + "`: " + errno_text(errno));
    if (t->external_mode == ExternalMode::Keep) keep_mode_and_owner(*t, fd.get());
    sync_fd(fd.get(), t->user_path);
  }
  for (auto &t : targets_)
    if (t->kind != Target::Kind::Replace) write_in_place(*t);
  // 2. The renames, with the termination signals held back until all are done.
  std::vector<std::string> dirs;
  {
    SignalBlock block;
    for (auto &t : targets_) {
      if (t->kind != Target::Kind::Replace) continue;
      if (::rename(t->temp.c_str(), t->final_path.c_str()) != 0)
        cannot_write(t->user_path, errno_text(errno));
      const std::string dir = dir_of(t->final_path);
      if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
      unregister_temporary(t->temp_id);
      t->temp_id = -1;
      t->temp.clear();
    }
    committed_ = true;
  }
  for (const std::string &dir : dirs) sync_directory(dir);
  for (auto &t : targets_)
    if (!t->temp.empty()) ::unlink(t->temp.c_str());  // an external in-place output's copy
}

void check_output_path(const std::string &path) { (void)classify(path); }

void write_output_file(const std::string &path, std::vector<std::string_view> pieces,
                       OutputNaming naming) {
  OutputFiles out;
  out.add(path, std::move(pieces), naming);
  out.commit();
}

int register_temporary(const std::string &path, bool directory) {
  install_handlers();
  if (path.size() >= PATH_MAX) throw RuntimeError("path too long: `" + path + "`");
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].directory = directory;
    int used = g_slots_used.load();
    while (used < i + 1 && !g_slots_used.compare_exchange_weak(used, i + 1)) {
    }
    g_slots[i].state.store(2);
    return i;
  }
  throw RuntimeError("too many temporary files at once (at most " + std::to_string(kSlots) + ")");
}

void unregister_temporary(int id) {
  if (id >= 0 && id < kSlots) g_slots[id].state.store(0);
}

void set_child_process_group(pid_t pgid) {
  install_handlers();
  g_child_group.store(pgid);
}

}  // namespace spmd::rt
