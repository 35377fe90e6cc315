// The web UI's static files: loaded once from a directory, served only by the names loaded
// (no traversal, hidden files skipped), with the right Content-Type; a missing directory leaves
// /ui/ a clear 404 and vigild still starts (real process).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>

#include "server/api/web_assets.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

namespace {
void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
}  // namespace

TEST_CASE("WebAssets: loads a directory once; only its names exist", "[http][web]") {
  test::TempDir dir;
  const auto root = dir.path() / "web";
  write(root / "index.html", "<!doctype html><title>x</title>");
  write(root / "app.js", "console.log(1)");
  write(root / "lib" / "style.css", "body{}");
  write(root / ".secret", "no");
  write(dir.path() / "outside.txt", "no");
  const auto web = server::WebAssets::load(root);
  REQUIRE_FALSE(web.empty());
  CHECK(web.size() == 3);
  REQUIRE(web.find("index.html"));
  CHECK(web.find("index.html")->content_type == "text/html; charset=utf-8");
  CHECK(web.find("app.js")->content_type == "text/javascript; charset=utf-8");
  CHECK(web.find("lib/style.css")->content_type == "text/css; charset=utf-8");
  CHECK_FALSE(web.find(".secret"));
  CHECK_FALSE(web.find("../outside.txt"));
  CHECK_FALSE(web.find("lib/../app.js"));
  // Read once: a change on disk afterwards is not seen.
  write(root / "app.js", "changed");
  const auto& bytes = *web.find("app.js")->bytes;
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "console.log(1)");

  CHECK(server::WebAssets::load(dir.path() / "missing").empty());
  CHECK_THAT(server::WebAssets::load(dir.path() / "missing").problem(), ContainsSubstring("does not exist"));
  write(dir.path() / "noindex" / "a.js", "x");
  CHECK(server::WebAssets::load(dir.path() / "noindex").empty());
}

TEST_CASE("vigild: /ui/ is open and served from --web-root; without one a clear 404", "[http][web][vigild]") {
  test::TempDir dir;
  const auto root = dir.path() / "web";
  write(root / "index.html", "<!doctype html><title>vigil ui</title>");
  {
    test::VigildProcess d(dir.path() / "data", {"--web-root", root.string()});
    REQUIRE(d.wait_ready());
    auto r = test::http_request_without_token(d.http(), "GET", "/ui/");
    CHECK(r.status == 200);
    CHECK_THAT(r.header("content-type"), ContainsSubstring("text/html"));
    CHECK_THAT(r.body, ContainsSubstring("vigil ui"));
    CHECK(test::http_request_without_token(d.http(), "GET", "/ui/index.html").status == 200);
    CHECK(test::http_request_without_token(d.http(), "GET", "/ui").status == 301);
    CHECK(test::http_request_without_token(d.http(), "GET", "/ui/../admin.token").status == 404);
    CHECK(test::http_request_without_token(d.http(), "GET", "/ui/%2e%2e/admin.token").status == 404);
    CHECK(test::http_request_without_token(d.http(), "POST", "/ui/").status == 405);
    CHECK(test::http_request_without_token(d.http(), "GET", "/api/v1/cameras").status == 401);  // unchanged
    auto etag = r.header("etag");
    CHECK(test::http_request_without_token(d.http(), "GET", "/ui/", "If-None-Match: " + etag + "\r\n").status == 304);
  }
  {
    test::VigildProcess d(dir.path() / "data", {"--web-root", (dir.path() / "nowhere").string()});
    REQUIRE(d.wait_ready());
    auto r = test::http_request_without_token(d.http(), "GET", "/ui/");
    CHECK(r.status == 404);
    CHECK_THAT(r.body, ContainsSubstring("web UI is not installed"));
    CHECK_THAT(d.output(), ContainsSubstring("web UI not served"));
  }
}
