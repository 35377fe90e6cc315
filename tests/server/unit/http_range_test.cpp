// The Range header parser on hand-computed cases (RFC 9110 §14.1.2): first-last, open-ended,
// suffix, clamping to the end, several ranges (the first is served), and what is malformed or
// cannot be satisfied.
#include <catch2/catch_test_macros.hpp>

#include "server/net/http_range.hpp"

using vigil::server::ByteRange;
using vigil::server::parse_byte_range;
using Kind = ByteRange::Kind;

TEST_CASE("Range header: the byte ranges a player asks for", "[http][range]") {
  auto r = parse_byte_range("", 1000);
  CHECK((r.kind == Kind::whole && r.offset == 0 && r.length == 1000));
  r = parse_byte_range("bytes=0-99", 1000);
  CHECK((r.kind == Kind::partial && r.offset == 0 && r.length == 100));
  r = parse_byte_range("bytes=900-", 1000);
  CHECK((r.kind == Kind::partial && r.offset == 900 && r.length == 100));
  r = parse_byte_range("bytes=-10", 1000);
  CHECK((r.kind == Kind::partial && r.offset == 990 && r.length == 10));
  r = parse_byte_range("bytes=-5000", 1000);  // a suffix longer than the file: all of it
  CHECK((r.kind == Kind::partial && r.offset == 0 && r.length == 1000));
  r = parse_byte_range("bytes=10-5000", 1000);  // past the end: clamped
  CHECK((r.kind == Kind::partial && r.offset == 10 && r.length == 990));
  r = parse_byte_range("bytes= 5 - 9 , 20-30", 1000);  // spaces; the first of several
  CHECK((r.kind == Kind::partial && r.offset == 5 && r.length == 5));
  r = parse_byte_range("bytes=999-999", 1000);
  CHECK((r.kind == Kind::partial && r.offset == 999 && r.length == 1));
}

TEST_CASE("Range header: malformed and unsatisfiable ranges", "[http][range]") {
  CHECK(parse_byte_range("bytes=1000-", 1000).kind == Kind::unsatisfiable);
  CHECK(parse_byte_range("bytes=-0", 1000).kind == Kind::unsatisfiable);
  CHECK(parse_byte_range("bytes=0-", 0).kind == Kind::unsatisfiable);
  for (const char* bad : {"bytes=abc", "bytes=9-3", "items=0-5", "bytes=", "bytes=-", "bytes=1-2-3", "bytes=+1-2",
                          "bytes=0x10-20", "bytes=99999999999999999999-", "bytes=1 0-20", "0-5"}) {
    INFO(bad);
    CHECK(parse_byte_range(bad, 1000).kind == Kind::malformed);
  }
}
