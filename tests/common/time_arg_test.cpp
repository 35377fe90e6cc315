// `vigil play` time arguments: every accepted form, and clear refusals for the rest.
#include <catch2/catch_test_macros.hpp>
#include <stdexcept>

#include "common/time_arg.hpp"

using vigil::parse_time_arg;

TEST_CASE("time arguments: now, offsets, epoch seconds and ISO 8601 UTC", "[time-arg]") {
  const std::int64_t now = 1'790'000'000'000'000;
  CHECK(parse_time_arg("now", now) == now);
  CHECK(parse_time_arg("-90s", now) == now - 90'000'000);
  CHECK(parse_time_arg("-1.5m", now) == now - 90'000'000);
  CHECK(parse_time_arg("-2h", now) == now - 7'200'000'000);
  CHECK(parse_time_arg("-1d", now) == now - 86'400'000'000);
  CHECK(parse_time_arg("@1700000000.25", now) == 1'700'000'000'250'000);
  CHECK(parse_time_arg("2023-11-14T22:13:20Z", now) == 1'700'000'000'000'000);
}

TEST_CASE("malformed times are refused", "[time-arg]") {
  const std::int64_t now = 1'790'000'000'000'000;
  for (const char* bad : {"", "yesterday", "-5", "-5x", "--5s", "@", "@abc", "@-1", "2023-13-01T00:00:00Z",
                          "2023-11-14 22:13:20", "2023-11-14T22:13:20+02", "-nans"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_time_arg(bad, now), std::invalid_argument);
  }
}
