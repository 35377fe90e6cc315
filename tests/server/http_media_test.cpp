// The HTTP media routes end to end with real peers: ffmpeg encodes a clip (libx264, a keyframe
// per second), `vigil record` records it into a real vigild, and the MP4 export and the HLS
// rendition are fetched over loopback HTTP and checked by ffprobe — the same packets as the
// source (size, key flag, order), the requested duration within one GOP, a mid-range export
// starting at a keyframe, the index before the media data. Range requests return exactly the
// requested bytes of the whole export; trick play (keyframes only at a rate, forward and reverse:
// the reverse export is the forward one's keyframes last first, on an increasing media time);
// ETag revalidation, HEAD, and hostile input (bad times,
// ranges, names, segment bounds) each get their clear answer.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>

#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("HTTP media: MP4 export and HLS of a recording, ranges, revalidation, hostile input",
          "[http][media][ffmpeg]") {
  test::TempDir dir;
  auto cam = test::recorded_camera(dir.path(), "gate", 8);  // 200 packets
  const auto& source = cam.source;
  auto& d = *cam.vigild;
  auto get = [&](const std::string& target, const std::string& headers = {}) {
    return test::http_request(d.http(), "GET", target, headers);
  };
  const std::string base = "/api/v1/cameras/gate/";
  // --fast records 8 s of video in well under 8 s: its wall times run ahead of now, so every
  // range names an end in the future.
  const std::string range = "from=-1h&to=@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                 std::chrono::system_clock::now().time_since_epoch())
                                                                 .count() +
                                                             3600);

  // The whole recording.
  auto full = get(base + "export.mp4?" + range);
  INFO(full.head);
  REQUIRE(full.status == 200);
  CHECK(full.header("Content-Type") == "video/mp4");
  CHECK(full.header("Accept-Ranges") == "bytes");
  CHECK(std::stoull(full.header("Content-Length")) == full.body.size());
  const std::string etag = full.header("ETag");
  REQUIRE(etag.size() > 2);
  // The index first: a player can start before the whole file arrives.
  const auto moov = full.body.find("moov"), mdat = full.body.find("mdat");
  REQUIRE(moov != std::string::npos);
  REQUIRE(mdat != std::string::npos);
  CHECK(moov < mdat);
  const auto range_us = full.header("X-Vigil-Range-Us");
  REQUIRE(range_us.find('-') != std::string::npos);
  const std::int64_t start_us = std::stoll(range_us.substr(0, range_us.find('-')));

  {  // the export is the source, packet for packet (one vigild and recording for all: blocks, not SECTIONs, which would re-run the set-up)
    write_file(dir.path() / "full.mp4", full.body);
    const auto stream = test::probe_stream(dir.path() / "full.mp4", dir.path());
    CHECK_THAT(stream, ContainsSubstring("codec_name=h264"));
    CHECK(std::abs(test::probe_field(stream, "duration") - 8.0) < 0.5);
    const auto out = test::probe_packets(dir.path() / "full.mp4", dir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
      if (i > 0) CHECK(out[i].pts > out[i - 1].pts);
    }
    // The same range again: the cached export, the same bytes.
    auto again = get(base + "export.mp4?from=@" + std::to_string(start_us / 1'000'000 - 60) + "&to=@" +
                     std::to_string(start_us / 1'000'000 + 3600));
    REQUIRE(again.status == 200);
    CHECK(again.body.size() == full.body.size());
  }
  {  // a range in the middle starts at the keyframe before it and lasts what was asked, within a GOP
    const auto from = std::to_string(start_us + 3'500'000), to = std::to_string(start_us + 6'200'000);
    auto mid = get(base + "export.mp4?from=@" + from.substr(0, from.size() - 6) + "." + from.substr(from.size() - 6) +
                   "&to=@" + to.substr(0, to.size() - 6) + "." + to.substr(to.size() - 6));
    INFO(mid.head << mid.body.substr(0, 200));
    REQUIRE(mid.status == 200);
    CHECK(mid.header("ETag") != etag);
    write_file(dir.path() / "mid.mp4", mid.body);
    const auto out = test::probe_packets(dir.path() / "mid.mp4", dir.path());
    // Source frames 75..154: from the keyframe at 3 s up to the last frame before 6.2 s.
    REQUIRE(out.size() == 80);
    CHECK(out.front().key);
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[75 + i].size);
    }
    const auto stream = test::probe_stream(dir.path() / "mid.mp4", dir.path());
    const double duration = test::probe_field(stream, "duration");
    CHECK(duration >= 2.7 - 0.05);
    CHECK(duration <= 2.7 + 1.0);
  }
  {  // trick play: keyframes only, re-timed at 8x
    auto ff = get(base + "export.mp4?" + range + "&keyframes=1&rate=8");
    INFO(ff.head);
    REQUIRE(ff.status == 200);
    CHECK(ff.header("ETag") != etag);
    write_file(dir.path() / "ff.mp4", ff.body);
    const auto out = test::probe_packets(dir.path() / "ff.mp4", dir.path());
    std::vector<std::int64_t> keys;
    for (const auto& p : source) {
      if (p.key) keys.push_back(p.size);
    }
    REQUIRE(out.size() == keys.size());  // 8 s, a keyframe per second
    for (std::size_t i = 0; i < out.size(); ++i) {
      CHECK(out[i].key);
      CHECK(out[i].size == keys[i]);
      if (i > 0) CHECK(std::abs(out[i].pts - out[i - 1].pts - 1.0 / 8) < 0.01);  // 1 s of media in 1/8 s
    }
    CHECK(get(base + "export.mp4?" + range + "&rate=8").status == 400);  // rate without keyframes
    CHECK(get(base + "export.mp4?" + range + "&keyframes=1&rate=100").status == 400);

    // Rewind: the same keyframes from the end back to the start, on an increasing media time
    // that spans the recording / rate.
    auto rw = get(base + "export.mp4?" + range + "&keyframes=1&rate=8&reverse=1");
    INFO(rw.head);
    REQUIRE(rw.status == 200);
    CHECK(rw.header("ETag") != etag);
    CHECK(rw.header("ETag") != ff.header("ETag"));
    CHECK(rw.header("X-Vigil-Range-Us") == ff.header("X-Vigil-Range-Us"));
    write_file(dir.path() / "rw.mp4", rw.body);
    const auto back = test::probe_packets(dir.path() / "rw.mp4", dir.path());
    REQUIRE(back.size() == out.size());
    for (std::size_t i = 0; i < back.size(); ++i) {
      INFO("packet " << i);
      CHECK(back[i].key);
      CHECK(back[i].size == out[out.size() - 1 - i].size);  // the forward export's keyframes, last first
      if (i > 0) {
        CHECK(back[i].pts > back[i - 1].pts);
        CHECK(std::abs(back[i].pts - back[i - 1].pts - 1.0 / 8) < 0.01);
      }
    }
    // 7 s between the first and the last keyframe at 8x, plus the last frame's 40 ms.
    const double span = back.back().pts - back.front().pts;
    CHECK(std::abs(span - 7.0 / 8) < 0.02);
    CHECK(std::abs(test::probe_field(test::probe_stream(dir.path() / "rw.mp4", dir.path()), "duration") -
                   (7.0 / 8 + 0.04)) < 0.05);
    // Cached like any export: the same bytes, a Range of them, revalidation.
    auto rw2 = get(base + "export.mp4?" + range + "&keyframes=1&rate=8&reverse=1");
    CHECK(rw2.header("X-Vigil-Cache") == "hit");
    CHECK((rw2.body == rw.body));
    auto rw_part = get(base + "export.mp4?" + range + "&keyframes=1&rate=8&reverse=1", "Range: bytes=10-209\r\n");
    REQUIRE(rw_part.status == 206);
    CHECK((rw_part.body == rw.body.substr(10, 200)));
    CHECK(get(base + "export.mp4?" + range + "&keyframes=1&rate=8&reverse=1",
              "If-None-Match: " + rw.header("ETag") + "\r\n")
              .status == 304);
    // A part of the recording backwards: from the last keyframe before TO down to the one at or
    // before FROM (2.5 s .. 5.5 s: the keyframes of 5, 4, 3 and 2 s).
    const auto t = [&](std::int64_t offset_us) {
      const auto v = std::to_string(start_us + offset_us);
      return "@" + v.substr(0, v.size() - 6) + "." + v.substr(v.size() - 6);
    };
    auto part = get(base + "export.mp4?from=" + t(2'500'000) + "&to=" + t(5'500'000) + "&keyframes=1&rate=4&reverse=1");
    REQUIRE(part.status == 200);
    write_file(dir.path() / "rw-part.mp4", part.body);
    const auto part_out = test::probe_packets(dir.path() / "rw-part.mp4", dir.path());
    REQUIRE(part_out.size() == 4);
    for (std::size_t i = 0; i < part_out.size(); ++i) CHECK(part_out[i].size == keys[5 - i]);
    // Reverse is keyframes only; and a flag, 0 or 1.
    auto bad = get(base + "export.mp4?" + range + "&reverse=1");
    CHECK(bad.status == 400);
    CHECK_THAT(bad.body, ContainsSubstring("keyframes=1"));
    CHECK(get(base + "export.mp4?" + range + "&keyframes=1&reverse=2").status == 400);
    CHECK(get(base + "export.mp4?" + range + "&keyframes=1&reverse=yes").status == 400);
  }
  {  // Range requests return exactly the bytes asked for
    auto part = get(base + "export.mp4?" + range, "Range: bytes=100-1099\r\n");
    REQUIRE(part.status == 206);
    CHECK((part.body == full.body.substr(100, 1000)));
    CHECK(part.header("Content-Range") == "bytes 100-1099/" + std::to_string(full.body.size()));
    auto suffix = get(base + "export.mp4?" + range, "Range: bytes=-77\r\n");
    REQUIRE(suffix.status == 206);
    CHECK((suffix.body == full.body.substr(full.body.size() - 77)));
    auto open_end =
        get(base + "export.mp4?" + range, "Range: bytes=" + std::to_string(full.body.size() - 10) + "-\r\n");
    REQUIRE(open_end.status == 206);
    CHECK((open_end.body == full.body.substr(full.body.size() - 10)));
    auto clamp = get(base + "export.mp4?" + range, "Range: bytes=5-999999999\r\n");
    REQUIRE(clamp.status == 206);
    CHECK((clamp.body == full.body.substr(5)));
    for (const std::string& bad :
         {"bytes=" + std::to_string(full.body.size()) + "-", std::string("bytes=abc"), std::string("bytes=9-3"),
          std::string("items=0-5"), std::string("bytes=-0"), std::string("bytes=99999999999999999999-")}) {
      auto r = get(base + "export.mp4?" + range, "Range: " + bad + "\r\n");
      INFO(bad << " -> " << r.status << " " << r.body);
      CHECK(r.status == 416);
      CHECK(r.header("Content-Range") == "bytes */" + std::to_string(full.body.size()));
    }
    // If-Range naming another version: the whole export.
    auto stale = get(base + "export.mp4?" + range, "Range: bytes=0-9\r\nIf-Range: \"other\"\r\n");
    CHECK(stale.status == 200);
    CHECK(stale.body.size() == full.body.size());
  }
  {  // ETag revalidation and HEAD
    auto same = get(base + "export.mp4?" + range, "If-None-Match: " + etag + "\r\n");
    CHECK(same.status == 304);
    CHECK(same.body.empty());
    auto head = test::http_request(d.http(), "HEAD", base + "export.mp4?" + range);
    CHECK(head.status == 200);
    CHECK(head.header("Content-Length") == std::to_string(full.body.size()));
    CHECK(head.body.empty());
    CHECK(test::http_request(d.http(), "POST", base + "export.mp4?" + range).status == 405);
  }
  {  // HLS: ffprobe plays the VOD playlist, the same packets on one timeline
    auto pl = get(base + "hls.m3u8?" + range);
    INFO(pl.body);
    REQUIRE(pl.status == 200);
    CHECK(pl.header("Content-Type") == "application/vnd.apple.mpegurl");
    CHECK_THAT(pl.body, ContainsSubstring("#EXT-X-MAP:URI=\"hls/init.mp4?"));
    CHECK_THAT(pl.body, ContainsSubstring("#EXT-X-ENDLIST"));
    double total = 0;
    std::size_t segments = 0;
    for (std::size_t at = pl.body.find("#EXTINF:"); at != std::string::npos; at = pl.body.find("#EXTINF:", at + 1)) {
      total += std::stod(pl.body.substr(at + 8));
      ++segments;
    }
    // 8 s cut at keyframes on 4 s cells of wall-clock time: two segments, or three when the
    // recording does not start on a cell boundary.
    CHECK(segments >= 2);
    CHECK(segments <= 3);
    CHECK(std::abs(total - 8.0) < 0.1);
    // ffprobe cannot send a header: the token goes in the URL, and the playlist hands it on to
    // the init and media segments.
    const std::string url = "http://" + d.http() + base + "hls.m3u8?" + range + "&access_token=" + d.token();
    const auto out = test::probe_packets(url, dir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
      if (i > 0) CHECK(out[i].pts > out[i - 1].pts);  // segments line up: no restart at zero
    }
    // A segment is the same bytes every time (stateless, cacheable).
    const auto seg_at = pl.body.find("hls/seg.m4s?");
    const auto seg = pl.body.substr(seg_at, pl.body.find('\n', seg_at) - seg_at);
    auto s1 = get(base + seg), s2 = get(base + seg);
    REQUIRE(s1.status == 200);
    CHECK((s1.body == s2.body));
    CHECK(s1.header("ETag") == s2.header("ETag"));
  }
  {  // thumbnails: a JPEG of the keyframe at or before the time, named by that keyframe
    auto at = [&](std::int64_t offset_us) {
      const auto t = std::to_string(start_us + offset_us);
      return "at=@" + t.substr(0, t.size() - 6) + "." + t.substr(t.size() - 6);
    };
    auto jpg = get(base + "thumbnail.jpg?" + at(2'500'000) + "&width=160");
    INFO(jpg.head);
    REQUIRE(jpg.status == 200);
    CHECK(jpg.header("Content-Type") == "image/jpeg");
    REQUIRE(jpg.body.size() > 100);
    CHECK(static_cast<unsigned char>(jpg.body[0]) == 0xFF);
    CHECK(static_cast<unsigned char>(jpg.body[1]) == 0xD8);
    write_file(dir.path() / "thumb.jpg", jpg.body);
    const auto stream = test::probe_stream(dir.path() / "thumb.jpg", dir.path());
    CHECK_THAT(stream, ContainsSubstring("codec_name=mjpeg"));
    CHECK_THAT(stream, ContainsSubstring("width=160"));
    CHECK_THAT(stream, ContainsSubstring("height=120"));
    // Later in the same GOP: the same keyframe, the same tag; the next GOP: another picture.
    CHECK(get(base + "thumbnail.jpg?" + at(2'900'000) + "&width=160").header("ETag") == jpg.header("ETag"));
    CHECK(get(base + "thumbnail.jpg?" + at(3'100'000) + "&width=160").header("ETag") != jpg.header("ETag"));
    CHECK(get(base + "thumbnail.jpg?" + at(2'500'000) + "&width=5").status == 400);
    CHECK(get(base + "thumbnail.jpg").status == 400);
    CHECK(get(base + "thumbnail.jpg?at=-20h").status == 404);
    // After the recording's end (within 10 minutes): its last keyframe.
    CHECK(get(base + "thumbnail.jpg?" + at(60'000'000) + "&width=160").status == 200);
  }
  {  // hostile input: a clear 4xx
    for (const std::string& target : std::vector<std::string>{
             base + "export.mp4",                  // from missing
             base + "export.mp4?from=soon",        // not a time
             base + "export.mp4?from=-1h&to=-2h",  // inverted
             base + "export.mp4?from=-3d",         // longer than a day
             base + "export.mp4?from=-1h&download=yes",
             std::string("/api/v1/cameras/..%2F..%2Fetc%2Fpasswd/export.mp4?" + range),
             std::string("/api/v1/cameras/gate%27%3B%20DROP%20TABLE%20segments%3B--/export.mp4?" + range),
             base + "hls/seg.m4s?t0=abc&t1=5&o=0",
             base + "hls/seg.m4s?t0=-5&t1=5&o=0",
             base + "hls/seg.m4s?t0=10&t1=5&o=0",
             base + "hls/seg.m4s?t0=" + std::to_string(start_us) + "&t1=" + std::to_string(start_us + 1000) +
                 "&o=" + std::to_string(start_us + 1),  // origin after the segment
             base + "hls/init.mp4?t0=1",
             base + "hls.m3u8?from=-1h&to=-2h",
         }) {
      auto r = get(target);
      INFO(target << " -> " << r.status << " " << r.body);
      CHECK(r.status == 400);
      CHECK_THAT(r.body, ContainsSubstring("\"error\""));
    }
    CHECK(get("/api/v1/cameras/nobody/export.mp4?" + range).status == 404);
    CHECK(get(base + "export.mp4?from=-20h&to=-19h").status == 404);  // nothing recorded then
    CHECK(get(base + "hls/other.txt?t0=1&t1=2").status == 404);
    // Nothing changed: the recording still exports whole.
    CHECK(get(base + "export.mp4?" + range).body.size() == full.body.size());
  }
}
