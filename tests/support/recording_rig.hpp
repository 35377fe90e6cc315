#pragma once
// What the wire-level session tests share: a vigild with a volume, the simulated WD400BB's
// profile and 200 ms cycles (the online model check off: that profile does not describe the real
// file the volume lives on, and a loaded test machine would trip it); open-record requests; script frames as media packets.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/wire/wire_client.hpp"
#include "proto/vigil.pb.h"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

namespace vigil::test {

proto::Envelope open_record(const std::string& name, std::uint64_t rate_bps);

// Says hello on C (with the test's token), opens a recording of NAME at RATE_BPS and requires it
// admitted; returns its stream id.
std::uint64_t open_admitted(client::WireClient& c, const std::string& name, std::uint64_t rate_bps);

// The largest rate a new recording would be admitted at on D now (bits/s): what vigild answers
// an open-record far above any disk's capacity with.
std::uint64_t largest_new_rate(const VigildProcess& d);

// Script frame SEQ as a media packet of STREAM_ID (90 kHz time base, 25 fps, a keyframe every
// 25 frames starting with frame 1); its payload is script_frame(SEQ, FRAME_STREAM)'s.
// Script frame FRAME of FRAME_STREAM as packet SEQ of STREAM_ID (timestamps from SEQ, as above): a
// recorder that resends in a new stream numbers packets anew but keeps the camera's frames.
// KEYFRAME: its flag.
std::pair<proto::Envelope, std::vector<std::byte>> media_packet(std::uint64_t stream_id, std::uint64_t seq,
                                                                std::uint64_t frame, std::uint64_t frame_stream,
                                                                bool keyframe);
std::pair<proto::Envelope, std::vector<std::byte>> media_packet(std::uint64_t stream_id, std::uint64_t seq,
                                                                std::uint64_t frame_stream);

struct RecordingRig;

// Records FRAMES script frames as camera NAME (declared 64 Mbit/s, so all fit in one cycle: no
// policing), requires every one acknowledged, and waits (bounded) until they are all in closed
// segments in the catalog. Returns the recording's stream id. From frame RESTART_AT on (0: never),
// the camera's clock starts again from 0.
std::uint64_t record_script(RecordingRig& rig, const std::string& name, std::uint64_t frames,
                            std::uint64_t restart_at = 0);

struct RecordingRig {
  // EXTRA: "--option value" pairs that replace the defaults (--volume-size ...) or are added.
  explicit RecordingRig(std::vector<std::string> extra = {});
  // libpq connection string of vigild's embedded catalog.
  std::string catalog() const;
  TempDir dir;
  std::unique_ptr<VigildProcess> vigild;
};

}  // namespace vigil::test
