#pragma once
// What the kill campaign needs besides vigild, shared by `vigil bench crash` and the kill-campaign
// test (tests/crash/kill_campaign_test.cpp): recorders that record a deterministic script at real
// time, log every durable acknowledgement, and reconnect and resend what is not acknowledged when
// vigild comes back at a (new) address; and the check afterwards — what the catalog indexes is
// read from the volumes with the storage engine and compared byte for byte with the script.
// Thread: each KillRecorder runs its own thread; the rest runs on its caller's. Errors:
// exceptions (tool layer); a recorder keeps its error in error() instead.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "client/wire/unacked_window.hpp"
#include "client/wire/wire_client.hpp"

namespace vigil::bench {

using SteadyTime = std::chrono::steady_clock::time_point;

// The script: frame G (G >= 1) of camera CAMERA, 25 fps; its size (200 to 6,199 bytes) and bytes
// derive from (CAMERA, G) alone, so a verifier regenerates it without a copy of what was sent.
constexpr std::int64_t kScriptFrameUs = 40'000;
std::vector<std::byte> script_payload(int camera, std::uint64_t g);

// Where the recorders find vigild. The campaign says down() when it kills vigild and up(WIRE)
// once a new one listens; each up() is a new generation.
class VigildAddress {
 public:
  void down();
  void up(std::string wire);
  // Waits until an address of a generation after GENERATION is up; nullopt if STOP is requested.
  std::optional<std::pair<std::string, std::uint64_t>> wait_newer(std::uint64_t generation, std::stop_token stop);
  std::uint64_t generation() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::string wire_;
  std::uint64_t generation_ = 0;
  bool up_ = false;
};

// One connection (one stream) of a recorder.
struct RecorderConnection {
  std::uint64_t generation = 0;  // of the vigild it was made to
  std::uint64_t stream_id = 0;
  std::uint64_t first_g = 0;            // the script frame its sequence 1 is
  std::uint64_t acked_before = 0;       // script frames acknowledged before it (over earlier streams)
  std::uint64_t produced_at_admit = 0;  // script frames the camera had captured when it was admitted
  SteadyTime admitted{};
  std::optional<SteadyTime> first_ack;  // recording again
};

struct RecorderOptions {
  int camera = 0;  // the script's camera number; the camera's name is NAME_PREFIX + number
  std::string name_prefix = "kill-cam-";
  std::string token;  // vigild's admin token
  std::uint64_t declared_rate_bps = 4'000'000;
};

// Records the script of one camera at real time (bursts every 100 ms) from its own thread until
// finish(). Every durable acknowledgement is logged (acks()); when vigild goes away it waits for
// the next address and opens a new stream of the same camera that resends, from the first
// unacknowledged frame, everything captured meanwhile, with the frames' capture times.
class KillRecorder {
 public:
  KillRecorder(RecorderOptions options, VigildAddress& address);
  ~KillRecorder();
  KillRecorder(const KillRecorder&) = delete;
  KillRecorder& operator=(const KillRecorder&) = delete;

  // Stops capturing, sends what is left, ends the stream and waits until its thread is done (at
  // most LIMIT). True if every captured frame was acknowledged.
  bool finish(std::chrono::milliseconds limit);

  std::string name() const;
  int camera() const { return options_.camera; }
  std::uint64_t acked() const { return acked_.load(); }  // the last script frame acknowledged
  std::uint64_t produced() const { return produced_.load(); }
  std::vector<RecorderConnection> connections() const;
  // Every acknowledgement as (stream id, last sequence), in order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> acks() const;
  std::string error() const;
  // Recording on vigild generation GENERATION (or later): a frame acknowledged there.
  bool recording_on(std::uint64_t generation) const;
  SteadyTime started() const { return started_; }
  std::int64_t wall_start_us() const { return wall_start_us_; }  // frame G was captured at this + (G-1) x 40 ms

 private:
  void run(std::stop_token stop);
  void connect(const std::string& wire, std::uint64_t generation);
  bool pump(std::stop_token stop);  // true once the stream ended with everything acknowledged
  void capture_due();
  void take(const client::Received& r);
  // Takes what vigild has said, without waiting or (WAIT_FOR_BARRIER) up to the pong of a ping
  // sent now; a refused packet sets first_refused_.
  void take_replies(bool wait_for_barrier);
  void send_unsent();

  RecorderOptions options_;
  VigildAddress& address_;
  SteadyTime started_;
  std::int64_t wall_start_us_ = 0;  // the camera's clock at frame 1
  client::UnackedWindow window_;    // the recorder thread's
  std::unique_ptr<client::WireClient> client_;
  std::uint64_t first_refused_ = 0;  // a policed packet to resend from once what is before it is durable
  std::atomic<std::uint64_t> acked_{0}, produced_{0};
  std::atomic<bool> finishing_{false}, done_{false}, all_acked_{false};
  mutable std::mutex mu_;  // guards connections_, acks_, error_
  std::vector<RecorderConnection> connections_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> acks_;
  std::string error_;
  std::jthread thread_;
};

// What the catalog said once the recorders were done, read while vigild ran.
struct CatalogSegment {
  std::uint64_t id = 0, stream_id = 0;
  std::int64_t volume_id = 0, start_us = 0, end_us = 0, frame_count = 0;
  std::string state;
};
struct CatalogSpan {  // a gap
  std::uint64_t stream_id = 0;
  std::int64_t start_us = 0, end_us = 0;
  std::string reason;
};
struct CatalogSnapshot {
  std::map<std::int64_t, std::string> volume_paths;    // volume id -> file
  std::map<std::uint64_t, std::string> stream_camera;  // stream id -> camera name
  std::vector<CatalogSegment> segments;
  std::vector<CatalogSpan> gaps;
};
// Waits (bounded by LIMIT) until no segment is open and no stream records, then reads the catalog.
CatalogSnapshot snapshot_catalog(const std::string& conninfo, std::chrono::milliseconds limit);

// The verdict on a round, from the volumes read after vigild stopped.
struct Verdict {
  std::uint64_t frames_read = 0;     // records of catalogued segments read from the volumes
  std::uint64_t frames_acked = 0;    // script frames acknowledged, over every camera
  std::uint64_t acked_lost = 0;      // acknowledged script frames found in no segment
  std::uint64_t invalid_frames = 0;  // records that are not the script frame they claim to be
  std::uint64_t duplicates = 0;      // frames stored twice (durable, not acknowledged, resent): harmless
  std::uint64_t unreadable_segments = 0, count_mismatches = 0, orphans = 0;  // catalog vs volume
  std::uint64_t holes = 0;            // spans of a camera's timeline covered by neither frames nor a gap
  std::uint64_t crash_gaps = 0;       // gaps with reason crash_recovery
  std::vector<std::string> problems;  // one line each (the first few)
  bool ok() const {
    return acked_lost == 0 && invalid_frames == 0 && unreadable_segments == 0 && count_mismatches == 0 &&
           orphans == 0 && holes == 0;
  }
};
// Reads every segment of SNAPSHOT from its volume (vigild stopped: it holds the volumes' locks)
// and checks it against what RECORDERS captured and had acknowledged.
Verdict verify_round(const CatalogSnapshot& snapshot, const std::vector<std::unique_ptr<KillRecorder>>& recorders);

}  // namespace vigil::bench
