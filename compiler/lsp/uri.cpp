// lsp/uri.cpp — file URIs to paths and back (RFC 3986 percent-encoding).
#include "lsp/uri.h"

#include <cctype>
#include <filesystem>

namespace spmd::lsp {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string path_from_uri(const std::string &uri) {
  const std::string scheme = "file://";
  if (uri.compare(0, scheme.size(), scheme) != 0) return uri;
  std::string rest = uri.substr(scheme.size());
  // `file://host/path`: the authority is empty or `localhost` for local files.
  if (!rest.empty() && rest[0] != '/') {
    auto slash = rest.find('/');
    rest = slash == std::string::npos ? "/" : rest.substr(slash);
  }
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    int hi = 0, lo = 0;
    if (rest[i] == '%' && i + 2 < rest.size() && (hi = hex_value(rest[i + 1])) >= 0 &&
        (lo = hex_value(rest[i + 2])) >= 0) {
      path += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

std::string uri_from_path(const std::string &path) {
  std::string absolute = path;
  std::error_code ec;
  if (!path.empty() && path[0] != '/') {
    auto p = std::filesystem::absolute(path, ec);
    if (!ec) absolute = p.string();
  }
  static const char *hex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (unsigned char c : absolute) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  return uri;
}

}  // namespace spmd::lsp
