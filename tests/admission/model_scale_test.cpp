// The model check that recovers (admission/model_scale.hpp): a trip recalibrates the model by the
// tripping cycles' observed/predicted ratio and admission goes on; only a device beyond the
// largest scale pauses it, and that pause ends when cycles agree again; a scale raised by a burst
// of noise comes back down. Hand-fed cycles: the predictions fed are those of the current scale,
// as the IO thread's rescaled scheduler model gives them.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include "admission/admission.hpp"
#include "admission/model_scale.hpp"
#include "tests/admission/hand_profile.hpp"

using namespace vigil::admission;
using Catch::Approx;
using Event = ModelScale::Event;

namespace {

// One cycle of a device that takes DEVICE_S seconds for work the profile puts at PROFILE_S:
// the prediction is the profile's times the current scale.
Event cycle(ModelScale& m, double profile_s, double device_s) { return m.observe(profile_s * m.scale(), device_s); }

}  // namespace

TEST_CASE("a tripped model check recalibrates by the tripping cycles' ratio and does not pause", "[admission]") {
  ModelScale m({.k = 5, .tolerance = 0.10, .max_scale = 8, .relax_cycles = 20});
  for (int i = 0; i < 50; ++i) REQUIRE(cycle(m, 0.035, 0.036) == Event::none);  // within tolerance
  CHECK(m.scale() == 1.0);
  // The VM starts starving the IO thread: 99 ms observed for 35 ms predicted (issue [O]).
  for (int i = 0; i < 4; ++i) REQUIRE(cycle(m, 0.035, 0.099) == Event::none);
  CHECK(cycle(m, 0.035, 0.099) == Event::rescaled);
  CHECK_FALSE(m.paused());
  CHECK(m.last_ratio() == Approx(0.099 / 0.035));
  CHECK(m.scale() == Approx(0.099 / 0.035));
  CHECK(m.recalibrations() == 1);
  // Under the rescaled model the same device agrees: no second trip.
  for (int i = 0; i < 10; ++i) REQUIRE(cycle(m, 0.035, 0.099) == Event::none);
  // The ratio is over the tripping streak only: a mixed streak gives its sums' ratio.
  ModelScale mixed({.k = 2, .tolerance = 0.10});
  CHECK(cycle(mixed, 0.1, 0.2) == Event::none);
  CHECK(cycle(mixed, 0.3, 0.4) == Event::rescaled);
  CHECK(mixed.scale() == Approx(0.6 / 0.4));
}

TEST_CASE("the scale comes back down when the device is faster than the rescaled model for a window", "[admission]") {
  ModelScale m({.k = 5, .tolerance = 0.10, .max_scale = 8, .relax_cycles = 20});
  for (int i = 0; i < 5; ++i) cycle(m, 0.035, 0.105);  // a start-up burst of noise: ×3
  REQUIRE(m.scale() == Approx(3.0));
  // The noise is gone: the device does what the profile said. After 19 cycles nothing yet…
  for (int i = 0; i < 19; ++i) REQUIRE(cycle(m, 0.035, 0.035) == Event::none);
  // …the 20th completes the window: the scale falls by what it measured (1/3), not below 1.
  CHECK(cycle(m, 0.035, 0.035) == Event::relaxed);
  CHECK(m.scale() == Approx(1.0));
  CHECK(m.recalibrations() == 2);
  // Never below the profile: a device faster than profiled keeps scale 1 (the calibration's business).
  for (int i = 0; i < 100; ++i) REQUIRE(cycle(m, 0.035, 0.020) == Event::none);
  CHECK(m.scale() == 1.0);
}

TEST_CASE("only a device beyond the largest scale pauses admission, until cycles agree again", "[admission]") {
  ModelScale m({.k = 3, .tolerance = 0.10, .max_scale = 4, .relax_cycles = 50});
  for (int i = 0; i < 2; ++i) REQUIRE(cycle(m, 0.1, 1.0) == Event::none);
  CHECK(cycle(m, 0.1, 1.0) == Event::paused);  // 10x slower than profiled: not noise
  CHECK(m.paused());
  CHECK(m.scale() == 4.0);
  for (int i = 0; i < 10; ++i) REQUIRE(cycle(m, 0.1, 1.0) == Event::none);
  CHECK(m.paused());
  // The device recovers to within the largest scale: K good cycles resume admission.
  for (int i = 0; i < 2; ++i) REQUIRE(cycle(m, 0.1, 0.4) == Event::none);
  CHECK(cycle(m, 0.1, 0.4) == Event::resumed);
  CHECK_FALSE(m.paused());
}

TEST_CASE("admission resumes under the rescaled model: the admitted set is kept, new streams wait for room",
          "[admission]") {
  const auto p = vigil::test::hand_profile();  // mean curve 25 MB/s above 1 MB
  constexpr vigil::Rate MBps = vigil::Rate::from_Bps(1e6);
  AdmissionController adm(p, {.policy = Policy::aggressive, .cycle_s = 1, .r_rt = 1, .overbooking = 0.5});
  std::vector<StreamDemand> running;
  for (int i = 0; i < 10; ++i) running.push_back({static_cast<std::uint64_t>(i + 1), false, 2 * MBps, {}, {}, {}});
  const StreamDemand candidate{11, false, 2 * MBps, {}, {}, {}};
  CHECK(adm.predicted_busy(running) == Approx(0.8));
  CHECK(adm.decide(running, candidate).admitted);
  // Recalibrated ×1.5: the ten running streams now take 1.2 s of a 1 s cycle. They are kept (the
  // controller decides only on candidates); the candidate is refused as cycle_full, not paused.
  adm.set_model_scale(1.5);
  CHECK(adm.predicted_busy(running) == Approx(1.2));
  const auto d = adm.decide(running, candidate);
  CHECK_FALSE(d.admitted);
  CHECK(d.cause == RefuseCause::cycle_full);
  CHECK(d.reason.find("recalibrated to 1.5x") != std::string::npos);
  // Room again (streams ended): admitted under the rescaled model — 4 × 2 MB/s × 1.5 / 25 MB/s = 0.48 s.
  running.resize(3);
  CHECK(adm.decide(running, candidate).admitted);
  // The scale never goes below the profile.
  adm.set_model_scale(0.5);
  CHECK(adm.model_scale() == 1.0);
}
