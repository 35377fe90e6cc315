// `vigil record` survives vigild being killed mid-recording: it keeps every packet not yet
// acknowledged, reconnects with backoff once vigild is back on the same address, resends them in a
// new stream, and in the end every packet of the clip is acknowledged. The catalog shows the first
// stream interrupted with a crash_recovery gap, the second stopped, and everything plays back.
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include "common/child_process.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {
int free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST_CASE("vigil record reconnects after vigild is killed and loses nothing it read", "[record][cli][crash]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 8);
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  const std::string wire = "127.0.0.1:" + std::to_string(free_port());
  auto args = test::sim_volume_args(dir.path(), profile);
  args.insert(args.begin(), {"--listen", wire});
  auto d = std::make_unique<test::VigildProcess>(data, args);
  REQUIRE(d->wait_ready());

  SpawnOptions o;
  const auto rec_log = dir.path() / "rec.log";
  o.argv = {VIGIL_CLI_PATH, "--server", wire, "record", "--stream", "lobby", clip.string(), "--retry-for", "120"};
  o.output_file = rec_log;
  auto recorder = ChildProcess::spawn(o);
  // A second of it reaches vigild (watched live, once the recorder is admitted), then vigild is killed.
  for (int i = 0; i < 300 && slurp(rec_log).find("admitted as stream") == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);  // a bounded wait for the recorder, not timing
  }
  REQUIRE_THAT(slurp(rec_log), ContainsSubstring("admitted as stream"));
  auto live = test::run_to_exit(VIGIL_CLI_PATH,
                                {"--server", wire, "play", "--stream", "lobby", "--live", "--duration", "1", "-o",
                                 (dir.path() / "live.ts").string()},
                                dir.path() / "live.log");
  REQUIRE(live.status == 0);
  d->stop(SIGKILL);
  d.reset();
  for (int i = 0; i < 300 && !test::postgres_processes_under(data).empty(); ++i) std::this_thread::sleep_for(100ms);
  d = std::make_unique<test::VigildProcess>(data, args);
  REQUIRE(d->wait_ready());

  const int status = recorder.wait();
  const auto out = slurp(rec_log);
  INFO(out);
  INFO(d->output());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(out, ContainsSubstring("lost vigild"));
  CHECK_THAT(out, ContainsSubstring("recorded 200 packets of lobby"));
  CHECK_THAT(out, ContainsSubstring("200 acknowledged as durable (over 2 connections)"));

  pqxx::connection db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  std::string states;
  for (int i = 0; i < 100; ++i) {
    pqxx::nontransaction q(db);
    states = q.exec1("SELECT string_agg(state, ',' ORDER BY id) FROM streams")[0].as<std::string>();
    if (states == "interrupted,stopped") break;
    std::this_thread::sleep_for(100ms);  // the batcher's bounded delay
  }
  CHECK(states == "interrupted,stopped");
  pqxx::nontransaction q(db);
  CHECK(q.exec1("SELECT count(*) FROM gaps WHERE reason = 'crash_recovery'")[0].as<int>() == 1);
  // Packets resent after the reconnect are stored twice: those that had become durable just before
  // the kill (at most a cycle), and the new stream's start from its GOP's keyframe (at most a GOP:
  // the clip has a keyframe every 25 frames), so the new stream plays on its own.
  const auto frames = q.exec1("SELECT sum(frame_count) FROM segments WHERE state = 'closed'")[0].as<std::int64_t>();
  CHECK(frames >= 200);
  CHECK(frames <= 200 + 25 + 25);
  auto play = test::run_to_exit(VIGIL_CLI_PATH,
                                {"--server", wire, "play", "--stream", "lobby", "--from", "-1h", "--to",
                                 "@" + std::to_string(std::time(nullptr) + 600), "--rate", "16", "-o",
                                 (dir.path() / "all.mkv").string()},
                                dir.path() / "play.log");
  INFO(play.output);
  CHECK(play.status == 0);
  CHECK_THAT(play.output, ContainsSubstring(std::to_string(frames) + " packets"));
  REQUIRE(d->stop(SIGTERM) == 0);
}
