// Logging parses its level names and refuses unknown ones with a message that lists the valid ones.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/log.hpp"

TEST_CASE("log levels parse and reject unknown names", "[log]") {
  CHECK(vigil::log::parse_level("debug") == vigil::log::Level::debug);
  CHECK(vigil::log::parse_level("error") == vigil::log::Level::error);
  CHECK_THROWS_WITH(vigil::log::parse_level("loud"), Catch::Matchers::ContainsSubstring("debug, info, warn, error"));
}
