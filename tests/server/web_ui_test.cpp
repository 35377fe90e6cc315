// The web UI at /ui/ on a real vigild: served from --web-root with its Content-Type and ETag, no
// traversal, open without a token while the API still needs one; a missing directory leaves /ui/
// a clear 404 and vigild still starts.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>

#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

using test::write_file;

TEST_CASE("vigild: /ui/ is open and served from --web-root; without one a clear 404", "[http][web][vigild]") {
  test::TempDir dir;
  const auto root = dir.path() / "web";
  write_file(root / "index.html", "<!doctype html><title>vigil ui</title>");
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
