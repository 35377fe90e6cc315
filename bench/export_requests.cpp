#include "bench/export_requests.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace vigil::bench {

std::string at(std::int64_t us) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%%40%lld.%06lld", static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  return buf;
}

PhaseResult measure(BenchHttp& http, const std::vector<Round>& rounds, std::int64_t shift_us, Progress& progress,
                    double p0, double p1) {
  PhaseResult r;
  auto failed = [&](const std::string& what, const HttpTiming& t) {
    ++r.failed;
    if (r.first_failure.empty())
      r.first_failure = what + " answered " + std::to_string(t.status) + " " + t.body.substr(0, 200);
  };
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const Round& q = rounds[i];
    std::this_thread::sleep_for(q.pauses[0]);
    {  // export of 10–30 s
      const auto from = q.export_from_us + shift_us;
      const auto target = "/api/v1/cameras/" + q.export_cam->camera + "/export.mp4?from=" + at(from) +
                          "&to=" + at(from + q.export_len_us);
      const auto t = http.get(target);
      if (t.status != 200 || t.body.find("moov") == std::string::npos) failed(target, t);
      r.exports.ttfb.push_back(t.ttfb_ms);
      r.exports.total.push_back(t.total_ms);
      r.bytes += static_cast<double>(t.body.size());
    }
    std::this_thread::sleep_for(q.pauses[1]);
    {  // thumbnail
      const auto target = "/api/v1/cameras/" + q.thumb_cam->camera + "/thumbnail.jpg?at=" + at(q.thumb_us + shift_us);
      const auto t = http.get(target);
      if (t.status != 200 || t.body.size() < 2 || static_cast<unsigned char>(t.body[0]) != 0xFF) failed(target, t);
      r.thumbnails.ttfb.push_back(t.ttfb_ms);
      r.thumbnails.total.push_back(t.total_ms);
    }
    std::this_thread::sleep_for(q.pauses[2]);
    {  // HLS seek: the playlist from that time, then its first media segment
      const auto from = q.seek_us + shift_us;
      const auto base = "/api/v1/cameras/" + q.seek_cam->camera + "/";
      const auto t0 = std::chrono::steady_clock::now();
      const auto pl = http.get(base + "hls.m3u8?from=" + at(from) + "&to=" + at(from + 8'000'000));
      const auto seg_at = pl.body.find("hls/seg.m4s?");
      if (pl.status != 200 || seg_at == std::string::npos) {
        failed(base + "hls.m3u8", pl);
      } else {
        const auto seg = http.get(base + pl.body.substr(seg_at, pl.body.find('\n', seg_at) - seg_at));
        const double before = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() -
                              seg.total_ms;  // the playlist's share
        if (seg.status != 200 || seg.body.find("moof") == std::string::npos) failed(base + "hls/seg.m4s", seg);
        r.seeks.ttfb.push_back(before + seg.ttfb_ms);
        r.seeks.total.push_back(before + seg.total_ms);
      }
    }
    progress.update(p0 + (p1 - p0) * static_cast<double>(i + 1) / static_cast<double>(rounds.size()));
  }
  return r;
}

PhaseResult pooled(const PhaseResult& a, const PhaseResult& b) {
  PhaseResult r = a;
  auto add = [](Samples& to, const Samples& from) {
    to.ttfb.insert(to.ttfb.end(), from.ttfb.begin(), from.ttfb.end());
    to.total.insert(to.total.end(), from.total.begin(), from.total.end());
  };
  add(r.exports, b.exports);
  add(r.thumbnails, b.thumbnails);
  add(r.seeks, b.seeks);
  r.failed += b.failed;
  if (r.first_failure.empty()) r.first_failure = b.first_failure;
  r.bytes += b.bytes;
  return r;
}

}  // namespace vigil::bench
