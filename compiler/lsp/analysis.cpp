// lsp/analysis.cpp — compiling a document and converting its diagnostics.
#include "lsp/analysis.h"

#include <sstream>

#include "lsp/uri.h"
#include "sharding/shard.h"

namespace spmd::lsp {
namespace {

/// The file of `sources` with this path, or kNoFile.
FileId file_named(const SourceManager &sources, const std::string &path) {
  std::vector<std::string> paths = sources.paths();
  for (size_t k = 0; k < paths.size(); ++k)
    if (paths[k] == path) return static_cast<FileId>(k);
  return kNoFile;
}

uint32_t offset_field(const Json &range, const char *end) {
  return range.at(end).at("offset").get<uint32_t>();
}

int lsp_severity(const std::string &severity) {
  if (severity == "warning") return 2;
  if (severity == "note") return 3;
  return 1;  // error, internal
}

}  // namespace

std::unique_ptr<Analysis> analyze(const std::string &uri, std::string text,
                                  const CompileOptions &options) {
  auto a = std::make_unique<Analysis>();
  a->uri = uri;
  a->path = path_from_uri(uri);
  Compilation &c = a->compilation;
  compile_source(c, a->path, std::move(text), options);
  // What `spmdc check` adds: the written specs of sharded functions.
  if (c.ok() && c.module) sharding::check_sharded_functions(*c.module, false, c.diags);
  if (!c.program.modules.empty()) a->symbols = index_symbols(c.program);
  return a;
}

Json lsp_diagnostics(const Analysis &analysis) {
  const Compilation &c = analysis.compilation;
  Json out = Json::array();
  std::istringstream lines(render_diagnostics_json(c.diags, c.sources));
  std::string line;
  while (std::getline(lines, line)) {
    Json d = Json::parse(line);
    Json lsp;
    std::string message = d["message"].get<std::string>();
    const bool here = !d["file"].is_null() && d["file"].get<std::string>() == analysis.path;
    if (here) {
      lsp["range"] = range_json(analysis.text(), offset_field(d["range"], "start"),
                                offset_field(d["range"], "end"));
    } else {
      lsp["range"] = range_json(analysis.text(), 0, 0);
      if (!d["file"].is_null())
        message = d["file"].get<std::string>() + ":" + std::to_string(d["line"].get<int>()) + ":" +
                  std::to_string(d["column"].get<int>()) + ": " + message;
    }
    if (d["help"].is_string()) message += "\nhelp: " + d["help"].get<std::string>();
    lsp["severity"] = lsp_severity(d["severity"].get<std::string>());
    if (d["code"].is_string()) lsp["code"] = d["code"];
    lsp["source"] = "spmdc";
    lsp["message"] = message;
    Json related = Json::array();
    for (const Json &note : d["notes"]) {
      if (note["file"].is_null()) {
        lsp["message"] =
            lsp["message"].get<std::string>() + "\nnote: " + note["message"].get<std::string>();
        continue;
      }
      const std::string path = note["file"].get<std::string>();
      FileId file = file_named(c.sources, path);
      if (file == kNoFile) continue;
      related.push_back(
          {{"location",
            {{"uri", path == analysis.path ? analysis.uri : uri_from_path(path)},
             {"range", range_json(c.sources.file(file).text(), offset_field(note["range"], "start"),
                                  offset_field(note["range"], "end"))}}},
           {"message", note["message"]}});
    }
    if (!related.empty()) lsp["relatedInformation"] = std::move(related);
    out.push_back(std::move(lsp));
  }
  return out;
}

}  // namespace spmd::lsp
