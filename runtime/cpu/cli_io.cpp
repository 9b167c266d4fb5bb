// runtime/cpu/cli_io.cpp — shared --in/--random/--out/--out-dir handling (spmdrt/cli_io.h).
//
// Used by `spmdc run` and by program_main (program.cpp), so that both parse
// NAME=PATH options, load and check .npy inputs, make --random inputs from
// the same seeds, resolve output paths and write outputs atomically in exactly
// the same way and with exactly the same error messages.
#include "spmdrt/cli_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "spmdrt/kernels.h"
#include "spmdrt/npy.h"

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

CliError input_read_error(const std::string &name, const RuntimeError &error) {
  return CliError{"cannot read input `" + name + "`: " + error.what()};
}

std::vector<Tensor> gather_inputs(const std::string &fn, const std::vector<std::string> &names,
                                  const std::vector<DType> &dtypes,
                                  const std::vector<Shape> &global_shapes,
                                  const std::vector<std::string> &inputs,
                                  const std::optional<uint64_t> &random_seed,
                                  const InputCheck &check, const InputCasts &casts) {
  const auto paths = input_paths(fn, names, inputs, random_seed);
  std::vector<Tensor> result(names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    if (!paths[k]) {
      result[k] = random_tensor(dtypes[k], global_shapes[k], input_seed(*random_seed, k));
      continue;
    }
    Tensor t;
    try {
      t = read_npy(*paths[k]);
    } catch (const RuntimeError &e) {
      throw input_read_error(names[k], e);
    }
    const bool convert =
        check_input_file(k, names[k], dtypes[k], t.dtype(), t.shape(), *paths[k], check, casts);
    result[k] = convert ? cast(t, dtypes[k]) : t;
  }
  return result;
}

std::vector<std::vector<std::string>> output_paths(const std::string &fn,
                                                   const std::vector<std::string> &names,
                                                   const std::vector<std::string> &outputs,
                                                   const std::string &out_dir) {
  std::map<std::string, size_t> by_name;
  for (size_t k = 0; k < names.size(); ++k) by_name[names[k]] = k;
  std::vector<std::vector<std::string>> paths(names.size());
  for (const std::string &text : outputs) {
    auto [name, path] = split_assignment(text, "--out");
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw CliError{"`" + fn + "` has no output named `" + name +
                     "` (its outputs: " + join_names(names) + ")"};
    if (!is_directory(parent_dir(path)))
      throw CliError{"cannot write output `" + name + "` to `" + path + "`: directory `" +
                     parent_dir(path) + "` does not exist"};
    paths[it->second].push_back(path);
  }
  if (!out_dir.empty()) {
    make_directories(out_dir);
    for (size_t k = 0; k < names.size(); ++k) paths[k].push_back(out_dir + "/" + names[k] + ".npy");
  }
  return paths;
}

OutputFiles::OutputFiles(std::vector<std::vector<std::string>> paths, const std::string &tag,
                         const std::string &id)
    : paths_(std::move(paths)), suffix_("." + tag + "-" + id + ".tmp") {}

void OutputFiles::create(const std::vector<DType> &dtypes, const std::vector<Shape> &shapes) {
  try {
    for (size_t k = 0; k < paths_.size(); ++k)
      for (const std::string &path : paths_[k])
        create_npy_file(path + suffix_, dtypes[k], shapes[k]);
  } catch (const RuntimeError &e) {
    discard();
    throw CliError{std::string("cannot write outputs: ") + e.what()};
  }
}

void OutputFiles::write_block(size_t k, const Shape &global, const Shape &start,
                              const Tensor &block) {
  try {
    for (const std::string &path : paths_.at(k))
      write_npy_block(path + suffix_, global, start, block);
  } catch (const RuntimeError &e) {
    throw CliError{std::string("cannot write outputs: ") + e.what()};
  }
}

void OutputFiles::commit() {
  // Refuse before renaming anything what rename would refuse midway.
  for (const auto &paths : paths_)
    for (const std::string &path : paths)
      if (is_directory(path)) {
        discard();
        throw CliError{"cannot write output file `" + path + "`: it is a directory"};
      }
  for (const auto &paths : paths_)
    for (const std::string &path : paths)
      if (std::rename((path + suffix_).c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        discard();
        throw CliError{"cannot write output file `" + path + "`: " + reason};
      }
}

void OutputFiles::discard() {
  for (const auto &paths : paths_)
    for (const std::string &path : paths) std::remove((path + suffix_).c_str());
}

void write_outputs(const std::vector<Tensor> &results,
                   const std::vector<std::vector<std::string>> &paths, const std::string &tag) {
  OutputFiles files(paths, tag, std::to_string(::getpid()));
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const Tensor &r : results) {
    dtypes.push_back(r.dtype());
    shapes.push_back(r.shape());
  }
  files.create(dtypes, shapes);
  try {
    for (size_t k = 0; k < results.size(); ++k)
      files.write_block(k, results[k].shape(), Shape(results[k].shape().size(), 0), results[k]);
  } catch (const CliError &) {
    files.discard();
    throw;
  }
  files.commit();
}

}  // namespace spmd::rt
