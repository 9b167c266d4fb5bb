// runtime/cpu/checkpoint.cpp — checkpoints of a training loop (spmdrt/checkpoint.h).
//
// A file: the text header (magic line, then `key value` lines, ended by
// `data`), then for each device of the process (ascending) and each carried
// value (in order) a line `value DEVICE K DTYPE RANK DIMS... BYTES` and the
// value's raw bytes. Written whole with write_output_file (complete or absent).
#include "spmdrt/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "spmdrt/cli_io.h"
#include "spmdrt/output_file.h"
#include "spmdrt/program.h"

namespace spmd::rt {

namespace {

constexpr const char *kMagic = "spmdc checkpoint 1";

bool file_exists(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_whole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError{"cannot read checkpoint `" + path + "`: " + std::strerror(errno)};
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Checkpointer *g_checkpointer = nullptr;

}  // namespace

size_t choose_checkpoint_loop(const std::vector<CheckpointLoop> &loops, const std::string &var,
                              const std::string &fn) {
  std::vector<std::string> names;
  for (const CheckpointLoop &l : loops) names.push_back(l.variable);
  if (loops.empty())
    throw CliError{"`" + fn +
                   "` has no top-level `for` loop to checkpoint (--checkpoint-dir and --resume "
                   "save and restore the values a training loop carries)"};
  if (var.empty()) {
    if (loops.size() == 1) return 0;
    throw CliError{"`" + fn + "` has " + std::to_string(loops.size()) +
                   " top-level loops (variables " + join_names(names) +
                   "); name the one to checkpoint with --checkpoint-loop VAR"};
  }
  size_t found = loops.size();
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].variable == var) {
      if (found != loops.size())
        throw CliError{"`" + fn + "` has several top-level loops over `" + var +
                       "`; rename one loop variable to choose it with --checkpoint-loop"};
      found = i;
    }
  if (found == loops.size())
    throw CliError{"`" + fn + "` has no top-level loop over `" + var +
                   "` (--checkpoint-loop; its loops: " + join_names(names) + ")"};
  return found;
}

Checkpointer::Checkpointer(CheckpointOptions options, std::string fn, std::string mesh,
                           CheckpointLoop loop, size_t loop_index, std::vector<int64_t> devices,
                           int process, int processes)
    : options_(std::move(options)),
      fn_(std::move(fn)),
      mesh_(std::move(mesh)),
      loop_(std::move(loop)),
      loop_index_(loop_index),
      devices_(std::move(devices)),
      process_(process),
      processes_(processes) {
  std::sort(devices_.begin(), devices_.end());
  if (!options_.dir.empty() && options_.every <= 0)
    throw CliError{"--checkpoint-dir needs --checkpoint-every K (save every K iterations, K >= 1)"};
  if (options_.dir.empty() && options_.every > 0)
    throw CliError{"--checkpoint-every needs --checkpoint-dir DIR (where to save)"};
  if (!options_.dir.empty()) make_directories(options_.dir);
  if (!options_.resume.empty()) load(options_.resume);
}

std::string Checkpointer::file_name(int64_t done, int process) const {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%010lld", static_cast<long long>(done));
  return std::string("ckpt-") + digits + ".p" + std::to_string(process) + "-of-" +
         std::to_string(processes_);
}

std::string Checkpointer::header(int64_t done) const {
  std::ostringstream h;
  h << kMagic << "\n"
    << "function " << fn_ << "\n"
    << "mesh " << mesh_ << "\n"
    << "loop " << loop_.variable << "\n"
    << "fingerprint " << loop_.fingerprint << "\n"
    << "processes " << processes_ << "\n"
    << "done " << done << "\n"
    << "next-step " << loop_.start + done * loop_.step << "\n"
    << "data\n";
  return h.str();
}

void Checkpointer::load(const std::string &dir) {
  if (!is_directory(dir)) throw CliError{"--resume `" + dir + "`: no such directory"};
  // The newest checkpoint whose files of every process exist.
  std::set<int64_t> mine;
  const std::string suffix = ".p" + std::to_string(process_) + "-of-" + std::to_string(processes_);
  bool other_layout = false;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (const dirent *e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("ckpt-", 0) != 0) continue;
      // A temporary of this process's file left by a run that was killed.
      if (const auto tmp = name.find(suffix + ".tmp-"); tmp != std::string::npos) {
        if (options_.dir == dir) ::unlink((dir + "/" + name).c_str());
        continue;
      }
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        mine.insert(std::stoll(name.substr(5, name.find('.') - 5)));
      else if (name.find("-of-") != std::string::npos && name.find(".tmp") == std::string::npos &&
               name.substr(name.find("-of-") + 4) != std::to_string(processes_))
        other_layout = true;
    }
    ::closedir(d);
  }
  int64_t chosen = -1;
  for (auto it = mine.rbegin(); it != mine.rend() && chosen < 0; ++it) {
    bool complete = true;
    for (int p = 0; p < processes_; ++p)
      complete = complete && file_exists(dir + "/" + file_name(*it, p));
    if (complete) chosen = *it;
  }
  if (chosen < 0)
    throw CliError{"--resume `" + dir + "`: no complete checkpoint" +
                   (other_layout ? " for " + std::to_string(processes_) +
                                       " process" + (processes_ == 1 ? "" : "es") +
                                       " (its files were written by a run of another number of "
                                       "processes: resume with that many)"
                                 : std::string(" (no ckpt-* files of every process)"))};
  const std::string path = dir + "/" + file_name(chosen, process_);
  const std::string bytes = read_whole(path);
  const size_t data = bytes.find("\ndata\n");
  if (bytes.rfind(std::string(kMagic) + "\n", 0) != 0 || data == std::string::npos)
    throw CliError{"`" + path + "` is not an spmdc checkpoint"};
  std::map<std::string, std::string> fields;
  {
    std::istringstream in(bytes.substr(0, data));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      const auto space = line.find(' ');
      if (space != std::string::npos) fields[line.substr(0, space)] = line.substr(space + 1);
    }
  }
  const std::string what = "--resume `" + dir + "`: the checkpoint was made by ";
  if (fields["function"] != fn_)
    throw CliError{what + "`" + fields["function"] + "`, not `" + fn_ + "`"};
  if (fields["mesh"] != mesh_)
    throw CliError{what + "a run on mesh " + fields["mesh"] + ", not " + mesh_};
  if (fields["loop"] != loop_.variable)
    throw CliError{what + "saving the loop over `" + fields["loop"] + "`, not `" +
                   loop_.variable + "`"};
  if (fields["fingerprint"] != loop_.fingerprint)
    throw CliError{what + "another program or other sizes (`--set`) than this run's "
                   "(fingerprints " + fields["fingerprint"] + " and " + loop_.fingerprint +
                   "; only the loop's number of iterations may change)"};
  const int64_t done = std::stoll(fields["done"]);
  if (done > loop_.trips)
    throw CliError{"--resume `" + dir + "`: the checkpoint is after " + std::to_string(done) +
                   " iterations, but the loop over `" + loop_.variable + "` has " +
                   std::to_string(loop_.trips)};
  // The values.
  size_t at = data + 6;
  std::vector<std::vector<Tensor>> values;
  for (size_t i = 0; i < devices_.size(); ++i) {
    std::vector<Tensor> device_values;
    for (int k = 0; k < loop_.carried; ++k) {
      const size_t eol = bytes.find('\n', at);
      if (eol == std::string::npos) throw CliError{"`" + path + "` is truncated"};
      std::istringstream line(bytes.substr(at, eol - at));
      std::string tag;
      int64_t device = -1, index = -1, dtype = -1, rank = -1;
      line >> tag >> device >> index >> dtype >> rank;
      Shape shape(static_cast<size_t>(std::max<int64_t>(rank, 0)));
      for (int64_t &d : shape) line >> d;
      size_t nbytes = 0;
      line >> nbytes;
      if (!line || tag != "value" || device != devices_[i] || index != k || dtype < 0 ||
          dtype > static_cast<int64_t>(DType::Key))
        throw CliError{"`" + path + "` does not hold the values this run expects"};
      at = eol + 1;
      Tensor t = Tensor::empty(static_cast<DType>(dtype), shape);
      if (t.nbytes() != nbytes || at + nbytes > bytes.size())
        throw CliError{"`" + path + "` is truncated"};
      std::memcpy(t.raw(), bytes.data() + at, nbytes);
      at += nbytes;
      device_values.push_back(std::move(t));
    }
    resumed_[devices_[i]] = std::move(device_values);
  }
  resumed_at_ = done;
}

int64_t Checkpointer::begin(int64_t device, const std::vector<Tensor *> &carried) {
  if (options_.resume.empty()) return 0;
  const std::vector<Tensor> &saved = resumed_.at(device);
  if (saved.size() != carried.size())
    throw RuntimeError("the checkpoint holds " + std::to_string(saved.size()) +
                       " carried values, the loop carries " + std::to_string(carried.size()));
  for (size_t k = 0; k < carried.size(); ++k) {
    if (saved[k].dtype() != carried[k]->dtype() || saved[k].shape() != carried[k]->shape())
      throw RuntimeError("carried value " + std::to_string(k) + " of the loop over `" +
                         loop_.variable + "` is " +
                         format_type(carried[k]->dtype(), carried[k]->shape()) +
                         ", the checkpoint holds " +
                         format_type(saved[k].dtype(), saved[k].shape()));
    *carried[k] = saved[k].clone();
  }
  return resumed_at_;
}

void Checkpointer::after(int64_t device, int64_t done, const std::vector<const Tensor *> &carried) {
  if (options_.dir.empty() || done % options_.every != 0 || done <= resumed_at_) return;
  std::vector<Tensor> copies;
  for (const Tensor *t : carried) copies.push_back(t->clone());
  std::map<int64_t, std::vector<Tensor>> complete;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &step = pending_[done];
    step[device] = std::move(copies);
    if (step.size() < devices_.size()) return;
    complete = std::move(step);
    pending_.erase(done);
    // The last device of the process to arrive writes the file (holding the
    // lock: files are written in order of `done`).
    write(done, complete);
  }
}

void Checkpointer::write(int64_t done, const std::map<int64_t, std::vector<Tensor>> &values) {
  std::string meta = header(done);
  std::vector<std::string> lines;
  std::vector<std::string_view> pieces;
  for (const auto &[device, tensors] : values)
    for (size_t k = 0; k < tensors.size(); ++k) {
      const Tensor &t = tensors[k];
      std::ostringstream line;
      line << "value " << device << " " << k << " " << static_cast<int>(t.dtype()) << " "
           << t.shape().size();
      for (int64_t d : t.shape()) line << " " << d;
      line << " " << t.nbytes() << "\n";
      lines.push_back(line.str());
    }
  pieces.push_back(meta);
  size_t i = 0;
  for (const auto &[device, tensors] : values)
    for (const Tensor &t : tensors) {
      pieces.push_back(lines[i++]);
      pieces.emplace_back(reinterpret_cast<const char *>(t.raw()), t.nbytes());
    }
  const std::string path = options_.dir + "/" + file_name(done, process_);
  try {
    write_output_file(path, pieces);
  } catch (const RuntimeError &e) {
    throw RuntimeError(std::string("cannot write checkpoint: ") + e.what());
  }
  written_.push_back(done);
  remove_older_than_complete();
}

void Checkpointer::remove_older_than_complete() {
  // The newest of this process's checkpoints that every process has written.
  int64_t complete = -1;
  for (int64_t done : written_) {
    bool all = true;
    for (int p = 0; p < processes_; ++p)
      all = all && file_exists(options_.dir + "/" + file_name(done, p));
    if (all) complete = std::max(complete, done);
  }
  if (complete < 0) return;
  for (int64_t old : written_)
    if (old < complete) ::unlink((options_.dir + "/" + file_name(old, process_)).c_str());
  written_.erase(std::remove_if(written_.begin(), written_.end(),
                                [complete](int64_t old) { return old < complete; }),
                 written_.end());
}

void Checkpointer::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!options_.dir.empty()) remove_older_than_complete();
}

void set_checkpointer(Checkpointer *checkpointer) { g_checkpointer = checkpointer; }
Checkpointer *active_checkpointer() { return g_checkpointer; }

CheckpointSite::CheckpointSite(int64_t device, size_t loop_index)
    : c_(g_checkpointer && g_checkpointer->watches(loop_index) ? g_checkpointer : nullptr),
      device_(device) {}

}  // namespace spmd::rt
