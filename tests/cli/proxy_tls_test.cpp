// `vigil proxy` with TLS on both sides, real peers throughout: vigild serves the wire protocol
// over TLS (--tls-cert) and its HTTP API over HTTPS (--http-tls-cert); `vigil record` records over
// tls://; the proxy listens with its own certificate (--tls-cert/--tls-key), reaches vigild's
// HTTPS API (--upstream https://) and its TLS wire port (--wire tls://) trusting vigild's
// certificate (--upstream-ca). ffprobe, verifying the proxy's certificate, plays the HLS rendition
// through it packet for packet, the segments cut from one shared upstream playback over the TLS
// wire connection. A proxy that does not trust vigild's certificate answers 502 naming the TLS
// handshake (HTTP and wire alike); a viewer that does not trust the proxy's is refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>

#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/proxy_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_fixture.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

TEST_CASE("vigil proxy over TLS on both sides: HTTPS viewers, HTTPS and TLS wire upstreams", "[proxy][cli][tls]") {
  test::TempDir dir;
  test::make_certificate(dir.path(), "vigild");
  test::make_certificate(dir.path(), "proxy");
  test::make_certificate(dir.path(), "other");
  const auto vigild_crt = dir.path() / "vigild.crt", vigild_key = dir.path() / "vigild.key";
  const auto proxy_crt = dir.path() / "proxy.crt", proxy_key = dir.path() / "proxy.key";
  const auto other_crt = dir.path() / "other.crt";
  const auto clip = test::make_h264_clip(dir.path(), 8);
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 200);
  const auto profile = test::make_sim_profile(dir.path());
  auto args = test::sim_volume_args(dir.path(), profile);
  args.insert(args.end(), {"--tls-cert", vigild_crt.string(), "--tls-key", vigild_key.string(), "--http-tls-cert",
                           vigild_crt.string(), "--http-tls-key", vigild_key.string()});
  test::VigildProcess d(dir.path() / "data", args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  const std::string token = d.token();

  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", "tls://" + d.wire(), "--tls-ca", vigild_crt.string(), "record", "--stream",
                                "gate", clip.string(), "--fast"},
                               dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  test::wait_for_closed_frames(dir.path() / "data", 200);
  const std::string range = "from=-1h&to=@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                 std::chrono::system_clock::now().time_since_epoch())
                                                                 .count() +
                                                             3600);
  const std::string rendition = "/api/v1/cameras/gate/hls.m3u8?" + range + "&access_token=" + token;

  {  // the proxy trusts vigild's certificate; viewers trust the proxy's
    test::TempDir pdir;
    test::ProxyProcess proxy(pdir.path(), {"--upstream", "https://" + d.http(), "--wire", "tls://" + d.wire(),
                                           "--upstream-ca", vigild_crt.string(), "--tls-cert", proxy_crt.string(),
                                           "--tls-key", proxy_key.string(), "--cache-mb", "0"});
    const std::string p = "https://" + proxy.address();
    INFO(proxy.log());
    CHECK_THAT(proxy.log(), ContainsSubstring("listening on https://"));

    // A viewer's API request through the proxy: its token checked by vigild over HTTPS.
    auto cams = test::curl(pdir.path(), {"--cacert", proxy_crt.string(), "-H", "Authorization: Bearer " + token},
                           p + "/api/v1/cameras");
    INFO(cams.body);
    CHECK(cams.status == 0);
    CHECK(cams.code == "200");
    CHECK_THAT(cams.body, ContainsSubstring("gate"));

    // ffprobe plays the rendition through the proxy over HTTPS, verifying the proxy's certificate.
    const auto packets = pdir.path() / "hls.packets";
    auto probe = test::run_to_exit("/usr/bin/ffprobe",
                                   {"-v", "error", "-tls_verify", "1", "-ca_file", proxy_crt.string(),
                                    "-select_streams", "v:0", "-show_entries", "packet=size,flags", "-of", "csv=p=0",
                                    "-o", packets.string(), p + rendition},
                                   pdir.path() / "ffprobe.log");
    INFO(probe.output);
    REQUIRE(probe.status == 0);
    std::vector<std::string> lines;
    {
      std::ifstream in(packets);
      for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    }
    REQUIRE(lines.size() == source.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      INFO("packet " << i << ": " << lines[i]);
      CHECK(std::stoll(lines[i]) == source[i].size);
      CHECK((lines[i].find('K') != std::string::npos) == source[i].key);
    }
    // The media came from one shared playback over the TLS wire connection, not over HTTP.
    auto metrics = test::curl(pdir.path(), {"--cacert", proxy_crt.string()}, p + "/metrics");
    REQUIRE(metrics.code == "200");
    const auto prom = test::parse_prometheus_text(metrics.body);
    CHECK(prom.errors.empty());
    CHECK(prom.sum("vigil_proxy_upstream_playbacks_opened_total", {{"mode", "full"}}) == 1);
    CHECK(prom.sum("vigil_proxy_upstream_requests_total", {{"kind", "hls_segment"}}) == 0);
    CHECK(prom.sum("vigil_proxy_upstream_requests_total", {{"kind", "hls_playlist"}}) >= 1);

    // A viewer that does not trust the proxy's certificate, or speaks plain HTTP to it: refused.
    CHECK(test::curl(pdir.path(), {"--cacert", other_crt.string()}, p + "/healthz").status == 60);
    CHECK(test::curl(pdir.path(), {}, "http://" + proxy.address() + "/healthz").code == "000");
    const int status = proxy.stop();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  {  // a proxy that does not trust vigild's certificate: 502 naming the handshake, over HTTP and wire
    test::TempDir pdir;
    test::ProxyProcess proxy(pdir.path(), {"--upstream", "https://" + d.http(), "--wire", "tls://" + d.wire(),
                                           "--upstream-ca", other_crt.string(), "--cache-mb", "0"});
    auto r = test::get_as(proxy.address(), "/api/v1/cameras", token);
    INFO(r.body);
    CHECK(r.status == 502);
    CHECK_THAT(r.body, ContainsSubstring("TLS handshake"));
  }
}

TEST_CASE("vigil proxy: TLS options are checked before it listens", "[proxy][cli][tls]") {
  test::TempDir dir;
  test::make_certificate(dir.path(), "proxy");
  int runs = 0;
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"proxy", "--listen", "127.0.0.1:0"});
    return test::run_to_exit(VIGIL_CLI_PATH, args, dir.path() / ("proxy" + std::to_string(++runs) + ".log"));
  };
  auto alone = run({"--upstream", "127.0.0.1:1", "--tls-cert", (dir.path() / "proxy.crt").string()});
  CHECK(alone.status == 2);
  CHECK_THAT(alone.output, ContainsSubstring("--tls-cert and --tls-key go together"));
  auto needless = run({"--upstream", "127.0.0.1:1", "--upstream-ca", (dir.path() / "proxy.crt").string()});
  CHECK(needless.status == 2);
  CHECK_THAT(needless.output, ContainsSubstring("--upstream-ca needs"));
  auto unreadable = run({"--upstream", "https://127.0.0.1:1", "--upstream-ca", (dir.path() / "nowhere.crt").string()});
  CHECK(unreadable.status == 2);
  CHECK_THAT(unreadable.output, ContainsSubstring("nowhere.crt"));
  auto bad_key = run({"--upstream", "127.0.0.1:1", "--tls-cert", (dir.path() / "proxy.crt").string(), "--tls-key",
                      (dir.path() / "nowhere.key").string()});
  CHECK(bad_key.status == 1);
  CHECK_THAT(bad_key.output, ContainsSubstring("--tls-key"));
}
