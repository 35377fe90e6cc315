// A camera's audio muxed beside its video (common/media_writer): written, then read back with
// libavformat's demuxers — the audio track is there with its codec, rate and channels, every
// frame of both tracks in order at its time; containers that cannot take a codec as it is refuse
// it rather than transcode (docs/media.md, "Audio").
extern "C" {
#include <libavformat/avformat.h>
}
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/media_writer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace vigil;

namespace {

// avcC with one SPS and one PPS (as in media_pool_test's limits case).
const std::string kAvcc = {1, 100, 0, 40, char(0xff), char(0xe1), 0, 4, 0x67, 1, 2, 3, 1, 0, 2, 0x68, 1};

struct ReadBack {
  std::vector<AVCodecID> codecs;
  std::vector<int> sample_rates, channels;
  std::map<int, std::vector<std::int64_t>> pts_us;  // by stream
  std::map<int, std::vector<int>> sizes;
};

ReadBack read_back(const std::filesystem::path& file) {
  av_log_set_level(AV_LOG_FATAL);  // the video's payloads are stand-ins: its parser's complaints are no news
  AVFormatContext* ic = nullptr;
  REQUIRE(avformat_open_input(&ic, file.c_str(), nullptr, nullptr) == 0);
  ReadBack r;
  for (unsigned i = 0; i < ic->nb_streams; ++i) {
    r.codecs.push_back(ic->streams[i]->codecpar->codec_id);
    r.sample_rates.push_back(ic->streams[i]->codecpar->sample_rate);
    r.channels.push_back(ic->streams[i]->codecpar->ch_layout.nb_channels);
  }
  AVPacket* p = av_packet_alloc();
  while (av_read_frame(ic, p) >= 0) {
    const auto tb = ic->streams[p->stream_index]->time_base;
    r.pts_us[p->stream_index].push_back(av_rescale_q(p->pts, tb, AVRational{1, 1'000'000}));
    r.sizes[p->stream_index].push_back(p->size);
    av_packet_unref(p);
  }
  av_packet_free(&p);
  avformat_close_input(&ic);
  return r;
}

// 2 s of 25 fps video and of audio frames FRAME_US apart, interleaved by time as the export does.
void write_clip(media::MediaWriter& w, std::int64_t frame_us, std::size_t audio_bytes) {
  const std::vector<std::byte> video_key{std::byte{0}, std::byte{0},    std::byte{0},
                                         std::byte{2}, std::byte{0x65}, std::byte{0x88}};
  const std::vector<std::byte> video_delta{std::byte{0}, std::byte{0},    std::byte{0},
                                           std::byte{2}, std::byte{0x41}, std::byte{0x9a}};
  // 0xf8 is also a valid Opus TOC byte (CELT, 20 ms, one frame): the Opus parser keeps the packets.
  const std::vector<std::byte> audio(audio_bytes, std::byte{0xf8});
  std::int64_t audio_at = 0;
  for (std::int64_t v = 0; v < 2'000'000; v += 40'000) {
    for (; audio_at <= v; audio_at += frame_us) {
      w.write({.pts_us = audio_at,
               .dts_us = audio_at,
               .duration_us = frame_us,
               .keyframe = true,
               .payload = audio,
               .audio = true});
    }
    const bool key = v % 1'000'000 == 0;
    w.write(
        {.pts_us = v, .dts_us = v, .duration_us = 40'000, .keyframe = key, .payload = key ? video_key : video_delta});
  }
  w.finish();
}

const media::CodecInfo kVideo{.codec_name = "h264", .width = 320, .height = 240, .extradata = kAvcc};

}  // namespace

TEST_CASE("AAC beside H.264 in MP4: an mp4a track at its rate, every frame at its time", "[media][audio]") {
  test::TempDir dir;
  const media::CodecInfo aac{.codec_name = "aac", .extradata = "\x11\x90", .sample_rate = 48000, .channels = 2};
  auto w = media::MediaWriter::to_file((dir.path() / "a.mp4").string(), "", kVideo, &aac);
  CHECK(w.has_audio());
  write_clip(w, 21'333, 200);  // 1024 samples at 48 kHz
  const auto r = read_back(dir.path() / "a.mp4");
  REQUIRE(r.codecs == std::vector<AVCodecID>{AV_CODEC_ID_H264, AV_CODEC_ID_AAC});
  CHECK(r.sample_rates[1] == 48000);
  CHECK(r.channels[1] == 2);
  REQUIRE(r.pts_us.at(1).size() == 92);  // frames at 0, 21333, ... up to the last video frame (1.96 s)
  for (std::size_t i = 1; i < r.pts_us.at(1).size(); ++i) {
    CHECK(r.pts_us.at(1)[i] > r.pts_us.at(1)[i - 1]);
    CHECK(std::abs(r.pts_us.at(1)[i] - static_cast<std::int64_t>(i) * 21'333) <= 21);  // the track's clock: 1/48000
  }
  for (const auto size : r.sizes.at(1)) CHECK(size == 200);
  CHECK(r.pts_us.at(0).size() == 50);
}

TEST_CASE("G.711 goes into Matroska and QuickTime as it is, and MP4 refuses it", "[media][audio]") {
  test::TempDir dir;
  const media::CodecInfo mulaw{.codec_name = "pcm_mulaw", .sample_rate = 8000, .channels = 1};
  for (const std::string name : {"a.mkv", "a.mov"}) {
    INFO(name);
    auto w = media::MediaWriter::to_file((dir.path() / name).string(), "", kVideo, &mulaw);
    write_clip(w, 20'000, 160);  // 160 samples a frame, as RTP cameras send them
    const auto r = read_back(dir.path() / name);
    REQUIRE(r.codecs.size() == 2);
    CHECK(r.codecs[1] == AV_CODEC_ID_PCM_MULAW);
    CHECK(r.sample_rates[1] == 8000);
    CHECK(r.channels[1] == 1);
    std::size_t bytes = 0;
    for (const auto size : r.sizes.at(1)) bytes += static_cast<std::size_t>(size);
    CHECK(bytes == 99 * 160);  // every sample, whatever the demuxer's packet size
  }
  CHECK_THROWS_AS(media::MediaWriter::to_file((dir.path() / "b.mp4").string(), "", kVideo, &mulaw), std::runtime_error);
  CHECK_FALSE(media::container_takes_audio("mp4", "pcm_alaw"));
  CHECK(media::container_takes_audio("matroska", "pcm_alaw"));
}

TEST_CASE("Opus in MP4 (fragmented, as HLS writes it) and in Matroska", "[media][audio]") {
  test::TempDir dir;
  const media::CodecInfo opus{.codec_name = "opus", .sample_rate = 48000, .channels = 2};
  auto w = media::MediaWriter::to_file((dir.path() / "o.mkv").string(), "", kVideo, &opus);
  write_clip(w, 20'000, 80);
  const auto r = read_back(dir.path() / "o.mkv");
  REQUIRE(r.codecs.size() == 2);
  CHECK(r.codecs[1] == AV_CODEC_ID_OPUS);
  CHECK(r.pts_us.at(1).size() == 99);
  auto f = media::MediaWriter::fragmented(kVideo, 0, &opus);
  CHECK(f.has_audio());
  CHECK_FALSE(f.take_output().empty());  // the init segment, with both tracks
}

TEST_CASE("What a recording does not say of its audio comes from the codec: AAC's config, G.711's 8 kHz",
          "[media][audio]") {
  // The catalog keeps no sample rate or channels: PlaybackStarted and the media routes give none.
  test::TempDir dir;
  const media::CodecInfo aac{.codec_name = "aac", .extradata = "\x12\x10"};  // AAC-LC, 44100 Hz, 2 channels
  auto w = media::MediaWriter::to_file((dir.path() / "a.mp4").string(), "", kVideo, &aac);
  write_clip(w, 23'220, 100);
  auto r = read_back(dir.path() / "a.mp4");
  REQUIRE(r.codecs.size() == 2);
  CHECK(r.sample_rates[1] == 44100);
  CHECK(r.channels[1] == 2);
  const media::CodecInfo alaw{.codec_name = "pcm_alaw"};
  auto m = media::MediaWriter::to_file((dir.path() / "g.mkv").string(), "", kVideo, &alaw);
  write_clip(m, 20'000, 160);
  r = read_back(dir.path() / "g.mkv");
  REQUIRE(r.codecs.size() == 2);
  CHECK(r.codecs[1] == AV_CODEC_ID_PCM_ALAW);
  CHECK(r.sample_rates[1] == 8000);
  CHECK(r.channels[1] == 1);
}
