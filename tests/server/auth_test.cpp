// Tokens and roles on a real vigild: the admin token file it writes on first start (0600,
// kept across restarts, replaced when revoked); HTTP without a token is 401 (but /healthz and
// /metrics), a wrong role 403, ?access_token= works where headers cannot be sent; tokens made
// with `vigil token` act with their role at once and stop when revoked; the wire protocol
// refuses a hello without a valid token and open-record/open-playback without the role.
#include <sys/stat.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

// `vigil token create --role ROLE`: the token it prints.
std::string create_token(const std::filesystem::path& dir, const std::filesystem::path& data, const std::string& role) {
  const auto out = dir / ("token-" + role + ".out");
  auto r =
      test::run_to_exit(VIGIL_CLI_PATH,
                        {"token", "create", "--role", role, "--label", "test " + role, "--data", data.string()}, out);
  INFO(r.output);
  REQUIRE(r.status == 0);
  // stdout and stderr share the log: the token is the line that starts with vgl_.
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("vgl_", 0) == 0) return line;
  }
  FAIL("no token printed");
  return {};
}

test::HttpResult as(const std::string& http, const std::string& token, const std::string& method,
                    const std::string& target, const std::string& body = {}) {
  std::string headers = "Authorization: Bearer " + token + "\r\n";
  if (!body.empty())
    headers += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return test::http_request(http, method, target, headers + "\r\n" + body);
}

}  // namespace

TEST_CASE("auth: tokens and roles on HTTP and the wire protocol", "[auth][http][wire]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  std::string admin;
  {
    test::VigildProcess d(data, {"--no-camera-pull"});
    REQUIRE(d.wait_ready());
    admin = d.token();
    REQUIRE(admin.rfind("vgl_", 0) == 0);
    struct stat st {};
    REQUIRE(::stat((data / "admin.token").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK_THAT(d.output(), ContainsSubstring("admin token written"));
    CHECK_THAT(d.output(), !ContainsSubstring(admin));  // never in the log
  }
  // A restart keeps the token in the file.
  test::VigildProcess d(data, {"--no-camera-pull"});
  REQUIRE(d.wait_ready());
  CHECK(d.token() == admin);
  REQUIRE(test::run_to_exit(VIGIL_CLI_PATH, {"camera", "add", "porch", "rtsp://10.0.0.5/s", "--data", data.string()},
                            dir.path() / "add.log")
              .status == 0);
  const auto viewer = create_token(dir.path(), data, "viewer");
  const auto recorder = create_token(dir.path(), data, "recorder");

  {  // HTTP: who may do what
    auto anon = test::http_request_without_token(d.http(), "GET", "/api/v1/cameras");
    CHECK(anon.status == 401);
    CHECK(anon.header("WWW-Authenticate") == "Bearer realm=\"vigil\"");
    CHECK_THAT(anon.body, ContainsSubstring("admin.token"));
    CHECK(test::http_request_without_token(d.http(), "GET", "/healthz").status == 200);
    CHECK(test::http_request_without_token(d.http(), "GET", "/metrics").status == 200);
    CHECK(as(d.http(), "vgl_not_a_token", "GET", "/api/v1/cameras").status == 401);
    CHECK(as(d.http(), std::string(5000, 'x'), "GET", "/api/v1/cameras").status == 401);
    CHECK(test::http_request_without_token(d.http(), "GET", "/api/v1/cameras",
                                           "Authorization: Basic YWRtaW46YWRtaW4=\r\n")
              .status == 401);

    CHECK(as(d.http(), viewer, "GET", "/api/v1/cameras").status == 200);
    CHECK(as(d.http(), admin, "GET", "/api/v1/cameras").status == 200);
    CHECK(as(d.http(), recorder, "GET", "/api/v1/cameras").status == 403);
    // ?access_token= for players that cannot send headers.
    CHECK(test::http_request_without_token(d.http(), "GET", "/api/v1/cameras?access_token=" + viewer).status == 200);
    CHECK(test::http_request_without_token(d.http(), "GET", "/api/v1/cameras?access_token=vgl_nope").status == 401);

    // Now: a recorder may not date an event further back than --max-backdate (5 s).
    const std::string event = R"({"camera":"porch","start":"-1s","type":"motion"})";
    auto denied = as(d.http(), viewer, "POST", "/api/v1/events", event);
    CHECK(denied.status == 403);
    CHECK_THAT(denied.body, ContainsSubstring("recorder"));
    auto posted = as(d.http(), recorder, "POST", "/api/v1/events", event);
    INFO(posted.body);
    REQUIRE(posted.status == 201);
    CHECK(as(d.http(), admin, "POST", "/api/v1/events", event).status == 201);
    // Deleting is for admins only.
    CHECK(as(d.http(), recorder, "DELETE", "/api/v1/events/1").status == 403);
    CHECK(as(d.http(), viewer, "DELETE", "/api/v1/events/1").status == 403);
    CHECK(as(d.http(), admin, "DELETE", "/api/v1/events/1").status == 200);
  }
  {  // the wire protocol
    client::WireClient anon(d.wire(), std::chrono::seconds(10));
    try {
      anon.hello("no token", "");
      FAIL("hello without a token was answered");
    } catch (const client::ServerError& e) {
      CHECK(e.code == proto::ERROR_CODE_UNAUTHENTICATED);
    }
    client::WireClient v(d.wire(), std::chrono::seconds(10));
    v.hello("viewer", viewer);
    proto::Envelope open;
    open.mutable_open_record()->set_stream_name("porch");
    open.mutable_open_record()->mutable_codec()->set_codec_name("h264");
    v.send(open);
    try {
      v.receive();
      FAIL("a viewer's open-record was answered");
    } catch (const client::ServerError& e) {
      CHECK(e.code == proto::ERROR_CODE_PERMISSION_DENIED);
    }
    client::WireClient r(d.wire(), std::chrono::seconds(10));
    r.hello("recorder", recorder);
    proto::Envelope play;
    play.mutable_open_playback()->set_stream_name("porch");
    play.mutable_open_playback()->set_start_us(1);
    play.mutable_open_playback()->set_end_us(2);
    r.send(play);
    try {
      r.receive();
      FAIL("a recorder's open-playback was answered");
    } catch (const client::ServerError& e) {
      CHECK(e.code == proto::ERROR_CODE_PERMISSION_DENIED);
    }
    // The CLI without any token (no env, no file where it runs) is refused with a reason.
    ::unsetenv("VIGIL_TOKEN");
    auto st = test::run_to_exit(VIGIL_CLI_PATH,
                                {"--server", d.wire(), "--token-file", (dir.path() / "none").string(), "status"},
                                dir.path() / "status.log");
    CHECK(st.status != 0);
    CHECK_THAT(st.output, ContainsSubstring("token"));
    auto ok = test::run_to_exit(VIGIL_CLI_PATH,
                                {"--server", d.wire(), "--token-file", (data / "admin.token").string(), "status"},
                                dir.path() / "status2.log");
    CHECK(ok.status == 0);
    ::setenv("VIGIL_TOKEN", admin.c_str(), 1);
  }
  {  // revocation takes effect within the cache's lifetime (bounded polling, no fixed sleep)
    auto list = test::run_to_exit(VIGIL_CLI_PATH, {"token", "list", "--data", data.string()}, dir.path() / "list.log");
    REQUIRE(list.status == 0);
    CHECK_THAT(list.output, ContainsSubstring("test viewer"));
    CHECK_THAT(list.output, !ContainsSubstring(viewer));  // never shown again
    // The viewer token is the second one made (1: the admin file's; 2: viewer; 3: recorder).
    REQUIRE(test::run_to_exit(VIGIL_CLI_PATH, {"token", "revoke", "2", "--data", data.string()}, dir.path() / "rev.log")
                .status == 0);
    int status = 200;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (status == 200 && std::chrono::steady_clock::now() < deadline) {
      status = as(d.http(), viewer, "GET", "/api/v1/cameras").status;
      if (status == 200) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK(status == 401);
    CHECK(test::run_to_exit(VIGIL_CLI_PATH, {"token", "revoke", "2", "--data", data.string()}, dir.path() / "rev2.log")
              .status == 1);
    CHECK(test::run_to_exit(VIGIL_CLI_PATH, {"token", "create", "--role", "root", "--data", data.string()},
                            dir.path() / "bad.log")
              .status == 2);
  }
  {  // a revoked admin token in the file is replaced at the next start
    REQUIRE(
        test::run_to_exit(VIGIL_CLI_PATH, {"token", "revoke", "1", "--data", data.string()}, dir.path() / "rev1.log")
            .status == 0);
    d.stop();
    CHECK(
        test::run_to_exit(VIGIL_CLI_PATH, {"token", "list", "--data", data.string()}, dir.path() / "down.log").status ==
        3);  // vigild (and its catalog) stopped: unreachable, and said so
    test::VigildProcess again(data, {"--no-camera-pull", "--metrics-auth"});
    REQUIRE(again.wait_ready());
    CHECK(again.token() != admin);
    CHECK_THAT(again.output(), ContainsSubstring("no longer names a valid admin token"));
    CHECK(as(again.http(), again.token(), "GET", "/api/v1/cameras").status == 200);
    CHECK(as(again.http(), admin, "GET", "/api/v1/cameras").status == 401);
    // --metrics-auth: the scrape needs a token too.
    CHECK(test::http_request_without_token(again.http(), "GET", "/metrics").status == 401);
    CHECK(as(again.http(), again.token(), "GET", "/metrics").status == 200);
    CHECK(test::http_request_without_token(again.http(), "GET", "/healthz").status == 200);
  }
}
