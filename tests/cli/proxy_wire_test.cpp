// `vigil proxy --wire` end to end with real peers: ffmpeg encodes a clip, `vigil record` records it
// into a real vigild, and a real `vigil proxy` cuts HLS VOD segments from shared upstream
// playbacks (wire protocol) instead of fetching them over HTTP. With the proxy's cache off, so
// every viewer request reaches the playback layer:
//  - 50 concurrent viewers of one recording (plus slow ones that read one byte and stop) get the
//    same segments vigild serves, from ONE upstream playback: the proxy's count and vigild's own
//    count of admitted playbacks agree; ffprobe plays the proxied rendition packet for packet;
//  - a viewer that lags behind what the shared playback keeps gets keyframes only (marked), from a
//    keyframes-only playback, and the full playback is not rewound;
//  - a wire port that refuses connections is a 502, one that never answers a 504, never a hang;
//  - SIGTERM with a viewer waiting is a clean exit that closes the upstream playback;
//  - a playback vigild's admission refuses (the disk is taken by a recording admitted at the
//    largest rate that fits) is a 503 with vigild's reason and the largest rate, at once.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <thread>
#include <tuple>

#include "client/wire/wire_client.hpp"
#include "common/child_process.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/proxy_process.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace asio = boost::asio;

namespace {

// A `vigil proxy --wire` in front of D, its cache off (every request reaches the playback layer),
// with EXTRA options.
struct WireProxy : test::ProxyProcess {
  WireProxy(const std::filesystem::path& dir, const test::VigildProcess& d, std::vector<std::string> extra = {})
      : test::ProxyProcess(dir, [&] {
          std::vector<std::string> args{"--upstream", d.http(), "--wire",     d.wire(),
                                        "--cache-mb", "0",      "--auth-ttl", "600"};
          args.insert(args.end(), extra.begin(), extra.end());
          return args;
        }()) {}
};

using test::metric;
using test::playlist_uris;
test::HttpResult get(const std::string& host_port, const std::string& target, const std::string& token) {
  return test::get_as(host_port, target, token);
}

double admitted_playbacks(const test::VigildProcess& d) {
  return metric(d.http(), "vigil_disk_admission_decisions_total", {{"kind", "playback"}, {"decision", "admitted"}});
}

}  // namespace

TEST_CASE("vigil proxy --wire: 50 viewers share one upstream playback, laggards get keyframes, refusals are 503",
          "[proxy][cli][ffmpeg][wire]") {
  test::TempDir dir;
  auto cam = test::recorded_camera(dir.path(), "gate", 8);  // 200 packets
  const auto& clip = cam.clip;
  const auto& source = cam.source;
  auto& d = *cam.vigild;
  const std::string token = d.token();
  const std::string base = "/api/v1/cameras/gate/";

  const std::string range = "from=-1h&to=@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                 std::chrono::system_clock::now().time_since_epoch())
                                                                 .count() +
                                                             3600);
  const auto direct_pl = get(d.http(), base + "hls.m3u8?" + range, token);
  REQUIRE(direct_pl.status == 200);
  const auto uris = playlist_uris(direct_pl.body);
  // init + the 8 s cut on 4 s cells of wall-clock time: two segments, or three when the
  // recording does not start on a cell boundary.
  REQUIRE(uris.size() >= 3);
  REQUIRE(uris.size() <= 4);
  std::vector<std::string> targets, direct;
  for (const auto& u : uris) {
    targets.push_back(base + u);
    auto r = get(d.http(), base + u, token);
    REQUIRE(r.status == 200);
    direct.push_back(r.body);
  }
  const double admitted_before = admitted_playbacks(d);  // vigild's HTTP routes admit no wire playback

  {  // 50 viewers at once (and three slow ones): one upstream playback
    test::TempDir pdir;
    WireProxy proxy(pdir.path(), d);
    const std::string p = proxy.address();
    std::vector<std::unique_ptr<asio::io_context>> slow_io;
    std::vector<std::unique_ptr<asio::ip::tcp::socket>> slow;
    // Three slow viewers: each takes the init segment (the first one opens the playback at the
    // start), then asks for the last segment and reads one byte of it and no more.
    for (int i = 0; i < 3; ++i) {
      REQUIRE(get(p, targets[0], token).status == 200);
      slow_io.push_back(std::make_unique<asio::io_context>());
      auto s = std::make_unique<asio::ip::tcp::socket>(*slow_io.back());
      s->open(asio::ip::tcp::v4());
      s->set_option(asio::socket_base::receive_buffer_size(1024));
      const auto colon = p.rfind(':');
      s->connect(
          {asio::ip::make_address(p.substr(0, colon)), static_cast<unsigned short>(std::stoi(p.substr(colon + 1)))});
      const std::string req =
          "GET " + targets.back() + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n";
      asio::write(*s, asio::buffer(req));
      char one = 0;
      asio::read(*s, asio::buffer(&one, 1));
      slow.push_back(std::move(s));
    }
    constexpr int kViewers = 50;
    std::vector<std::vector<test::HttpResult>> got(kViewers);
    std::vector<std::thread> viewers;
    for (int v = 0; v < kViewers; ++v) {
      viewers.emplace_back([&, v] {
        for (const auto& t : targets) got[v].push_back(get(p, t, token));
      });
    }
    for (auto& t : viewers) t.join();
    for (int v = 0; v < kViewers; ++v) {
      for (std::size_t i = 0; i < targets.size(); ++i) {
        INFO("viewer " << v << " " << targets[i] << " -> " << got[v][i].status << " " << got[v][i].body.substr(0, 200));
        REQUIRE(got[v][i].status == 200);
        CHECK(got[v][i].header("X-Vigil-Proxy-Degraded").empty());
        CHECK((got[v][i].body == direct[i]));  // the same bytes vigild muxes from the disk
      }
    }
    INFO(proxy.log());
    CHECK(metric(p, "vigil_proxy_viewers_connected") >= 3);  // the slow viewers are still there
    // One playback for 50 + 3 viewers × 3 resources, counted by the proxy and by vigild.
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_opened_total", {{"mode", "full"}}) == 1);
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_opened_total", {{"mode", "keyframes"}}) == 0);
    CHECK(admitted_playbacks(d) - admitted_before == 1);
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_segment"}}) == 0);
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_init"}}) == 0);
    CHECK(metric(p, "vigil_proxy_playback_joins_total") >= 1);
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_active") == 1);
    // The whole 8 s recording is within read-ahead: the buffer holds its packets, about the clip's size.
    const double buffered = metric(p, "vigil_proxy_playback_buffer_bytes");
    CHECK(buffered > 0);
    CHECK(buffered <= static_cast<double>(std::filesystem::file_size(clip)));
    CHECK(metric(p, "vigil_proxy_viewers_attached") == 0);

    // ffprobe plays the rendition through the proxy (playlist over HTTP, media from the playback).
    const auto out =
        test::probe_packets("http://" + p + base + "hls.m3u8?" + range + "&access_token=" + token, pdir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
    }
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_opened_total", {{"mode", "full"}}) == 1);
    const int status = proxy.stop();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  {  // a viewer behind what the shared playback keeps (nothing kept behind the leader) gets keyframes
    test::TempDir pdir;
    WireProxy proxy(pdir.path(), d, {"--keep-behind", "0"});
    const std::string p = proxy.address();
    for (std::size_t i = 0; i < targets.size(); ++i) {  // the leader
      const auto r = get(p, targets[i], token);
      REQUIRE(r.status == 200);
      CHECK((r.body == direct[i]));
    }
    const auto lagging = get(p, targets[1], token);
    INFO(lagging.body.substr(0, 200));
    REQUIRE(lagging.status == 200);
    CHECK(lagging.header("X-Vigil-Proxy-Degraded") == "keyframes");
    CHECK(lagging.header("Cache-Control") == "no-store");
    CHECK(metric(p, "vigil_proxy_viewers_degraded_total") == 1);
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_opened_total", {{"mode", "full"}}) == 1);  // not rewound
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_opened_total", {{"mode", "keyframes"}}) == 1);
    // It plays: the init segment and the keyframes of the segment's GOPs, all keyframes.
    const auto file = pdir.path() / "lagging.mp4";
    std::ofstream(file, std::ios::binary) << direct[0] << lagging.body;
    const auto packets = test::probe_packets(file, pdir.path());
    REQUIRE(!packets.empty());
    std::size_t source_keys = 0;
    for (const auto& s : source) source_keys += s.key ? 1 : 0;
    CHECK(packets.size() < source_keys);  // the first segment's GOPs only
    for (const auto& k : packets) CHECK(k.key);
    // The leader still gets the whole last segment from the full playback.
    const auto again = get(p, targets.back(), token);
    CHECK((again.body == direct.back()));
    CHECK(metric(p, "vigil_proxy_upstream_playbacks_opened_total", {{"mode", "full"}}) == 1);
    const int status = proxy.stop();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  {  // a wire port nobody listens on is a 502, one that never answers a 504 within --upstream-timeout
    asio::io_context io;
    std::string closed;
    {
      asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
      closed = "127.0.0.1:" + std::to_string(a.local_endpoint().port());
    }
    asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});  // never accepts
    const std::string silent_addr = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
    for (const auto& [wire, status, why] :
         {std::tuple{closed, 502, "unreachable"}, std::tuple{silent_addr, 504, "in time"}}) {
      test::TempDir pdir;
      const auto file = pdir.path() / "proxy.address";
      SpawnOptions s;
      s.argv = {VIGIL_CLI_PATH,   "proxy",       "--upstream",         d.http(),
                "--wire",         wire,          "--listen",           "127.0.0.1:0",
                "--address-file", file.string(), "--upstream-timeout", "0.5"};
      s.output_file = pdir.path() / "proxy.log";
      s.new_session = false;
      auto child = ChildProcess::spawn(s);
      std::string p;
      for (int i = 0; i < 500 && p.empty() && child.running(); ++i) {
        std::ifstream(file) >> p;
        if (p.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      REQUIRE(!p.empty());
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = get(p, targets[1], token);
      INFO(wire << " -> " << r.status << " " << r.body);
      CHECK(r.status == status);
      CHECK_THAT(r.body, ContainsSubstring(why));
      CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));  // no hang
      const int exit_status = child.terminate(SIGTERM, std::chrono::seconds(10));
      CHECK(WIFEXITED(exit_status));
      CHECK(WEXITSTATUS(exit_status) == 0);
    }
  }

  {  // SIGTERM while a viewer waits on a slow playback: a clean exit, and vigild's disk is free again
    const auto admitted_now = [&] { return metric(d.http(), "vigil_disk_admitted_streams"); };
    // The earlier proxies' playbacks are gone once vigild has seen their connections close.
    double before = 1;
    for (int i = 0; i < 500 && before > 0; ++i) {
      before = admitted_now();
      if (before > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE(before == 0);
    test::TempDir pdir;
    WireProxy proxy(pdir.path(), d, {"--playback-rate", "0.1"});  // the first segment takes 40 s
    const std::string p = proxy.address();
    int status = -1;
    std::thread viewer([&] {
      try {
        status = get(p, targets[1], token).status;
      } catch (const std::exception&) {
        status = 0;
      }
    });
    double attached = 0;
    for (int i = 0; i < 500 && attached < 1; ++i) {
      attached = metric(p, "vigil_proxy_viewers_attached");
      if (attached < 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(attached == 1);
    double upstream = 0;
    for (int i = 0; i < 500 && upstream < 1; ++i) {
      upstream = admitted_now();
      if (upstream < 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(upstream == 1);  // the proxy's playback holds its share of the disk
    const int exit_status = proxy.stop();
    viewer.join();
    CHECK(status == 0);  // the connection was closed, not answered
    CHECK(WIFEXITED(exit_status));
    CHECK(WEXITSTATUS(exit_status) == 0);
    for (int i = 0; i < 500 && upstream > 0; ++i) {
      upstream = admitted_now();
      if (upstream > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(upstream == 0);  // the playback was closed: vigild released it
  }

  {  // admission refuses the playback: a 503 with vigild's reason, not a hang
    client::WireClient probe(d.wire(), std::chrono::seconds(10));
    probe.hello("test", token);
    probe.send(test::open_record("hog", 8'000'000'000ull));
    const auto refused = probe.receive();
    REQUIRE(refused.msg.has_refuse());
    const std::uint64_t largest = refused.msg.refuse().largest_rate_bps();
    REQUIRE(largest > 0);
    client::WireClient hog(d.wire(), std::chrono::seconds(10));
    hog.hello("test", token);
    hog.send(test::open_record("hog", largest));
    const auto admit = hog.receive();
    REQUIRE(admit.msg.has_admit());  // the disk is now fully taken

    test::TempDir pdir;
    WireProxy proxy(pdir.path(), d);
    const std::string p = proxy.address();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = get(p, targets[1], token);
    INFO(r.body);
    INFO(proxy.log());
    CHECK(r.status == 503);
    CHECK(r.header("Retry-After") != "");
    const auto body = boost::json::parse(r.body).as_object();
    CHECK_THAT(std::string(body.at("error").as_string()), ContainsSubstring("playback"));
    CHECK(body.contains("largest_rate_bps"));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
    CHECK(metric(p, "vigil_proxy_playback_refusals_total") == 1);
    // A segment request too: the same answer, nothing cached.
    CHECK(get(p, targets.back(), token).status == 503);
    const int status = proxy.stop();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}
