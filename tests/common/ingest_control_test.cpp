// The control messages between vigild's camera manager and its ingest workers: what one side
// formats the other parses back, a gap reason with newlines stays one line, and a line that is not
// a message is told apart (never taken as a half message).
#include "common/ingest_control.hpp"

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

using namespace vigil::ingest;

namespace {
std::string without_newline(std::string s) {
  REQUIRE(!s.empty());
  REQUIRE(s.back() == '\n');
  s.pop_back();
  return s;
}
}  // namespace

TEST_CASE("start and stop round-trip, the gap reason as the rest of the line", "[ingest][unit]") {
  const auto line = without_newline(
      format(Start{"porch", "rtsp://u:p@10.0.0.7:554/s?a=1", "ingest worker died (signal 9)\nsecond line", 4'000'000}));
  CHECK(line.find('\n') == std::string::npos);
  const auto c = parse_command(line);
  REQUIRE(c);
  REQUIRE(c->start);
  CHECK_FALSE(c->stop);
  CHECK(c->start->name == "porch");
  CHECK(c->start->url == "rtsp://u:p@10.0.0.7:554/s?a=1");
  CHECK(c->start->gap_reason == "ingest worker died (signal 9) second line");
  CHECK(c->start->rate_bps == 4'000'000);

  const auto no_reason = parse_command(without_newline(format(Start{"yard", "rtsp://h/x", ""})));
  REQUIRE(no_reason);
  REQUIRE(no_reason->start);
  CHECK(no_reason->start->gap_reason.empty());
  CHECK(no_reason->start->rate_bps == 0);

  const auto s = parse_command(without_newline(format(Stop{"porch"})));
  REQUIRE(s);
  REQUIRE(s->stop);
  CHECK_FALSE(s->start);
  CHECK(s->stop->name == "porch");
}

TEST_CASE("ended round-trips its exit code and last words", "[ingest][unit]") {
  const auto e = parse_ended(without_newline(format(Ended{"cam-07", 4, "refused by admission: full"})));
  REQUIRE(e);
  CHECK(e->name == "cam-07");
  CHECK(e->exit_code == 4);
  CHECK(e->reason == "refused by admission: full");
  const auto bare = parse_ended("ended cam 0");
  REQUIRE(bare);
  CHECK(bare->exit_code == 0);
  CHECK(bare->reason.empty());
}

TEST_CASE("lines that are not messages are refused", "[ingest][unit]") {
  for (const char* line : {"", "start", "start porch", "start  rtsp://h/x", "start porch rtsp://h/x",
                           "start porch rtsp://h/x x", "start porch rtsp://h/x -5", "stop", "stop porch extra",
                           "stop porch ", "begin porch rtsp://h/x", "STOP porch"}) {
    INFO('"' << line << '"');
    CHECK_FALSE(parse_command(line));
  }
  for (const char* line : {"", "ended", "ended porch", "ended porch x", "ended porch 1x", "ended  1", "start p u"}) {
    INFO('"' << line << '"');
    CHECK_FALSE(parse_ended(line));
  }
}

TEST_CASE("lines are split off a stream of bytes; a partial line waits for the rest", "[ingest][unit]") {
  std::string buffer = "stop a\nstop b\nsto";
  std::vector<std::string> lines;
  for_each_line(buffer, [&](std::string_view l) { lines.emplace_back(l); });
  CHECK(lines == std::vector<std::string>{"stop a", "stop b"});
  CHECK(buffer == "sto");
  buffer += "p c\n";
  for_each_line(buffer, [&](std::string_view l) { lines.emplace_back(l); });
  CHECK(lines.back() == "stop c");
  CHECK(buffer.empty());
}
