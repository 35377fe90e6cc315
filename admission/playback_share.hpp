#pragma once
// Recording comes first (docs/admission.md, "Playback share"): playbacks get a bounded share of
// each disk's real-time budget that recordings may use while playbacks do not, and playbacks can
// never take what recordings need. With B = r_RT·T the real-time budget (seconds of stream IO
// per cycle), f the playback share (0..1), W the admitted recordings, P the admitted playbacks
// (in admission order) and busy(X) the policy's predicted stream IO seconds per cycle of set X:
//   - a recording c is admitted iff busy(W ∪ {c}) ≤ B (recordings alone: playbacks never count);
//     then, while busy(W ∪ {c} ∪ P) > B, the newest playback is ended (its viewer is told why).
//     That loop ends: with P empty the set is W ∪ {c}, which fits.
//   - a playback c is admitted iff busy(P ∪ {c}) ≤ f·B and busy(W ∪ P ∪ {c}) ≤ B; f = 0 admits none.
// Ending playbacks rather than reserving (1 − f)·B for recordings lets recordings use the whole
// budget; ending the newest first disturbs the viewers who started last, and is deterministic.
// Thread: pure functions of their arguments. Errors: decisions are values.
#include <cstdint>
#include <span>
#include <vector>

#include "admission/admission.hpp"

namespace vigil::admission {

struct SharedDecision {
  Decision decision;
  // Ids of admitted playbacks to end so that the admitted recording fits (newest first). Empty
  // for a playback candidate, a refusal, or when everything fits.
  std::vector<std::uint64_t> ended;
};

// Decides CANDIDATE against ADMITTED (recordings and playbacks, in admission order) under the rule
// above, with f = ADMISSION.config().playback_share.
SharedDecision decide_shared(const AdmissionController& admission, std::span<const StreamDemand> admitted,
                             const StreamDemand& candidate);

// busy(P) of the playbacks of ADMITTED, seconds per cycle (the share in use).
double playback_busy(const AdmissionController& admission, std::span<const StreamDemand> admitted);

}  // namespace vigil::admission
