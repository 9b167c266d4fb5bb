// lsp/uri.h — `file://` URIs and paths.
//
// Editors name documents by URI. A `file://` URI maps to its path (percent
// escapes decoded), so that imports resolve beside the file and diagnostics
// name it; any other URI (`untitled:1`) is used as the path as it is.
#pragma once

#include <string>

namespace spmd::lsp {

std::string path_from_uri(const std::string &uri);
/// `file://` + the path, bytes other than unreserved ones and `/` escaped.
std::string uri_from_path(const std::string &path);

}  // namespace spmd::lsp
