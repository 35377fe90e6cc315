// The web UI's static files: loaded once from a directory, served only by the names loaded
// (no traversal, hidden files skipped), with the right Content-Type. How vigild serves them at
// /ui/ is tests/server/web_ui_test.cpp's (a real process).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>

#include "server/api/web_assets.hpp"
#include "tests/support/temp_dir.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

using test::write_file;

TEST_CASE("WebAssets: loads a directory once; only its names exist", "[http][web]") {
  test::TempDir dir;
  const auto root = dir.path() / "web";
  write_file(root / "index.html", "<!doctype html><title>x</title>");
  write_file(root / "app.js", "console.log(1)");
  write_file(root / "lib" / "style.css", "body{}");
  write_file(root / ".secret", "no");
  write_file(dir.path() / "outside.txt", "no");
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
  write_file(root / "app.js", "changed");
  const auto& bytes = *web.find("app.js")->bytes;
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "console.log(1)");

  CHECK(server::WebAssets::load(dir.path() / "missing").empty());
  CHECK_THAT(server::WebAssets::load(dir.path() / "missing").problem(), ContainsSubstring("does not exist"));
  write_file(dir.path() / "noindex" / "a.js", "x");
  CHECK(server::WebAssets::load(dir.path() / "noindex").empty());
}
