// Percent-encoding of URL parts (RFC 3986 §2.1, §2.3): unreserved characters stay, every other
// byte (reserved characters, space, UTF-8, NUL) becomes %XX with upper-case hex digits.
#include <catch2/catch_test_macros.hpp>
#include <string>

#include "common/percent_encoding.hpp"

TEST_CASE("percent_encode keeps the unreserved characters and encodes every other byte", "[common][url]") {
  using vigil::percent_encode;
  CHECK(percent_encode("") == "");
  CHECK(percent_encode("AZaz09-._~") == "AZaz09-._~");
  CHECK(percent_encode("a b") == "a%20b");
  CHECK(percent_encode("-1h") == "-1h");
  CHECK(percent_encode("@1767225600") == "%401767225600");
  CHECK(percent_encode("2026-11-26T08:00:00Z") == "2026-11-26T08%3A00%3A00Z");
  CHECK(percent_encode("p@ss:w/rd?#[]") == "p%40ss%3Aw%2Frd%3F%23%5B%5D");
  CHECK(percent_encode("0,0,0.5,0.5") == "0%2C0%2C0.5%2C0.5");
  CHECK(percent_encode("\xC3\xA9") == "%C3%A9");  // é in UTF-8
  CHECK(percent_encode(std::string("a\0b", 3)) == "a%00b");
  CHECK(percent_encode("%") == "%25");
}
