// driver/cli_docs.cpp — spmdc(1) and the bash/zsh completions from the CLI11 tree.
//
// 1. `describe` reads every visible subcommand and option of the tree into
//    plain records (names, the value it takes, its choices from an IsMember
//    check, its help text) — the same text `--help` prints.
// 2. Three writers turn the records into roff, a bash function and a zsh
//    function. Nothing is listed by hand, so a new option appears everywhere
//    the moment it is registered.
#include "driver/cli_docs.h"

#include <iostream>
#include <sstream>

#include "driver/version.h"

namespace spmd::driver {
namespace {

struct OptionDoc {
  std::vector<std::string> names;  // "-i", "--in-place"; a positional: its name
  std::string value;               // what it takes ("TEXT", "INT"); empty for a flag
  std::vector<std::string> choices;
  std::string description;
  bool positional = false;
  bool repeatable = false;
};

struct CommandDoc {
  std::string name, description;
  std::vector<OptionDoc> options;  // non-positional first, then positionals in order
};

/// "TEXT:{ast,typed,ir,source}" -> {"ast", ...}; none when there is no set.
std::vector<std::string> choices_in(const std::string &type_name) {
  std::vector<std::string> out;
  size_t open = type_name.find('{'), close = type_name.find('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string item;
  for (size_t k = open + 1; k <= close; ++k) {
    char ch = type_name[k];
    if (ch == ',' || ch == '}') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (ch != ' ') {
      item += ch;
    }
  }
  return out;
}

OptionDoc describe(const CLI::Option &opt) {
  OptionDoc d;
  d.description = opt.get_description();
  d.positional = !opt.nonpositional();
  if (d.positional) {
    std::string name = opt.get_name(true);
    for (char &ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    d.names.push_back(name);
  } else {
    for (const std::string &s : opt.get_snames()) d.names.push_back("-" + s);
    for (const std::string &l : opt.get_lnames()) d.names.push_back("--" + l);
  }
  std::string type = opt.get_type_name();
  d.choices = choices_in(type);
  if (opt.get_items_expected_max() > 0 && !d.positional) d.value = type.substr(0, type.find(':'));
  d.repeatable = opt.get_items_expected_max() > 1 ||
                 opt.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
  return d;
}

std::vector<OptionDoc> describe_options(const CLI::App &app, bool with_help) {
  std::vector<OptionDoc> named, positional;
  for (const CLI::Option *opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden
    if (!with_help && opt == app.get_help_ptr()) continue;
    OptionDoc d = describe(*opt);
    (d.positional ? positional : named).push_back(std::move(d));
  }
  named.insert(named.end(), positional.begin(), positional.end());
  return named;
}

std::vector<CommandDoc> describe_commands(const CLI::App &app) {
  std::vector<CommandDoc> out;
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
    if (!is_visible(*sub)) continue;
    out.push_back({sub->get_name(), sub->get_description(), describe_options(*sub, false)});
  }
  return out;
}

// ---- roff ------------------------------------------------------------------

std::string roff(const std::string &text) {
  std::string out;
  bool line_start = true;
  for (char ch : text) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    if (ch == '\\')
      out += "\\e";
    else if (ch == '-')
      out += "\\-";
    else
      out += ch;
    line_start = ch == '\n';
  }
  return out;
}

std::string roff_option(const OptionDoc &o) {
  std::string s;
  for (size_t k = 0; k < o.names.size(); ++k) {
    if (k) s += ", ";
    s += (o.positional ? "\\fI" : "\\fB") + roff(o.names[k]) + "\\fR";
  }
  if (!o.choices.empty()) {
    s += " \\fI";
    for (size_t k = 0; k < o.choices.size(); ++k) s += (k ? "|" : "") + roff(o.choices[k]);
    s += "\\fR";
  } else if (!o.value.empty()) {
    s += " \\fI" + roff(o.value) + "\\fR";
  }
  return s;
}

void roff_options(std::ostringstream &out, const std::vector<OptionDoc> &options) {
  for (const OptionDoc &o : options) {
    out << ".TP\n" << roff_option(o) << "\n" << roff(o.description);
    if (o.repeatable && !o.positional && o.description.find("repeatable") == std::string::npos)
      out << " (repeatable)";
    out << "\n";
  }
}

std::string synopsis(const CommandDoc &c) {
  std::string s = "spmdc " + c.name;
  for (const OptionDoc &o : c.options)
    if (o.positional) s += " " + o.names[0];
  s += " [options]";
  return s;
}

// ---- shell -----------------------------------------------------------------

/// Text safe inside a zsh `_arguments` spec in single quotes: no quotes,
/// brackets or colons, first line only.
std::string zsh_text(const std::string &text) {
  std::string out;
  for (char ch : text) {
    if (ch == '\n') break;
    if (ch == '\'' || ch == '[' || ch == ']' || ch == ':' || ch == '`' || ch == '\\') continue;
    out += ch;
  }
  return out;
}

std::string join(const std::vector<std::string> &items, const std::string &sep) {
  std::string s;
  for (size_t k = 0; k < items.size(); ++k) s += (k ? sep : "") + items[k];
  return s;
}

/// Whether an option's value names a file or directory (its type name is
/// FILE, DIR or NAME=PATH, as `--help` shows): only those complete file names.
bool takes_path(const OptionDoc &o) {
  return o.value.find("FILE") != std::string::npos || o.value.find("DIR") != std::string::npos ||
         o.value.find("PATH") != std::string::npos;
}

}  // namespace

bool is_visible(const CLI::App &command) { return !command.get_group().empty(); }

std::string man_page(const CLI::App &app) {
  std::ostringstream out;
  out << ".\\\" Generated by `spmdc man-page` from the command definitions; do not edit.\n"
      << ".TH SPMDC 1 \"\" \"" << roff(version_line()) << "\" \"User Commands\"\n"
      << ".SH NAME\nspmdc \\- a compiler for SPMD programs over a named device mesh\n"
      << ".SH SYNOPSIS\n.B spmdc\n[\\fIglobal options\\fR] \\fIcommand\\fR \\fIFILE\\fR "
         "[\\fIoptions\\fR]\n"
      << ".SH DESCRIPTION\n"
      << roff(app.get_description()) << "\n.PP\n"
      << "spmdc checks the types (dtype, local shape and device variance) of `.spmd` programs, "
         "derives their transposes and gradients as new source, runs them on a simulated mesh "
         "on the CPU and builds executables for CPU or CUDA + NCCL.\n"
      << ".SH GLOBAL OPTIONS\n";
  roff_options(out, describe_options(app, true));
  out << ".SH COMMANDS\n";
  for (const CommandDoc &c : describe_commands(app)) {
    out << ".SS \"" << roff(synopsis(c)) << "\"\n" << roff(c.description) << "\n";
    roff_options(out, c.options);
  }
  out << ".SH EXIT STATUS\n"
      << ".TP\n0\nSuccess.\n"
      << ".TP\n1\nA user error: the program, its inputs or the command line (diagnostics on "
         "standard error).\n"
      << ".TP\n2\nAn internal compiler error (a bug in spmdc; please report it with the "
         "input).\n"
      << ".SH ENVIRONMENT\n.TP\n.B SPMDC_RUNTIME_PREFIX\nA prefix holding include/spmdrt and "
         "lib/libspmdrt.a that \\fBspmdc build\\fR links against instead of its own.\n"
      << ".SH FILES\n.TP\n.I PREFIX/share/spmdc/stdlib\nThe standard library "
         "(\\fBimport std.nn\\fR).\n"
      << ".TP\n.I PREFIX/lib/cmake/spmdc\n\\fBfind_package(spmdc)\\fR for CMake projects; "
         "\\fBpkg\\-config spmdrt\\fR for others.\n"
      << ".SH SEE ALSO\nThe documentation in the source tree: docs/cli.md (every command), "
         "docs/language.md, docs/tutorial.md.\n";
  return out.str();
}

std::string bash_completion(const CLI::App &app) {
  std::vector<CommandDoc> commands = describe_commands(app);
  std::vector<std::string> names, global;
  for (const CommandDoc &c : commands) names.push_back(c.name);
  for (const OptionDoc &o : describe_options(app, true))
    global.insert(global.end(), o.names.begin(), o.names.end());
  std::ostringstream out;
  out << "# bash completion for spmdc. Generated by `spmdc completion bash`; do not edit.\n"
      << "_spmdc() {\n"
      << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      << "  local cmd=\"\" i\n"
      << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      << "    case \"${COMP_WORDS[i]}\" in\n"
      << "      " << join(names, "|") << ") cmd=\"${COMP_WORDS[i]}\"; break ;;\n"
      << "    esac\n"
      << "  done\n"
      << "  if [[ -z \"$cmd\" ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"" << join(names, " ") << " " << join(global, " ")
      << "\" -- \"$cur\"))\n"
      << "    return\n"
      << "  fi\n"
      << "  local opts=\"\" words=\"\"\n"
      << "  case \"$cmd\" in\n";
  for (const CommandDoc &c : commands) {
    std::vector<std::string> opts{"--help"};
    std::ostringstream values;  // options that take a value: what to offer after them
    for (const OptionDoc &o : c.options) {
      if (o.positional) continue;
      opts.insert(opts.end(), o.names.begin(), o.names.end());
      if (o.value.empty()) continue;
      values << "        " << join(o.names, "|") << ") ";
      if (!o.choices.empty())
        values << "COMPREPLY=($(compgen -W \"" << join(o.choices, " ") << "\" -- \"$cur\"))";
      else if (o.value == "DIR")
        values << "COMPREPLY=($(compgen -d -- \"$cur\"))";
      else if (takes_path(o))
        values << "COMPREPLY=($(compgen -f -- \"$cur\"))";
      else
        values << "COMPREPLY=()";
      values << "; return ;;\n";
    }
    out << "    " << c.name << ")\n      opts=\"" << join(opts, " ") << "\"\n";
    for (const OptionDoc &o : c.options)
      if (o.positional && !o.choices.empty())
        out << "      words=\"" << join(o.choices, " ") << "\"\n";
    if (!values.str().empty()) out << "      case \"$prev\" in\n" << values.str() << "      esac\n";
    out << "      ;;\n";
  }
  out << "  esac\n"
      << "  if [[ \"$cur\" == -* ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
      << "  elif [[ -n \"$words\" ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      << "  else\n"
      << "    COMPREPLY=($(compgen -f -X '!*.spmd' -- \"$cur\") $(compgen -d -- \"$cur\"))\n"
      << "  fi\n"
      << "}\n"
      << "complete -o filenames -F _spmdc spmdc\n";
  return out.str();
}

std::string zsh_completion(const CLI::App &app) {
  auto spec = [](const OptionDoc &o) {
    std::string help = "[" + zsh_text(o.description) + "]";
    std::string action;
    if (!o.value.empty()) {
      if (!o.choices.empty())
        action = ":" + o.value + ":(" + join(o.choices, " ") + ")";
      else if (o.value == "DIR")
        action = ":" + o.value + ":_files -/";
      else if (takes_path(o))
        action = ":" + o.value + ":_files";
      else
        action = ":" + o.value + ": ";
    }
    std::string rep = o.repeatable || o.names[0] == "-v" ? "*" : "";
    if (o.names.size() == 1) return "'" + rep + o.names[0] + help + action + "'";
    std::string excl = rep.empty() ? "(" + join(o.names, " ") + ")" : "*";
    return "'" + excl + "'{" + join(o.names, ",") + "}'" + help + action + "'";
  };
  std::ostringstream out;
  out << "#compdef spmdc\n# zsh completion for spmdc. Generated by `spmdc completion zsh`; "
         "do not edit.\n"
      << "_spmdc() {\n  local -a commands\n  commands=(\n";
  std::vector<CommandDoc> commands = describe_commands(app);
  for (const CommandDoc &c : commands)
    out << "    '" << c.name << ":" << zsh_text(c.description) << "'\n";
  out << "  )\n  local curcontext=\"$curcontext\" state line\n  _arguments -C \\\n";
  for (const OptionDoc &o : describe_options(app, true)) out << "    " << spec(o) << " \\\n";
  out << "    '1:command:->command' '*::argument:->argument'\n"
      << "  case $state in\n"
      << "    command) _describe -t commands 'spmdc command' commands ;;\n"
      << "    argument)\n      case $words[1] in\n";
  for (const CommandDoc &c : commands) {
    out << "        " << c.name << ")\n          _arguments \\\n";
    int position = 1;
    for (const OptionDoc &o : c.options) {
      if (o.positional)
        out << "            '" << position++ << ":" << zsh_text(o.description) << ":"
            << (o.choices.empty() ? "_files -g \"*.spmd(-.)\"" : "(" + join(o.choices, " ") + ")")
            << "' \\\n";
      else
        out << "            " << spec(o) << " \\\n";
    }
    out << "            '(- *)'{-h,--help}'[Print this help message and exit]' ;;\n";
  }
  out << "      esac ;;\n  esac\n}\n_spmdc \"$@\"\n";
  return out.str();
}

void register_doc_commands(CLI::App &app, std::vector<Command> &out) {
  static std::string shell;
  CLI::App *completion =
      app.add_subcommand("completion",
                         "Print a shell completion script (bash: source it; zsh: put it on $fpath "
                         "as _spmdc)");
  completion->add_option("shell", shell, "The shell")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  out.push_back({completion, [&app] {
                   std::cout << (shell == "bash" ? bash_completion(app) : zsh_completion(app));
                   return kExitOk;
                 }});
  CLI::App *man = app.add_subcommand("man-page", "Print the spmdc(1) man page (roff)");
  man->group("");  // hidden: the build installs its output
  out.push_back({man, [&app] {
                   std::cout << man_page(app);
                   return kExitOk;
                 }});
}

}  // namespace spmd::driver
