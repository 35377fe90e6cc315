#pragma once
// Admission control from profiled curves (thesis §3.3.2 and §3.4.11; docs/admission.md).
// A stream is admitted to a disk only if, with it, every stream's IO of one cycle still fits in
// the real-time share r_RT·T. Policies:
//  - analytic (Eq. 3.14): Σ (L + T·BR_i / R) ≤ r_RT·T with the worst measured access L and the
//    slowest measured rate R — safe and wasteful;
//  - conservative, Adm1 (Eq. 3.16/3.17 on the min curve, peak rates) — the default: never
//    over-admits as long as the profile is true;
//  - aggressive, Adm2 (mean curve, peak rates); Adm3 (mean curve, average rates: for VBR, with
//    the spread the declared average and peak allow);
//  - statistical: what each running stream was measured to cost the disk per cycle (device
//    time, its mean, and its share of the cycle's spread); a stream not yet measured (the
//    candidate) like Adm3, on the mean curve at its declared average with the declared spread.
// The mean curve predicts the mean cycle, so the three mean-curve policies add a margin for the
// cycle's variation: the sum of N IOs and VBR rates exceeds its mean by more than z·σ with
// probability `overbooking` per cycle (default 1 %), σ² = Σ (T·σ_i/R)² + N·cycle_io_sd², the
// rates' spread charged at the media rate R (a cycle with more bytes has no more IOs, only
// longer transfers) and each IO's rotational delay independent (the profile's cycle_io_sd_s).
// The thesis's Adm2/Adm3 had no margin; its curve (unsorted random IOs) was pessimistic for a
// cycle's sorted sweep, which hid that. The mean curve is scaled by the online calibration.
// With mixed directions, each stream is charged on the curve of its direction:
//     busy = Σ_i T·BR_i / P_dir(i)(S_avg),  S_avg = T·Σ BR / (N + 1)      (Eq. 3.16)
// and admit iff busy ≤ r_RT·T — which for one direction is Eq. 3.17, ΣBR ≤ r_RT·P(S_avg).
// Thread: const after construction except set_model_optimistic, set_calibration, set_model_scale (atomics). Errors: decisions are
// values; a refusal carries its reason and the largest rate that would have fitted.
#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "admission/profile.hpp"
#include "common/rate.hpp"
#include "storage/service_model.hpp"

namespace vigil::admission {

enum class Policy { analytic, conservative, aggressive, aggressive_average, statistical };
const char* policy_name(Policy p) noexcept;          // "analytic", "adm1", "adm2", "adm3", "statistical"
const char* policy_catalog_name(Policy p) noexcept;  // the admission_decisions.policy value
std::optional<Policy> policy_from_name(std::string_view name) noexcept;

struct StreamDemand {
  std::uint64_t id = 0;
  bool write = true;  // recording (write) or playback (read)
  Rate peak_rate{};
  Rate average_rate{};     // zero: same as peak (CBR)
  Rate measured_mean{};    // measured per-cycle rate over a window; zero: not yet
  Rate measured_stddev{};  // its standard deviation
  // The device time its cycle IO takes, measured by the scheduler (storage/stream_io_stats.hpp):
  // the statistical policy charges a running stream this instead of the curve. 0 = not yet.
  // Its spread is charged from the measured rate spread and the profile's per-IO rotational
  // spread, as for the candidate.
  double measured_io_s = 0;
  std::uint64_t io_id = 0;  // the stream's id on the disk's scheduler (0: not running yet)
};

// z such that P(Z > z) = P for a standard normal (P clamped to [1e-9, 0.5]), for the statistical policy.
double normal_quantile_upper(double p) noexcept;

// Keyframes-only trick play at SPEED reads only the keyframes: charged at that rate.
Rate trick_play_rate(Rate rate, double keyframe_fraction, double speed) noexcept;

struct AdmissionConfig {
  Policy policy = Policy::conservative;
  double cycle_s = 1.0;
  double r_rt = 0.9;          // 1 − r_RT is kept for interactive and best-effort IO
  double overbooking = 0.01;  // mean-curve policies: accepted probability that a cycle exceeds the budget
  // The playbacks' share f of the real-time budget (playback_share.hpp): 1 lets playbacks use all
  // of it (the benches); vigild's --playback-share, 0.25 by default; 0 admits no playback.
  double playback_share = 1.0;
};

// Why a candidate was refused, for the refusal code a client gets (the reason text is for people).
enum class RefuseCause {
  none,          // admitted
  cycle_full,    // the cycle would not fit the candidate: a smaller rate might (Decision::max_rate)
  model_paused,  // the online model check found the profile optimistic: nothing is admitted until re-profiled
};

struct Decision {
  bool admitted = false;
  RefuseCause cause = RefuseCause::none;
  Policy policy = Policy::conservative;
  std::string reason;  // empty when admitted
  Rate requested_rate{};
  Rate max_rate{};              // largest rate of the candidate that would fit now
  double predicted_busy_s = 0;  // real-time IO per cycle including the candidate
  double budget_s = 0;          // r_RT·T (× overbooking)
  double s_avg = 0;             // Eq. 3.16, bytes
  Rate curve_rate{};            // P(S_avg) of the candidate's direction
  std::size_t streams = 0;      // N + 1
};

class AdmissionController {
 public:
  AdmissionController(DiskProfile profile, AdmissionConfig config);

  Decision decide(std::span<const StreamDemand> admitted, const StreamDemand& candidate) const;
  // The same against BUDGET_S seconds of stream IO per cycle instead of r_RT·T; BUDGET_NAME names
  // it in a refusal's reason (e.g. "playback share").
  Decision decide_within(std::span<const StreamDemand> admitted, const StreamDemand& candidate, double budget_s,
                         const char* budget_name) const;
  // Predicted real-time IO seconds per cycle of SET under this policy.
  double predicted_busy(std::span<const StreamDemand> set) const;
  // How many streams like EACH fit on an empty disk (binary search on N).
  std::size_t max_streams(const StreamDemand& each, std::size_t limit = 1'000'000) const;
  double budget_s() const noexcept;

  // The online check (model_check.hpp) says the profile is optimistic: refuse until re-profiled.
  void set_model_optimistic(bool v) noexcept { optimistic_ = v; }
  // The online calibration (calibration.hpp): observed / predicted stream IO time, clamped to
  // [kMinCalibration, kMaxCalibration]. Scales the mean curve's prediction (Adm2, Adm3,
  // statistical); the min curve (Adm1) only ever upwards; the analytic bound not at all.
  void set_calibration(double k) noexcept;
  double calibration() const noexcept { return calibration_.load(std::memory_order_relaxed); }
  static constexpr double kMinCalibration = 0.8, kMaxCalibration = 1.25;
  bool model_optimistic() const noexcept { return optimistic_; }
  // The recalibrated model's scale (model_scale.hpp): every prediction from the profile's curves
  // (all policies, the analytic bound too) is multiplied by it; 1 as profiled. What running
  // streams were measured to cost (statistical) is not: it was measured on the device as it is.
  void set_model_scale(double s) noexcept { scale_.store(s > 1 ? s : 1.0, std::memory_order_relaxed); }
  double model_scale() const noexcept { return scale_.load(std::memory_order_relaxed); }

  const DiskProfile& profile() const noexcept { return profile_; }
  const AdmissionConfig& config() const noexcept { return config_; }

 private:
  Rate rate_of(const StreamDemand& s) const noexcept;
  Rate rate_spread(const StreamDemand& s) const noexcept;  // σ of the per-cycle rate the policy charges for
  bool fits(std::span<const StreamDemand> admitted, const StreamDemand& candidate, double budget, Decision* out) const;

  DiskProfile profile_;
  AdmissionConfig config_;
  std::atomic<bool> optimistic_{false};
  std::atomic<double> calibration_{1.0};
  std::atomic<double> scale_{1.0};
};

// The profile as the scheduler's slack-test model: an IO of S bytes takes S / P(S) on the mean
// curve of its direction (one access plus transfer, as the curve was measured).
class ProfiledServiceModel final : public storage::ServiceModel {
 public:
  explicit ProfiledServiceModel(DiskProfile profile) : profile_(std::move(profile)) {}
  storage::Nanos predict(bool write, std::uint64_t offset, std::uint64_t bytes) const noexcept override;
  // The recalibrated model's scale (model_scale.hpp), set by the IO thread that also predicts.
  void set_scale(double s) noexcept { scale_.store(s > 1 ? s : 1.0, std::memory_order_relaxed); }

 private:
  DiskProfile profile_;
  std::atomic<double> scale_{1.0};
};

}  // namespace vigil::admission
