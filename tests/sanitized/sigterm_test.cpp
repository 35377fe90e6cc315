// vigild built with AddressSanitizer and UndefinedBehaviorSanitizer (the asan preset builds this
// test, vigild and vigil together) stopped with SIGTERM while recorders are mid-stream: the
// shutdown order (a recording unregisters its stream from its disk's scheduler before it is
// destroyed, sessions end before the services they use, the catalog batcher drains before the
// embedded PostgreSQL stops) must hold with no use-after-free, leak or undefined behaviour.
// A sanitizer report makes vigild exit non-zero (ASAN_OPTIONS/UBSAN_OPTIONS of the asan test
// preset: abort_on_error, halt_on_error) and puts the report in its output.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <memory>
#include <vector>

#include "tests/support/media_fixture.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("a sanitized vigild stops cleanly on SIGTERM with recorders mid-stream", "[sanitized][vigild]") {
  test::TempDir dir;
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile, 64));
  REQUIRE(d.wait_ready(std::chrono::seconds(120)));

  // Four recordings, each with frames acknowledged and more sent that are not yet durable.
  constexpr int kRecorders = 4;
  std::vector<std::unique_ptr<client::WireClient>> clients;
  std::vector<std::unique_ptr<test::PacedSender>> senders;
  for (int i = 0; i < kRecorders; ++i) {
    clients.push_back(std::make_unique<client::WireClient>(d.wire(), std::chrono::seconds(30)));
    const auto stream = test::open_admitted(*clients.back(), "cam" + std::to_string(i), 2'000'000);
    senders.push_back(std::make_unique<test::PacedSender>(*clients.back(), stream));
  }
  for (auto& s : senders) s->send_until(60, 20);
  for (auto& s : senders) {
    const auto before = s->counts().acked;
    s->send_until(s->sent() + 20, 20);
    CHECK(s->sent() > before);  // frames in flight when the signal comes
  }

  const int status = d.stop(SIGTERM);
  const auto out = d.output();
  INFO("vigild's output ends: " << out.substr(out.size() > 8000 ? out.size() - 8000 : 0));
  CHECK_THAT(out, !ContainsSubstring("AddressSanitizer"));
  CHECK_THAT(out, !ContainsSubstring("LeakSanitizer"));
  CHECK_THAT(out, !ContainsSubstring("runtime error"));
  CHECK(status == 0);
}
