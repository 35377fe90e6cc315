#include "admission/playback_share.hpp"

#include <algorithm>

namespace vigil::admission {
namespace {

std::vector<StreamDemand> of_direction(std::span<const StreamDemand> set, bool write) {
  std::vector<StreamDemand> out;
  for (const auto& s : set) {
    if (s.write == write) out.push_back(s);
  }
  return out;
}

}  // namespace

double playback_busy(const AdmissionController& admission, std::span<const StreamDemand> admitted) {
  return admission.predicted_busy(of_direction(admitted, false));
}

SharedDecision decide_shared(const AdmissionController& admission, std::span<const StreamDemand> admitted,
                             const StreamDemand& candidate) {
  SharedDecision out;
  const double budget = admission.budget_s();
  if (candidate.write) {
    // Recordings alone: what playbacks hold is never a reason to refuse a recording.
    out.decision = admission.decide(of_direction(admitted, true), candidate);
    if (!out.decision.admitted) {
      if (out.decision.cause == RefuseCause::cycle_full) out.decision.reason += " (recordings alone)";
      return out;
    }
    // It fits beside the recordings; if the playbacks make the whole set overrun, the newest
    // playbacks give way until it fits (at worst all of them: the recordings alone fit).
    std::vector<StreamDemand> all(admitted.begin(), admitted.end());
    all.push_back(candidate);
    while (admission.predicted_busy(all) > budget) {
      // The candidate is last and a recording: the newest playback is the last read stream.
      const auto newest = std::find_if(all.rbegin(), all.rend(), [](const StreamDemand& s) { return !s.write; });
      if (newest == all.rend()) break;
      out.ended.push_back(newest->id);
      all.erase(std::next(newest).base());
    }
    out.decision.predicted_busy_s = admission.predicted_busy(all);
    out.decision.budget_s = budget;
    out.decision.streams = all.size();
    return out;
  }
  const double share = std::clamp(admission.config().playback_share, 0.0, 1.0);
  const Decision total = admission.decide(admitted, candidate);
  if (total.cause == RefuseCause::model_paused) {
    out.decision = total;
    return out;
  }
  if (share <= 0) {
    out.decision = total;
    out.decision.admitted = false;
    out.decision.cause = RefuseCause::cycle_full;
    out.decision.max_rate = Rate{};
    out.decision.reason = "playback is off on this disk (its playback share is 0: vigild --playback-share)";
    return out;
  }
  Decision own = admission.decide_within(of_direction(admitted, false), candidate, share * budget, "playback share");
  if (!own.admitted) {
    // The playbacks' own share is full, whatever the recordings leave: say so, and what would fit.
    out.decision = std::move(own);
    out.decision.max_rate = std::min(out.decision.max_rate, total.max_rate);
    out.decision.reason = "the playbacks' share of the disk is full (recording comes first): " + out.decision.reason;
    return out;
  }
  out.decision = total;
  if (!out.decision.admitted) out.decision.max_rate = std::min(out.decision.max_rate, own.max_rate);
  return out;
}

}  // namespace vigil::admission
