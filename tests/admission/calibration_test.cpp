// The online calibration and the aggressive policies' margins, on hand-computed cases: what the
// calibration measures, which policies it scales (and which it must never make more optimistic),
// the per-cycle margin of Adm2/Adm3, and the statistical policy charging running streams by
// their measured device time.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include <cmath>

#include "admission/admission.hpp"
#include "admission/calibration.hpp"
#include "tests/admission/hand_profile.hpp"

using namespace vigil::admission;
using Catch::Approx;

namespace {

constexpr double MB = 1e6;
constexpr vigil::Rate MBps = vigil::Rate::from_Bps(1e6);

// The shared hand-computed profile: flat mean curve 25 MB/s and min curve 20 MB/s above 1 MB.
using vigil::test::hand_profile;

std::vector<StreamDemand> streams(int n, vigil::Rate peak, vigil::Rate average = {}) {
  std::vector<StreamDemand> out;
  for (int i = 0; i < n; ++i) out.push_back({static_cast<std::uint64_t>(i + 1), false, peak, average, {}, {}});
  return out;
}

}  // namespace

TEST_CASE("the calibration is observed over predicted stream IO time, once enough cycles were seen", "[admission]") {
  ModelCalibration c(10, 4, 0.005);
  CHECK(c.factor() == 1.0);  // nothing measured: trust the profile
  for (int i = 0; i < 3; ++i) c.observe(0.5, 0.45);
  CHECK(c.factor() == 1.0);  // 3 < 4 cycles
  c.observe(0.5, 0.45);
  CHECK(c.factor() == Approx(0.9));
  // Idle and tiny cycles say nothing about the model.
  c.observe(0, 0.3);
  c.observe(0.001, 0.3);
  CHECK(c.cycles() == 4);
  CHECK(c.factor() == Approx(0.9));
  // The window slides: ten cycles at 1.2 replace the 0.9 ones entirely.
  for (int i = 0; i < 10; ++i) c.observe(0.5, 0.6);
  CHECK(c.cycles() == 10);
  CHECK(c.factor() == Approx(1.2));
  // A mixed window weighs cycles by their predicted time (a ratio of sums, not a mean of ratios).
  ModelCalibration m(4, 1);
  m.observe(0.1, 0.2);  // 2x on a small cycle
  m.observe(0.9, 0.9);  // exact on a big one
  CHECK(m.factor() == Approx(1.1));
}

TEST_CASE("the calibration scales the mean curve; Adm1 only ever upwards; analytic never", "[admission]") {
  const auto p = hand_profile();
  const auto ten = streams(10, 2 * MBps);  // 20 MB/s: 0.8 s on the mean curve, 1.0 s on the min curve
  AdmissionController adm2(p, {.policy = Policy::aggressive, .cycle_s = 1, .r_rt = 1});
  CHECK(adm2.predicted_busy(ten) == Approx(0.8));
  adm2.set_calibration(0.9);
  CHECK(adm2.predicted_busy(ten) == Approx(0.72));
  adm2.set_calibration(0.1);  // clamped: a broken measurement cannot open the floodgates
  CHECK(adm2.calibration() == AdmissionController::kMinCalibration);
  CHECK(adm2.predicted_busy(ten) == Approx(0.8 * AdmissionController::kMinCalibration));
  adm2.set_calibration(9);
  CHECK(adm2.calibration() == AdmissionController::kMaxCalibration);

  AdmissionController adm1(p, {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 1});
  adm1.set_calibration(0.8);
  CHECK(adm1.predicted_busy(ten) == Approx(1.0));  // the min curve is not made more optimistic
  adm1.set_calibration(1.1);
  CHECK(adm1.predicted_busy(ten) == Approx(1.1));  // but a slower disk is charged

  AdmissionController analytic(p, {.policy = Policy::analytic, .cycle_s = 1, .r_rt = 1});
  const double before = analytic.predicted_busy(ten);
  analytic.set_calibration(0.8);
  CHECK(analytic.predicted_busy(ten) == Approx(before));
}

TEST_CASE("Adm2 and Adm3 hold a margin for the cycle's spread: rotation, and Adm3 the declared VBR range",
          "[admission]") {
  const auto p = hand_profile(0.004);  // 4 ms per IO
  const double z = normal_quantile_upper(0.01);
  // Adm2: 10 CBR streams of 2 MB/s: 0.8 s + z·√10·4 ms.
  AdmissionController adm2(p, {.policy = Policy::aggressive, .cycle_s = 1, .r_rt = 1, .overbooking = 0.01});
  CHECK(adm2.predicted_busy(streams(10, 2 * MBps)) == Approx(0.8 + z * std::sqrt(10 * 16e-6)));
  // Adm3: peak 3, average 2 MB/s: charged 2 MB/s on the curve; the rate is anywhere in [1, 3],
  // σ = 1/√3 MB/s, whose transfer at the 30 MB/s media rate adds (σ/R)² per stream.
  AdmissionController adm3(p, {.policy = Policy::aggressive_average, .cycle_s = 1, .r_rt = 1, .overbooking = 0.01});
  const double sigma_t = 1 * MB / std::sqrt(3.0) / (30 * MB);
  CHECK(adm3.predicted_busy(streams(10, 3 * MBps, 2 * MBps)) ==
        Approx(0.8 + z * std::sqrt(10 * (sigma_t * sigma_t + 16e-6))));
  // A CBR stream (average = peak) has no spread beyond rotation: Adm3 = Adm2 there.
  CHECK(adm3.predicted_busy(streams(10, 2 * MBps, 2 * MBps)) == Approx(adm2.predicted_busy(streams(10, 2 * MBps))));
  // The margin is what refuses: 12 streams fit a 0.98 s budget on the mean (0.96 s), not with
  // the margin (+32 ms).
  CHECK(AdmissionController(p, {.policy = Policy::aggressive, .cycle_s = 1, .r_rt = 0.98, .overbooking = 0.5})
            .decide(streams(11, 2 * MBps), {12, false, 2 * MBps, {}, {}})
            .admitted);
  CHECK_FALSE(AdmissionController(p, {.policy = Policy::aggressive, .cycle_s = 1, .r_rt = 0.98, .overbooking = 0.01})
                  .decide(streams(11, 2 * MBps), {12, false, 2 * MBps, {}, {}})
                  .admitted);
}

TEST_CASE("statistical charges running streams their measured device time, the candidate its marginal cost",
          "[admission]") {
  const auto p = hand_profile(0.004);
  const double z = normal_quantile_upper(0.01);
  // Eight running streams measured at 70 ms per cycle each (the curve would say 80 ms for their
  // 2 MB: they sit in a fast zone — what they cost is what is charged), rate 2 MB/s with σ 0.5 MB/s.
  auto running = streams(8, 4 * MBps, 2 * MBps);
  for (auto& s : running) {
    s.measured_mean = 2 * MBps;
    s.measured_stddev = 0.5 * MBps;
    s.measured_io_s = 0.070;
  }
  // The candidate, declared average 2 MB/s (peak 2: CBR): one IO at the set's density, t(S_avg)
  // = 2 MB / 25 MB/s = 80 ms, plus its bytes beyond S_avg (none).
  AdmissionController stat(p, {.policy = Policy::statistical, .cycle_s = 1, .r_rt = 1, .overbooking = 0.01});
  auto set = running;
  set.push_back({9, false, 2 * MBps, 2 * MBps, {}, {}});
  const double var_running = 8 * (std::pow(0.5 / 30, 2) + 16e-6);
  const double var_candidate = 16e-6;
  CHECK(stat.predicted_busy(set) == Approx(8 * 0.070 + 0.080 + z * std::sqrt(var_running + var_candidate)));
  // The calibration corrects the curve (the candidate), not what was measured.
  stat.set_calibration(0.9);
  CHECK(stat.predicted_busy(set) == Approx(8 * 0.070 + 0.9 * 0.080 + z * std::sqrt(var_running + var_candidate)));
  // A candidate twice the set's average rate costs one access at S_avg plus the extra transfer
  // at the media rate — not two accesses, as Eq. 3.16 would charge it.
  stat.set_calibration(1.0);
  set.back() = {9, false, 4 * MBps, 4 * MBps, {}, {}};
  const double s_avg = (8 * 2 + 4) * MB / 9;
  const double t_avg = s_avg / (25 * MB);
  CHECK(stat.predicted_busy(set) ==
        Approx(8 * 0.070 + t_avg + (4 * MB - s_avg) / (30 * MB) + z * std::sqrt(var_running + var_candidate)));
}
