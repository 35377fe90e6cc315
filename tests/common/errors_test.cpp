// The project error category: codes convert to error_code, keep their names and messages,
// and travel through Result<T>.
#include <catch2/catch_test_macros.hpp>
#include <set>
#include <string>

#include "common/errors.hpp"

TEST_CASE("vigil::errc converts to an error_code of the vigil category", "[errors]") {
  boost::system::error_code ec = vigil::errc::frame_too_large;
  CHECK(ec.category().name() == std::string("vigil"));
  CHECK(ec.value() == static_cast<int>(vigil::errc::frame_too_large));
  CHECK(ec.message() == "frame exceeds the maximum frame size");
  CHECK(std::string(vigil::errc_name(vigil::errc::frame_too_large)) == "frame_too_large");
  CHECK(ec != vigil::errc::truncated_frame);
}

TEST_CASE("every code has a distinct name and a message", "[errors]") {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(vigil::errc::rate_exceeded); ++i) {
    auto e = static_cast<vigil::errc>(i);
    names.insert(vigil::errc_name(e));
    CHECK(vigil::make_error_code(e).message() != "unknown vigil error");
  }
  CHECK(names.size() == static_cast<std::size_t>(vigil::errc::rate_exceeded) + 1);
}

TEST_CASE("Result carries either a value or a vigil error", "[errors]") {
  auto half = [](int v) -> vigil::Result<int> {
    if (v % 2) return vigil::errc::invalid_argument;
    return v / 2;
  };
  REQUIRE(half(4).has_value());
  CHECK(*half(4) == 2);
  REQUIRE(half(3).has_error());
  CHECK(half(3).error() == vigil::errc::invalid_argument);
}
