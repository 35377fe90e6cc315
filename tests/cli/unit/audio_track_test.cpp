// The camera's audio handed from the demuxer to its own recorder session (client/cli/audio_track):
// in order, every packet a keyframe; a file's demuxer waits for room (nothing lost), a live
// camera's never waits (what does not fit is dropped and the next packet says how many); the
// input's end ends it after what it holds, the session's end (interrupt) closes it. And the rate
// it declares (rate_policy.hpp): G.711 exactly, others by their encoder's figure, with headers.
extern "C" {
#include <libavcodec/avcodec.h>
}
#include <catch2/catch_test_macros.hpp>
#include <thread>

#include "client/cli/audio_track.hpp"
#include "client/cli/rate_policy.hpp"

using namespace vigil::client;

namespace {

struct Par {
  AVCodecParameters* p = avcodec_parameters_alloc();
  explicit Par(AVCodecID id, int rate, int channels, std::int64_t bit_rate = 0) {
    p->codec_type = AVMEDIA_TYPE_AUDIO;
    p->codec_id = id;
    p->sample_rate = rate;
    p->bit_rate = bit_rate;
    av_channel_layout_default(&p->ch_layout, channels);
  }
  ~Par() { avcodec_parameters_free(&p); }
};

PacketPtr packet(std::int64_t pts, int bytes) {
  PacketPtr p(av_packet_alloc());
  REQUIRE(av_new_packet(p.get(), bytes) == 0);
  p->pts = p->dts = pts;
  return p;
}

}  // namespace

TEST_CASE("audio packets pass in order as keyframes, and the input's end ends the track after them", "[cli][audio]") {
  Par par(AV_CODEC_ID_PCM_MULAW, 8000, 1);
  AudioTrack track(*par.p, AVRational{1, 8000}, false);
  CHECK_FALSE(track.first_pts());
  track.push(packet(160, 160));
  track.push(packet(320, 160));
  CHECK(track.first_pts() == 160);
  CHECK(track.ahead_bytes() == 320);
  CHECK(track.wait_first_packet());
  track.end();
  auto a = track.next();
  REQUIRE(a);
  CHECK(a->pts == 160);
  CHECK((a->flags & AV_PKT_FLAG_KEY) != 0);
  auto b = track.next();
  REQUIRE(b);
  CHECK(b->pts == 320);
  CHECK_FALSE(track.next());
  track.push(packet(480, 160));  // after the end: not kept
  CHECK_FALSE(track.next());

  vigil::proto::CodecParameters c;
  track.describe(c);
  CHECK(c.codec_name() == "pcm_mulaw");
  CHECK(c.sample_rate() == 8000);
  CHECK(c.channels() == 1);
  CHECK(c.time_base_den() == 8000);
  CHECK(c.width() == 0);
}

TEST_CASE("a live camera's audio is never waited for: what does not fit is dropped and counted", "[cli][audio]") {
  Par par(AV_CODEC_ID_AAC, 48000, 2);
  AudioTrack track(*par.p, AVRational{1, 48000}, true);
  const int big = static_cast<int>(kAudioQueueBytes / 2);
  track.push(packet(0, big));
  track.push(packet(1024, big));
  track.push(packet(2048, big));  // over the queue: dropped
  track.push(packet(3072, big));  // still over: dropped
  auto a = track.next();
  REQUIRE(a);
  CHECK(frames_lost_before(*a) == 0);
  track.push(packet(4096, 10));  // room again: kept, saying two went before it
  REQUIRE(track.next());
  auto c = track.next();
  REQUIRE(c);
  CHECK(c->pts == 4096);
  CHECK(frames_lost_before(*c) == 2);
}

TEST_CASE("a file's demuxer waits for room; the session's end releases it", "[cli][audio]") {
  Par par(AV_CODEC_ID_OPUS, 48000, 2);
  AudioTrack track(*par.p, AVRational{1, 48000}, false);
  const int big = static_cast<int>(kAudioQueueBytes / 2);
  track.push(packet(0, big));
  track.push(packet(960, big));
  std::thread demuxer([&] { track.push(packet(1920, big)); });  // the queue is full: it waits for room
  REQUIRE(track.next());                                        // room
  demuxer.join();
  CHECK(track.ahead_bytes() <= kAudioQueueBytes);  // never more than the queue holds: nothing dropped either
  REQUIRE(track.next());
  auto last = track.next();
  REQUIRE(last);
  CHECK(last->pts == 1920);
  // The session is over: a waiting demuxer is released and nothing more is kept.
  track.push(packet(2880, big));
  track.push(packet(3840, big));
  std::thread stuck([&] { track.push(packet(4800, big)); });
  track.interrupt();
  stuck.join();
  CHECK_FALSE(track.next());
}

TEST_CASE("the audio's declared rate: G.711 exactly, the encoder's figure, else a ceiling; plus headers",
          "[cli][audio][rate]") {
  const double headers = kAudioPacketsPerS * kAudioRecordHeaderBytes * 8;
  CHECK(declared_audio_rate_bps("pcm_mulaw", 0, 8000, 1) == (64000 + headers) * kAdvertisedMargin);
  CHECK(declared_audio_rate_bps("pcm_alaw", 999999, 8000, 2) == (128000 + headers) * kAdvertisedMargin);
  CHECK(declared_audio_rate_bps("aac", 64000, 48000, 1) == (64000 + headers) * kAdvertisedMargin);
  CHECK(declared_audio_rate_bps("opus", 0, 48000, 2) == (kAudioUnknownBps + headers) * kAdvertisedMargin);
}
