// URL passwords never reach a log line: every scheme://user:password@host in a text is masked,
// wherever it sits (a field of its own, inside an error message, several in one line), and text
// without one is left as it is.
#include <catch2/catch_test_macros.hpp>

#include "common/redact.hpp"

using vigil::has_credentials;
using vigil::redact_credentials;

TEST_CASE("URL passwords are masked, user and host kept", "[redact]") {
  CHECK(redact_credentials("rtsp://admin:secret@10.0.0.7:554/stream1") == "rtsp://admin:***@10.0.0.7:554/stream1");
  CHECK(redact_credentials("cannot open rtsp://u:p4ss@cam/x?a=b: Connection refused") ==
        "cannot open rtsp://u:***@cam/x?a=b: Connection refused");
  CHECK(redact_credentials("a http://x:1@h b rtsp://y:2@k") == "a http://x:***@h b rtsp://y:***@k");
  // An unescaped '@' in the password: hidden whole (the host is after the last '@').
  CHECK(redact_credentials("rtsp://u:se@cret@cam/") == "rtsp://u:***@cam/");
  CHECK(redact_credentials("\"rtsp://u:pw@cam\"") == "\"rtsp://u:***@cam\"");
  CHECK(has_credentials("x rtsp://u:pw@cam"));
}

TEST_CASE("text without a URL password is unchanged", "[redact]") {
  for (const char* text : {"", "plain words", "rtsp://cam/stream", "rtsp://user@cam/stream", "rtsp://user:@cam/",
                           "http://h:8080/path?q=a:b@c", "://", "a://b", "x:y@z"}) {
    CHECK_FALSE(has_credentials(text));
    CHECK(redact_credentials(text) == text);
  }
}
