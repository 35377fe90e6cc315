// Admission control on hand-computed cases (Eq. 3.14, 3.16, 3.17), curve interpolation, the
// profile document, and the online model check.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <boost/json.hpp>
#include <cmath>

#include "admission/admission.hpp"
#include "admission/model_check.hpp"
#include "tests/admission/hand_profile.hpp"

using namespace vigil::admission;
using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr double MB = 1e6;
constexpr vigil::Rate MBps = vigil::Rate::from_Bps(1e6);

using vigil::test::hand_profile;

std::vector<StreamDemand> streams(int n, vigil::Rate rate, bool write = false) {
  std::vector<StreamDemand> out;
  for (int i = 0; i < n; ++i) out.push_back({static_cast<std::uint64_t>(i + 1), write, rate, {}, {}});
  return out;
}

}  // namespace

TEST_CASE("curves interpolate the per-IO time, stay monotone, and are flat beyond the last point", "[admission]") {
  const Curve c{{100e3, 1e6}, {8 * MB, 20 * MB}, {10 * MB, 25 * MB}, {11 * MB, 27 * MB}};
  CHECK(throughput_at(c, Which::mean, 100e3) == Approx(10 * MB));
  CHECK(throughput_at(c, Which::mean, 1e6) == Approx(25 * MB));
  // One IO takes 10 ms at 100 kB and 40 ms at 1 MB; 250 kB is 1/6 of the way: 15 ms, 16.67 MB/s.
  CHECK(throughput_at(c, Which::mean, 250e3) == Approx(250e3 / 0.015));
  // On an access + transfer disk (8 ms + S / 30 MB/s) two points give the model exactly between them.
  auto model = [](double s) { return s / (0.008 + s / (30 * MB)); };
  const Curve exact{{64e3, 4e6}, {model(64e3), model(4e6)}, {model(64e3), model(4e6)}, {model(64e3), model(4e6)}};
  for (double s : {100e3, 300e3, 1e6, 3e6}) CHECK(throughput_at(exact, Which::mean, s) == Approx(model(s)));
  CHECK(throughput_at(c, Which::min, 5e6) == Approx(20 * MB));   // flat above
  CHECK(throughput_at(c, Which::mean, 50e3) == Approx(5 * MB));  // access-bound below
  double last = 0;
  for (double s = 10e3; s < 5e6; s *= 1.1) {
    const double v = throughput_at(c, Which::mean, s);
    CHECK(v >= last);
    last = v;
  }
  const Curve seq{{4e3, 64e3, 512e3, 4e6}, {}, {5 * MB, 29 * MB, 30 * MB, 26 * MB}, {}};
  const auto r = near_peak_range(seq);
  CHECK(r.a == 64e3);
  CHECK(r.b == 512e3);
  CHECK(r.peak == 30 * MB);
}

TEST_CASE("Eq. 3.16/3.17: aggressive (mean curve) and conservative (min curve) on a hand-computed set", "[admission]") {
  const auto p = hand_profile();
  // 9 streams of 2 MB/s: S_avg with a 10th = 2 MB (flat part), P = 25 MB/s mean, 20 MB/s min.
  const auto nine = streams(9, 2 * MBps);
  AdmissionController adm2(p, {.policy = Policy::aggressive, .cycle_s = 1, .r_rt = 1});
  auto d = adm2.decide(nine, {10, false, 2 * MBps, {}, {}});
  CHECK(d.admitted);
  CHECK(d.s_avg == Approx(2e6));
  CHECK(d.curve_rate.Bps() == Approx(25 * MB));
  CHECK(d.predicted_busy_s == Approx(20.0 / 25.0));
  CHECK(d.max_rate.Bps() == Approx(7 * MB).epsilon(1e-3));  // 25 − 18

  AdmissionController adm1(p, {.policy = Policy::conservative, .cycle_s = 1, .r_rt = 1});
  CHECK(adm1.decide(nine, {10, false, 2 * MBps, {}, {}}).admitted);  // 20 ≤ 20
  auto refused = adm1.decide(nine, {10, false, 2.2 * MBps, {}, {}});
  CHECK_FALSE(refused.admitted);
  CHECK(refused.max_rate.Bps() == Approx(2 * MB).epsilon(1e-3));
  CHECK_THAT(refused.reason, ContainsSubstring("largest rate that fits: 16"));  // 2 MB/s = 16 Mbit/s
  // The largest rate it names is admitted; 1 % more is not.
  CHECK(adm1.decide(nine, {10, false, refused.max_rate * 0.999, {}, {}}).admitted);
  CHECK_FALSE(adm1.decide(nine, {10, false, refused.max_rate * 1.01, {}, {}}).admitted);

  // In the interpolated part: 2 streams at 250 kB/s → S_avg 250 kB, P = 16.67 MB/s.
  auto small = adm2.decide(streams(1, 0.25 * MBps), {2, false, 0.25 * MBps, {}, {}});
  CHECK(small.curve_rate.Bps() == Approx(250e3 / 0.015));
  CHECK(small.predicted_busy_s == Approx(500e3 / small.curve_rate.Bps()).epsilon(1e-6));
}

TEST_CASE("Eq. 3.14 analytic: worst-case access and the slowest rate", "[admission]") {
  const auto p = hand_profile();  // L = 20 ms, R = 20 MB/s (min of the largest IOs)
  AdmissionController a(p, {.policy = Policy::analytic, .cycle_s = 1, .r_rt = 0.9});
  // Each 1 MB/s stream costs 20 ms + 50 ms: 12 fit in 900 ms, the 13th does not.
  std::vector<StreamDemand> set;
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    StreamDemand s{static_cast<std::uint64_t>(i), false, 1 * MBps, {}, {}};
    if (!a.decide(set, s).admitted) break;
    set.push_back(s);
    ++admitted;
  }
  CHECK(admitted == 12);
  CHECK(a.predicted_busy(set) == Approx(12 * 0.07));
}

TEST_CASE("Adm3 charges VBR streams their average rate; statistical their measured percentile", "[admission]") {
  const auto p = hand_profile();
  std::vector<StreamDemand> vbr;
  for (int i = 0; i < 8; ++i) vbr.push_back({static_cast<std::uint64_t>(i), false, 4 * MBps, 2 * MBps, {}});
  const StreamDemand next{99, false, 4 * MBps, 2 * MBps, {}};
  CHECK_FALSE(AdmissionController(p, {.policy = Policy::aggressive, .r_rt = 1}).decide(vbr, next).admitted);  // 36 > 25
  CHECK(
      AdmissionController(p, {.policy = Policy::aggressive_average, .r_rt = 1}).decide(vbr, next).admitted);  // 18 ≤ 25
  // Statistical: measured mean 2 MB/s, σ 1 MB/s each; 9 streams: 18 MB/s on the curve (25 MB/s)
  // plus z(1 %)·√9·1 MB/s = 6.98 MB of extra transfer at the 30 MB/s sequential peak.
  for (auto& s : vbr) {
    s.measured_mean = 2 * MBps;
    s.measured_stddev = 1 * MBps;
  }
  const StreamDemand measured{99, false, 4 * MBps, 2 * MBps, 2 * MBps, 1 * MBps};
  AdmissionController stat(p, {.policy = Policy::statistical, .r_rt = 1, .overbooking = 0.01});
  const auto sd = stat.decide(vbr, measured);
  CHECK(sd.admitted);
  CHECK(sd.predicted_busy_s == Approx(18.0 / 25 + 2.3263 * 3 / 30.0).epsilon(1e-3));
  CHECK_FALSE(AdmissionController(p, {.policy = Policy::statistical, .r_rt = 0.9, .overbooking = 0.001})
                  .decide(vbr, measured)
                  .admitted);  // z = 3.09: 0.72 + 0.309 > 0.9
  // The IOs' own spread (the profile's per-IO sd, rotational delay) adds 9 × (4 ms)² to the variance.
  auto rotating = p;
  rotating.cycle_io_sd_s = 0.004;
  CHECK(AdmissionController(rotating, {.policy = Policy::statistical, .r_rt = 1, .overbooking = 0.01})
            .decide(vbr, measured)
            .predicted_busy_s == Approx(18.0 / 25 + 2.3263 * std::sqrt(9 / 900.0 + 9 * 16e-6)).epsilon(1e-3));
  CHECK(normal_quantile_upper(0.05) == Approx(1.64485));
  CHECK(normal_quantile_upper(0.01) == Approx(2.32635));
  CHECK(normal_quantile_upper(1.0 / 600) == Approx(2.9352).epsilon(1e-3));
  CHECK(policy_from_name("adm3") == Policy::aggressive_average);
  CHECK(std::string(policy_catalog_name(Policy::aggressive_average)) == "aggressive");
  CHECK_FALSE(policy_from_name("yolo").has_value());
  CHECK(trick_play_rate(4 * MBps, 0.1, 8).Bps() == Approx(3.2 * MB));
}

TEST_CASE("an optimistic model pauses admission with a reason that says what to do", "[admission]") {
  AdmissionController a(hand_profile(), {});
  a.set_model_optimistic(true);
  auto d = a.decide({}, {1, false, 1 * MBps, {}, {}});
  CHECK_FALSE(d.admitted);
  CHECK_THAT(d.reason, ContainsSubstring("vigil profile"));
}

TEST_CASE("the profile document round-trips and malformed ones are refused clearly", "[admission]") {
  auto p = hand_profile();
  p.random_write = p.random_read;
  p.seq_write = p.seq_read;
  p.sustained_write = {30e6, 29e6, 12e6};
  const auto json = to_json(p);
  const auto back = profile_from_json(boost::json::parse(boost::json::serialize(json)));
  CHECK(back.random_read.mean == p.random_read.mean);
  CHECK(back.sustained_write == p.sustained_write);
  CHECK(back.access_max_s == p.access_max_s);
  p.cycle_io_sd_s = 0.0025;
  CHECK(profile_from_json(to_json(p)).cycle_io_sd_s == 0.0025);
  auto older = to_json(p);  // written before cycle_io_sd_s existed: still read, as 0
  older.as_object().erase("cycle_io_sd_s");
  CHECK(profile_from_json(older).cycle_io_sd_s == 0);

  auto bad = json;
  bad.as_object()["format"] = 99;
  CHECK_THROWS_WITH(profile_from_json(bad), ContainsSubstring("format 99 is not supported"));
  auto unsorted = json;
  unsorted.as_object()["random_read"].as_object()["sizes"] = boost::json::array{1e6, 1e5};
  CHECK_THROWS_WITH(profile_from_json(unsorted), ContainsSubstring("ascending"));
  CHECK_THROWS_WITH(profile_from_json(boost::json::parse("{\"format\": 1}")), ContainsSubstring("malformed"));
}

TEST_CASE("the model check trips after K optimistic cycles in a row and re-arms after K good ones", "[admission]") {
  ModelCheck m(3, 0.1);
  CHECK_FALSE(m.observe(1.0, 1.2));
  CHECK_FALSE(m.observe(1.0, 1.2));
  CHECK_FALSE(m.observe(1.0, 1.05));  // within tolerance: the streak breaks
  CHECK_FALSE(m.observe(1.0, 1.2));
  CHECK_FALSE(m.observe(1.0, 1.2));
  CHECK(m.observe(1.0, 1.3));
  CHECK(m.optimistic());
  CHECK_FALSE(m.observe(0, 5));  // idle cycles say nothing
  m.observe(1.0, 0.9);
  m.observe(1.0, 0.9);
  CHECK(m.optimistic());
  m.observe(1.0, 0.9);
  CHECK_FALSE(m.optimistic());
  CHECK(m.trips() == 1);
}
