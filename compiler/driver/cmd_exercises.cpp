// driver/cmd_exercises.cpp — `spmdc exercises init DIR` and `spmdc exercises list`:
// a fresh copy of the graded exercises' starters for a student.
//
// The exercises come from the installed tree (PREFIX/share/spmdc/exercises,
// found beside bin/spmdc like the standard library) or, for an spmdc run from
// its build tree, the source tree's exercises/. Each exercise folder holds
// task.md, starter.spmd and grade.json; the reference answers live elsewhere
// (solutions/ of the source tree, for instructors: the grader's --solutions).
// `init` copies those three files of every exercise into DIR/NN-name/ and never
// overwrites a file: it checks every destination before writing anything.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "driver/commands.h"
#include "spmdrt/output_file.h"

namespace spmd::driver {
namespace {
namespace fs = std::filesystem;

/// The files of an exercise a student gets (solutions are never copied).
constexpr const char *kStudentFiles[] = {"task.md", "starter.spmd", "grade.json"};

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

/// The folder of exercises: installed beside this spmdc, else the source tree's.
std::optional<fs::path> exercises_dir() {
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (fs::path exe = executable_dir(); !exe.empty())
    candidates.push_back(exe.parent_path() / "share" / "spmdc" / "exercises");
#ifdef SPMDC_SOURCE_EXERCISES_DIR
  candidates.push_back(SPMDC_SOURCE_EXERCISES_DIR);
#endif
#ifdef SPMDC_INSTALL_EXERCISES_DIR
  candidates.push_back(SPMDC_INSTALL_EXERCISES_DIR);
#endif
  for (const fs::path &dir : candidates)
    if (fs::is_directory(dir, ec)) return dir;
  return std::nullopt;
}

/// Every exercise folder (NN-name holding grade.json), sorted by name.
std::vector<fs::path> exercise_folders(const fs::path &dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && fs::is_regular_file(it->path() / "grade.json", ec))
      out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

/// The first line of task.md without its `# `: the exercise's title.
std::string title_of(const fs::path &exercise) {
  std::ifstream in(exercise / "task.md");
  std::string line;
  std::getline(in, line);
  if (line.rfind("# ", 0) == 0) line = line.substr(2);
  return line;
}

int find_exercises(const CommonOptions &common, std::vector<fs::path> &folders) {
  std::optional<fs::path> dir = exercises_dir();
  if (!dir)
    return report_error(common, "io-error",
                        "cannot find the exercises (looked in share/spmdc/exercises beside this "
                        "spmdc)",
                        "reinstall spmdc, or run it from its build tree");
  folders = exercise_folders(*dir);
  if (folders.empty())
    return report_error(common, "io-error", "`" + dir->string() + "` holds no exercises");
  return kExitOk;
}

int run_list(const CommonOptions &common) {
  std::vector<fs::path> folders;
  if (int status = find_exercises(common, folders); status != kExitOk) return status;
  for (const fs::path &f : folders)
    std::cout << f.filename().string() << "  " << title_of(f) << "\n";
  return kExitOk;
}

int run_init(const CommonOptions &common, const std::string &destination) {
  std::vector<fs::path> folders;
  if (int status = find_exercises(common, folders); status != kExitOk) return status;
  const fs::path dest(destination);
  std::error_code ec;
  if (fs::exists(dest, ec) && !fs::is_directory(dest, ec))
    return report_error(common, "io-error", "`" + destination + "` exists and is not a folder");
  // Check every destination first: all files are written or none.
  std::vector<std::pair<fs::path, fs::path>> copies;
  for (const fs::path &f : folders)
    for (const char *name : kStudentFiles) {
      fs::path from = f / name, to = dest / f.filename() / name;
      if (!fs::is_regular_file(from, ec))
        return report_error(common, "io-error", "the exercise `" + from.string() + "` is missing");
      if (fs::exists(to, ec) || fs::is_symlink(to, ec))
        return report_error(common, "io-error",
                            "`" + to.string() + "` already exists; nothing was copied",
                            "choose a new folder, or move the old copy away first");
      copies.emplace_back(from, to);
    }
  rt::OutputFiles outputs;
  try {
    std::vector<std::string> texts;
    texts.reserve(copies.size());
    for (const auto &[from, to] : copies) {
      std::ifstream in(from, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      if (!in) throw rt::RuntimeError("cannot read `" + from.string() + "`");
      texts.push_back(text.str());
      fs::create_directories(to.parent_path());
      outputs.add(to.string(), {texts.back()});
    }
    outputs.commit();
  } catch (const std::exception &e) {
    return report_error(common, "io-error", e.what());
  }
  std::cout << "copied " << folders.size() << " exercises into " << destination
            << " (task.md: the statement, starter.spmd: your program, holes marked ?\?\?)\n"
            << "grade one: spmdc-grade " << (dest / folders.front().filename()).string()
            << "   (grades its starter.spmd; an instructor adds --solutions DIR)\n";
  return kExitOk;
}

}  // namespace

void register_exercises_command(CLI::App &app, CommonOptions &common, std::vector<Command> &out) {
  static std::string action, destination;
  CLI::App *cmd = app.add_subcommand(
      "exercises",
      "The graded exercises of the course (exercises/README.md): `exercises init DIR` copies "
      "every exercise's task.md, starter.spmd and grade.json into DIR/NN-name/ for a student "
      "(never overwriting a file); `exercises list` names them");
  cmd->add_option("action", action, "init or list")
      ->required()
      ->check(CLI::IsMember({"init", "list"}));
  cmd->add_option("dir", destination, "The folder to create or fill (init)")->type_name("DIR");
  out.push_back({cmd, [&common] {
                   if (action == "list") {
                     if (!destination.empty())
                       return report_error(common, "bad-command-line",
                                           "`exercises list` takes no folder");
                     return run_list(common);
                   }
                   if (destination.empty())
                     return report_error(common, "bad-command-line",
                                         "`exercises init` needs the folder to copy them into",
                                         "spmdc exercises init DIR");
                   return run_init(common, destination);
                 }});
}

}  // namespace spmd::driver
