// runtime/cpu/cli_io.cpp — shared --in/--random/--out/--out-dir handling (spmdrt/cli_io.h).
//
// Used by `spmdc run` and by program_main (program.cpp), so that both parse
// NAME=PATH options, load and check .npy inputs, make --random inputs from
// the same seeds, resolve output paths and write outputs atomically in exactly
// the same way and with exactly the same error messages.
#include "spmdrt/cli_io.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>

#include "spmdrt/checked.h"
#include "spmdrt/collectives.h"
#include "spmdrt/kernels.h"
#include "spmdrt/npy.h"
#include "spmdrt/program.h"

namespace spmd::rt {
bool is_directory(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent_dir(const std::string &path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void make_directories(const std::string &dir) {
  if (is_directory(dir)) return;
  const std::string parent = parent_dir(dir);
  if (parent != dir && parent != ".") make_directories(parent);
  if (::mkdir(dir.c_str(), 0777) != 0 && !(errno == EEXIST && is_directory(dir)))
    throw CliError{"cannot create output directory `" + dir + "`: " +
                   (errno == EEXIST ? std::string("it exists and is not a directory")
                                    : std::string(std::strerror(errno)))};
}

std::string join_names(const std::vector<std::string> &names) {
  std::string s;
  for (const auto &n : names) s += (s.empty() ? "`" : ", `") + n + "`";
  return s.empty() ? "none" : s;
}

uint64_t parse_seed(const std::string &text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw CliError{"--random expects an integer from 0 to 18446744073709551615, got `" + text +
                   "`"};
  return value;
}

int64_t parse_byte_size(const std::string &text, const std::string &flag) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string suffix = text.substr(digits);
  for (char &c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  for (const auto &[names, bits] :
       std::initializer_list<std::pair<std::vector<std::string>, int>>{{{"", "B"}, 0},
                                                                       {{"K", "KB", "KIB"}, 10},
                                                                       {{"M", "MB", "MIB"}, 20},
                                                                       {{"G", "GB", "GIB"}, 30},
                                                                       {{"T", "TB", "TIB"}, 40}})
    for (const std::string &n : names)
      if (suffix == n) shift = bits;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (digits == 0 || shift < 0 || ec != std::errc() || end != text.data() + digits ||
      value > (INT64_MAX >> shift))
    throw CliError{flag + " expects a size such as 4096, 512M or 64G, got `" + text + "`"};
  return value << shift;
}

std::string format_bytes(int64_t bytes) {
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {

/// The first number in a file (e.g. a cgroup's memory.max), or -1.
int64_t read_number(const char *path) {
  std::ifstream in(path);
  int64_t v = -1;
  if (!(in >> v)) return -1;
  return v;
}

}  // namespace

int64_t available_memory() {
  int64_t available = -1;
  auto lower = [&](int64_t v) {
    if (v >= 0 && (available < 0 || v < available)) available = v;
  };
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit)
      if (key == "MemAvailable:") lower(saturating_mul(kib, 1024));
  }
  // cgroup v2, then v1: the limit less what the group already uses.
  const int64_t max2 = read_number("/sys/fs/cgroup/memory.max");
  if (max2 > 0) lower(max2 - std::max<int64_t>(0, read_number("/sys/fs/cgroup/memory.current")));
  const int64_t max1 = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (max1 > 0 && max1 < (int64_t{1} << 60))
    lower(max1 - std::max<int64_t>(0, read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes")));
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    lower(static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, INT64_MAX)));
  return available;
}

void check_resources(const std::string &fn, int64_t devices, const MemoryEstimate &estimate,
                     int64_t host_bytes, int64_t max_memory) {
  if (devices > kMaxSimulatedDevices)
    throw CliError{"`" + fn + "` runs on a mesh of " + std::to_string(devices) +
                   " devices, but a simulated CPU mesh runs one thread per device and at most " +
                   std::to_string(kMaxSimulatedDevices) + " devices"};
  // Each device thread also needs a stack and bookkeeping.
  constexpr int64_t kPerDeviceOverhead = int64_t{256} << 10;
  const int64_t per_device = saturating_add(estimate.device_bytes, kPerDeviceOverhead);
  const int64_t need = saturating_add(saturating_mul(devices, per_device), host_bytes);
  const int64_t limit = max_memory >= 0 ? max_memory : available_memory();
  if (limit < 0 || need <= limit) return;
  std::string detail = std::to_string(devices) + " device" + (devices == 1 ? "" : "s") + " × " +
                       format_bytes(per_device);
  if (host_bytes > 0) detail += ", and " + format_bytes(host_bytes) + " of inputs and outputs";
  if (!estimate.largest.empty() && estimate.largest_bytes > 0)
    detail += "; the largest value, " + estimate.largest + ", takes " +
              format_bytes(estimate.largest_bytes) + " on each device";
  throw CliError{"running `" + fn + "` needs about " + format_bytes(need) + " of memory (" +
                 detail + "), but " + format_bytes(limit) +
                 (max_memory >= 0 ? " is allowed by --max-memory"
                                  : " is available; --max-memory SIZE overrides this check")};
}

std::pair<std::string, std::string> split_assignment(const std::string &text, const char *flag) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw CliError{std::string("malformed ") + flag + " `" + text + "`: expected NAME=PATH"};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<std::optional<std::string>> input_paths(const std::string &fn,
                                                    const std::vector<std::string> &names,
                                                    const std::vector<std::string> &inputs,
                                                    const std::optional<uint64_t> &random_seed) {
  std::map<std::string, size_t> by_name;
  for (size_t k = 0; k < names.size(); ++k) by_name[names[k]] = k;
  std::vector<std::optional<std::string>> paths(names.size());
  for (const std::string &text : inputs) {
    auto [name, path] = split_assignment(text, "--in");
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw CliError{"`" + fn + "` has no parameter named `" + name +
                     "` (its parameters: " + join_names(names) + ")"};
    if (paths[it->second]) throw CliError{"input `" + name + "` is given twice"};
    paths[it->second] = path;
  }
  std::vector<std::string> missing;
  for (size_t k = 0; k < paths.size(); ++k)
    if (!paths[k] && !random_seed) missing.push_back(names[k]);
  if (!missing.empty())
    throw CliError{std::string("missing input") + (missing.size() == 1 ? " " : "s ") +
                   join_names(missing) + " of `" + fn +
                   "`; pass --in NAME=FILE.npy for each, or --random SEED"};
  return paths;
}

uint64_t input_seed(uint64_t random_seed, size_t k) { return random_seed * 1000003ULL + k; }

bool castable(DType from, DType to) {
  if (is_float(to)) return true;
  return to == DType::I32 && from == DType::Bool;
}

bool check_input_file(size_t k, const std::string &name, DType param_dtype, DType file_dtype,
                      const Shape &file_shape, const std::string &path, const InputCheck &check,
                      const InputCasts &casts) {
  const std::string found_in = "`" + path + "`";
  if (file_dtype == param_dtype) {
    if (std::string problem = check(k, file_dtype, file_shape, found_in); !problem.empty())
      throw CliError{problem};
    return false;
  }
  // Another dtype: the shape must fit as it is; then the dtype decides.
  const bool widened_bf16 = param_dtype == DType::BF16 && file_dtype == DType::F32;
  const bool shape_fits = check(k, param_dtype, file_shape, found_in).empty();
  if (shape_fits && widened_bf16) return true;
  if (shape_fits && casts.allow && castable(file_dtype, param_dtype)) {
    if (casts.notes)
      casts.notes->push_back("input `" + name + "`: " + found_in + " holds " +
                             dtype_name(file_dtype) + ", cast to " + dtype_name(param_dtype) +
                             " (--cast)");
    return true;
  }
  std::string problem = check(k, file_dtype, file_shape, found_in);  // what the file really holds
  if (!shape_fits) throw CliError{problem};
  if (castable(file_dtype, param_dtype))
    problem += "; pass --cast to convert it to " + std::string(dtype_name(param_dtype));
  else
    problem += "; --cast does not convert " + std::string(dtype_name(file_dtype)) + " to " +
               dtype_name(param_dtype) + " (it would lose more than rounding): convert the file " +
               "itself, e.g. with NumPy's astype";
  throw CliError{problem};
}

void check_token_input(const std::string &name, DType param_dtype, const Shape &param_shape,
                       const std::string &spec, const NpyHeader &header,
                       const std::string &size_name) {
  if (header.token_width == 0) return;
  const std::string kind = header.token_width == 2 ? "u16" : "u32";
  const std::string path = parse_input_file(spec).path;
  const int64_t n = header.shape.at(0);
  if (param_dtype != DType::I32 || param_shape.size() != 1)
    throw CliError{"input `" + name + "`: `" + spec + "` is a token file, which fills an i32[n] " +
                   "parameter, but `" + name + "` is " + format_type(param_dtype, param_shape)};
  if (param_shape[0] != n)
    throw CliError{
        "input `" + name + "`: `" + path + "` holds " + std::to_string(n) + " " + kind + " token" +
        (n == 1 ? "" : "s") + ", but `" + name + "` is " + format_type(param_dtype, param_shape) +
        ": give its dimension the size " + std::to_string(n) +
        (size_name.empty() ? " (write it in the signature, or name the dimension there and pass "
                             "`--set NAME=" +
                                 std::to_string(n) + "`)"
                           : " with `--set " + size_name + "=" + std::to_string(n) +
                                 "` (an executable is rebuilt with it)")};
}

CliError input_read_error(const std::string &name, const RuntimeError &error) {
  return CliError{"cannot read input `" + name + "`: " + error.what()};
}

std::vector<Tensor> gather_inputs(const std::string &fn, const std::vector<std::string> &names,
                                  const std::vector<DType> &dtypes,
                                  const std::vector<Shape> &global_shapes,
                                  const std::vector<std::string> &inputs,
                                  const std::optional<uint64_t> &random_seed,
                                  const InputCheck &check, const InputCasts &casts,
                                  const std::vector<std::string> &size_names) {
  const auto paths = input_paths(fn, names, inputs, random_seed);
  std::vector<Tensor> result(names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    if (!paths[k]) {
      result[k] = random_tensor(dtypes[k], global_shapes[k], input_seed(*random_seed, k));
      continue;
    }
    // The file's dtype and shape are checked from its header, before its data
    // is read: a wrong or huge file is refused without reading it.
    bool convert = false;
    auto check_header = [&](DType dtype, const Shape &shape) {
      convert = check_input_file(k, names[k], dtypes[k], dtype, shape, *paths[k], check, casts);
    };
    Tensor t;
    const InputFile file = parse_input_file(*paths[k]);
    try {
      if (file.token_width != 0) {
        const NpyHeader header = read_input_header(file);
        check_token_input(names[k], dtypes[k], global_shapes[k], *paths[k], header,
                          k < size_names.size() ? size_names[k] : std::string());
      }
      t = read_input(file, check_header);
    } catch (const RuntimeError &e) {
      throw input_read_error(names[k], e);
    }
    result[k] = convert ? cast(t, dtypes[k]) : t;
  }
  return result;
}

std::vector<std::vector<OutputPath>> output_paths(const std::string &fn,
                                                  const std::vector<std::string> &names,
                                                  const std::vector<std::string> &outputs,
                                                  const std::string &out_dir) {
  std::map<std::string, size_t> by_name;
  for (size_t k = 0; k < names.size(); ++k) by_name[names[k]] = k;
  std::vector<std::vector<OutputPath>> paths(names.size());
  auto check = [](const std::string &name, const std::string &path) {
    try {
      check_output_path(path);
    } catch (const OutputError &e) {
      throw CliError{"cannot write output `" + name + "` to `" + path + "`: " + e.reason()};
    }
  };
  for (const std::string &text : outputs) {
    auto [name, path] = split_assignment(text, "--out");
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw CliError{"`" + fn + "` has no output named `" + name +
                     "` (its outputs: " + join_names(names) + ")"};
    check(name, path);
    paths[it->second].push_back({path, OutputNaming::Explicit});
  }
  if (!out_dir.empty()) {
    make_directories(out_dir);
    for (size_t k = 0; k < names.size(); ++k) {
      const std::string path = out_dir + "/" + names[k] + ".npy";
      check(names[k], path);
      paths[k].push_back({path, OutputNaming::Derived});
    }
  }
  return paths;
}

NpyOutputs::NpyOutputs(std::vector<std::vector<OutputPath>> paths, std::vector<std::string> inputs)
    : paths_(std::move(paths)), inputs_(std::move(inputs)) {}

NpyOutputs::~NpyOutputs() = default;

void NpyOutputs::create(const std::vector<DType> &dtypes, const std::vector<Shape> &shapes) {
  try {
    files_ = std::make_unique<OutputFiles>();
    for (const std::string &text : inputs_)
      files_->protect_input(parse_input_file(split_assignment(text, "--in").second).path);
    temps_.assign(paths_.size(), {});
    for (size_t k = 0; k < paths_.size(); ++k)
      for (const OutputPath &p : paths_[k]) {
        temps_[k].push_back(files_->add_external(p.path, p.naming));
        create_npy_file(temps_[k].back(), dtypes[k], shapes[k]);
      }
  } catch (const RuntimeError &e) {
    discard();
    throw CliError{std::string("cannot write outputs: ") + e.what()};
  }
}

std::string NpyOutputs::temporaries() const {
  std::string all;
  for (const auto &temps : temps_)
    for (const std::string &t : temps) all += t + '\0';  // no path holds a NUL
  return all;
}

void NpyOutputs::adopt(const std::string &temporaries) {
  temps_.assign(paths_.size(), {});
  size_t at = 0;
  for (size_t k = 0; k < paths_.size(); ++k)
    for (size_t j = 0; j < paths_[k].size(); ++j) {
      const size_t end = temporaries.find('\0', at);
      if (end == std::string::npos) throw RuntimeError("NpyOutputs::adopt: too few temporaries");
      temps_[k].push_back(temporaries.substr(at, end - at));
      at = end + 1;
    }
}

void NpyOutputs::write_block(size_t k, const Shape &global, const Shape &start,
                             const Tensor &block) {
  try {
    for (const std::string &temp : temps_.at(k)) write_npy_block(temp, global, start, block);
  } catch (const RuntimeError &e) {
    throw CliError{std::string("cannot write outputs: ") + e.what()};
  }
}

void NpyOutputs::commit() {
  if (!files_) return;  // nothing was created: no outputs
  try {
    files_->commit();
  } catch (const RuntimeError &e) {
    discard();
    throw CliError{std::string("cannot write outputs: ") + e.what()};
  }
}

void NpyOutputs::discard() { files_.reset(); }  // removes every temporary not committed

void write_outputs(const std::vector<Tensor> &results,
                   const std::vector<std::vector<OutputPath>> &paths,
                   const std::vector<std::string> &inputs) {
  NpyOutputs files(paths, inputs);
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const Tensor &r : results) {
    dtypes.push_back(r.dtype());
    shapes.push_back(r.shape());
  }
  files.create(dtypes, shapes);
  for (size_t k = 0; k < results.size(); ++k)
    files.write_block(k, results[k].shape(), Shape(results[k].shape().size(), 0), results[k]);
  files.commit();
}

}  // namespace spmd::rt
