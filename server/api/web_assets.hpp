#pragma once
// The web UI's static files (client/web/, built into BUILD/web/), read once at start into memory
// and served at /ui/. Only the names loaded at start exist: no file is opened per request, and
// no request path reaches the file system (path traversal is impossible by construction).
// Thread: loaded on the start-up thread; read-only afterwards, safe from every network thread.
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/net/http_server.hpp"

namespace vigil::server {

class WebAssets {
 public:
  struct File {
    std::shared_ptr<const std::vector<std::byte>> bytes;
    std::string content_type;
    std::string etag;
  };

  // Loads every regular file under ROOT (recursively, at most 64 MiB in all). A missing or
  // unreadable ROOT leaves the set empty and says why in problem(); never throws for that.
  static WebAssets load(const std::filesystem::path& root);

  bool empty() const { return files_.empty(); }
  std::size_t size() const { return files_.size(); }
  const std::filesystem::path& root() const { return root_; }
  const std::string& problem() const { return problem_; }
  // NAME relative to the root ("index.html", "lib/hls.min.js"); null if not loaded.
  const File* find(const std::string& name) const;

  static std::string content_type_of(const std::string& name);

 private:
  std::filesystem::path root_;
  std::map<std::string, File> files_;
  std::string problem_;
};

// Where the UI files are when --web-root is not given: "web" beside vigild, the build tree's
// BUILD/web (vigild in BUILD/server/), PREFIX/share/vigil/web (installed as PREFIX/bin/vigild by
// `cmake --install` or the Debian package), else the build tree this binary was built in.
std::filesystem::path default_web_root();

// GET/HEAD /ui/... : the file, or 404 (with a clear message when no UI was loaded). /ui
// redirects to /ui/. PATH is the request path without the query.
HttpReply web_reply(const WebAssets* assets, const HttpRequest& req, const std::string& path);

}  // namespace vigil::server
