// The recorder's declared rate (client/cli/rate_policy.hpp): the operator's rate as given, else the
// input's advertised bitrate with a margin, else one whole GOP measured — first keyframe to second —
// with a margin; a GOP longer than the measuring bound is measured over what was read (an
// overestimate of a long GOP's average, never an under-estimate of its keyframe).
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include "client/cli/rate_policy.hpp"

using namespace vigil::client;
using Catch::Approx;

namespace {

// 25 fps, a keyframe of KEY_BYTES every GOP frames, the others DELTA_BYTES; feeds METER until done.
int feed(GopMeter& meter, int gop, double key_bytes, double delta_bytes, int max_frames = 1000) {
  int frames = 0;
  for (int i = 0; i < max_frames; ++i) {
    ++frames;
    if (meter.packet(i * 0.04, i % gop == 0 ? key_bytes : delta_bytes, i % gop == 0)) break;
  }
  return frames;
}

}  // namespace

TEST_CASE("the operator's rate wins, then the advertised one, then a measured GOP", "[record][rate]") {
  GopMeter gop;
  feed(gop, 25, 40'000, 4'000);
  CHECK(declared_rate({.override_bps = 2e6, .advertised_bps = 5e6, .measured = gop}).bps == 2e6);
  CHECK(declared_rate({.override_bps = 2e6}).basis == "override");
  const auto adv = declared_rate({.advertised_bps = 4e6, .measured = gop});
  CHECK(adv.bps == Approx(4e6 * kAdvertisedMargin));
  CHECK(adv.basis == "advertised");
  // One GOP of 1 s: 40 000 + 24 × 4 000 bytes = 1.088 Mbit/s, with its margin.
  const auto m = declared_rate({.measured = gop});
  CHECK(m.basis == "measured GOP");
  CHECK(m.bps == Approx(136'000 * 8 * kMeasuredGopMargin));
  // Nothing at all: the floor.
  CHECK(declared_rate({}).bps == kMinRateBps);
}

TEST_CASE("a GOP is measured from the first keyframe to the second, whatever came before it", "[record][rate]") {
  GopMeter meter;
  // Joined mid-GOP: three delta frames before the first keyframe do not count.
  CHECK_FALSE(meter.packet(0.00, 9'000, false));
  CHECK_FALSE(meter.packet(0.04, 9'000, false));
  CHECK_FALSE(meter.packet(0.08, 9'000, false));
  for (int i = 0; i < 50; ++i) CHECK_FALSE(meter.packet(0.12 + i * 0.04, i == 0 ? 50'000 : 2'000, i == 0));
  CHECK(meter.packet(0.12 + 50 * 0.04, 50'000, true));  // the second keyframe closes it
  CHECK(meter.whole_gop());
  CHECK(meter.span_s() == Approx(2.0));
  CHECK(meter.bytes() == Approx(50'000 + 49 * 2'000));
  CHECK(meter.done());
  CHECK(meter.packet(5.0, 1e9, false));  // done: nothing more counts
  CHECK(meter.bytes() == Approx(50'000 + 49 * 2'000));
}

TEST_CASE("a GOP longer than the bound is measured over the bound, keyframe included", "[record][rate]") {
  GopMeter meter(3.0);
  const int frames = feed(meter, 250, 100'000, 2'000);  // a 10 s GOP
  CHECK(meter.done());
  CHECK_FALSE(meter.whole_gop());
  CHECK((frames == 76 || frames == 77));  // 0 .. 3.0 s of media (floating-point steps)
  const auto r = declared_rate({.measured = meter});
  CHECK(r.basis == "measured window");
  // Above the GOP's true average (100 000 + 249 × 2 000 bytes over 10 s = 0.48 Mbit/s).
  CHECK(r.bps > 598'000 * 8 / 10.0);
}

TEST_CASE("start-up stays short: a 2 s GOP is measured in 2 s of media, not more", "[record][rate]") {
  GopMeter meter;
  CHECK(feed(meter, 50, 60'000, 3'000) == 51);  // the 51st packet is the second keyframe
  CHECK(meter.whole_gop());
}
