// RTSP messages, URLs and authentication (client/rtsp/rtsp_message.hpp).
#include "client/rtsp/rtsp_message.hpp"

#include <catch2/catch_test_macros.hpp>
#include <string>

using namespace vigil::client::rtsp;

TEST_CASE("an rtsp URL splits into host, port and percent-decoded credentials", "[rtsp]") {
  std::string why;
  auto u = parse_rtsp_url("rtsp://admin:p%40ss%3Aword@10.0.0.7:8554/Streaming/Channels/101?transport=tcp", why);
  REQUIRE(u);
  CHECK(u->host == "10.0.0.7");
  CHECK(u->port == 8554);
  CHECK(u->user == "admin");
  CHECK(u->password == "p@ss:word");
  CHECK(u->without_credentials == "rtsp://10.0.0.7:8554/Streaming/Channels/101?transport=tcp");

  auto plain = parse_rtsp_url("rtsp://camera.local", why);
  REQUIRE(plain);
  CHECK(plain->port == 554);
  CHECK(plain->user.empty());
  CHECK(plain->without_credentials == "rtsp://camera.local/");

  auto v6 = parse_rtsp_url("rtsp://[fe80::1]:10554/s", why);
  REQUIRE(v6);
  CHECK(v6->host == "fe80::1");
  CHECK(v6->port == 10554);

  for (const char* bad : {"http://x/", "rtsp://", "rtsp://host:0/", "rtsp://host:70000/", "rtsp://host:12x/",
                          "rtsp://u:%4@host/", "rtsp://[::1/", "rtsp://host/a b", "rtsp://host/x\r\nCSeq: 9"}) {
    INFO(bad);
    why.clear();
    CHECK_FALSE(parse_rtsp_url(bad, why));
    CHECK_FALSE(why.empty());
  }
}

TEST_CASE("a response is parsed once complete, with its body", "[rtsp]") {
  const std::string sdp = "v=0\r\nm=video 0 RTP/AVP 96\r\n";
  const std::string full =
      "RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Base: rtsp://h/cam/\r\nContent-Length: " + std::to_string(sdp.size()) +
      "\r\n\r\n" + sdp + std::string("$\0\0\4abcd", 8);
  std::string why;
  // Every prefix short of the body's end is "need more bytes", not an error.
  const std::size_t message_bytes = full.size() - 8;
  for (std::size_t n = 0; n < message_bytes; ++n) {
    INFO(n);
    CHECK_FALSE(parse_message(std::string_view(full).substr(0, n), why));
    CHECK(why.empty());
  }
  auto m = parse_message(full, why);
  REQUIRE(m);
  CHECK(m->is_response);
  CHECK(m->status == 200);
  CHECK(m->reason == "OK");
  CHECK(m->header("cseq") == "2");
  CHECK(m->header("content-base") == "rtsp://h/cam/");
  CHECK(m->body == sdp);
  CHECK(m->consumed_bytes == message_bytes);
}

TEST_CASE("a camera's own request and bare-LF lines are messages too", "[rtsp]") {
  std::string why;
  auto m = parse_message("GET_PARAMETER rtsp://h/ RTSP/1.0\nCSeq: 9\n\n", why);
  REQUIRE(m);
  CHECK_FALSE(m->is_response);
  CHECK(m->method == "GET_PARAMETER");
  CHECK(m->uri == "rtsp://h/");
  CHECK(m->header("cseq") == "9");
}

TEST_CASE("malformed and oversized messages are refused with a reason", "[rtsp]") {
  std::string why;
  for (const std::string& bad : {std::string("HTTP/1.1 200 OK\r\n\r\n"), std::string("RTSP/1.0 2x0 OK\r\n\r\n"),
                                 std::string("RTSP/1.0 200 OK\r\nno colon here\r\n\r\n"),
                                 std::string("RTSP/1.0 200 OK\r\nContent-Length: -1\r\n\r\n"),
                                 std::string("RTSP/1.0 200 OK\r\nContent-Length: 99999999\r\n\r\n"),
                                 "RTSP/1.0 200 OK\r\nX: " + std::string(kMaxHeadBytes, 'a') + "\r\n\r\n"}) {
    INFO(bad.substr(0, 40));
    CHECK_FALSE(parse_message(bad, why));
    CHECK_FALSE(why.empty());
  }
  // A head that never ends is refused once it is larger than any camera's.
  CHECK_FALSE(parse_message("RTSP/1.0 200 OK\r\n" + std::string(kMaxHeadBytes + 1, 'a'), why));
  CHECK_FALSE(why.empty());
}

TEST_CASE("Digest answers RFC 2617's published example", "[rtsp]") {
  CHECK(digest_response("Mufasa", "testrealm@host.com", "Circle Of Life", "GET", "/dir/index.html",
                        "dcd98b7102dd2f0e8b11d0f600bfb0c093", "auth", "00000001",
                        "0a4f113b") == "6629fae49393a05397450978507c4ef1");
  // RFC 2069's form: MD5(HA1:nonce:HA2), computed independently (Python's hashlib).
  CHECK(digest_response("admin", "cam", "pw", "DESCRIBE", "rtsp://10.0.0.7/s", "abc", "", "", "") ==
        "4e17f473b70f7c757295492869ce42d5");
}

TEST_CASE("a 401's challenges are answered, Digest before Basic", "[rtsp]") {
  std::string why;
  auto both = parse_message(
      "RTSP/1.0 401 Unauthorized\r\nCSeq: 1\r\nWWW-Authenticate: Basic realm=\"cam\"\r\n"
      "WWW-Authenticate: Digest realm=\"cam\", nonce=\"abc\", stale=\"FALSE\"\r\n\r\n",
      why);
  REQUIRE(both);
  auto value = authorization(*both, "admin", "pw", "DESCRIBE", "rtsp://10.0.0.7/s");
  REQUIRE(value);
  CHECK(value->starts_with("Digest username=\"admin\", realm=\"cam\", nonce=\"abc\", uri=\"rtsp://10.0.0.7/s\""));
  CHECK(value->find("response=\"4e17f473b70f7c757295492869ce42d5\"") != std::string::npos);

  auto basic = parse_message("RTSP/1.0 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"cam\"\r\n\r\n", why);
  REQUIRE(basic);
  CHECK(authorization(*basic, "Aladdin", "open sesame", "DESCRIBE", "rtsp://h/") ==
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");  // RFC 7617's example

  auto unknown = parse_message("RTSP/1.0 401 Unauthorized\r\nWWW-Authenticate: Negotiate\r\n\r\n", why);
  REQUIRE(unknown);
  CHECK_FALSE(authorization(*unknown, "a", "b", "DESCRIBE", "rtsp://h/"));
}

TEST_CASE("a=control resolves against the base", "[rtsp]") {
  CHECK(resolve_control("rtsp://h/cam/", "trackID=1") == "rtsp://h/cam/trackID=1");
  CHECK(resolve_control("rtsp://h/cam", "stream=0") == "rtsp://h/cam/stream=0");
  CHECK(resolve_control("rtsp://h/cam", "rtsp://other/x") == "rtsp://other/x");
  CHECK(resolve_control("rtsp://h/cam", "*") == "rtsp://h/cam");
  CHECK(resolve_control("rtsp://h/cam", "") == "rtsp://h/cam");
}
