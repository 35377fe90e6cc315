// Media work off the network threads (server/media/media_pool.hpp), on a real vigild: 32 streams
// record at real time with 1 s cycles while 100 thumbnails of distinct widths (none cached) and
// 10 exports of a real H.264 clip (streamed fragmented MP4: --export-memory-bytes at its minimum)
// are fetched. Every recorder's acknowledgement delay, from sending a packet to the DurableAck
// that covers it, stays within 2 cycles; vigild's peak RSS stays bounded. A long cycle (1 s) and a
// modest rate keep this about where the work runs, not how fast the machine is.
#include <sys/socket.h>

#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <memory>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

struct Recorder {
  std::uint64_t sent = 0, acked = 0, policed = 0;
  std::chrono::steady_clock::duration max_ack_delay{};
  std::string error;
};

// Script frames at 25 fps on C's STREAM until STOP; the delay of each acknowledged packet from
// when it was sent to when the DurableAck covering it was read.
void record(client::WireClient& c, std::uint64_t stream, std::stop_token stop, Recorder& r) {
  std::vector<std::chrono::steady_clock::time_point> sent_at(1);
  auto take = [&](const client::Received& m) {
    if (!m.msg.has_durable_ack()) return;
    const auto now = std::chrono::steady_clock::now();
    for (auto s = r.acked + 1; s <= m.msg.durable_ack().last_sequence() && s < sent_at.size(); ++s) {
      r.max_ack_delay = std::max(r.max_ack_delay, now - sent_at[s]);
    }
    r.acked = std::max<std::uint64_t>(r.acked, m.msg.durable_ack().last_sequence());
  };
  try {
    const auto t0 = std::chrono::steady_clock::now();
    while (!stop.stop_requested()) {
      std::this_thread::sleep_until(t0 + 40ms * r.sent);
      auto [p, payload] = test::media_packet(stream, r.sent + 1, stream);
      sent_at.push_back(std::chrono::steady_clock::now());
      c.send(p, payload);
      ++r.sent;
      for (;;) {
        try {
          auto m = c.try_receive();
          if (!m) break;
          take(*m);
        } catch (const client::ServerError&) {
          ++r.policed;
        }
      }
    }
    ::shutdown(c.native_handle(), SHUT_WR);
    try {
      for (;;) take(c.receive());
    } catch (const client::ServerError&) {
      ++r.policed;
    } catch (const std::exception&) {
      // end of stream
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
}

std::string at(std::int64_t us) {
  const auto t = std::to_string(us);
  return "%40" + t.substr(0, t.size() - 6) + "." + t.substr(t.size() - 6);
}

// vigild's peak resident set (VmHWM), bytes.
std::uint64_t peak_rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace

TEST_CASE("media work off the network threads: thumbnails and exports never delay recorders' acknowledgements",
          "[http][media][load][pool][ffmpeg]") {
  constexpr auto kCycle = 1000ms;
  test::RecordingRig rig({"--cycle-ms", "1000", "--volume-size", std::to_string(1024 << 20), "--export-memory-bytes",
                          std::to_string(64 << 10), "--thumbnail-builds", "4"});
  auto& d = *rig.vigild;
  const auto& dir = rig.dir;
  const auto clip = test::make_h264_clip(dir.path(), 12);
  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", d.wire(), "record", "--stream", "archive", clip.string(), "--fast"},
                               dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  const std::int64_t start_us = test::wait_for_closed_frames(dir.path() / "data", 300);

  std::vector<std::unique_ptr<client::WireClient>> sessions;
  std::vector<Recorder> results(32);
  std::vector<std::jthread> load;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto c = std::make_unique<client::WireClient>(d.wire(), 20s);
    c->hello("media pool load test", vigil::test::token());
    c->send(test::open_record("load-" + std::to_string(i), 2'000'000));
    auto reply = c->receive();
    INFO("stream " << i << (reply.msg.has_refuse() ? ": " + reply.msg.refuse().reason() : std::string()));
    REQUIRE(reply.msg.has_admit());
    const auto stream = reply.msg.admit().stream_id();
    load.emplace_back(
        [&results, i, stream, c = c.get()](std::stop_token stop) { record(*c, stream, stop, results[i]); });
    sessions.push_back(std::move(c));
  }

  const std::string base = "/api/v1/cameras/archive/";
  std::vector<int> thumbnail_status(100), export_status(10);
  std::vector<std::size_t> export_bytes(10);
  {
    std::vector<std::jthread> media;
    for (int t = 0; t < 4; ++t) {  // four at a time: within --thumbnail-builds, so none is a 503
      media.emplace_back([&, t] {
        for (int i = t; i < 100; i += 4) {
          thumbnail_status[i] = test::http_request(d.http(), "GET",
                                                   base + "thumbnail.jpg?at=" + at(start_us + 100'000 * i + 200'000) +
                                                       "&width=" + std::to_string(100 + i))
                                    .status;
        }
      });
    }
    for (int t = 0; t < 2; ++t) {
      media.emplace_back([&, t] {
        for (int i = t; i < 10; i += 2) {
          auto r = test::http_request(d.http(), "GET",
                                      base + "export.mp4?from=" + at(start_us - 1'000'000) +
                                          "&to=" + at(start_us + 13'000'000 + i));  // distinct: none from a cache
          export_status[i] = r.status;
          export_bytes[i] = r.body.size();
        }
      });
    }
  }
  // A few more cycles of recording after the media work, so every stream's last acknowledgements
  // are measured under the same conditions.
  std::this_thread::sleep_for(3 * kCycle);
  for (auto& t : load) t.request_stop();
  load.clear();

  for (int i = 0; i < 100; ++i) {
    INFO("thumbnail " << i);
    CHECK(thumbnail_status[i] == 200);
  }
  for (int i = 0; i < 10; ++i) {
    INFO("export " << i);
    CHECK(export_status[i] == 200);
    CHECK(export_bytes[i] > 10'000);
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    INFO("stream " << i << ": " << r.error << " max ack delay "
                   << std::chrono::duration_cast<std::chrono::milliseconds>(r.max_ack_delay).count() << " ms");
    CHECK(r.error.empty());
    CHECK(r.policed == 0);
    CHECK(r.acked == r.sent);
    CHECK(r.max_ack_delay <= 2 * kCycle);
  }
  const auto rss = peak_rss_bytes(d.pid());
  INFO("vigild peak RSS " << (rss >> 20) << " MiB");
  CHECK(rss > 0);
  CHECK(rss < (768ull << 20));
}
