// docs/openapi.yaml and the server agree: every path and method the document describes is a
// route vigild serves (the answer is never the router's "no such resource" nor 405), and a
// path it does not describe is not served. Placeholders are filled with names that do not
// exist, so each route answers its own 4xx (or 2xx) — which is what shows that it is there.
#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <regex>

#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;

TEST_CASE("docs/openapi.yaml describes exactly routes vigild serves", "[http][openapi]") {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/docs/openapi.yaml");
  REQUIRE(in);
  std::vector<std::pair<std::string, std::string>> ops;  // (method, path)
  const std::regex path_line(R"(^  (/[^:]*):\s*$)"), method_line(R"(^    (get|post|patch|put|delete):)");
  std::string path;
  bool in_paths = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "paths:") in_paths = true;
    else if (!line.empty() && line[0] != ' ' && line[0] != '#') in_paths = false;
    if (!in_paths) continue;
    std::smatch m;
    if (std::regex_match(line, m, path_line)) path = m[1];
    else if (std::regex_search(line, m, method_line) && !path.empty()) ops.emplace_back(m[1], path);
  }
  REQUIRE(ops.size() >= 25);

  test::TempDir dir;
  test::VigildProcess d(dir.path() / "data", {"--no-camera-pull"});
  REQUIRE(d.wait_ready());
  for (const auto& [method, p] : ops) {
    std::string target = std::regex_replace(p, std::regex(R"(\{name\})"), "nocamera");
    target = std::regex_replace(target, std::regex(R"(\{id\})"), "999999");
    std::string verb = method;
    for (auto& c : verb) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::string body = method == "get" || method == "delete" ? "" : "{}";
    const std::string headers =
        body.empty() ? "" : "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    auto r = test::http_request(d.http(), verb, target, headers + "\r\n" + body);
    INFO(verb << " " << target << " -> " << r.status << " " << r.body);
    CHECK(r.status != 405);
    CHECK(r.status != 0);
    CHECK(r.body.find("no such resource") == std::string::npos);
  }
  // And the router does not answer what the document does not describe.
  for (const std::string target : {"/api/v1/nothing", "/api/v1/cameras/x/nothing", "/api/v2/cameras", "/admin"}) {
    auto r = test::http_request(d.http(), "GET", target);
    INFO(target << " -> " << r.status << " " << r.body);
    CHECK(r.status == 404);
  }
}
