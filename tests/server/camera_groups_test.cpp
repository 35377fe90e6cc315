// Camera groups (/api/v1/groups, schema 0009) on a real vigild: made, listed in the order given,
// renamed and re-membered (all or nothing), refused with the API's status (a taken name 409, a
// camera that does not exist 404, a bad name or a camera named twice 400, a viewer writing 403);
// a camera deleted leaves its groups; a group deleted leaves its cameras; and a viewer token
// limited to some cameras sees, through the groups, only those cameras and only groups holding one.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <vector>

#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;
using namespace vigil;

namespace {

std::vector<std::string> names_of(const json::value& cameras) {
  std::vector<std::string> out;
  for (const auto& c : cameras.as_array()) out.emplace_back(c.as_string());
  return out;
}

test::HttpResult as(const std::string& http, const std::string& token, const std::string& method,
                    const std::string& target, const std::string& body = {}) {
  std::string headers = "Authorization: Bearer " + token + "\r\n";
  if (!body.empty()) {
    headers += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return test::http_request(http, method, target, headers, body);
}

}  // namespace

TEST_CASE("camera groups: made, changed, deleted, and filtered by a token's cameras", "[groups][http]") {
  test::TempDir dir;
  test::VigildProcess d(dir.path() / "data", {"--no-camera-pull"});
  REQUIRE(d.wait_ready());
  const test::HttpApi api{d.http()};
  for (const char* cam : {"a", "b", "c"}) {
    auto r = api.call("POST", "/api/v1/cameras", std::string(R"({"name":")") + cam + R"("})");
    INFO(r.body);
    REQUIRE(r.status == 201);
  }

  auto made = api.call("POST", "/api/v1/groups", R"({"name":"Lobby","cameras":["b","a"]})");
  INFO(made.body);
  REQUIRE(made.status == 201);
  const auto id = made.json().at("id").as_int64();
  const auto path = "/api/v1/groups/" + std::to_string(id);
  CHECK(made.header("Location") == path);
  CHECK(made.json().at("name").as_string() == "Lobby");
  CHECK(names_of(made.json().at("cameras")) == std::vector<std::string>{"b", "a"});

  SECTION("refusals change nothing") {
    auto taken = api.call("POST", "/api/v1/groups", R"({"name":"Lobby"})");
    CHECK(taken.status == 409);
    CHECK_THAT(taken.body, ContainsSubstring("exists already"));
    auto missing = api.call("POST", "/api/v1/groups", R"({"name":"Yard","cameras":["a","nosuch"]})");
    CHECK(missing.status == 404);
    CHECK_THAT(missing.body, ContainsSubstring("nosuch"));
    CHECK(api.call("POST", "/api/v1/groups", R"({"name":"Twice","cameras":["a","a"]})").status == 400);
    CHECK(api.call("POST", "/api/v1/groups", R"({"name":" padded"})").status == 400);
    CHECK(api.call("POST", "/api/v1/groups", R"({"name":"tab\there"})").status == 400);
    CHECK(api.call("POST", "/api/v1/groups", R"({"cameras":["a"]})").status == 400);
    CHECK(api.call("PATCH", path, R"({})").status == 400);
    // A rename and a bad member together: neither happens.
    CHECK(api.call("PATCH", path, R"({"name":"Renamed","cameras":["nosuch"]})").status == 404);
    CHECK(api.call("GET", "/api/v1/groups/999999").status == 404);
    CHECK(api.call("DELETE", "/api/v1/groups/999999").status == 404);
    auto list = api.get("/api/v1/groups");
    REQUIRE(list.status == 200);
    const auto body = list.json();  // (json() parses anew: keep the value)
    const auto& groups = body.at("groups").as_array();
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].at("name").as_string() == "Lobby");
    CHECK(names_of(groups[0].at("cameras")) == std::vector<std::string>{"b", "a"});
  }

  SECTION("renamed, re-membered, a camera deleted, the group deleted") {
    auto changed = api.call("PATCH", path, R"({"name":"Front","cameras":["c","a","b"]})");
    INFO(changed.body);
    REQUIRE(changed.status == 200);
    CHECK(changed.json().at("name").as_string() == "Front");
    auto one = api.get(path);
    REQUIRE(one.status == 200);
    CHECK(names_of(one.json().at("cameras")) == std::vector<std::string>{"c", "a", "b"});
    // A camera in two groups; another group may not take the name.
    REQUIRE(api.call("POST", "/api/v1/groups", R"({"name":"Back","cameras":["a"]})").status == 201);
    CHECK(api.call("PATCH", path, R"({"name":"Back"})").status == 409);
    // Camera c never recorded: DELETE deletes it, and with it its memberships.
    auto gone = api.call("DELETE", "/api/v1/cameras/c");
    REQUIRE(gone.status == 200);
    CHECK(gone.json().at("result").as_string() == "deleted");
    CHECK(names_of(api.get(path).json().at("cameras")) == std::vector<std::string>{"a", "b"});
    auto del = api.call("DELETE", path);
    CHECK(del.status == 200);
    CHECK(api.get(path).status == 404);
    CHECK(api.get("/api/v1/cameras/a").status == 200);
    auto list = api.get("/api/v1/groups");
    REQUIRE(list.json().at("groups").as_array().size() == 1);
    CHECK(list.json().at("groups").as_array()[0].at("name").as_string() == "Back");
  }

  SECTION("a token limited to some cameras sees only them through groups") {
    auto back = api.call("POST", "/api/v1/groups", R"({"name":"Back","cameras":["c"]})");
    REQUIRE(back.status == 201);
    const auto back_path = "/api/v1/groups/" + std::to_string(back.json().at("id").as_int64());
    auto t = api.call("POST", "/api/v1/tokens", R"({"role":"viewer","label":"a only","cameras":["a"]})");
    INFO(t.body);
    REQUIRE(t.status == 201);
    const std::string viewer(t.json().at("token").as_string());

    auto list = as(d.http(), viewer, "GET", "/api/v1/groups");
    INFO(list.body);
    REQUIRE(list.status == 200);
    const auto body = list.json();  // (json() parses anew: keep the value)
    const auto& groups = body.at("groups").as_array();
    REQUIRE(groups.size() == 1);  // "Back" holds only c
    CHECK(groups[0].at("name").as_string() == "Lobby");
    CHECK(names_of(groups[0].at("cameras")) == std::vector<std::string>{"a"});
    CHECK_THAT(list.body, !ContainsSubstring("\"b\""));
    CHECK(names_of(as(d.http(), viewer, "GET", path).json().at("cameras")) == std::vector<std::string>{"a"});
    CHECK(as(d.http(), viewer, "GET", back_path).status == 404);
    // Reading is for viewers; writing for admins.
    CHECK(as(d.http(), viewer, "POST", "/api/v1/groups", R"({"name":"Mine","cameras":["a"]})").status == 403);
    CHECK(as(d.http(), viewer, "PATCH", path, R"({"cameras":["a"]})").status == 403);
    CHECK(as(d.http(), viewer, "DELETE", path).status == 403);
    CHECK(names_of(api.get(path).json().at("cameras")) == std::vector<std::string>{"b", "a"});
    // An unlimited viewer sees every group and member.
    auto all = api.call("POST", "/api/v1/tokens", R"({"role":"viewer","label":"all"})");
    REQUIRE(all.status == 201);
    auto every = as(d.http(), std::string(all.json().at("token").as_string()), "GET", "/api/v1/groups");
    REQUIRE(every.status == 200);
    CHECK(every.json().at("groups").as_array().size() == 2);
  }
}
