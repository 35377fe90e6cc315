// What a source offers (server/recording/offered_rate.hpp) includes what its recorder dropped
// itself above the admitted rate (MediaLoss rate_exceeded): else a recorder that drops instead of
// resending would hide its source's rate from re-admission.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include "server/recording/offered_rate.hpp"

using vigil::server::OfferedRate;

TEST_CASE("dropped media counts as offered, and as policed", "[recording][readmission]") {
  OfferedRate offered(10'000'000);
  // 10 s of media: 1 000 bytes per 40 ms sent (200 kbit/s), and every other second dropped at
  // 3 000 bytes per 40 ms.
  for (std::int64_t i = 0; i <= 250; ++i) offered.packet(static_cast<std::uint64_t>(i + 1), i * 40'000, 1'000);
  for (std::int64_t s = 0; s < 10; s += 2) offered.dropped(s * 1'000'000, (s + 1) * 1'000'000, 25 * 3'000);
  const auto w = offered.take();
  REQUIRE(w);
  CHECK(w->policed);
  CHECK(w->rate.bps() == Catch::Approx((251 * 1'000 + 5 * 75'000) * 8 / 10.0));
  CHECK_FALSE(offered.take());  // the next window starts empty
}

TEST_CASE("a window without drops or refusals is not policed", "[recording][readmission]") {
  OfferedRate offered(1'000'000);
  for (std::int64_t i = 0; i <= 25; ++i) offered.packet(static_cast<std::uint64_t>(i + 1), i * 40'000, 500);
  const auto w = offered.take();
  REQUIRE(w);
  CHECK_FALSE(w->policed);
}
