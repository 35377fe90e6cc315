#include "server/recording/refused_run.hpp"

#include <algorithm>

namespace vigil::server {

std::vector<LostRun> RefusedRuns::refused(const RefusedFrame& f) {
  std::vector<LostRun> ended;
  if (std::find_if(waiting_.begin(), waiting_.end(), [&](const RefusedFrame& w) { return w.key == f.key; }) !=
      waiting_.end()) {
    return ended;  // refused again: already waiting
  }
  waiting_.push_back(f);
  // Lost, but its run goes on until a frame is stored (one gap, not one per frame); only a
  // change of reason ends it here.
  if (waiting_.size() > max_waiting_) lose_front(ended);
  return ended;
}

std::vector<LostRun> RefusedRuns::stored(const FrameKey& key) {
  std::vector<LostRun> ended;
  const auto same = std::find_if(waiting_.begin(), waiting_.end(), [&](const RefusedFrame& w) { return w.key == key; });
  // Frames refused before the one stored now can never come: the stream has gone past them. A
  // frame stored that was never refused is a new one: everything waiting was given up.
  const auto lost = static_cast<std::size_t>(same - waiting_.begin());
  for (std::size_t i = 0; i < lost; ++i) lose_front(ended);
  if (!waiting_.empty() && waiting_.front().key == key) waiting_.pop_front();  // resent, stored after all
  end_run(ended);
  return ended;
}

std::vector<LostRun> RefusedRuns::close() {
  std::vector<LostRun> ended;
  while (!waiting_.empty()) lose_front(ended);
  end_run(ended);
  return ended;
}

void RefusedRuns::lose_front(std::vector<LostRun>& ended) {
  const RefusedFrame f = waiting_.front();
  waiting_.pop_front();
  ++lost_frames_;
  if (run_ && run_->reason != f.reason) end_run(ended);
  if (!run_) run_ = LostRun{.reason = f.reason, .start_us = f.start_us, .end_us = f.end_us};
  run_->start_us = std::min(run_->start_us, f.start_us);
  run_->end_us = std::max(run_->end_us, f.end_us);
  ++run_->frames;
  run_->payload_bytes += f.key.payload_bytes;
}

void RefusedRuns::end_run(std::vector<LostRun>& ended) {
  if (!run_) return;
  // A gap is a non-empty interval even for frames without a duration.
  run_->end_us = std::max(run_->end_us, run_->start_us + 1);
  ended.push_back(*run_);
  run_.reset();
}

std::string lost_run_detail(const LostRun& run, double admitted_bps) {
  const std::string rate = "; admitted rate " + std::to_string(static_cast<std::uint64_t>(admitted_bps)) + " bit/s";
  if (run.reason == LossReason::source_loss) {
    return "the source never delivered this media (a hole in its timestamps, reported by the recorder)" +
           (run.frames ? "; about " + std::to_string(run.frames) + " frames" : std::string());
  }
  if (run.reported) {
    return std::to_string(run.frames) + " frames (" + std::to_string(run.payload_bytes) +
           " payload bytes) dropped by the recorder: its source stays above the admitted rate and re-admission "
           "did not fit, so it kept reading the camera and gave these up" +
           rate;
  }
  std::string why;
  switch (run.reason) {
    case LossReason::rate_exceeded: why = "the sender sent more than its admitted rate in a cycle"; break;
    case LossReason::deadline_missed:
      why =
          "the disk's IO thread was late with the stream's previous write, so the cycle's buffer half could "
          "not be taken";
      break;
    case LossReason::io_error:
      why = "the stream's segment could not be started or extended on its volume (full or failing)";
      break;
    case LossReason::source_loss: break;  // above
  }
  return std::to_string(run.frames) + " frames (" + std::to_string(run.payload_bytes) +
         " payload bytes) refused and never stored: " + why + rate;
}

}  // namespace vigil::server
