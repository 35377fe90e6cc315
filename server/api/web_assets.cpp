#include "server/api/web_assets.hpp"

#include <boost/json.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/log.hpp"

namespace fs = std::filesystem;
namespace http = boost::beast::http;

namespace vigil::server {
namespace {

constexpr std::uintmax_t kMaxTotalBytes = 64ull << 20;

std::string fnv_etag(const std::vector<std::byte>& data) {
  std::uint64_t h = 1469598103934665603ull;
  for (auto b : data) {
    h ^= static_cast<std::uint8_t>(b);
    h *= 1099511628211ull;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"w%016llx\"", static_cast<unsigned long long>(h));
  return buf;
}

HttpResponse text_response(const HttpRequest& req, http::status status, const std::string& message) {
  auto res = json_response(req, status, boost::json::serialize(boost::json::object{{"error", message}}));
  return res;
}

}  // namespace

std::string WebAssets::content_type_of(const std::string& name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".json") || ends(".map")) return "application/json";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".ico")) return "image/x-icon";
  if (ends(".txt")) return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

WebAssets WebAssets::load(const fs::path& root) {
  WebAssets out;
  out.root_ = root;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    out.problem_ =
        "the web UI directory " + root.string() + " does not exist (build the web_ui target, or set --web-root)";
    return out;
  }
  std::uintmax_t total = 0;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const auto rel = fs::relative(it->path(), root, ec).generic_string();
    if (ec || rel.empty() || rel.front() == '.' || rel.find("/.") != std::string::npos) continue;
    const auto bytes = it->file_size(ec);
    if (ec || total + bytes > kMaxTotalBytes) continue;
    std::ifstream in(it->path(), std::ios::binary);
    if (!in) continue;
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto data = std::make_shared<std::vector<std::byte>>(raw.size());
    std::memcpy(data->data(), raw.data(), raw.size());
    total += raw.size();
    File f{.bytes = nullptr, .content_type = content_type_of(rel), .etag = fnv_etag(*data)};
    f.bytes = std::move(data);
    out.files_.emplace(rel, std::move(f));
  }
  if (ec) out.problem_ = "reading " + root.string() + ": " + ec.message();
  if (out.files_.empty() && out.problem_.empty()) out.problem_ = "the web UI directory " + root.string() + " is empty";
  if (!out.files_.empty() && !out.files_.count("index.html")) {
    out.problem_ = "the web UI directory " + root.string() + " has no index.html";
    out.files_.clear();
  }
  return out;
}

const WebAssets::File* WebAssets::find(const std::string& name) const {
  auto it = files_.find(name);
  return it == files_.end() ? nullptr : &it->second;
}

fs::path default_web_root() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto prefix = self.parent_path().parent_path();
    for (const auto& candidate : {self.parent_path() / "web", prefix / "web", prefix / VIGIL_WEB_INSTALL_DIR}) {
      if (fs::is_regular_file(candidate / "index.html", ec)) return candidate;
    }
  }
  return VIGIL_WEB_BUILD_DIR;
}

HttpReply web_reply(const WebAssets* assets, const HttpRequest& req, const std::string& path) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = text_response(req, http::status::method_not_allowed, "use GET");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  }
  if (path == "/ui") {
    HttpResponse res{http::status::moved_permanently, req.version()};
    res.set(http::field::server, "vigild/" VIGIL_VERSION);
    res.set(http::field::location, "/ui/");
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
  }
  if (!assets || assets->empty()) {
    return text_response(req, http::status::not_found,
                         "the web UI is not installed on this server" +
                             (assets && !assets->problem().empty() ? ": " + assets->problem() : std::string()));
  }
  std::string name = path.substr(4);  // after "/ui/"
  if (name.empty()) name = "index.html";
  const auto* f = assets->find(name);
  if (!f) return text_response(req, http::status::not_found, "no such file in the web UI");
  if (req[http::field::if_none_match] == f->etag) {
    HttpResponse res{http::status::not_modified, req.version()};
    res.set(http::field::server, "vigild/" VIGIL_VERSION);
    res.set(http::field::etag, f->etag);
    res.keep_alive(req.keep_alive());
    return res;
  }
  MediaResponse res{http::status::ok, req.version()};
  res.set(http::field::server, "vigild/" VIGIL_VERSION);
  res.set(http::field::content_type, f->content_type);
  res.set(http::field::etag, f->etag);
  res.set(http::field::cache_control, "no-cache");
  res.set("X-Content-Type-Options", "nosniff");
  // The page loads nothing from elsewhere; hls.js runs its transmuxer in a blob: worker and feeds
  // <video> through a blob: MediaSource URL.
  res.set(
      "Content-Security-Policy",
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; "
      "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  res.set("Referrer-Policy", "no-referrer");
  res.keep_alive(req.keep_alive());
  res.content_length(f->bytes->size());
  const bool head = req.method() == http::verb::head;
  res.body() = SharedBytesBody::value_type{f->bytes, 0, head ? 0 : f->bytes->size()};
  return res;
}

}  // namespace vigil::server
