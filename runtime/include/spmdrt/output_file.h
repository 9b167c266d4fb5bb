// spmdrt/output_file.h — the one writer of output files, for spmdc and for built executables.
//
// Every file spmdc writes (derived programs, `fmt -i`, emitted sources,
// executables, `run` outputs) and every .npy file a built executable writes
// goes through OutputFiles, which gives these guarantees (docs/files.md):
//
//   * A regular file is written to a temporary beside it, flushed to disk
//     (fsync), renamed over the target, and the directory is flushed: a
//     reader sees the old file or the complete new one, never a partial one.
//     An existing file keeps its permission bits (and owner, where allowed);
//     a file the user may not write is refused, not replaced.
//   * Anything else is written in place: a device (`/dev/null`), a FIFO, or
//     standard output (`-`, `/dev/stdout`, `/dev/fd/1`). It is never replaced
//     by a regular file.
//   * A symbolic link is followed: its target is written, the link is kept. A
//     link to nothing is refused with a message saying so.
//   * Several outputs are all or none as far as POSIX allows: every temporary
//     is complete before the first rename, and SIGINT/SIGTERM/SIGHUP/SIGQUIT
//     wait while the renames run. (A power loss or SIGKILL in between can
//     leave some outputs replaced and others not.)
//   * A temporary left by a failure, or by SIGINT/SIGTERM/SIGHUP/SIGQUIT at any
//     time, is removed (a handler is installed while temporaries exist). Only
//     SIGKILL or a crash can leave one, named `NAME.tmp-spmdc-PID-N`; the
//     next write of NAME removes it (when process PID no longer runs).
//   * A path the tool made up itself (a default name, --out-dir DIR/NAME.npy)
//     never replaces a file registered with protect_input (the inputs).
//   * Errors name the user's path and the system's reason (strerror).
//
// The same module removes registered temporary files and directories, and
// stops a child process group (the host compiler of `spmdc build`), when the
// process is ended by one of those signals.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spmdrt/tensor.h"

namespace spmd::rt {

/// A file that cannot be written: what() is "cannot write `PATH`: REASON",
/// with the user's path and the reason also kept apart.
class OutputError : public RuntimeError {
 public:
  OutputError(std::string path, std::string reason)
      : RuntimeError("cannot write `" + path + "`: " + reason),
        path_(std::move(path)),
        reason_(std::move(reason)) {}
  const std::string &path() const { return path_; }
  const std::string &reason() const { return reason_; }

 private:
  std::string path_, reason_;
};

/// How an output's path was chosen.
enum class OutputNaming {
  Explicit,  // given by the user (-o, --out NAME=PATH): may name an input file
  Derived,   // made up by the tool (a default name, --out-dir): never replaces an input
};

/// The permission bits an output written by someone else (add_external) gets.
enum class ExternalMode {
  Keep,        // an existing file's (as add does); a new file's as its writer made it
  FromWriter,  // as its writer made it (an executable from the host compiler)
};

/// A set of output files written together, all or none. Errors are thrown as
/// OutputError.
class OutputFiles {
 public:
  OutputFiles();
  /// Removes every temporary not yet committed.
  ~OutputFiles();
  OutputFiles(const OutputFiles &) = delete;
  OutputFiles &operator=(const OutputFiles &) = delete;

  /// An input file: an output with a derived name must not replace it.
  void protect_input(const std::string &path);

  /// Adds output `path` ("-" is standard output) holding the concatenation
  /// of `pieces`, which must stay valid until commit(). Checks the target at
  /// once (its directory exists, it is not a directory, it may be written).
  void add(const std::string &path, std::vector<std::string_view> pieces,
           OutputNaming naming = OutputNaming::Explicit);

  /// Adds output `path`, to be written by someone else (a compiler, or
  /// blockwise by several processes): returns the path to write, a temporary
  /// beside `path` (or in $TMPDIR when `path` is written in place), which
  /// commit() flushes and renames (or copies). The temporary is removed on
  /// failure or on a signal.
  std::string add_external(const std::string &path, OutputNaming naming = OutputNaming::Explicit,
                           ExternalMode mode = ExternalMode::Keep);

  /// Writes every output; on failure nothing is replaced (see the header
  /// comment for the limits) and every temporary is removed.
  void commit();

  struct Target;  // one output (defined in output_file.cpp)

 private:
  std::vector<std::unique_ptr<Target>> targets_;
  std::vector<std::pair<dev_t, ino_t>> inputs_;
  bool committed_ = false;
};

/// Checks now what OutputFiles::add will check for `path` (the directory
/// exists, it is not a directory, it may be written); throws OutputError.
/// Commands call it before long work, so that a bad output path fails fast.
void check_output_path(const std::string &path);

/// Writes the concatenation of `pieces` to `path` through OutputFiles (one output).
void write_output_file(const std::string &path, std::vector<std::string_view> pieces,
                       OutputNaming naming = OutputNaming::Explicit);

/// Signal cleanup for temporaries that are not outputs (e.g. `spmdc build`'s
/// private directory): while registered, `path` is removed (rmdir for a
/// directory, after the files registered later) if the process is ended by
/// SIGINT, SIGTERM, SIGHUP or SIGQUIT. Returns an id for unregister_temporary.
int register_temporary(const std::string &path, bool directory = false);
void unregister_temporary(int id);

/// While set, process group `pgid` is sent SIGTERM (SIGKILL after 2 s) and
/// waited for before the temporaries are removed when the process is ended by
/// one of those signals. 0 clears it.
void set_child_process_group(pid_t pgid);

}  // namespace spmd::rt
