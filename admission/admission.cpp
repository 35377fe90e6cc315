#include "admission/admission.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace vigil::admission {

const char* policy_name(Policy p) noexcept {
  switch (p) {
    case Policy::analytic: return "analytic";
    case Policy::conservative: return "adm1";
    case Policy::aggressive: return "adm2";
    case Policy::aggressive_average: return "adm3";
    case Policy::statistical: return "statistical";
  }
  return "unknown";
}

const char* policy_catalog_name(Policy p) noexcept {
  switch (p) {
    case Policy::analytic: return "analytic";
    case Policy::conservative: return "conservative";
    case Policy::aggressive:
    case Policy::aggressive_average: return "aggressive";
    case Policy::statistical: return "statistical";
  }
  return "conservative";
}

std::optional<Policy> policy_from_name(std::string_view n) noexcept {
  if (n == "analytic") return Policy::analytic;
  if (n == "adm1" || n == "conservative") return Policy::conservative;
  if (n == "adm2" || n == "aggressive") return Policy::aggressive;
  if (n == "adm3") return Policy::aggressive_average;
  if (n == "statistical") return Policy::statistical;
  return std::nullopt;
}

double normal_quantile_upper(double p) noexcept {
  // P(Z > z) = erfc(z/√2)/2 falls monotonically in z: bisection to well below a knob's precision.
  p = std::clamp(p, 1e-9, 0.5);
  double lo = 0, hi = 7;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Rate trick_play_rate(Rate rate, double keyframe_fraction, double speed) noexcept {
  return rate * std::clamp(keyframe_fraction, 0.0, 1.0) * std::max(speed, 0.0);
}

AdmissionController::AdmissionController(DiskProfile profile, AdmissionConfig config)
    : profile_(std::move(profile)), config_(config) {}

Rate AdmissionController::rate_of(const StreamDemand& s) const noexcept {
  switch (config_.policy) {
    case Policy::aggressive_average: return s.average_rate > Rate{} ? s.average_rate : s.peak_rate;
    case Policy::statistical:
      // Measured when it runs; until then, what was declared — policing holds it to its peak.
      return s.measured_mean > Rate{} ? s.measured_mean : s.average_rate > Rate{} ? s.average_rate : s.peak_rate;
    default: return s.peak_rate;
  }
}

Rate AdmissionController::rate_spread(const StreamDemand& s) const noexcept {
  switch (config_.policy) {
    case Policy::statistical:
      if (s.measured_mean > Rate{}) return s.measured_stddev;
      [[fallthrough]];
    case Policy::aggressive_average:
      // Declared, not yet measured: a rate between 2·average − peak and peak, uniform (σ of
      // a uniform spread of width 2(peak − average) is (peak − average)/√3).
      return s.average_rate > Rate{} && s.peak_rate > s.average_rate ? (s.peak_rate - s.average_rate) / std::sqrt(3.0)
                                                                     : Rate{};
    default: return Rate{};  // charged at its peak: no spread above it
  }
}

void AdmissionController::set_calibration(double k) noexcept {
  calibration_.store(std::clamp(k, kMinCalibration, kMaxCalibration), std::memory_order_relaxed);
}

double AdmissionController::predicted_busy(std::span<const StreamDemand> set) const {
  if (set.empty()) return 0;
  const double T = config_.cycle_s;
  if (config_.policy == Policy::analytic) {
    // Eq. 3.14 with worst-case latency and the slowest rate.
    const double L = profile_.access_max_s, R_Bps = profile_.slowest_rate().Bps();
    double busy = 0;
    for (const auto& s : set) busy += L + rate_of(s).bytes_over(T) / R_Bps;
    return busy * model_scale();
  }
  Rate total;
  for (const auto& s : set) total += rate_of(s);
  const double s_avg = total.bytes_over(T) / static_cast<double>(set.size());  // Eq. 3.16
  const bool conservative = config_.policy == Policy::conservative;
  const Which w = conservative ? Which::min : Which::mean;
  double busy = 0, variance = 0, measured = 0;
  std::size_t on_curve = 0;  // streams charged on the curve (each adds one IO's rotational spread)
  // A cycle with more bytes than the means has the same number of IOs: the extra bytes cost
  // transfer time only, at the media rate, not another access.
  const double R_Bps = profile_.peak_rate().Bps();
  for (const auto& s : set) {
    if (config_.policy == Policy::statistical && s.measured_io_s > 0) {
      // Measured on this disk, in this set: its zone, its place in the sweep, its VBR spread.
      measured += s.measured_io_s;
      variance += std::pow(s.measured_stddev.bytes_over(T) / (R_Bps > 0 ? R_Bps : 1), 2) +
                  profile_.cycle_io_sd_s * profile_.cycle_io_sd_s;
      continue;
    }
    if (rate_of(s) <= Rate{}) continue;
    ++on_curve;
    const Curve& c = s.write && !profile_.random_write.empty() ? profile_.random_write : profile_.random_read;
    const double P_Bps = throughput_at(c, w, s_avg);
    const double cycle_bytes = rate_of(s).bytes_over(T);
    if (config_.policy == Policy::statistical && R_Bps > 0) {
      // Beside measured streams Eq. 3.16's "every IO at S_avg" no longer balances out: one
      // access at the set's density (t(S_avg)) plus its own bytes' transfer beyond S_avg.
      busy += std::max(s_avg / P_Bps + (cycle_bytes - s_avg) / R_Bps, 0.0);
    } else {
      busy += cycle_bytes / P_Bps;
    }
    const Rate sigma = rate_spread(s);
    if (sigma > Rate{}) variance += std::pow(sigma.bytes_over(T) / (R_Bps > 0 ? R_Bps : P_Bps), 2);
  }
  // The online calibration (observed over predicted stream IO time) corrects the mean curve;
  // the min curve is never made more optimistic than it was measured.
  const double k = calibration();
  busy *= (conservative ? std::max(1.0, k) : k) * model_scale();
  busy += measured;
  if (config_.policy != Policy::conservative) {
    // The mean curve is the mean cycle. A cycle is a sum of N IOs whose rotational delays are
    // independent (the profile's cycle_io_sd_s each), plus the VBR streams' spread: admitting
    // up to the mean would overrun about every other cycle of a full disk. The margin holds
    // the cycle within budget except with probability `overbooking` (normal approximation).
    variance += static_cast<double>(on_curve) * profile_.cycle_io_sd_s * profile_.cycle_io_sd_s;
    busy += normal_quantile_upper(config_.overbooking) * std::sqrt(variance);
  }
  return busy;
}

double AdmissionController::budget_s() const noexcept { return config_.r_rt * config_.cycle_s; }

std::size_t AdmissionController::max_streams(const StreamDemand& each, std::size_t limit) const {
  auto fits_n = [&](std::size_t n) {
    const std::vector<StreamDemand> set(n, each);
    return predicted_busy(set) <= budget_s();
  };
  std::size_t lo = 0, hi = 1;
  while (hi < limit && fits_n(hi)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, limit);
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    (fits_n(mid) ? lo : hi) = mid;
  }
  return fits_n(hi) ? hi : lo;
}

bool AdmissionController::fits(std::span<const StreamDemand> admitted, const StreamDemand& candidate, double budget,
                               Decision* out) const {
  std::vector<StreamDemand> set(admitted.begin(), admitted.end());
  set.push_back(candidate);
  const double busy = predicted_busy(set);
  if (out) {
    Rate total;
    for (const auto& s : set) total += rate_of(s);
    out->s_avg = total.bytes_over(config_.cycle_s) / static_cast<double>(set.size());
    const Curve& c = candidate.write && !profile_.random_write.empty() ? profile_.random_write : profile_.random_read;
    out->curve_rate =
        Rate::from_Bps(throughput_at(c, config_.policy == Policy::conservative ? Which::min : Which::mean, out->s_avg));
    out->predicted_busy_s = busy;
    out->budget_s = budget;
    out->streams = set.size();
  }
  return busy <= budget;
}

Decision AdmissionController::decide(std::span<const StreamDemand> admitted, const StreamDemand& candidate) const {
  return decide_within(admitted, candidate, budget_s(), "real-time share");
}

Decision AdmissionController::decide_within(std::span<const StreamDemand> admitted, const StreamDemand& candidate,
                                            double budget, const char* budget_name) const {
  Decision d;
  d.policy = config_.policy;
  d.requested_rate = candidate.peak_rate;
  // The largest rate that fits (busy grows with the rate): bisection.
  {
    StreamDemand probe = candidate;
    Rate lo, hi = std::max(candidate.peak_rate, profile_.peak_rate()) * 2;
    for (int i = 0; i < 50; ++i) {
      const Rate mid = (lo + hi) / 2;
      probe.peak_rate = probe.average_rate = mid;
      if (probe.measured_mean > Rate{}) probe.measured_mean = mid;
      (fits(admitted, probe, budget, nullptr) ? lo : hi) = mid;
    }
    d.max_rate = lo;
  }
  const bool ok = fits(admitted, candidate, budget, &d);
  if (optimistic_) {
    d.reason =
        "the disk model is optimistic beyond what the online check recalibrates (the device is far slower than "
        "its profile); admission is paused until the disk is profiled again (`vigil profile`) or cycles agree "
        "with the model again";
    d.max_rate = Rate{};
    d.cause = RefuseCause::model_paused;
    return d;
  }
  if (!ok) {
    std::ostringstream why;
    why.precision(3);
    why << "the disk's cycle would not fit: predicted real-time IO " << d.predicted_busy_s * 1000 << " ms per "
        << config_.cycle_s * 1000 << " ms cycle exceeds the " << d.budget_s * 1000 << " ms " << budget_name << " ("
        << policy_name(config_.policy) << " policy, " << d.streams
        << " streams); largest rate that fits: " << d.max_rate.bps() / 1e6 << " Mbit/s";
    if (model_scale() > 1) why << " (the model is recalibrated to " << model_scale() << "x the profile)";
    d.reason = why.str();
    d.cause = RefuseCause::cycle_full;
    return d;
  }
  d.admitted = true;
  return d;
}

storage::Nanos ProfiledServiceModel::predict(bool write, std::uint64_t, std::uint64_t bytes) const noexcept {
  const double scale = scale_.load(std::memory_order_relaxed);
  if (bytes == 0) return storage::Nanos(static_cast<std::int64_t>(profile_.access_mean_s * scale * 1e9));
  const Curve& c = write && !profile_.random_write.empty() ? profile_.random_write : profile_.random_read;
  const double rate = throughput_at(c, Which::mean, static_cast<double>(bytes));
  return storage::Nanos(static_cast<std::int64_t>(static_cast<double>(bytes) / rate * scale * 1e9));
}

}  // namespace vigil::admission
