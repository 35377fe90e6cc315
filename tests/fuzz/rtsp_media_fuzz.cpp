// Fuzz target: what an RTSP camera sends the buffered RTSP client (client/rtsp): its messages
// (rtsp_message: a response or request, the 401's challenges answered), the URL an operator
// typed, the SDP of its DESCRIBE (sdp) and its RTP packets (rtp_depacketizer). The whole input is
// read as a message (checked: a complete one consumed no more than was given, within the head
// and body limits; an incomplete one says nothing), as a URL and as an SDP; then
// its first byte picks the codec (bit 0: H.265) and the rest is RTP packets, each after a 16-bit
// little-endian length (cut to what is left). Checked: an SDP's values are in range and its
// parameter sets are Annex B; every access unit is Annex B within kMaxAccessUnitBytes, carries
// the timestamp of a packet that was pushed, and is marked a keyframe only if it holds an IDR
// (H.264) or IRAP (H.265) NAL unit; the counters only grow, within what was pushed. The same
// packets go to the audio depacketizer (bits 1-2 of the first byte pick AAC, PCMU, PCMA, Opus) and
// the SDP to the audio parser: frames are non-empty, within kMaxAudioFrameBytes, their
// timestamps strictly rising. Last, the
// input as presentation times (16-bit signed steps, the first byte's bits 1-4 the reorder depth)
// through decode_times: every frame accepted comes out once, in order, with its dts at or before
// its pts and rising (strictly with a depth); once one is refused, every later one is.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/rtsp/audio_depacketizer.hpp"
#include "client/rtsp/decode_times.hpp"
#include "client/rtsp/rtp_depacketizer.hpp"
#include "client/rtsp/rtsp_message.hpp"
#include "client/rtsp/sdp.hpp"

namespace {

using vigil::client::rtsp::AccessUnit;
using vigil::client::rtsp::VideoCodec;

void check(bool ok) {
  if (!ok) std::abort();
}

bool starts_with_start_code(const std::vector<std::uint8_t>& b) {
  return b.size() >= 5 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 1;
}

// Some start code in AU is followed by a keyframe NAL header (the real one is among them).
bool holds_keyframe_nal(const AccessUnit& au, VideoCodec codec) {
  const auto& b = au.annexb;
  for (std::size_t i = 0; i + 4 < b.size(); ++i) {
    if (b[i] != 0 || b[i + 1] != 0 || b[i + 2] != 0 || b[i + 3] != 1) continue;
    const std::uint8_t h = b[i + 4];
    if (codec == VideoCodec::h264 && (h & 0x1f) == 5) return true;
    if (codec == VideoCodec::h265 && ((h >> 1) & 0x3f) >= 16 && ((h >> 1) & 0x3f) <= 23) return true;
  }
  return false;
}

void fuzz_message(std::string_view text) {
  namespace rtsp = vigil::client::rtsp;
  std::string why;
  if (const auto m = rtsp::parse_message(text, why)) {
    check(why.empty());
    check(m->consumed_bytes <= text.size());
    check(m->body.size() <= rtsp::kMaxBodyBytes);
    check(m->consumed_bytes <= rtsp::kMaxHeadBytes + 4 + rtsp::kMaxBodyBytes);
    if (m->is_response) check(m->status >= 100 && m->status <= 999);
    if (const auto value = rtsp::authorization(*m, "user", "pass", "DESCRIBE", "rtsp://h/")) {
      check(value->starts_with("Digest ") || value->starts_with("Basic "));
    }
  }
  if (const auto u = rtsp::parse_rtsp_url(text, why)) {
    check(!u->host.empty() && u->port > 0 && u->port <= 65535);
    check(u->without_credentials.size() <= text.size() + 1);  // "/" when the URL has no path
    for (const char c : u->without_credentials) check(static_cast<unsigned char>(c) > 0x20 && c != 0x7f);
  }
}

void fuzz_sdp(std::string_view text) {
  std::string why;
  const auto v = vigil::client::rtsp::parse_sdp_video(text, why);
  if (!v) {
    check(!why.empty());
    return;
  }
  check(v->payload_type >= 0 && v->payload_type <= 127);
  check(v->clock_rate_hz > 0);
  check(v->bandwidth_bps >= 0);
  check(v->control.size() <= text.size());
  // Each parameter set costs at least 2 base64 characters and a comma for 1 byte and a start code.
  check(v->parameter_sets.size() <= 4 * text.size());
  check(v->parameter_sets.empty() || starts_with_start_code(v->parameter_sets));
}

void fuzz_rtp(VideoCodec codec, std::span<const std::uint8_t> rest) {
  vigil::client::rtsp::RtpDepacketizer d(codec, 96);
  std::vector<AccessUnit> out;
  std::set<std::uint32_t> timestamps32;  // of every packet pushed
  std::uint64_t packets = 0, malformed = 0, lost = 0, dropped = 0;
  while (rest.size() >= 2) {
    std::size_t len = rest[0] | (std::size_t{rest[1]} << 8);
    rest = rest.subspan(2);
    if (len > rest.size()) len = rest.size();
    const auto packet = rest.first(len);
    rest = rest.subspan(len);
    if (packet.size() >= 8) {
      timestamps32.insert((std::uint32_t{packet[4]} << 24) | (std::uint32_t{packet[5]} << 16) |
                          (std::uint32_t{packet[6]} << 8) | packet[7]);
    }
    const std::size_t before = out.size();
    d.push(packet, out);
    ++packets;
    check(out.size() - before <= 2);  // the unit in progress (a new timestamp) and its own (marker)
    check(d.malformed_packets() >= malformed && d.malformed_packets() <= packets);
    check(d.lost_packets() >= lost && d.lost_packets() <= packets * 32767);
    check(d.dropped_units() >= dropped && d.dropped_units() <= 2 * packets);
    malformed = d.malformed_packets();
    lost = d.lost_packets();
    dropped = d.dropped_units();
  }
  for (const auto& au : out) {
    check(starts_with_start_code(au.annexb));
    check(au.annexb.size() <= vigil::client::rtsp::kMaxAccessUnitBytes);
    check(timestamps32.contains(static_cast<std::uint32_t>(au.timestamp)));
    check(!au.keyframe || holds_keyframe_nal(au, codec));
  }
}

void fuzz_audio(vigil::client::rtsp::AudioCodec codec, std::span<const std::uint8_t> rest, std::string_view sdp) {
  namespace rtsp = vigil::client::rtsp;
  std::string skipped;
  if (const auto a = rtsp::parse_sdp_audio(sdp, skipped)) {
    check(a->payload_type >= 0 && a->payload_type <= 127);
    check(a->clock_rate_hz > 0 && a->channels >= 1);
    check(a->config.size() <= sdp.size());
  }
  rtsp::AudioDepacketizer d(codec, codec == rtsp::AudioCodec::pcm_mulaw ? 0 : 97);
  std::vector<rtsp::AudioFrame> out;
  std::uint64_t packets = 0;
  while (rest.size() >= 2) {
    std::size_t len = rest[0] | (std::size_t{rest[1]} << 8);
    rest = rest.subspan(2);
    if (len > rest.size()) len = rest.size();
    d.push(rest.first(len), out);
    rest = rest.subspan(len);
    ++packets;
    check(d.malformed_packets() <= packets * 64);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    check(!out[i].data.empty() && out[i].data.size() <= rtsp::kMaxAudioFrameBytes);
    check(i == 0 || out[i].timestamp > out[i - 1].timestamp);
  }
}

void fuzz_decode_times(int depth, std::span<const std::uint8_t> bytes) {
  vigil::client::rtsp::DecodeTimes times(depth);
  std::vector<vigil::client::rtsp::TimedFrame> out;
  std::vector<std::int64_t> accepted;
  std::int64_t pts = 0;
  bool refused = false;
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    pts += static_cast<std::int16_t>(bytes[i] | (bytes[i + 1] << 8));
    const auto outcome = times.push(pts, out);
    check(!refused || outcome == vigil::client::rtsp::DecodeTimes::Outcome::too_early);
    if (outcome == vigil::client::rtsp::DecodeTimes::Outcome::too_early) {
      refused = true;
      check(times.needed_depth() > times.depth());
    } else {
      accepted.push_back(pts);
    }
  }
  times.flush(out);
  check(out.size() == accepted.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    check(out[i].pts == accepted[i]);
    check(out[i].dts <= out[i].pts);
    if (i > 0) check(times.depth() > 0 ? out[i].dts > out[i - 1].dts : out[i].dts >= out[i - 1].dts);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_message(std::string_view(reinterpret_cast<const char*>(data), size));
  fuzz_sdp(std::string_view(reinterpret_cast<const char*>(data), size));
  if (size == 0) return 0;
  fuzz_rtp((data[0] & 1) != 0 ? VideoCodec::h265 : VideoCodec::h264, std::span(data + 1, size - 1));
  fuzz_audio(static_cast<vigil::client::rtsp::AudioCodec>((data[0] >> 1) & 3), std::span(data + 1, size - 1),
             std::string_view(reinterpret_cast<const char*>(data), size));
  fuzz_decode_times((data[0] >> 1) & 0xf, std::span(data + 1, size - 1));
  return 0;
}
