// Byte sizes as an operator types them (`vigil camera set --retention-size 500G`): binary units
// by default, decimal ones when spelled KB..PB, and a clear refusal of everything else.
#include <catch2/catch_test_macros.hpp>

#include "common/byte_size.hpp"

TEST_CASE("parse_byte_size reads plain bytes, binary and decimal units", "[common][size]") {
  using vigil::parse_byte_size;
  CHECK(parse_byte_size("1048576") == 1048576);
  CHECK(parse_byte_size("0") == 0);
  CHECK(parse_byte_size("900B") == 900);
  CHECK(parse_byte_size("1K") == 1024);
  CHECK(parse_byte_size("1kib") == 1024);
  CHECK(parse_byte_size("1KB") == 1000);
  CHECK(parse_byte_size("750MiB") == 750LL << 20);
  CHECK(parse_byte_size("500G") == 500LL << 30);
  CHECK(parse_byte_size("500 GiB") == 500LL << 30);
  CHECK(parse_byte_size("2GB") == 2'000'000'000LL);
  CHECK(parse_byte_size("1.5T") == 3LL << 39);
  CHECK(parse_byte_size(" 4tb ") == 4'000'000'000'000LL);
  CHECK(parse_byte_size("8191P") == 8191LL << 50);  // just below 2^63
}

TEST_CASE("parse_byte_size refuses what is not a size", "[common][size]") {
  using vigil::parse_byte_size;
  CHECK_FALSE(parse_byte_size(""));
  CHECK_FALSE(parse_byte_size("G"));
  CHECK_FALSE(parse_byte_size("-1G"));
  CHECK_FALSE(parse_byte_size("12 apples"));
  CHECK_FALSE(parse_byte_size("1.2.3G"));
  CHECK_FALSE(parse_byte_size("8192P"));  // 2^63: past int64
  CHECK_FALSE(parse_byte_size("1e3"));
  CHECK_FALSE(parse_byte_size("none"));
}

TEST_CASE("format_byte_size keeps three significant digits", "[common][size]") {
  using vigil::format_byte_size;
  CHECK(format_byte_size(900) == "900 B");
  CHECK(format_byte_size(1536) == "1.50 KiB");
  CHECK(format_byte_size(500LL << 30) == "500 GiB");
  CHECK(format_byte_size(45LL << 20) == "45.0 MiB");
}
