#pragma once
// Which refused media packets were never stored, in runs for the timeline's gaps (docs/catalog.md,
// "Gaps"). A packet refused by policing is not lost yet: the protocol (docs/protocol.md,
// "Recording") has the server expect the refused sequence again, and `vigil record` keeps every
// packet until it is durable and resends from the first refused one — the same frame, with the
// same timestamps, taken once a fresh half fills. Only a sender that gives a refused frame up
// (a live source that cannot wait: it sends its next frame under the refused sequence number)
// loses it. So a refused frame waits here until the sender's next stored frame decides: the
// same frame (its timestamps and size) → stored after all; a later one → every frame refused
// before it is lost. Lost frames gather into a run that ends when a frame is stored again or the
// recording closes; each run is one gap, with the reason of its frames (a change of reason ends
// a run too): rate_exceeded (the sender sent more than its admitted rate this cycle),
// deadline_missed (the disk's IO thread was late with the stream's previous write, so the half
// could not be taken at the cycle's start), io_error (the stream's segment could not be started
// or extended). What is still waiting when the recording closes is lost here; a recorder that
// resends it in its next stream has the catalog cut the gap where that stream begins
// (catalog::record_refused_gap, record_reconnect_gap).
// Thread: the recording session's only. Errors: none; pure bookkeeping (no clock, no IO).
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::server {

// source_loss is never a refusal: it is what a recorder reports its source never delivered
// (proto MediaLoss), recorded through the same gap path.
enum class LossReason : std::uint8_t { rate_exceeded, deadline_missed, io_error, source_loss };
inline constexpr std::array<std::string_view, 4> kLossReasons = {"rate_exceeded", "deadline_missed", "io_error",
                                                                 "source_loss"};
inline std::string_view loss_reason_name(LossReason r) noexcept { return kLossReasons[static_cast<std::size_t>(r)]; }

// What tells a resent frame from another one: what its sender says about it (its own
// timestamps, in its time base, and its payload size), not the sequence number, which a sender
// that drops a frame gives to the next one.
struct FrameKey {
  std::int64_t pts = 0, dts = 0;
  bool has_pts = false, has_dts = false;
  std::uint64_t payload_bytes = 0;
  bool operator==(const FrameKey&) const = default;
};

struct RefusedFrame {
  FrameKey key;
  std::int64_t start_us = 0, end_us = 0;  // wall-clock: its pts, and pts + duration
  LossReason reason = LossReason::rate_exceeded;
};

// Frames refused and never stored, one after another: [START_US, END_US) spans them (END_US > START_US).
struct LostRun {
  LossReason reason = LossReason::rate_exceeded;
  std::int64_t start_us = 0, end_us = 0;
  std::uint64_t frames = 0, payload_bytes = 0;
  bool reported = false;  // the sender reported it (MediaLoss): it dropped the frames, or never had them
};

class RefusedRuns {
 public:
  // MAX_WAITING bounds the frames kept waiting for a resend: a sender that resends from its
  // first refused frame has at most what it sent before hearing of the refusal in flight (a
  // burst); one that never resends would otherwise grow this without end. Beyond it the oldest
  // waiting frame counts as lost.
  explicit RefusedRuns(std::size_t max_waiting = 1024) : max_waiting_(max_waiting) {}

  // Frame F was refused. One refused again (the sender retrying it) is counted once. Returns
  // the runs that ended (only beyond MAX_WAITING, when the reason changes).
  std::vector<LostRun> refused(const RefusedFrame& f);
  // Whether refused frames wait for their sender's next stored frame.
  bool waiting() const noexcept { return !waiting_.empty(); }
  // The reason of the frame refused last (REQUIRES: waiting()): what a frame the sender sent
  // before hearing of that refusal is refused for, too.
  LossReason last_reason() const noexcept { return waiting_.back().reason; }
  // A frame KEY was stored: the runs that ended (lost frames before it; a frame it repeats was
  // resent and is not lost).
  std::vector<LostRun> stored(const FrameKey& key);
  // The recording ends: everything still waiting is lost.
  std::vector<LostRun> close();

  std::uint64_t lost_frames() const noexcept { return lost_frames_; }  // over the recording

 private:
  void lose_front(std::vector<LostRun>& ended);
  void end_run(std::vector<LostRun>& ended);

  std::size_t max_waiting_;
  std::deque<RefusedFrame> waiting_;  // in the order first refused
  std::optional<LostRun> run_;        // lost frames not yet ended by a stored frame
  std::uint64_t lost_frames_ = 0;
};

// The gap's detail for RUN: what was lost and why, with the admitted rate (bits per second).
std::string lost_run_detail(const LostRun& run, double admitted_bps);

}  // namespace vigil::server
