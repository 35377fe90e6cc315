// The wire protocol over TLS: vigild started with --tls-cert/--tls-key serves only TLS; `vigil
// record` and `vigil play` with tls://HOST:PORT and the certificate as trust anchor record and play
// back; a client that does not trust the certificate, or speaks plain TCP to the TLS port, gets
// nothing and a clear error, and vigild keeps serving.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <ctime>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("the wire protocol over TLS: record and play with a trusted certificate, refusal otherwise", "[tls][cli]") {
  test::TempDir dir;
  const auto cert = dir.path() / "vigild.crt", key = dir.path() / "vigild.key";
  REQUIRE(test::run_to_exit("/usr/bin/openssl",
                            {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=vigild-test",
                             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key.string(), "-out",
                             cert.string()},
                            dir.path() / "openssl.log")
              .status == 0);
  const auto other_cert = dir.path() / "other.crt", other_key = dir.path() / "other.key";
  REQUIRE(test::run_to_exit("/usr/bin/openssl",
                            {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=someone-else",
                             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", other_key.string(), "-out",
                             other_cert.string()},
                            dir.path() / "openssl2.log")
              .status == 0);
  const auto clip = test::make_h264_clip(dir.path(), 2);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data",
                        {"--volume", (dir.path() / "vol").string(), "--volume-size", std::to_string(128 << 20),
                         "--extent-bytes", std::to_string(4 << 20), "--profile", profile.string(), "--cycle-ms", "200",
                         "--model-check-cycles", "0", "--tls-cert", cert.string(), "--tls-key", key.string()});
  REQUIRE(d.wait_ready());
  INFO(d.output());
  const std::string tls = "tls://" + d.wire();

  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", tls, "--tls-ca", cert.string(), "record", "--stream", "lobby",
                                clip.string(), "--fast"},
                               dir.path() / "rec.log");
  INFO(rec.output);
  CHECK(rec.status == 0);
  CHECK_THAT(rec.output, ContainsSubstring("50 acknowledged as durable"));

  // A certificate nobody vouched for is refused by the client before anything is sent.
  auto untrusted = test::run_to_exit(VIGIL_CLI_PATH, {"--server", tls, "--tls-ca", other_cert.string(), "status"},
                                     dir.path() / "untrusted.log");
  CHECK(untrusted.status == 3);
  CHECK_THAT(untrusted.output, ContainsSubstring("TLS handshake"));
  // Plain TCP to the TLS port: no answer, the connection is closed.
  {
    client::WireClient plain(d.wire(), std::chrono::seconds(20));
    CHECK_THROWS(plain.hello("plain client", vigil::test::token()));
  }

  // Playback over TLS (after the last segment reached the catalog: retried for a bounded time).
  test::ExitResult play;
  for (int i = 0; i < 50; ++i) {
    play = test::run_to_exit(VIGIL_CLI_PATH,
                             {"--server", tls, "--tls-ca", cert.string(), "play", "--stream", "lobby", "--from", "-1h",
                              "--to", "@" + std::to_string(std::time(nullptr) + 600), "--rate", "8", "-o",
                              (dir.path() / "out.mkv").string()},
                             dir.path() / "play.log");
    if (play.status != 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the batcher's bounded delay
  }
  INFO(play.output);
  CHECK(play.status == 0);
  CHECK_THAT(play.output, ContainsSubstring("50 packets"));
}
