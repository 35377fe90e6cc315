// A clean stop right after a recording ends loses none of its catalog rows: what the recording
// queued for the catalog (segment close, stream end) is committed before the embedded PostgreSQL
// stops, so the next start finds the stream ended normally — no crash_recovery gap, nothing
// "ended after an unclean stop".
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>

#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("vigild stopped right after a recording ends keeps its catalog rows", "[vigild][durability]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 2);
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  const std::vector<std::string> args = test::sim_volume_args(dir.path(), profile, 64);
  {
    test::VigildProcess d(data, args);
    REQUIRE(d.wait_ready());
    auto rec =
        test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "gate", clip.string(), "--fast"},
                          dir.path() / "rec.log");
    REQUIRE(rec.status == 0);
    // At once: the batcher still holds the rows (it commits up to 1 s later).
    CHECK(d.stop() == 0);
    CHECK_THAT(d.output(), !ContainsSubstring("catalog unreachable"));
  }
  test::VigildProcess again(data, args);
  REQUIRE(again.wait_ready());
  CHECK_THAT(again.output(), !ContainsSubstring("unclean stop"));
  pqxx::connection c("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  pqxx::work tx(c);
  CHECK(tx.exec1("SELECT state FROM streams")[0].as<std::string>() == "stopped");  // its one stream
  CHECK(tx.exec1("SELECT count(*) FROM gaps WHERE reason = 'crash_recovery'")[0].as<int>() == 0);
  CHECK(tx.exec1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed'")[0].as<int>() == 50);
}
